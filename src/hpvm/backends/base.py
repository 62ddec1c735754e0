"""The back-end interface and registry.

A back end runs a whole root graph (``run``) or, for streaming, one pipeline stage: a subset
of the root's children for one pushed item (``run_stage``). Back ends register a factory
under their name; heavy dependencies are imported only when a back end is first used.
"""

from __future__ import annotations

import threading
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import BackendUnavailableError, HPVMWarning
from ..ir.graph import CPU_TARGET, GPU_TARGET, TENSOR_TARGET, InternalFunction, Node

# What each hint means, as back ends in order of preference: the first one available runs.
HINT_PREFERENCES: dict[str | None, tuple[str, ...]] = {
    None: ("cpu", "interp"),
    CPU_TARGET: ("cpu", "interp"),
    GPU_TARGET: ("cuda", "opencl"),
    TENSOR_TARGET: ("tensor",),
}


PortKey = tuple[int, str]  # (output port, "each" | "last"): see Backend.export_outputs


class Backend(ABC):
    """One way of executing HPVM graphs."""

    name: str = "?"
    device: str = "host"  # the address space its arrays live in (the memory tracker's key)

    @abstractmethod
    def run(self, root: InternalFunction, args: Sequence[Any]) -> tuple[Any, ...]:
        """Execute ``root`` once with ``args``; return its outputs."""

    def compile(self, root: InternalFunction, args: Sequence[Any]) -> None:  # noqa: B027 — optional hook
        """Compile ``root`` for these argument types ahead of ``run`` (no-op if nothing to do).

        Lets callers report compile time separately from run time (``hpvm run --timings``).
        """

    # -- values crossing from one back end to another (graphs that mix devices) ----------
    #
    # ``run_stage`` returns each node's outputs in the back end's own form. When the next
    # stage runs on another back end they travel in the exchange form: a dict from
    # ``(output port, mode)`` to a host value, where mode ``"last"`` is the value of the last
    # instance (what all-to-all edges and output binds read) and ``"each"`` is a NumPy array
    # shaped like the node's grid holding every instance's value of a scalar port (what
    # one-to-one edges read). Arrays travel as ``"last"`` only: the instances of a replicated
    # node hand on one shared array. The defaults suit back ends whose own form is that one.

    def export_outputs(self, node: Node, sizes: tuple[int, ...], produced: Any) -> dict[PortKey, Any]:
        """``node``'s outputs from ``run_stage`` in the exchange form."""
        return produced

    def import_outputs(self, node: Node, sizes: tuple[int, ...], values: dict[PortKey, Any]) -> Any:
        """``node``'s outputs in the exchange form as this back end's ``upstream`` entry."""
        return values

    @abstractmethod
    def run_stage(
        self,
        root: InternalFunction,
        args: Sequence[Any],
        nodes: Sequence[Node],
        upstream: dict[str, Any],
    ) -> tuple[dict[str, Any], dict[int, Any]]:
        """Execute ``nodes`` (children of ``root``) for one streamed item.

        ``upstream`` holds the outputs of children run by other stages (by node name). Returns
        the outputs of ``nodes`` (by node name, opaque to the scheduler) and the root outputs
        that ``nodes`` produce (by output index).
        """


# ---------------------------------------------------------------------------------------
# Warnings from a running graph
#
# Graphs run on runtime threads (pool workers, one per pipeline stage), but a warning
# belongs to the host code that launched the graph: Python's warning filters and
# ``warnings.catch_warnings`` (``pytest.warns``) are process-wide and not thread-safe, and a
# warning raised on a worker thread points at back-end internals. So back ends report
# warnings through ``warn``; the runtime collects them per execution and re-issues them on
# the host thread at ``wait`` / ``pop``, pointing at the user's call.

_collecting = threading.local()


def warn(message: str, category: type[Warning] = HPVMWarning) -> None:
    """Report a warning about the running graph (delivered to the host at wait/pop)."""
    sink = getattr(_collecting, "sink", None)
    if sink is None:
        warnings.warn(message, category, stacklevel=3)
    else:
        sink.append((message, category))


@contextmanager
def collecting_warnings() -> Iterator[list[tuple[str, type[Warning]]]]:
    """Collect the ``warn`` calls made on this thread inside the block, instead of issuing them."""
    previous = getattr(_collecting, "sink", None)
    sink: list[tuple[str, type[Warning]]] = []
    _collecting.sink = sink
    try:
        yield sink
    finally:
        _collecting.sink = previous


def reissue_warnings(caught: list[tuple[str, type[Warning]]], stacklevel: int = 3) -> None:
    """Issue collected warnings on the calling (host) thread; ``stacklevel`` 3 points at the
    caller of the runtime function that calls this."""
    for message, category in caught:
        warnings.warn(message, category, stacklevel=stacklevel)


_FACTORIES: dict[str, Callable[[], Backend]] = {}
_INSTANCES: dict[str, Backend] = {}
_MISSING: dict[str, str] = {}  # back ends known but not available here, with the reason


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    _FACTORIES[name] = factory


def mark_unavailable(name: str, reason: str) -> None:
    """Record that ``name`` is known but cannot run here (shown in error messages)."""
    _MISSING[name] = reason


def available_backends() -> list[str]:
    return sorted(_FACTORIES)


def get_backend(name: str) -> Backend:
    if name not in _FACTORIES:
        why = _MISSING.get(name, "no such back end")
        raise BackendUnavailableError(
            f"back end {name!r} is not available: {why}; available here: {', '.join(available_backends())}"
        )
    if name not in _INSTANCES:
        _INSTANCES[name] = _FACTORIES[name]()
    return _INSTANCES[name]


def backend_for_hint(hint: str | None) -> str:
    """The first available back end for a hint (``None``: no hint, which means the CPU)."""
    prefs = HINT_PREFERENCES.get(hint)
    if prefs is None:
        raise BackendUnavailableError(f"unknown hint {hint!r}")
    for name in prefs:
        if name in _FACTORIES:
            return name
    raise BackendUnavailableError(
        f"no back end for hint {hint!r} is available (tried {', '.join(prefs)}: "
        + "; ".join(f"{n}: {_MISSING.get(n, 'not built')}" for n in prefs)
        + f"); available: {', '.join(available_backends())}; pass target='interp' to run anyway"
    )
