"""Which internal node function is having its child graph built, on this thread.

Building a graph is the front end's job (``hpvm.lang`` traces builder functions), but the
IR must know when it happens: a size expression compared with ``==`` while a graph is being
built is a data-dependent branch in disguise (``Expr.__eq__`` refuses it), and a leaf
intrinsic called there is a misplaced computation. The state lives here, below every front
end, so the IR never has to import one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .graph import ChildGraph, InternalFunction

_state = threading.local()


@dataclass
class TraceContext:
    """One internal node function being built: its graph so far and its symbolic inputs."""

    function: InternalFunction
    graph: ChildGraph
    symbols: list[Any] = field(default_factory=list)


def _stack() -> list[TraceContext]:
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    return stack


def tracing() -> TraceContext | None:
    """The internal node function being built on this thread, if any (the innermost)."""
    stack = _stack()
    return stack[-1] if stack else None


@contextmanager
def building(ctx: TraceContext) -> Iterator[TraceContext]:
    """Mark ``ctx`` as being built on this thread for the duration of the block."""
    stack = _stack()
    stack.append(ctx)
    try:
        yield ctx
    finally:
        stack.pop()
