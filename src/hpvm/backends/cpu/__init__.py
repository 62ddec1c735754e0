"""The ``cpu`` back end: Numba-compiled, parallel, with atomics and barriers (docs/backends/cpu.md).

Checked mode (leaves' array indices tested, an ``OutOfBoundsError`` instead of a crash) is
set with ``configure``::

    import hpvm.backends.cpu as cpu

    previous = cpu.configure(checked=True)
    try:
        ...  # hpvm.launch(root, args, target="cpu"); hpvm.wait(...)
    finally:
        cpu.configure(**previous)
"""

from __future__ import annotations

from typing import Any

from ...errors import OptionError
from .backend import CPUBackend

__all__ = ["CPUBackend", "configure"]


def configure(*, checked: bool | None = None) -> dict[str, Any]:
    """Set options of the registered ``cpu`` back end; return their previous values.

    ``checked``: compile leaves with every array index checked against its array's extent
    (negative ones too), so an index out of bounds raises ``hpvm.OutOfBoundsError`` naming
    the node, leaf, line and array instead of reading or writing other memory
    (docs/backends/cpu.md, "Checked mode"). Off by default (it costs speed), unless the
    environment variable ``HPVM_CPU_CHECKED=1`` was set when the back end was first used.
    Launches made after the call run in the new mode (checked and unchecked code are
    compiled and cached apart); launches already running finish in theirs.
    """
    from ..base import get_backend

    backend = get_backend("cpu")
    assert isinstance(backend, CPUBackend)
    previous: dict[str, Any] = {"checked": backend.checked}
    if checked is not None and not isinstance(checked, bool):
        raise OptionError(f"cpu.configure: checked must be a bool (True or False), not {checked!r}")
    if checked is not None:
        backend.set_checked(checked)
    return previous
