"""Blocks: indexed access to ``capacity`` fixed-size elements at ``address`` in a RAM
memory (a NumPy view of the memory's bytes, so streams and control code alias it)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import checks, elements
from .errors import SVMError, SVMRestrictionError
from .runtime import context, current_kernel
from .where import caller_line, user_name


class Block:
    """A block variable; give it a place with ``block_init``. (``IBlock`` and ``OBlock``
    are the same type, as in the seed.)"""

    def __init__(self) -> None:
        self.name = "block"
        self.location = ""
        self.address = 0
        self.capacity = 0
        self.dtype: np.dtype | None = None
        self.data: np.ndarray | None = None  # the elements, a view of the memory
        self._signature: tuple[str, str, int] | None = None
        self._init_line = ""
        self._ctx: Any = None  # the svm.init() it was initialised under

    def __repr__(self) -> str:
        if self.data is None:
            return f"<Block {self.name} (not initialised)>"
        return f"<Block {self.name} on {self.location}@{self.address:#x}: {self.capacity} of {self.dtype}>"


IBlock = OBlock = Block


def block_init(b: Block, ram_location: str, address: int, capacity: int, element_size: Any) -> None:
    """Map ``b`` to ``capacity`` elements at byte ``address`` of memory ``ram_location``."""
    ctx = context()
    if not isinstance(b, Block):
        raise SVMError(f"block_init: expected an svm.Block, got {type(b).__name__} (at {caller_line()})")
    dtype = elements.element_dtype(element_size, "block_init")
    if not isinstance(capacity, int | np.integer) or capacity <= 0:
        raise SVMError(
            f"block_init at {caller_line()}: capacity must be a positive number of elements, got {capacity!r}"
        )
    with ctx.cond:
        name = b.name = user_name(b, b.name)
        if b._ctx is not ctx:  # a new svm.init(): nothing to compare with (B2)
            b._signature = None
        if ctx.check:
            checks.init_checks(ctx, b, "block_init", (ram_location, str(dtype), 0))
        region = ctx.region(ram_location, int(address), int(capacity) * dtype.itemsize, f"block_init({name})")
        b.name, b.location, b.address, b.capacity, b.dtype = (
            name,
            ram_location,
            int(address),
            int(capacity),
            dtype,
        )
        b.data = region.view(dtype.base).reshape((int(capacity), *dtype.shape))
        b._signature = (ram_location, str(dtype), 0)
        b._ctx = ctx
        b._init_line = caller_line()


def _checked(b: Any, index: int, function: str) -> np.ndarray:
    if not isinstance(b, Block):
        raise SVMError(f"{function}: expected an svm.Block, got {type(b).__name__} (at {caller_line()})")
    if b.data is None:
        raise SVMRestrictionError(
            "B1",
            f"{function} on a block that was never initialised, at {caller_line()}: call block_init first",
        )
    if not isinstance(index, int | np.integer) or not 0 <= index < b.capacity:
        raise SVMError(
            f"{function}({b.name}, {index}) at {caller_line()}: index out of bounds: block {b.name} holds "
            f"{b.capacity} elements (indices 0 to {b.capacity - 1})"
        )
    ctx = context()
    if b._ctx is not ctx:
        raise SVMError(
            f"{function}: block {b.name} was initialised before the last svm.init() (at {b._init_line}); "
            "initialise it again on the machine in use"
        )
    kernel = current_kernel()
    with ctx.cond:
        if kernel is not None:
            ctx.checkpoint(kernel)
            if ctx.check:
                checks.kernel_reaches(ctx, kernel, b, function)
        ctx.observe(b, "block", "writer" if function == "block_write" else "reader", kernel)
    return b.data


def block_write(b: Block, index: int, element: Any) -> None:
    """Store ``element`` at ``index`` (``0 <= index < capacity``)."""
    data = _checked(b, index, "block_write")
    data[index] = elements.one(element, b.dtype, f"block_write({b.name})")[0]


def block_read(b: Block, index: int) -> Any:
    """The element at ``index`` (``0 <= index < capacity``)."""
    data = _checked(b, index, "block_read")
    return elements.value(data[index : index + 1].copy(), b.dtype)
