"""The host runtime: init/cleanup, the memory tracker, launches, streams, dispatch."""

from .api import (
    LaunchHandle,
    cleanup,
    init,
    launch,
    pop,
    push,
    request_memory,
    track_memory,
    untrack_memory,
    wait,
)

__all__ = [
    "LaunchHandle",
    "cleanup",
    "init",
    "launch",
    "pop",
    "push",
    "request_memory",
    "track_memory",
    "untrack_memory",
    "wait",
]
