"""The host runtime: init/cleanup, the memory tracker, launches, streams, dispatch."""

from .api import (
    LaunchHandle,
    Runtime,
    cleanup,
    default_runtime,
    init,
    launch,
    mark_host_modified,
    memory_stats,
    pop,
    push,
    request_memory,
    track_memory,
    untrack_memory,
    wait,
)

__all__ = [
    "LaunchHandle",
    "Runtime",
    "cleanup",
    "default_runtime",
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
