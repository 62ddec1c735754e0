"""The ``interp`` back end: the reference interpreter and oracle.

Options of the shared interpreter that ``launch(..., target="interp")`` (and a CPU hint with
no compiled back end) runs are set with ``configure``::

    import hpvm.backends.interp as interp

    previous = interp.configure(strict=True)   # all-to-all disagreement raises
    try:
        ...  # hpvm.launch(root, args, target="interp"); hpvm.wait(...)
    finally:
        interp.configure(**previous)
"""

from __future__ import annotations

from typing import Any

from .executor import InstanceHandle, Interpreter, NodeOutputs

__all__ = ["InstanceHandle", "Interpreter", "NodeOutputs", "configure"]


def configure(*, strict: bool | None = None) -> dict[str, Any]:
    """Set options of the registered ``interp`` back end; return their previous values.

    ``strict``: when the dynamic instances of a replicated node send different values over
    an all-to-all edge or an output bind (the last instance's value is used), raise
    ``hpvm.DisagreementError`` at ``wait`` / ``pop`` instead of issuing an ``HPVMWarning``.
    Off by default. The setting is read while graphs run, so it applies to every launch
    that runs after the call (including launches still running).
    """
    from ..base import get_backend

    backend = get_backend("interp")
    assert isinstance(backend, Interpreter)
    previous: dict[str, Any] = {"strict": backend.strict}
    if strict is not None:
        if not isinstance(strict, bool):
            raise TypeError(f"strict must be a bool, not {strict!r}")
        backend.strict = strict
    return previous
