"""The ``interp`` back end: the reference interpreter and oracle.

Options of the shared interpreter that ``launch(..., target="interp")`` (and a CPU hint with
no compiled back end) runs are set with ``configure``::

    import hpvm.backends.interp as interp

    # all-to-all disagreement raises; no data-race detection (on by default)
    previous = interp.configure(strict=True, races=False)
    try:
        ...  # hpvm.launch(root, args, target="interp"); hpvm.wait(...)
    finally:
        interp.configure(**previous)
"""

from __future__ import annotations

from typing import Any

from ...errors import OptionError
from .executor import InstanceHandle, Interpreter, NodeOutputs

__all__ = ["InstanceHandle", "Interpreter", "NodeOutputs", "configure"]


def configure(*, strict: bool | None = None, races: bool | None = None) -> dict[str, Any]:
    """Set options of the registered ``interp`` back end; return their previous values.

    ``strict``: when the dynamic instances of a replicated node send different values over
    an all-to-all edge or an output bind (the last instance's value is used), raise
    ``hpvm.DisagreementError`` at ``wait`` / ``pop`` instead of issuing an ``HPVMWarning``.
    Off by default. The setting is read while graphs run, so it applies to every launch
    that runs after the call (including launches still running).

    ``races``: report two instances that may run at the same time touching one element (at
    least one writing it, not both atomically) as ``hpvm.DataRaceError`` at ``wait`` /
    ``pop`` (docs/backends/interp.md, "Data races"). On by default, unless the environment
    variable ``HPVM_INTERP_RACES=0`` was set when the back end was first used. The setting
    is read when a launch (or a streamed item's stage) starts running.
    """
    from ..base import get_backend

    backend = get_backend("interp")
    assert isinstance(backend, Interpreter)
    previous: dict[str, Any] = {"strict": backend.strict, "races": backend.races}
    for name, value in (("strict", strict), ("races", races)):
        if value is not None and not isinstance(value, bool):
            raise OptionError(f"interp.configure: {name} must be a bool (True or False), not {value!r}")
    if strict is not None:
        backend.strict = strict
    if races is not None:
        backend.races = races
    return previous
