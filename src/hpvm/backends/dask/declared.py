"""Chunks of a replicated leaf (or internal node) by the layouts declared on its array ports.

Why. A declared layout (``ir/layouts.py``: block, chunked(c), strided, replicated) says
which elements each instance of a node owns. A leaf whose indexing the ownership proof
(``ownership.py``) cannot read — generated code from HBIR, a tile loop over
``first = id * chunk`` — can still be split by it: the instances are cut along grid
dimension x into one contiguous range per worker, and each range gets exactly the
elements its instances own along the array axis x partitions (other axes whole), keeping
the original ids (``offsets.py``). A replicated internal node splits alike, whole
instances at a time: its layouts are on its own ports. What comes back is the owned elements of the arrays
the leaf may write.

Which layout. The leaf port's own; else the layout of the root input bound to it (HBIR
writes its ``data`` layouts there), read over the leaf's grid. An array whose layout is
``replicated``, or does not partition along x, or that has no layout and is only read, is
sent whole (scattered to every worker); one the leaf may write must be partitioned along
x (a chunk owning every element could not write apart from the others), else the plan is
refused and the node runs whole.

A layout is a placement promise, not an access rule (docs/layouts.md): an instance may
touch elements it does not own. A split run cannot show it those, so every chunk is
checked (``tasks.run_layout_chunk``): it runs twice, its arrays' elements it does not own
holding a guard value (NaN, the integer minimum) the first time and a different value per
element the second; if a written element it does not own changes, or what it writes or
returns differs between the two runs (it read a guard), the launch is not taken from the
chunks: the node runs whole on one worker, and the notes name the port. Reads or writes of
other chunks' elements never give silent wrong results; they cost the split.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...ir.graph import InternalFunction, LeafFunction, Node, NodeFunction
from ...ir.layouts import Layout
from ...ir.leafinfo import analyze_leaf
from ...ir.types import ArrayType
from .offsets import offset_problem


@dataclass(frozen=True)
class Piece:
    """What a chunk gets of an array partitioned by a layout: the elements instances
    ``[lo, hi)`` of grid ``grid`` own along ``axis`` (``index``), packed; the rest of the
    array is filled with guards on the worker. The piece names its elements by the layout,
    not by an index array, so it is a few bytes on the wire: the worker derives ``index``
    (cached per process), and the packed values travel apart from it — as a piece kept on
    the workers across launches (``resident.py``) or inline."""

    shape: tuple[int, ...]
    dtype: np.dtype
    axis: int
    layout: Layout
    grid: tuple[int, ...]
    lo: int
    hi: int

    @property
    def index(self) -> np.ndarray:
        return owned_index(self.layout, self.shape, self.grid, self.lo, self.hi)

    @property
    def key(self) -> tuple[Any, ...]:
        """Names the piece among those kept for its host array (``resident.Resident.keep``)."""
        return ("layout", str(self.layout), self.shape, self.grid, self.lo, self.hi)


@dataclass
class LayoutPlan:
    """Root input -> the layout partitioning it along x (others go whole)."""

    parts: dict[int, Layout] = field(default_factory=dict)
    #: (root input) -> where the layout came from, for notes: "port 'A' of 'tg_0'" ...
    origin: dict[int, str] = field(default_factory=dict)


def port_layout(root: InternalFunction, leaf: NodeFunction, ip: int, ic: int) -> Layout | None:
    """The layout that partitions root input ``ip`` for leaf port ``ic`` (module doc)."""
    return leaf.params[ic].layout or root.params[ip].layout


def has_layouts(root: InternalFunction, node: Node) -> bool:
    leaf = node.function
    return any(
        isinstance(root.params[b.ip].type, ArrayType) and port_layout(root, leaf, b.ip, b.ic) is not None  # type: ignore[arg-type]
        for b in root.graph.in_binds
    )


def plan_layouts(root: InternalFunction, node: Node, written: list[int]) -> LayoutPlan | str:
    """How ``node`` (the root's one child, a replicated leaf) splits by its layouts, or why
    it cannot."""
    leaf = node.function
    problem = offset_problem(leaf)
    if problem is not None:
        return problem
    if isinstance(leaf, LeafFunction):  # (below an internal node, a parent instance stays whole)
        info = analyze_leaf(leaf)
        if info.uses_barrier:
            return f"leaf '{leaf.name}' calls barrier, which spans all instances of the node"
        if any(name == "malloc" for name, _ in info.calls):
            return f"leaf '{leaf.name}' calls malloc: one buffer is shared by all instances of the node"
    plan = LayoutPlan()
    dims = node.dims
    for b in root.graph.in_binds:
        param = root.params[b.ip]
        if not isinstance(param.type, ArrayType):
            continue
        layout = port_layout(root, leaf, b.ip, b.ic)
        kind = "leaf" if isinstance(leaf, LeafFunction) else "internal node"
        port = f"'{leaf.params[b.ic].name}' of {kind} '{leaf.name}'"
        axis = None if layout is None else layout.grid_axes(param.type.rank, dims)[0]
        if axis is not None and layout is not None:
            if np.dtype(param.type.dtype).kind not in "biuf":
                return f"{port} holds {param.type.dtype} elements, which have no guard value"
            known = plan.parts.get(b.ip)
            if known is not None and known != layout:
                return f"root input '{param.name}' reaches leaf '{leaf.name}' with two layouts ({known}, {layout})"
            plan.parts[b.ip] = layout
            plan.origin[b.ip] = port
    for ip in written:
        if ip not in plan.parts:
            name = root.params[ip].name
            return (
                f"'{name}' is written by '{leaf.name}' but its layout does not partition it "
                "along grid dimension x (declare block, chunked or strided on it)"
            )
    for b in root.graph.in_binds:
        if b.ip in plan.parts and port_layout(root, leaf, b.ip, b.ic) is None:
            return f"root input '{root.params[b.ip].name}' reaches leaf '{leaf.name}' both with and without a layout"
    return plan


def owners(layout: Layout, shape: tuple[int, ...], grid: tuple[int, ...]) -> tuple[int, np.ndarray]:
    """The axis x partitions and, for each element along it, the instance id x owning it.

    Other grid dimensions may partition that axis together with x (``axes(0, 0)``: HBIR's
    vector over a 2-D group); every combination of their ids is visited, and x's id is the
    owner (a range of x ids holds whole rows of the grid)."""
    mapping = layout.grid_axes(len(shape), len(grid))
    axis = mapping[0]
    assert axis is not None
    together = [d for d, a in enumerate(mapping) if a == axis]
    n = shape[axis]
    owner = np.full(n, -1, dtype=np.int64)
    for point in itertools.product(*(range(grid[d]) if d in together else (0,) for d in range(len(grid)))):
        for r in layout.owned(shape, grid, point)[axis]:
            owner[r.start : r.stop : r.step] = point[0]
    return axis, owner


@functools.lru_cache(maxsize=256)
def owned_index(
    layout: Layout, shape: tuple[int, ...], grid: tuple[int, ...], lo: int, hi: int
) -> np.ndarray:
    """The indices along the partitioned axis that instances ``[lo, hi)`` own (read-only:
    cached, as every launch of those sizes asks again, on the host and on the workers)."""
    _, owner = owners(layout, shape, grid)
    index = np.flatnonzero((owner >= lo) & (owner < hi))
    index.setflags(write=False)
    return index


def piece(array: np.ndarray, layout: Layout, grid: tuple[int, ...], lo: int, hi: int) -> Piece:
    """The piece of ``array`` that instances ``[lo, hi)`` own under ``layout``."""
    axis = layout.grid_axes(array.ndim, len(grid))[0]
    assert axis is not None
    return Piece(tuple(array.shape), array.dtype, axis, layout, tuple(grid), lo, hi)


def pack(array: np.ndarray, p: Piece) -> np.ndarray:
    """The elements of ``array`` piece ``p`` names, packed (a view when they are contiguous)."""
    index = p.index
    if index.size and index[-1] - index[0] + 1 == index.size:
        sel: list[object] = [slice(None)] * array.ndim
        sel[p.axis] = slice(int(index[0]), int(index[-1]) + 1)
        return array[tuple(sel)]
    return np.take(array, index, axis=p.axis)


def put_back(array: np.ndarray, p: Piece, values: np.ndarray) -> None:
    """Copy a chunk's owned elements into the host's array."""
    sel: list[object] = [slice(None)] * array.ndim
    sel[p.axis] = p.index
    target = array[tuple(sel)]
    if not np.may_share_memory(target, values):
        array[tuple(sel)] = values
