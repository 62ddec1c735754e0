"""What the checker learns about a program: the resolved model the lowering works from.

The syntax tree says what was written; this says what it means — every constant evaluated,
every group's grid and the physical tile of each of its members, every array's shape, type,
direction and layout, the globals and the code blocks with the group they run on. The
checker (``checker.py``) builds it only from a program without problems.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.layouts import Layout
from . import ast as A

#: HBIR element types and the NumPy types their arrays hold (C's int is 32 bits).
DTYPES = {"int": np.dtype(np.int32), "float": np.dtype(np.float32), "bool": np.dtype(np.bool_)}


def axis_name(k: int) -> str:
    """The name of dimension ``k`` of a grid (tile array, memory array, group, partition
    grid): x, y, z, w, then x4, x5, ... — ``x_max``, ``tg.z``, ``target.g.y_max``."""
    return "xyzw"[k] if k < 4 else f"x{k}"


def node_grid(dims: tuple[int, ...]) -> tuple[int, ...]:
    """The grid of the hpvm node a group of ``dims`` becomes: the same up to three
    dimensions (hpvm's limit); beyond, the third and later fold into one (row-major), and
    the generated code recovers each coordinate from the z id (``codegen.py``)."""
    if len(dims) <= 3:
        return tuple(dims)
    return (dims[0], dims[1], int(np.prod(dims[2:])))


@dataclass(frozen=True)
class MemoryInfo:
    """A memory array of the target: ``memory g[4] { size 8G; width 8B; }`` is 4 memories of
    8 GiB each. ``name`` is how data flags name it (``g``, or ``t.l`` for a tile's memory);
    ``size`` and ``width`` are bytes (``None``: unknown, written ``?`` or left out)."""

    name: str
    dims: tuple[int, ...]
    size: int | None
    width: int | None
    line: int

    @property
    def count(self) -> int:
        return int(np.prod(self.dims)) if self.dims else 1


@dataclass(frozen=True)
class LayoutInfo:
    """A distribution: ``kind`` is block, chunked, strided or replicated; ``chunk`` the
    chunk size of ``chunked(c)`` (``None``: plain ``chunked``, one contiguous chunk per
    tile, i.e. block); ``placement`` global or local (recorded)."""

    kind: str
    chunk: int | None = None
    placement: str | None = None
    memory: str | None = None  # the target memory named among the flags (target.g[x][y])
    place: A.Expr | None = field(default=None, compare=False)  # that flag as written

    def chunk_for(self, n: int, tiles: int) -> int:
        """The chunk size that deals ``n`` elements to ``tiles`` tiles as this layout does
        (block = one chunk of ceil(n / tiles) each; strided = chunks of 1); 0: replicated."""
        if self.kind == "replicated":
            return 0
        if self.kind == "strided":
            return 1
        if self.kind == "chunked" and self.chunk is not None:
            return self.chunk
        return max(1, -(-n // max(tiles, 1)))

    def to_layout(self, rank: int = 1, group_dims: int = 1) -> Layout:
        """The core IR's layout (``ir/layouts.py``) with the same ownership, for an array of
        ``rank`` dimensions over a group of ``group_dims``: a vector over a 2-D group is
        dealt to its tiles in row-major order, ``axes(0, 0)``; otherwise hpvm's default
        (rows along x, columns along y)."""
        axes = (0,) * group_dims if rank == 1 and group_dims > 1 else None
        if self.kind == "replicated":
            return Layout.replicated()
        if self.kind == "strided":
            return Layout.strided(axes)
        if self.kind == "chunked" and self.chunk is not None:
            return Layout.chunked(self.chunk, axes)
        return Layout.block(axes)


@dataclass
class GroupInfo:
    """A group: its grid, its parent (nested groups) and, for a group of tiles, the physical
    tile (tile array name, coordinates) of each member."""

    name: str
    dims: tuple[int, ...]
    line: int
    parent: GroupInfo | None = None
    children: list[GroupInfo] = field(default_factory=list)
    tile_array: str | None = None
    tile_map: A.Expr | None = None  # the ``tile target.t[..]`` reference (leaf groups)
    members: dict[tuple[tuple[int, ...], ...], tuple[int, ...]] = field(default_factory=dict)
    column: int = 1

    @property
    def chain(self) -> list[GroupInfo]:
        """The enclosing groups, outermost first, then this one."""
        out: list[GroupInfo] = []
        g: GroupInfo | None = self
        while g is not None:
            out.append(g)
            g = g.parent
        return out[::-1]

    @property
    def size(self) -> int:
        return int(np.prod(self.dims)) if self.dims else 1


@dataclass
class ArrayInfo:
    """A data array: an input (host) or an output (device) of the kernel."""

    name: str
    elem: str
    shape: tuple[int, ...]
    direction: str  # "in" or "out"
    layout: LayoutInfo | None
    grid: tuple[int, ...] | None  # the grid it is partitioned over
    line: int
    group: str | None = None  # the group it is partitioned over, when ``location`` names one
    #: Where each part lives, when a memory is named among the flags: part (grid point, or
    #: ``()`` without a grid) → memory index (``None``: the memory array as a whole).
    parts: dict[tuple[int, ...], tuple[int, ...] | None] = field(default_factory=dict)

    def partitioned_over(self, group: GroupInfo) -> bool:
        """Whether the array's partition grid is ``group``'s: the group its location names,
        else any group of the same extents (``= block[R][C]`` names extents, not a group)."""
        if self.grid is None:
            return False
        return group.name == self.group if self.group is not None else group.dims == self.grid

    @property
    def dtype(self) -> np.dtype:
        return DTYPES[self.elem]


@dataclass
class GlobalInfo:
    name: str
    elem: str
    init: int | float | bool
    line: int


@dataclass
class BlockInfo:
    """A code block and the group it runs on; ``fixed[k]`` is the coordinate a block pins
    along grid dimension k (``config.tg[0][y]``), ``None`` where it binds a name."""

    block: A.Block
    group: GroupInfo
    binders: tuple[str | None, ...]
    fixed: tuple[int | None, ...]
    index: int


@dataclass
class Model:
    filename: str
    consts: dict[str, int | float | bool]
    target_values: dict[str, int]  # "target.t.x_max" -> 4
    tile_arrays: dict[str, tuple[int, ...]]
    groups: dict[str, GroupInfo]
    layouts: dict[str, LayoutInfo]
    arrays: dict[str, ArrayInfo]
    globals: dict[str, GlobalInfo]
    blocks: list[BlockInfo]
    printf_formats: list[str] = field(default_factory=list)
    memories: dict[str, MemoryInfo] = field(default_factory=dict)

    def physical_tiles(self) -> list[tuple[str, tuple[int, ...]]]:
        """Every physical tile, tile arrays in declaration order, row-major: printf order."""
        out = []
        for name, dims in self.tile_arrays.items():
            for coords in np.ndindex(*dims):
                out.append((name, tuple(int(c) for c in coords)))
        return out
