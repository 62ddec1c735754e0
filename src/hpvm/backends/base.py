"""The back-end interface and registry.

A back end runs a whole root graph (``run``) or, for streaming, one pipeline stage: a subset
of the root's children for one pushed item (``run_stage``). Back ends register a factory
under their name; heavy dependencies are imported only when a back end is first used.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import BackendUnavailableError
from ..ir.graph import CPU_TARGET, GPU_TARGET, TENSOR_TARGET, InternalFunction, Node

# What each hint means, as back ends in order of preference: the first one available runs.
HINT_PREFERENCES: dict[str | None, tuple[str, ...]] = {
    None: ("cpu", "interp"),
    CPU_TARGET: ("cpu", "interp"),
    GPU_TARGET: ("cuda", "opencl"),
    TENSOR_TARGET: ("tensor",),
}


class Backend(ABC):
    """One way of executing HPVM graphs."""

    name: str = "?"
    device: str = "host"  # the address space its arrays live in (the memory tracker's key)

    @abstractmethod
    def run(self, root: InternalFunction, args: Sequence[Any]) -> tuple[Any, ...]:
        """Execute ``root`` once with ``args``; return its outputs."""

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
            f"back end {name!r} is not available: {why}; available here: "
            f"{', '.join(available_backends())}"
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
