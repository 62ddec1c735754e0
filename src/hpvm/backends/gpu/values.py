"""Values of the GPU lowering at run time: storages, columns, instance sets, node results.

A *column* holds one port's values over the instances of one level: uniform (a host value)
or rows of a *storage* (a device buffer of scalars, or a pool of equally shaped arrays)
through an optional index map, so that moving a value to another level (a parent's value
to each of its children, the last instance's value to its parent) is an index map on the
host, never a copy. See ``plan.py``.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import LaunchError
from ...ir import instance_context as ictx
from ...ir.graph import Node
from ..base import RunContext
from .device import GPUDevice

_NO = object()


class Storage:
    """Per-row values of one port: scalars ``[rows]`` or a pool of arrays ``[rows, *shape]``.

    Lives on the host, the device or both; ``host`` is dropped when a kernel may write it.
    """

    def __init__(self, host: np.ndarray | None = None, device: Any = None, pool: bool = False):
        self.host = host
        self.device = device
        self.pool = pool
        self.shared_step: int | None = None  # id of the only kernel step that uses this pool

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple((self.host if self.host is not None else self.device).shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype((self.host if self.host is not None else self.device).dtype)

    def on_device(self, dev: GPUDevice, ctx: RunContext) -> Any:
        if self.device is None:
            assert self.host is not None
            self.device = dev.to_device(self.host)
            ctx.record(to_device=self.host.nbytes, internal=True)
        return self.device

    def on_host(self, dev: GPUDevice, ctx: RunContext) -> np.ndarray:
        if self.host is None:
            host = np.empty(self.shape, self.dtype)
            dev.synchronize()
            dev.copy_to_host(self.device, host)
            ctx.record(to_host=host.nbytes, internal=True)
            self.host = host
        return self.host


class Column:
    """The values of one port over the instances of one level (see the module doc)."""

    __slots__ = ("map", "storage", "uniform")

    def __init__(self, uniform: Any = _NO, storage: Storage | None = None, map: np.ndarray | None = None):
        self.uniform = uniform
        self.storage = storage
        self.map = map

    @property
    def is_uniform(self) -> bool:
        return self.uniform is not _NO

    def remap(self, index: np.ndarray) -> Column:
        """The column over another level whose row ``i`` is this column's row ``index[i]``."""
        if self.is_uniform:
            return self
        new = index if self.map is None else self.map[index]
        assert self.storage is not None
        if len(new) == self.storage.shape[0] and np.array_equal(new, np.arange(len(new))):
            new = None  # the identity: no map to upload and read
        return Column(storage=self.storage, map=new)

    def row(self, i: int, dev: GPUDevice, ctx: RunContext) -> Any:
        """The host value of row ``i``."""
        if self.is_uniform:
            return self.uniform
        assert self.storage is not None
        r = int(self.map[i]) if self.map is not None else i
        value = self.storage.on_host(dev, ctx)[r]
        return value.copy() if self.storage.pool else value


@dataclass
class InstanceSet:
    """The instances of one internal node function in this execution (all parents flattened).

    ``key``: equal keys mean equal instances (what ``reuse.RunCache`` keys values derived
    from the level by); ``None`` when they came from values of this run."""

    count: int
    ctx: np.ndarray  # [count, 7 * len(names)]: this level's ids/extents/dims, then the ancestors'
    names: list[str]  # node names, this level first, the root last
    key: Hashable | None = None

    def path(self, r: int) -> str:
        parts = []
        for level, name in enumerate(self.names):
            dims = int(self.ctx[r, ictx.index(level, ictx.DIMS)])
            first = ictx.index(level, ictx.ID)
            ids = [int(v) for v in self.ctx[r, first : first + dims]]
            parts.append(f"{name}{ids if ids else ''}")
        return "/".join(reversed(parts))


@dataclass
class NodeResult:
    """A node's outputs in this execution: per instance (``each``) and per parent (``last``).

    ``key``: equal keys mean equal grids (``sizes``, ``counts``, ``offsets``, shared then by
    the runs that find them: read-only); ``None`` for grids computed from this run's values."""

    node: Node
    sizes: np.ndarray  # [P, dims]
    counts: np.ndarray  # [P] instances per parent instance
    offsets: np.ndarray  # [P] flat index of each parent's first instance
    each: dict[int, Column] = field(default_factory=dict)
    last_cols: dict[int, Column] = field(default_factory=dict)
    key: Hashable | None = None

    def parent_of(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.counts), dtype=np.int64), self.counts)

    def last_index(self, what: str) -> np.ndarray:
        if (self.counts == 0).any():
            raise LaunchError(
                f"{what}: the source node has no instances in this execution, so it sends no value"
            )
        return self.offsets + self.counts - 1

    def last(self, port: int, what: str) -> Column:
        col = self.last_cols.get(port)
        if col is None:
            col = self.last_cols[port] = self.each[port].remap(self.last_index(what))
        elif (self.counts == 0).any():
            self.last_index(what)  # raises
        return col


def sizes_equal(a: NodeResult, b: NodeResult) -> bool:
    return a.sizes.shape == b.sizes.shape and bool((a.sizes == b.sizes).all())
