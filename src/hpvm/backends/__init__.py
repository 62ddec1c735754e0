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
for _name in ("cuda", "opencl", "tensor"):
    mark_unavailable(_name, "not implemented yet in this version of hpvm (see docs/backends/)")

__all__ = [
    "Backend",
    "available_backends",
    "backend_for_hint",
    "get_backend",
    "mark_unavailable",
    "register_backend",
]
