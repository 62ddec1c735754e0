"""Back ends: one package each, registered by name (see ``base``).

Registering imports nothing heavy: each back end's factory and probe run the first time the
back end is asked for (``get_backend``, ``available_backends``, a launch that selects it),
so ``import hpvm`` loads no device library and cannot hang on a broken driver.
"""

import importlib.util
import os
from collections.abc import Callable

from .base import (
    Backend,
    RunContext,
    StageBatch,
    available_backends,
    backend_for_hint,
    get_backend,
    mark_unavailable,
    register_backend,
    unavailable_reason,
)


def _interp() -> Backend:
    from .interp import Interpreter

    return Interpreter()


def _cpu() -> Backend:
    from .cpu import CPUBackend

    return CPUBackend()


def _tensor() -> Backend:
    from .tensor import TensorBackend

    return TensorBackend()


def _dask() -> Backend:
    from .dask import DaskBackend

    return DaskBackend()


def _needs(module: str, extra: str, what: str) -> Callable[[], str | None]:
    def probe() -> str | None:
        if importlib.util.find_spec(module) is None:
            return f"{what} is not installed (pip install 'hpvm[{extra}]')"
        return None

    return probe


register_backend("interp", _interp)
register_backend("cpu", _cpu, _needs("numba", "cpu", "Numba"))
register_backend("tensor", _tensor, _needs("torch", "tensor", "PyTorch"))
register_backend("dask", _dask, _needs("distributed", "dist", "Dask's distributed"))
# Numba's OpenMP threads spin after each parallel region by default; on a machine with few
# cores they then compete with the host and the runtime's own threads, and a short launch
# can take milliseconds instead of microseconds (measured: 8 ms vs 0.06 ms on 2 cores).
# Sleeping idle threads cost a few microseconds per region instead. Set before OpenMP
# starts; a value the user set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

# cuda: numba-cuda with a CUDA driver, or its simulator (NUMBA_ENABLE_CUDASIM=1).
from .cuda import register as _register_cuda  # noqa: E402

_register_cuda()
# opencl: PyOpenCL with an OpenCL device that compiles a kernel (PoCL's CPU device counts).
from .opencl import register as _register_opencl  # noqa: E402

_register_opencl()

__all__ = [
    "Backend",
    "RunContext",
    "StageBatch",
    "available_backends",
    "backend_for_hint",
    "get_backend",
    "mark_unavailable",
    "register_backend",
    "unavailable_reason",
]
