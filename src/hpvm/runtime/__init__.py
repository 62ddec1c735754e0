"""The host runtime: init/cleanup, the memory tracker, launches, streams, dispatch."""

from .api import (
    LaunchHandle,
    cleanup,
    init,
    launch,
    mark_host_modified,
    pop,
    push,
    request_memory,
    track_memory,
    untrack_memory,
    wait,
)
from .memory import memory_stats

__all__ = [
    "LaunchHandle",
    "cleanup",
    "init",
    "launch",
    "mark_host_modified",
    "memory_stats",
    "pop",
    "push",
    "request_memory",
    "track_memory",
    "untrack_memory",
    "wait",
]
