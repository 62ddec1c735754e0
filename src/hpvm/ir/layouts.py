"""Data layouts of array ports: how an array is partitioned over a node's instance grid.

A replicated node runs one dynamic instance per point of its *grid* (``len(grid)`` of 0 to
3 dimensions, x, y, z, with extents ``grid``). An array parameter of its node function may
carry a ``Layout`` saying which elements each instance *owns* — seed 002's ``data``
segment (HammerBlade IR writes layouts; a distributed back end places each instance's
part of the array next to it). The layout is a promise about placement, not a rule about
access: every back end that does not use layouts runs the program unchanged, and an
instance may still read or write any element (what is not owned is merely remote).

The contract, which a distributed back end relies on:

**Which grid dimension partitions which array axis.** ``axes`` lists, for grid dimension
x, y, z in that order, the array axis it partitions, or ``None`` for a grid dimension
that partitions nothing. Missing trailing entries are ``None`` (``(0,)`` and
``(0, None, None)`` are the same layout; the constructor drops trailing ``None``\\ s).
``axes=None`` (the default) means: grid dimension k partitions array axis k for every
k < min(array rank, grid dimensions) — a 2-D array on a 2-D grid is split by x along
rows and by y along columns; on a 1-D grid only its rows are split. Several grid
dimensions may partition the same axis *together*: their instances are numbered row-major
(the first named dimension slowest) and the axis is dealt over all of them as over one
dimension of their product — ``axes=(0, 0)`` on a 2-D grid of X×Y deals a vector's chunks to
instance ``t = x·Y + y``, HammerBlade IR's tile order (seed 002). An axis must be < the
array's rank, and a node must be replicated in every grid dimension its layouts name
explicitly (``axes=(None, 0)`` needs a 2-D grid); the verifier reports each of these.

**What an instance owns**, per array axis of length ``n``, for the grid dimension of
extent ``G`` that partitions it and the instance's id ``i`` along that dimension
(0 <= i < G; for several dimensions partitioning the axis together, ``G`` is the product of
their extents and ``i`` the instance's row-major number among them):

- ``block``: contiguous blocks of ``b = ceil(n / G)`` elements; instance i owns
  ``[i*b, min((i+1)*b, n))``. The last blocks may be short or empty (n = 10, G = 4:
  3, 3, 3, 1 elements; n = 4, G = 3: 2, 2, 0).
- ``chunked(c)`` (c >= 1): block-cyclic; the axis is cut into chunks of c elements
  (the last may be short), and chunk j goes to instance ``j mod G``: instance i owns
  ``[k*c, min(k*c + c, n))`` for every k ≡ i (mod G).
- ``strided``: element-cyclic, exactly ``chunked(1)``: instance i owns the elements
  i, i + G, i + 2G, ...
- ``replicated``: every instance owns every element (each holds a full copy); it takes
  no ``axes``.

An axis that no grid dimension partitions is owned whole by every instance. So an
instance owns the Cartesian product of its per-axis sets; instances that differ only along
grid dimensions that partition nothing own the same elements (those dimensions replicate).
For every partitioned axis the sets of the G instances along its grid dimension(s) are
disjoint and cover ``range(n)`` exactly once.

``Layout.owned(shape, grid, ids)`` computes these sets: per array axis, a list of
disjoint, non-empty ``range`` objects in increasing order (an empty list: nothing owned).
``strided`` and ``chunked(1)`` give one stepped range, ``range(i, n, G)``.

**Text spelling** (``str(layout)``, ``Layout.parse``, and inside ``layout(...)`` after a
parameter's type in the IR text, docs/text-format.md): ``block``, ``chunked(4)``,
``strided``, ``replicated``, optionally followed by ``, axes(0, _, 1)`` — one entry per
grid dimension x, y, z, an integer array axis or ``_`` for "partitions nothing".

Structural nonsense (an unknown kind, a chunk size on a layout other than ``chunked``, more
than three axes, ``axes`` on ``replicated``) is refused when a ``Layout`` is made
(``ValueError``/``TypeError``, as port types do); what depends on the parameter or the node
(non-array parameter, axis out of rank, chunk < 1, too few grid dimensions)
is left to ``hpvm.verify``, so that any layout can be written down and read back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

BLOCK = "block"
CHUNKED = "chunked"
STRIDED = "strided"
REPLICATED = "replicated"
#: The four kinds of layout, in the order the docs present them.
KINDS = (BLOCK, CHUNKED, STRIDED, REPLICATED)
#: Grid dimensions, in the order ``axes`` lists them.
GRID_DIMS = "xyz"

Axes = tuple[int | None, ...]


def kind_problem(kind: str, chunk: Any) -> str | None:
    """What is wrong with a kind and chunk size in themselves (``None`` if nothing).

    The chunk size's value (>= 1) is the verifier's business, not this check's.
    """
    if kind not in KINDS:
        return f"unknown layout {kind!r}; the layouts are block, chunked(N), strided and replicated"
    if kind == CHUNKED:
        if chunk is None:
            return "a chunked layout needs a chunk size, e.g. chunked(4)"
        if isinstance(chunk, bool) or not isinstance(chunk, int):
            return f"the chunk size of a chunked layout is an integer, not {chunk!r}"
    elif chunk is not None:
        return f"only chunked layouts take a chunk size; write {kind}, not {kind}({chunk})"
    return None


def axes_problem(kind: str, axes: Sequence[int | None] | None) -> str | None:
    """What is wrong with ``axes`` in itself (``None`` if nothing); ranks are checked later."""
    if axes is None:
        return None
    if kind == REPLICATED:
        return "a replicated layout partitions no axis; remove its axes(...)"
    if len(axes) > len(GRID_DIMS):
        return (
            f"axes(...) has {len(axes)} entries but there are three grid dimensions (x, y, z); "
            "give at most one array axis per grid dimension"
        )
    for a in axes:
        if a is not None and (isinstance(a, bool) or not isinstance(a, int)):
            return f"axes(...) lists array axes (integers) or None, not {a!r}"
    return None


def _normalize_axes(axes: Any) -> Axes | None:
    if axes is None:
        return None
    if isinstance(axes, (str, bytes)) or not isinstance(axes, Sequence):
        raise TypeError(
            f"axes is a sequence with one array axis (or None) per grid dimension, e.g. axes=(0,) "
            f"or axes=(None, 0), not {axes!r}"
        )
    out = list(axes)
    while out and out[-1] is None:
        out.pop()
    return tuple(out)


@dataclass(frozen=True)
class Layout:
    """How an array parameter is partitioned over its node's instance grid (module docstring).

    Make one with ``Layout.block()``, ``Layout.chunked(4)``, ``Layout.strided()``,
    ``Layout.replicated()`` or ``Layout.parse("chunked(4), axes(0)")``.
    """

    kind: str
    chunk: int | None = None
    axes: Axes | None = None

    def __post_init__(self) -> None:
        problem = kind_problem(self.kind, self.chunk)
        if problem is None:
            object.__setattr__(self, "axes", _normalize_axes(self.axes))
            problem = axes_problem(self.kind, self.axes)
        if problem is not None:
            raise ValueError(problem)

    # -- constructors ----------------------------------------------------------------------

    @classmethod
    def block(cls, axes: Sequence[int | None] | None = None) -> Layout:
        """Contiguous blocks of ceil(n / G) elements, one per instance."""
        return cls(BLOCK, None, axes)  # type: ignore[arg-type]

    @classmethod
    def chunked(cls, size: int, axes: Sequence[int | None] | None = None) -> Layout:
        """Block-cyclic: chunks of ``size`` elements dealt to the instances in turn."""
        return cls(CHUNKED, size, axes)  # type: ignore[arg-type]

    @classmethod
    def strided(cls, axes: Sequence[int | None] | None = None) -> Layout:
        """Element-cyclic: ``chunked(1)``."""
        return cls(STRIDED, None, axes)  # type: ignore[arg-type]

    @classmethod
    def replicated(cls) -> Layout:
        """Every instance owns (a copy of) the whole array."""
        return cls(REPLICATED)

    @classmethod
    def parse(cls, text: str, file: str = "<layout>") -> Layout:
        """A layout from its text spelling (``str(layout)``); ``ParseError`` if malformed."""
        from .parser import parse_layout  # the IR text's grammar: one syntax, one parser

        return parse_layout(text, file)

    # -- meaning ---------------------------------------------------------------------------

    @property
    def chunk_size(self) -> int | None:
        """The chunk of the cyclic kinds (``strided`` is chunked(1)); ``None`` otherwise."""
        return 1 if self.kind == STRIDED else self.chunk

    @property
    def min_grid_dims(self) -> int:
        """How many grid dimensions a node needs for this layout: its last explicit axis + 1."""
        return len(self.axes) if self.axes else 0

    def grid_axes(self, rank: int, dims: int) -> Axes:
        """The array axis each of ``dims`` grid dimensions partitions (``None``: none)."""
        if self.kind == REPLICATED:
            return (None,) * dims
        if self.axes is None:
            return tuple(k if k < rank else None for k in range(dims))
        return tuple(self.axes[k] if k < len(self.axes) else None for k in range(dims))

    def owned(self, shape: Sequence[int], grid: Sequence[int], ids: Sequence[int]) -> list[list[range]]:
        """Per array axis, the element indices instance ``ids`` of grid ``grid`` owns.

        Each entry is a list of disjoint, non-empty ranges in increasing order (empty when
        the instance owns nothing along that axis); see the module docstring for what each
        kind owns. ``ValueError`` if the layout does not fit the array or the grid (the
        verifier reports those cases for programs).
        """
        shape, grid, ids = tuple(shape), tuple(grid), tuple(ids)
        if len(grid) > len(GRID_DIMS) or len(ids) != len(grid):
            raise ValueError(f"a grid has 0 to 3 dimensions and one id per dimension, not {grid} / {ids}")
        if any(n < 0 for n in shape) or not all(0 <= i < g for i, g in zip(ids, grid)):
            raise ValueError(f"instance {ids} is not in grid {grid} (or shape {shape} is negative)")
        if self.min_grid_dims > len(grid):
            raise ValueError(f"layout({self}) needs a grid of {self.min_grid_dims} dimensions, not {grid}")
        if self.chunk_size is not None and self.chunk_size < 1:
            raise ValueError(f"layout({self}): chunks hold at least one element")
        mapping = self.grid_axes(len(shape), len(grid))
        if any(a is not None and not 0 <= a < len(shape) for a in mapping):
            raise ValueError(f"layout({self}) does not fit an array of shape {shape}")
        out = []
        for axis, n in enumerate(shape):
            dims = [d for d, a in enumerate(mapping) if a == axis]
            if not dims:
                out.append([range(n)] if n else [])
                continue
            extent, index = 1, 0  # the row-major number among the dimensions partitioning it
            for d in dims:
                extent, index = extent * grid[d], index * grid[d] + ids[d]
            out.append(self._owned_along(n, extent, index))
        return out

    def _owned_along(self, n: int, extent: int, i: int) -> list[range]:
        """The part of an axis of length ``n`` that instance ``i`` of ``extent`` owns."""
        c = self.chunk_size
        if c is None:  # block
            size = -(-n // extent)
            start, stop = min(i * size, n), min((i + 1) * size, n)
            return [range(start, stop)] if start < stop else []
        if c == 1:
            r = range(i, n, extent)
            return [r] if r else []
        return [range(s, min(s + c, n)) for s in range(i * c, n, extent * c)]

    # -- text ------------------------------------------------------------------------------

    def __str__(self) -> str:
        text = f"{CHUNKED}({self.chunk})" if self.kind == CHUNKED else self.kind
        if self.axes is not None:
            text += ", axes(" + ", ".join("_" if a is None else str(a) for a in self.axes) + ")"
        return text


__all__ = ["KINDS", "Layout", "axes_problem", "kind_problem"]
