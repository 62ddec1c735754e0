"""Back ends: one package each, registered by name (see ``base``)."""

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


register_backend("interp", _interp)
for _name in ("cpu", "cuda", "opencl", "tensor"):
    mark_unavailable(_name, "not implemented yet in this version of hpvm (see docs/backends/)")

__all__ = [
    "Backend",
    "available_backends",
    "backend_for_hint",
    "get_backend",
    "mark_unavailable",
    "register_backend",
]
