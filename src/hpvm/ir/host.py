"""The host API as the layers below the runtime see it: how a front end runs what it made.

Some front ends hand back programs that run themselves — ``hpvm.tensor.from_torch`` returns
a callable model, and HBIR and HPVM-C programs have ``run`` — but front ends sit below the
runtime and may not import it. So this module declares the part of the host API they need
(``Host``), and the runtime provides its implementation when it is imported: the front ends
depend on this interface only. ``import hpvm`` does not import the runtime (it loads NumPy
and the whole IR, and ``import hpvm`` stays cheap): the root package names the module that
provides the host (``provide_host_from``), and the first call that needs a host imports it.

A program that behaves as a process of its own (an HPVM-C ``main``, which calls
``__hpvm__cleanup`` when it is done) must not share the process's runtime with another one
running at the same time: ``new_host()`` makes a fresh runtime for it (the runtime provides
the factory), and ``using_host(h)`` makes ``host()`` answer ``h`` on the calling thread while
that program's code runs, so code that calls ``host()`` needs no handle passed down.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
_factory: Callable[[], Host] | None = None
_provider: str | None = None  # the module whose import calls provide_host (set by hpvm/__init__)
_local = threading.local()  # .host: the host of the program running on this thread


def provide_host(implementation: Host, factory: Callable[[], Host] | None = None) -> None:
    """Install the host API (the runtime does this when it is imported); ``factory`` makes a
    fresh one for ``new_host`` (without it, ``new_host`` answers ``implementation``)."""
    global _host, _factory
    _host = implementation
    _factory = factory


def provide_host_from(module: str) -> None:
    """Name the module whose import provides the host (``hpvm.runtime``), imported when a
    host is first needed: the root package wires the layers without loading the runtime."""
    global _provider
    _provider = module


def _load_provider() -> None:
    """Import the named provider if no host is installed yet."""
    if _host is None and _provider is not None:
        importlib.import_module(_provider)


def provided() -> tuple[Host | None, Callable[[], Host] | None]:
    """What ``provide_host`` installed (to put it back later: ``provide_host(*provided())``)."""
    _load_provider()
    return _host, _factory


def new_host() -> Host:
    """A host of its own for a program that runs as a process would: a fresh runtime (its
    own memory tracker, workers and handles) when the runtime provided a factory, else the
    installed host."""
    _load_provider()
    if _factory is not None:
        return _factory()
    return host()


@contextmanager
def using_host(implementation: Host) -> Iterator[None]:
    """``host()`` answers ``implementation`` on this thread inside the block."""
    previous = getattr(_local, "host", None)
    _local.host = implementation
    try:
        yield
    finally:
        _local.host = previous


def host() -> Host:
    """The host of the program running on this thread (``using_host``), else the one the
    runtime provided."""
    current = getattr(_local, "host", None)
    if current is not None:
        return current
    _load_provider()
    if _host is None:
        raise RuntimeStateError(
            "no hpvm runtime is loaded in this process; import hpvm (which loads it) before running a program"
        )
    return _host
