"""Control code's window on a RAM memory: ``memory_view`` (the seed's examples read a
file into a memory, then alias it with a stream)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .elements import element_dtype
from .errors import SVMError
from .runtime import context


def memory_view(location: str, address: int, count: int, dtype: Any = np.uint8) -> np.ndarray:
    """A NumPy view of ``count`` elements of ``dtype`` at byte ``address`` of memory
    ``location``: writes through it are what streams and blocks there read."""
    dt = element_dtype(dtype, "memory_view")
    if not isinstance(count, int | np.integer) or count < 0:
        raise SVMError(
            f"memory_view({location!r}, {address}, {count}): count must be a number of elements >= 0"
        )
    ctx = context()
    with ctx.cond:
        region = ctx.region(
            location,
            int(address),
            int(count) * dt.itemsize,
            f"memory_view({location!r}, {address:#x}, {count})",
        )
    return region.view(dt.base).reshape((int(count), *dt.shape))
