"""The ``opencl`` back end (PyOpenCL); see ``docs/backends/gpu.md``.

Importing this package imports nothing heavy. ``unavailable_reason`` is the registry's
probe, run the first time the back end is asked for (not when hpvm is imported): PyOpenCL
must be installed and one OpenCL device must build and run a tiny kernel — a device whose
compiler cannot build for this machine (PoCL 3.0 bundles LLVM 14, which does not know
CPUs newer than it, such as AMD Zen 5, and fails with "unknown target CPU 'generic'")
makes the back end unavailable with the compiler's message, rather than failing later.
"""

from __future__ import annotations

import importlib.util


def unavailable_reason() -> str | None:
    """Why the ``opencl`` back end cannot run in this process, or ``None`` when it can."""
    if importlib.util.find_spec("pyopencl") is None:
        return "PyOpenCL is not installed (pip install 'hpvm[opencl]')"
    try:
        from .context import list_devices, smoke_test

        devices = list_devices()
    except Exception as e:  # a broken driver must not break the caller
        return f"PyOpenCL cannot list OpenCL devices ({type(e).__name__}: {e})"
    if not devices:
        return (
            "no OpenCL device exists on this machine (install a GPU driver with OpenCL support, or "
            "PoCL for the CPU: pip install pocl-binary-distribution)"
        )
    return smoke_test()


def make_backend():  # type: ignore[no-untyped-def]
    from .backend import OpenCLBackend

    return OpenCLBackend()


def register() -> None:
    """Register the ``opencl`` back end (probed on first use)."""
    from ..base import register_backend

    register_backend("opencl", make_backend, unavailable_reason)
