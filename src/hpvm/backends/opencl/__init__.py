"""The ``opencl`` back end (PyOpenCL); see ``docs/backends/gpu.md``.

Importing this package imports nothing heavy: ``unavailable_reason`` decides whether the
back end can run here (PyOpenCL installed and at least one OpenCL device present); the
device is opened on first use.
"""

from __future__ import annotations

import importlib.util


def unavailable_reason() -> str | None:
    """Why the ``opencl`` back end cannot run in this process, or ``None`` when it can."""
    if importlib.util.find_spec("pyopencl") is None:
        return "PyOpenCL is not installed (pip install 'hpvm[opencl]')"
    try:
        from .context import list_devices

        devices = list_devices()
    except Exception as e:  # a broken driver must not break importing hpvm
        return f"PyOpenCL cannot list OpenCL devices ({type(e).__name__}: {e})"
    if not devices:
        return (
            "no OpenCL device exists on this machine (install a GPU driver with OpenCL support, or "
            "PoCL for the CPU: pip install pocl-binary-distribution)"
        )
    return None


def make_backend():  # type: ignore[no-untyped-def]
    from .backend import OpenCLBackend

    return OpenCLBackend()
