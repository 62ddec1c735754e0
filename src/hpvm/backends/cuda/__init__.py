"""The ``cuda`` back end (numba-cuda); see ``docs/backends/gpu.md``.

Importing this package does not import numba-cuda: ``unavailable_reason`` (the registry's
probe, run when the back end is first asked for) decides cheaply whether it can run here (numba-cuda installed, and the simulator enabled or a
CUDA driver present); the device is opened on first use.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys


def unavailable_reason() -> str | None:
    """Why the ``cuda`` back end cannot run in this process, or ``None`` when it can."""
    if importlib.util.find_spec("numba_cuda") is None:
        return "numba-cuda is not installed (pip install 'hpvm[cuda]')"
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return None
    names = ("nvcuda.dll",) if sys.platform == "win32" else ("libcuda.so.1", "libcuda.so", "libcuda.dylib")
    for name in names:
        try:
            ctypes.CDLL(name)
            return None
        except OSError:
            continue
    return (
        "no NVIDIA GPU is usable here (the CUDA driver library libcuda cannot be loaded; CUDA "
        "devices here: none); set NUMBA_ENABLE_CUDASIM=1 to run on numba-cuda's simulator"
    )


def make_backend():  # type: ignore[no-untyped-def]
    from .backend import CUDABackend

    return CUDABackend()


def register() -> None:
    """Register the ``cuda`` back end; whether it can run here is decided when it is first
    asked for (``unavailable_reason`` is its probe), so ``NUMBA_ENABLE_CUDASIM`` may be set
    any time before that. Calling it again forgets an earlier answer."""
    from ..base import register_backend

    register_backend("cuda", make_backend, unavailable_reason)
