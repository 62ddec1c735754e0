"""The data segment of an HBIR program: constants, layouts, arrays, their partitions and
where their parts are placed, and whether the memories hold them.

Why a class of its own: the data segment reads the machine the target and config segments
declared and declares what code blocks read (constants, layouts, arrays); its checks are
about sizes and placements, none about code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import ast as A
from .checkcontext import CheckContext
from .model import ArrayInfo, LayoutInfo, axis_name
from .symbols import INT_MAX, INT_MIN

DISTRIBUTIONS = {"block", "chunked", "strided", "striped", "replicated"}
PLACEMENTS = {"global", "local"}
DIRECTIONS = {"host": "in", "device": "out"}
#: The most parts of a partition grid a memory placement is evaluated for (one by one).
MAX_PARTS = 1 << 16


class DataChecker:
    """Checks the data segment into ``cx``'s constants, layouts and arrays."""

    def __init__(self, cx: CheckContext):
        self.cx = cx

    def check_data(self, seg: A.Data) -> None:
        first_array: A.ArrayDecl | A.IOArrayDecl | None = None
        for item in seg.items:
            if not self.cx.name_ok(item, item.name):
                continue
            if isinstance(item, (A.ArrayDecl, A.IOArrayDecl)):
                first_array = first_array or item
            elif isinstance(item, A.Const) and first_array is not None:
                self.cx.problem(
                    item,
                    f"constant '{item.name}' is declared after array '{first_array.name}' (line "
                    f"{first_array.line}); constants come before every memory mapping (seed 002): move it up",
                )
            if item.name in self.cx.consts or item.name in self.cx.layouts or item.name in self.cx.arrays:
                self.cx.problem(item, f"'{item.name}' is declared twice in the data segment")
                continue
            if isinstance(item, A.Const):
                value = self.cx.evaluate(item.value, self.cx.data_env(), f"constant '{item.name}'")
                if isinstance(value, int) and not isinstance(value, bool) and not INT_MIN <= value <= INT_MAX:
                    self.cx.problem(
                        item,
                        f"constant '{item.name}' is {value}, which does not fit in 64 bits; make it smaller",
                    )
                elif value is not None:
                    self.cx.consts[item.name] = value
            elif isinstance(item, A.LayoutDecl):
                layout, direction = self.flags(item.flags, f"layout '{item.name}'")
                if direction is not None:
                    self.cx.problem(
                        item,
                        f"layout '{item.name}' says host/device; that is a property of an array, not a layout",
                    )
                if layout is not None:
                    self.cx.layouts[item.name] = layout
            elif isinstance(item, A.ArrayDecl):
                self.array_decl(item)
            else:
                self.io_array_decl(item)
        self.check_capacities()

    def array_shape(self, item: A.ArrayDecl | A.IOArrayDecl) -> tuple[int, ...] | None:
        shape = self.cx.positive_ints(item.dims, self.cx.data_env(), f"a dimension of array '{item.name}'")
        return shape

    def grid_problem(self, node: A.Node, name: str, grid: tuple[int, ...], placed: bool) -> None:
        """A partition grid is a group of tiles' extents, a memory array's (``block[target.g.x_max]``:
        one part per memory), or any grid whose parts a memory placement (``target.g[x]``) puts
        somewhere."""
        extents = {g.dims for g in self.cx.groups.values() if g.tile_map is not None}
        extents |= {m.dims for m in self.cx.memory_infos.values() if m.dims}
        if grid not in extents and not placed:
            known = (
                ", ".join(f"{g.name}{''.join(f'[{d}]' for d in g.dims)}" for g in self.cx.groups.values())
                or "none"
            )
            memories = ", ".join(f"target.{m.name}{dims_text(m.dims)}" for m in self.cx.memory_infos.values())
            self.cx.problem(
                node,
                f"array '{name}' is partitioned over a {'x'.join(map(str, grid))} grid, but no group of tiles "
                f"(groups: {known}) nor memory array (memories: {memories or 'none'}) has that shape; "
                "partition it over a group's or a memory array's extents, or place its parts with a flag "
                "such as target.g[x]",
            )

    def array_decl(self, item: A.ArrayDecl) -> None:
        shape = self.array_shape(item)
        layout, direction = self.flags(item.flags, f"array '{item.name}'")
        grid = None
        if item.distribution is not None:
            if item.distribution.kind != "block":
                self.cx.problem(
                    item.distribution,
                    f"'= {item.distribution.kind}[..]' is not a partition; write '= block[rows][cols]' and put the "
                    "distribution (chunked, strided, replicated) among the flags",
                )
            grid = self.cx.positive_ints(
                item.distribution.dims, self.cx.data_env(), f"the partition grid of '{item.name}'"
            )
            if grid is not None:
                placed = layout is not None and layout.place is not None
                self.grid_problem(item.distribution, item.name, grid, placed)
        if direction is None:
            self.cx.problem(
                item,
                f"array '{item.name}' says neither host (an input) nor device (an output); add one of them",
            )
        parts = self.parts(item.name, layout, grid)
        if shape is not None and direction is not None and parts is not None:
            self.cx.arrays[item.name] = ArrayInfo(
                item.name, item.elem, shape, direction, layout, grid, item.line, parts=parts
            )

    def parts(
        self, name: str, layout: LayoutInfo | None, grid: tuple[int, ...] | None
    ) -> dict[tuple[int, ...], tuple[int, ...] | None] | None:
        """Which memory each part of the array lives in (``ArrayInfo.parts``): the placement
        flag's indices evaluated at every point of the partition grid, with the point's
        coordinates as ``x``, ``y``...; ``None`` after reporting a placement outside its
        memory array. A placement that does not index the memory array with one index per
        dimension (the seed's ``target.g[x][y]`` on ``memory g[4]``) places every part in the
        memory array as a whole."""
        if layout is None or layout.place is None or layout.memory not in self.cx.memory_infos:
            return {}
        memory = self.cx.memory_infos[layout.memory]
        _, indices = A.index_chain(layout.place)
        if grid is not None and int(np.prod(grid)) > MAX_PARTS:
            self.cx.problem(
                layout.place,
                f"array '{name}' is cut into {int(np.prod(grid))} parts; a placement is checked part by part, "
                f"for at most {MAX_PARTS} parts: use a coarser partition grid",
            )
            return None
        points = [tuple(int(c) for c in p) for p in np.ndindex(*(grid or ()))]
        if not indices or len(indices) != len(memory.dims):
            return dict.fromkeys(points)
        out: dict[tuple[int, ...], tuple[int, ...] | None] = {}
        for point in points:
            env = self.cx.data_env()
            for k, c in enumerate(point):
                env[axis_name(k)] = c
                env[f"{axis_name(k)}_max"] = grid[k]  # type: ignore[index]
            before = len(self.cx.problems)
            where = [self.cx.evaluate(i, env, f"the placement of '{name}'") for i in indices]
            if len(self.cx.problems) > before:
                return None
            if not all(type(c) is int and 0 <= c < d for c, d in zip(where, memory.dims)):
                self.cx.problem(
                    layout.place,
                    f"part {dims_text(point) or '(the whole array)'} of array '{name}' goes to memory "
                    f"target.{memory.name}{dims_text(where)}, outside the memory array target.{memory.name}"
                    f"{dims_text(memory.dims)}; keep the placement's indices inside it",
                )
                return None
            out[point] = tuple(where)
        return out

    def check_capacities(self) -> None:
        """Every global memory holds what is placed in it: each memory of the array (``size``
        bytes) its parts, the memory array as a whole (``count`` × ``size``) all of them.
        Placements in a tile's memories (``target.t.l[x]``) are not counted: every tile has
        its own, and a placement does not say which tile's it means."""
        used: dict[tuple[str, tuple[int, ...] | None], list[tuple[ArrayInfo, int]]] = {}
        for a in self.cx.arrays.values():
            if not a.parts or a.layout is None or a.layout.memory not in self.cx.memory_infos:
                continue
            if "." in a.layout.memory:  # a tile's memory (target.t.l): which tile's, HBIR does not say
                continue
            for point, where in a.parts.items():
                nbytes = part_bytes(a, point)
                for key in {(a.layout.memory, where), (a.layout.memory, None)}:
                    used.setdefault(key, [])
                    if used[key] and used[key][-1][0] is a:
                        used[key][-1] = (a, used[key][-1][1] + nbytes)
                    else:
                        used[key].append((a, nbytes))
        reported: set[str] = set()
        for (name, where), users in sorted(used.items(), key=lambda kv: kv[0][1] is None):  # one memory first
            memory = self.cx.memory_infos[name]
            if memory.size is None or name in reported:
                continue
            holds = memory.size * (memory.count if where is None else 1)
            total = sum(n for _, n in users)
            if total <= holds:
                continue
            reported.add(name)
            what = f"target.{name}{dims_text(where) if where is not None else ''}"
            shares = ", ".join(f"'{a.name}' {n} bytes" for a, n in users)
            arrays = "array" if len(users) == 1 else "arrays"
            size = f"size {memory.size} bytes" + (f" × {memory.count} memories" if where is None else "")
            last = max(users, key=lambda u: u[0].line)[0]
            self.cx.problem(
                A.Node(line=last.line, column=1),
                f"{arrays} {shares} do not fit memory {what} (line {memory.line}): {total} bytes placed "
                f"there, but it holds {holds} ({size}); enlarge the memory, or place the data elsewhere",
            )

    def io_array_decl(self, item: A.IOArrayDecl) -> None:
        shape = self.array_shape(item)
        layout, grid, group = None, None, None
        for p in item.props:
            if p.key == "location":
                ref = p.value
                if (
                    not isinstance(ref, A.Ref)
                    or len(ref.parts) != 2
                    or ref.parts[0] not in ("config", "target")
                ):
                    self.cx.problem(p, "a location is a group or tile array: 'location : config.tg'")
                elif ref.parts[1] in self.cx.groups:
                    grid, group = self.cx.groups[ref.parts[1]].dims, ref.parts[1]
                elif ref.parts[1] in self.cx.tile_arrays:
                    grid = self.cx.tile_arrays[ref.parts[1]]
                else:
                    self.cx.problem(
                        ref,
                        f"location '{ref.dotted}' names no group or tile array; groups: {', '.join(self.cx.groups) or 'none'}",
                    )
            elif p.key == "layout":
                if isinstance(p.value, A.Ref) and len(p.value.parts) == 1:
                    layout, _ = self.flags((p.value,), f"array '{item.name}'")
                else:
                    self.cx.problem(
                        p, "a layout is block, chunked, strided, replicated or a layout declared in data"
                    )
            else:
                self.cx.problem(
                    p,
                    f"unknown property '{p.key}' of array '{item.name}'; the properties are location and layout",
                )
        if shape is not None:
            self.cx.arrays[item.name] = ArrayInfo(
                item.name, item.elem, shape, item.direction, layout, grid, item.line, group
            )

    def flags(self, flags: tuple[A.Expr, ...], what: str) -> tuple[LayoutInfo | None, str | None]:
        kind: str | None = None
        chunk: int | None = None
        placement: str | None = None
        direction: str | None = None
        memory: str | None = None
        place: A.Expr | None = None
        for f in flags:
            base, _ = A.index_chain(f)
            word = f.parts[0] if isinstance(f, A.Ref) and len(f.parts) == 1 else None
            if isinstance(f, A.Call) and f.name == "chunked" and len(f.args) == 1:
                size = self.cx.evaluate(f.args[0], self.cx.data_env(), f"the chunk size of {what}")
                if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
                    self.cx.problem(f, f"the chunk size of {what} is {size!r}; it is a positive integer")
                    size = None
                kind, chunk = self.set_kind(f, kind, "chunked", what), size
            elif word in DISTRIBUTIONS:
                kind = self.set_kind(f, kind, "strided" if word == "striped" else word, what)
            elif word in PLACEMENTS:
                placement = word
            elif word in DIRECTIONS:
                if direction is not None:
                    self.cx.problem(f, f"{what} says host or device twice")
                direction = DIRECTIONS[word]
            elif word is not None and word in self.cx.layouts:
                named = self.cx.layouts[word]
                kind, chunk = self.set_kind(f, kind, named.kind, what), named.chunk
                placement = placement or named.placement
                memory, place = memory or named.memory, place or named.place
            elif isinstance(base, A.Ref) and base.parts[0] == "target":
                name = ".".join(base.parts[1:])
                if name not in self.cx.memory_infos and name not in self.cx.tile_arrays:
                    self.cx.problem(
                        base,
                        f"'{base.dotted}' is not a memory of the target; memories: {', '.join(sorted(self.cx.memory_infos)) or 'none'}",
                    )
                else:
                    memory, place = name, f
            elif word is not None:
                self.cx.problem(
                    f,
                    f"'{word}' in {what} is not a flag or a declared layout; the flags are global, local, block, "
                    "chunked, chunked(N), strided, replicated, host, device, a target memory, or a layout declared in data",
                )
            else:
                self.cx.problem(f, f"this flag of {what} is not understood; see docs/hbir.md for the flags")
        layout = LayoutInfo(kind or "block", chunk, placement, memory, place)
        return layout, direction

    def set_kind(self, node: A.Node, current: str | None, new: str, what: str) -> str:
        if current is not None and current != new:
            self.cx.problem(node, f"{what} has two distributions ({current} and {new}); keep one")
        return new


def part_bytes(a: ArrayInfo, point: tuple[int, ...]) -> int:
    """The bytes of ``a`` that part ``point`` of its partition grid owns (its layout's
    ownership, docs/hbir.md; the whole array without a grid or when replicated)."""
    whole = int(np.prod(a.shape)) * a.dtype.itemsize
    if a.grid is None or a.layout is None or a.layout.kind == "replicated":
        return whole
    from .ownership import owned

    ranges = owned(a, a.grid, point)
    return int(np.prod([sum(len(r) for r in axis) for axis in ranges])) * a.dtype.itemsize


def dims_text(dims: Any) -> str:
    """``(2, 3)`` → ``[2][3]``, as messages write a shape or an index."""
    return "".join(f"[{d}]" for d in dims)
