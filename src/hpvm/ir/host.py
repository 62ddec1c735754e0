"""The host API as the layers below the runtime see it: how a front end runs what it made.

Some front ends hand back programs that run themselves — ``hpvm.tensor.from_torch`` returns
a callable model, and HBIR and HPVM-C programs have ``run`` — but front ends sit below the
runtime and may not import it. So this module declares the part of the host API they need
(``Host``), and the runtime provides its implementation when it is imported (``import
hpvm`` always imports it): the front ends depend on this interface only.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..errors import RuntimeStateError


class Host(Protocol):
    """The host calls of seed 000 a self-running program makes (``hpvm.init`` and friends)."""

    def init(self) -> None: ...

    def track_memory(self, array: Any) -> None: ...

    def untrack_memory(self, array: Any) -> None: ...

    def request_memory(self, array: Any) -> Any: ...

    def launch(self, root: Any, args: Any, stream: bool = False, target: str | None = None) -> Any: ...

    def wait(self, handle: Any) -> tuple[Any, ...] | None: ...

    def push(self, handle: Any, args: Any) -> None: ...

    def pop(self, handle: Any, timeout: float | None = None) -> tuple[Any, ...]: ...

    def cleanup(self) -> None: ...


_host: Host | None = None


def provide_host(implementation: Host) -> None:
    """Install the host API (the runtime does this when it is imported)."""
    global _host
    _host = implementation


def host() -> Host:
    """The host API the runtime provided."""
    if _host is None:
        raise RuntimeStateError(
            "no hpvm runtime is loaded in this process; import hpvm (which loads it) before running a program"
        )
    return _host
