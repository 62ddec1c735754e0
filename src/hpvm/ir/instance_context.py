"""The instance context: what a leaf's structure queries read, in one layout for every back end.

A compiled leaf does not walk node handles: it receives its *context*, int64 values that
say where its instance sits — for its own node (level 0), its parent (level 1) and so on up
to the root — and each query intrinsic becomes a read at a constant index. The ``cpu`` back
end passes it as a tuple, ``cuda`` builds the same tuple in each GPU thread, ``opencl`` an
array; the GPU lowering keeps the ancestors' part in a table, one row per parent instance.
One definition keeps the producers and the readers in agreement.

Per level, ``STRIDE`` values: the instance ids x, y, z; the extents x, y, z; the number of
dimensions. Dimensions a node is not replicated in have id 0 and extent 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

STRIDE = 7
ID = 0  # + axis: the instance id along x, y, z
EXTENT = 3  # + axis: the number of instances along x, y, z
DIMS = 6  # the number of dimensions the node is replicated in

#: The offset within a level that each query intrinsic reads.
QUERY_OFFSETS = {
    "get_node_instance_id_x": ID,
    "get_node_instance_id_y": ID + 1,
    "get_node_instance_id_z": ID + 2,
    "get_num_node_instances_x": EXTENT,
    "get_num_node_instances_y": EXTENT + 1,
    "get_num_node_instances_z": EXTENT + 2,
    "get_num_dims": DIMS,
}

#: How the leaf IR's text form names each offset within a level (``@ctx[1].count_x``).
FIELD_NAMES = ("id_x", "id_y", "id_z", "count_x", "count_y", "count_z", "dims")

T = TypeVar("T")


def index(level: int, offset: int) -> int:
    """The position of ``offset`` (``ID + axis``, ``EXTENT + axis``, ``DIMS``) of ancestor
    ``level`` (0: the node itself) in a context."""
    return STRIDE * level + offset


def level(dims: int, ids: Sequence[T], extents: Sequence[T]) -> list[T | int]:
    """One level's ``STRIDE`` values: ``ids`` padded with 0 and ``extents`` padded with 1 to
    three dimensions, then ``dims``. The items may be numbers or expressions in generated
    code (``str(item)`` then writes them)."""
    return [*ids, *[0] * (3 - len(ids)), *extents, *[1] * (3 - len(extents)), dims]


#: The root's level: one instance, no dimensions.
ROOT: tuple[int, ...] = tuple(level(0, (), ()))  # type: ignore[arg-type]


def level_rows(sizes: Sequence[int]) -> np.ndarray:
    """The level of every instance of a node replicated over ``sizes``: an int64 array
    ``[prod(sizes), STRIDE]``, instances in row-major order (x outermost, as seed 001's loop
    nest visits them)."""
    count = int(np.prod(sizes, dtype=np.int64)) if sizes else 1
    rows = np.empty((count, STRIDE), dtype=np.int64)
    rows[:, :] = level(len(sizes), [0] * len(sizes), list(sizes))
    if sizes:
        rows[:, ID : ID + len(sizes)] = np.indices(sizes).reshape(len(sizes), -1).T
    return rows
