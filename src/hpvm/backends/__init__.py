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
# How idle OpenMP threads wait (libgomp reads it once, when it loads; a value the user set
# wins, and then hpvm sets neither). libgomp's default spins about 300,000 times after each
# parallel region (15 ms measured on the 2-core machine): such threads compete with the host
# and hpvm's own threads, and a short launch took 8 ms instead of 0.06. Passive (no spin)
# made every region wake a sleeping team instead: a third of the stencil's 128×128×32 step
# (125–135 µs against 83–90 with spinning). Active with 3,000 spins (about 150 µs here)
# keeps a team warm between the launches of a loop and bounds what an idle one takes; with
# more OpenMP threads than cores libgomp cuts it to 1,000 spins (the active policy's
# throttled count; the default policy's is 100, too few to bridge a host's Python between
# two launches), and idle workers end to free their teams (runtime/workers.py).
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["OMP_WAIT_POLICY"] = "active"
    os.environ["GOMP_SPINCOUNT"] = "3000"

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
