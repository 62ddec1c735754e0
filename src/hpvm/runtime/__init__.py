"""The host runtime: init/cleanup, the memory tracker, launches, streams, dispatch."""

from ..ir.host import provide_host
from . import api
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

provide_host(api)  # front ends run the programs they make through the default runtime

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
