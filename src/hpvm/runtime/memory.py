"""The default runtime's memory tracker, for tools and tests (``hpvm.memory_stats`` is the
public summary). The tracker itself is ``hpvm.backends.memory.MemoryTracker``: back ends
work with it through their run context, and each ``Runtime`` owns one."""

from __future__ import annotations

from ..backends.memory import MemoryTracker, Transfers
from .api import default_runtime, memory_stats


def runtime_tracker() -> MemoryTracker:
    """The tracker of the default runtime (the one ``hpvm.track_memory`` fills)."""
    return default_runtime().tracker


__all__ = ["MemoryTracker", "Transfers", "memory_stats", "runtime_tracker"]
