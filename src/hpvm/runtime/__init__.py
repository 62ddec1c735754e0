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

# front ends run the programs they make through the default runtime; a program that runs as a
# process of its own (HPVM-C's main) gets a fresh Runtime (ir/host.py's new_host)
provide_host(api, factory=Runtime)

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
