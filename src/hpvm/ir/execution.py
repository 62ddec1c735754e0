"""How running leaf code reaches the back end that runs it: the execution context.

Leaf code calls intrinsics as ordinary functions (``hpvm.get_node()``). A back end that runs
leaf Python as it is (the interpreter) installs an *execution context* on the thread while
a leaf instance runs, and each intrinsic forwards to it; compiled back ends replace the
calls at compile time instead. The slot lives in the IR, below the front end that defines
the intrinsic functions and the back ends that install contexts, so neither imports the
other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol


class ExecutionContext(Protocol):
    """What a back end provides to leaf code running under the Python intrinsics."""

    def get_node(self) -> Any: ...

    def get_parent_node(self, node: Any) -> Any: ...

    def get_num_dims(self, node: Any) -> int: ...

    def instance_id(self, node: Any, axis: int) -> int: ...

    def num_instances(self, node: Any, axis: int) -> int: ...

    def malloc(self, nbytes: int) -> Any: ...

    def atomic(self, op: str, array: Any, index: Any, value: Any) -> Any: ...

    def barrier(self) -> None: ...


_local = threading.local()


@contextmanager
def executing(ctx: ExecutionContext) -> Iterator[None]:
    """Install ``ctx`` as this thread's execution context for the duration of the block."""
    previous = getattr(_local, "ctx", None)
    _local.ctx = ctx
    try:
        yield
    finally:
        _local.ctx = previous


def set_context(ctx: ExecutionContext | None) -> None:
    """Switch this thread's context (for back ends that interleave instances on one thread)."""
    _local.ctx = ctx


def current_context() -> ExecutionContext | None:
    """This thread's execution context, if a leaf is running."""
    return getattr(_local, "ctx", None)
