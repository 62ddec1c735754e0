"""Back ends: one package each, registered by name (see ``base``)."""

import importlib.util
import os

from .base import (
    Backend,
    available_backends,
    backend_for_hint,
    get_backend,
    mark_unavailable,
    register_backend,
)


def _interp() -> Backend:
    from .interp import Interpreter

    return Interpreter()


def _cpu() -> Backend:
    from .cpu import CPUBackend

    return CPUBackend()


register_backend("interp", _interp)
if importlib.util.find_spec("numba") is not None:
    register_backend("cpu", _cpu)
    # Numba's OpenMP threads spin after each parallel region by default; on a machine with
    # few cores they then compete with the host and the runtime's own threads, and a short
    # launch can take milliseconds instead of microseconds (measured: 8 ms vs 0.06 ms on 2
    # cores). Sleeping idle threads cost a few microseconds per region instead. Set before
    # OpenMP starts; a value the user set wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
else:
    mark_unavailable("cpu", "Numba is not installed (pip install 'hpvm[cpu]')")


def _tensor() -> Backend:
    from .tensor import TensorBackend

    return TensorBackend()


if importlib.util.find_spec("torch") is not None:
    register_backend("tensor", _tensor)
else:
    mark_unavailable("tensor", "PyTorch is not installed (pip install 'hpvm[tensor]')")

# cuda: numba-cuda with a CUDA driver, or its simulator (NUMBA_ENABLE_CUDASIM=1); the check
# imports nothing heavy (see backends/cuda/__init__.py).
from .cuda import register as _register_cuda  # noqa: E402

_register_cuda()
# opencl: PyOpenCL with at least one OpenCL device (PoCL's CPU device counts); listing the
# devices loads the OpenCL ICD loader, not the compiler (see backends/opencl/__init__.py).
from .opencl import make_backend as _opencl  # noqa: E402
from .opencl import unavailable_reason as _opencl_unavailable  # noqa: E402

_opencl_reason = _opencl_unavailable()
if _opencl_reason is None:
    register_backend("opencl", _opencl)
else:
    mark_unavailable("opencl", _opencl_reason)

__all__ = [
    "Backend",
    "available_backends",
    "backend_for_hint",
    "get_backend",
    "mark_unavailable",
    "register_backend",
]
