"""The ``cuda`` back end (numba-cuda); see ``docs/backends/gpu.md``.

Importing this package does not import numba-cuda: ``unavailable_reason`` decides cheaply
whether the back end can run here (numba-cuda installed, and the simulator enabled or a
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
    """Register the ``cuda`` back end if it can run here, else record why not.

    Called when ``hpvm.backends`` is imported; call it again after changing
    ``NUMBA_ENABLE_CUDASIM`` in a process that imported hpvm before (the test suite's
    ``conftest.py`` does: pytest imports hpvm early to resolve its warning filters).
    """
    from ..base import mark_unavailable, register_backend

    reason = unavailable_reason()
    if reason is None:
        register_backend("cuda", make_backend)
    else:
        mark_unavailable("cuda", reason)
