"""The HBIR checker: every problem of a parsed program, all at once, each at its line.

It checks the segment order (target, config, data, code — each once), that every reference
resolves (constants, tile arrays, memories, groups, layouts, arrays, variables), the types
of the code (int / float / bool, array ranks and indexing arity, what may be assigned), that
groups do not overlap (naming both groups and a shared tile), and that every layout fits
its array and a group's grid. Problems are collected and raised together as one
``HBIRCheckError``; a program without problems gives the ``Model`` the lowering reads.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import numpy as np

from ..errors import HPVMError
from . import ast as A
from .model import ArrayInfo, BlockInfo, GlobalInfo, GroupInfo, LayoutInfo, MemoryInfo, Model, axis_name
from .symbols import INT_MAX, INT_MIN, Scope, Symbol, expr_type, reserved_problem, resolve_ref


class HBIRCheckError(HPVMError):
    """An HBIR program that parses but is wrong; ``problems`` lists each, as ``file:line:col: ...``."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        if len(self.problems) == 1:
            super().__init__(self.problems[0])
        else:
            lines = "\n".join(f"  - {p}" for p in self.problems)
            super().__init__(f"{len(self.problems)} problems in the HBIR program:\n{lines}")


SEGMENTS = (A.Target, A.Config, A.Data, A.Code)
SEGMENT_NAMES = {A.Target: "target", A.Config: "config", A.Data: "data", A.Code: "code"}
DISTRIBUTIONS = {"block", "chunked", "strided", "striped", "replicated"}
PLACEMENTS = {"global", "local"}
DIRECTIONS = {"host": "in", "device": "out"}
_SIZE = re.compile(r"([0-9]+)([KMG]?)B?")
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_CONVERSION = re.compile(r"%[-+ #0]*[0-9]*(?:\.[0-9]+)?(?:hh|h|ll|l|z)?(.)")
PRINTF_CONVERSIONS = set("diuxXofFeEgGcs")
#: The most parts of a partition grid a memory placement is evaluated for (one by one).
MAX_PARTS = 1 << 16
#: The most values one printf may print (each tile's log keeps this many per line).
LOG_VALUES = 8


def printf_conversions(fmt: str) -> list[str] | str:
    """The conversion letters of a printf format (``%%`` excluded), or what is wrong."""
    out = []
    for m in _CONVERSION.finditer(fmt):
        letter = m.group(1)
        if letter == "%":
            continue
        if letter not in PRINTF_CONVERSIONS:
            return (
                f"printf conversion '{m.group(0)}' is not supported; use %d, %u, %x, %o, %c, %f, %e, %g, "
                "or %s with a string literal"
            )
        out.append(letter)
    return out


#: C's escapes in string literals (the text keeps them as written; printing decodes them).
C_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "r": "\r", "0": "\0"}


def c_unescape(text: str) -> str:
    """A string literal's text as written (``a\\n``) → the characters it stands for."""
    return re.sub(r"\\(.)", lambda m: C_ESCAPES.get(m.group(1), m.group(1)), text)


def inline_strings(fmt: str, args: tuple[A.Expr, ...]) -> tuple[str, tuple[A.Expr, ...]]:
    """``printf("%-6s=%d", "x", v)`` → ``("x     =%d", (v,))``: each ``%s`` replaced by its
    string literal, formatted with the conversion's flags, width and precision, and escaped
    for the format (``%`` → ``%%``, ``\\`` → ``\\\\``) — the string is known when the
    program is lowered, so only numbers travel through the tiles' log. Assumes the checker's
    word that every ``%s`` has a string literal."""
    rest = list(args)
    values: list[A.Expr] = []
    out: list[str] = []
    at = 0
    for m in _CONVERSION.finditer(fmt):
        if m.group(1) == "%":
            continue
        arg = rest.pop(0)
        if m.group(1) != "s":
            values.append(arg)
            continue
        spec = re.sub(r"(hh|h|ll|l|z)$", "", m.group(0)[1:-1])  # flags, width, precision
        text = ("%" + spec + "s") % c_unescape(arg.value)  # type: ignore[union-attr]
        out += [fmt[at : m.start()], _format_escaped(text)]
        at = m.end()
    out.append(fmt[at:])
    return "".join(out), tuple(values)


_REESCAPE = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0", "%": "%%"}


def _format_escaped(text: str) -> str:
    """Characters → the text of a printf format that prints them."""
    return "".join(_REESCAPE.get(ch, ch) for ch in text)


def c_div(a: Any, b: Any) -> Any:
    """C's division: truncating for ints."""
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_rem(a: int, b: int) -> int:
    """C's remainder: the sign of the dividend."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


class Checker:
    """One check of one program (``check(program)``)."""

    def __init__(self, program: A.Program):
        self.program = program
        self.file = program.filename
        self.problems: list[tuple[int, int, str]] = []
        self.target_values: dict[str, int] = {}
        self.memories: set[str] = set()
        self.memory_infos: dict[str, MemoryInfo] = {}
        self.tile_arrays: dict[str, tuple[int, ...]] = {}
        self.groups: dict[str, GroupInfo] = {}
        self.consts: dict[str, int | float | bool] = {}
        self.layouts: dict[str, LayoutInfo] = {}
        self.arrays: dict[str, ArrayInfo] = {}
        self.globals: dict[str, GlobalInfo] = {}
        self.blocks: list[BlockInfo] = []

    # -- reporting --------------------------------------------------------------------------

    def problem(self, node: A.Node, message: str) -> None:
        self.problems.append((node.line, node.column, message))

    def error(self) -> HBIRCheckError:
        ordered = sorted(set(self.problems), key=lambda p: (p[0], p[1]))
        return HBIRCheckError([f"{self.file}:{line}:{col}: {msg}" for line, col, msg in ordered])

    def name_ok(self, node: A.Node, name: str) -> bool:
        why = reserved_problem(name)
        if why is not None:
            self.problem(node, why)
        return why is None

    # -- constant expressions ---------------------------------------------------------------

    def evaluate(self, e: A.Expr, env: dict[str, Any], what: str) -> Any:
        """The value of a constant expression (``None`` after reporting why it has none)."""
        if isinstance(e, (A.IntLit, A.FloatLit, A.BoolLit)):
            return e.value
        if isinstance(e, A.Ref):
            key = e.dotted[len("data.") :] if e.parts[0] == "data" else e.dotted
            if key in env:
                return env[key]
            self.problem(e, f"'{e.dotted}' is not declared (in {what}); known here: {_known(env)}")
            return None
        if isinstance(e, A.Unary):
            v = self.evaluate(e.operand, env, what)
            if v is None:
                return None
            return (not v) if e.op == "!" else -v
        if isinstance(e, A.Binary):
            a = self.evaluate(e.left, env, what)
            b = self.evaluate(e.right, env, what)
            if a is None or b is None:
                return None
            try:
                return _binary(e.op, a, b)
            except ZeroDivisionError:
                self.problem(e, f"division by zero in {what}")
                return None
        if isinstance(e, A.Cond):
            c = self.evaluate(e.cond, env, what)
            if c is None:
                return None
            return self.evaluate(e.then if c else e.orelse, env, what)
        self.problem(e, f"{what} must be a constant expression, not '{type(e).__name__}'")
        return None

    def positive_ints(
        self, dims: tuple[A.Expr, ...], env: dict[str, Any], what: str
    ) -> tuple[int, ...] | None:
        out = []
        for d in dims:
            v = self.evaluate(d, env, what)
            if v is None:
                return None
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                self.problem(d, f"{what} is {v!r}; sizes are positive integers")
                return None
            out.append(v)
        return tuple(out)

    # -- the whole program ------------------------------------------------------------------

    def run(self) -> Model:
        segments = self.check_order()
        if segments.get(A.Target) is not None:
            self.check_target(segments[A.Target])
        if segments.get(A.Config) is not None:
            self.check_config(segments[A.Config])
        if segments.get(A.Data) is not None:
            self.check_data(segments[A.Data])
        if segments.get(A.Code) is not None:
            self.check_code(segments[A.Code])
        if self.problems:
            raise self.error()
        return Model(
            self.file,
            self.consts,
            self.target_values,
            self.tile_arrays,
            self.groups,
            self.layouts,
            self.arrays,
            self.globals,
            self.blocks,
            memories=self.memory_infos,
        )

    def check_order(self) -> dict[type, A.Segment]:
        seen: dict[type, A.Segment] = {}
        last = -1
        for seg in self.program.segments:
            kind = type(seg)
            name = SEGMENT_NAMES[kind]
            pos = SEGMENTS.index(kind)
            if kind in seen:
                self.problem(
                    seg,
                    f"a second {name} segment; a program has one of each (the first is at line {seen[kind].line})",
                )
                continue
            if pos < last:
                after = SEGMENT_NAMES[SEGMENTS[last]]
                self.problem(
                    seg,
                    f"the {name} segment comes after the {after} segment; the order is target, config, data, code",
                )
            last = max(last, pos)
            seen[kind] = seg
        for kind in SEGMENTS:
            if kind not in seen:
                line = self.program.segments[-1].line if self.program.segments else 1
                self.problems.append(
                    (
                        line,
                        1,
                        f"the program has no {SEGMENT_NAMES[kind]} segment; every program has target, config, data and code, in that order",
                    )
                )
        return seen

    # -- target -----------------------------------------------------------------------------

    def check_target(self, seg: A.Target) -> None:
        for item in seg.items:
            if isinstance(item, A.Memory):
                self.memory(item, f"target.{item.name}")
                self.memories.add(item.name)
            else:
                if not self.unique_target(item):
                    continue
                dims = self.positive_ints(item.dims, {}, f"the size of tile array '{item.name}'")
                if dims is None:
                    continue
                if len(dims) not in (1, 2):
                    self.problem(
                        item,
                        f"tile array '{item.name}' has {len(dims)} dimensions; declare tile {item.name}[rows][cols]",
                    )
                    continue
                self.tile_arrays[item.name] = dims
                self.target_values[f"target.{item.name}.x_max"] = dims[0]
                if len(dims) == 2:
                    self.target_values[f"target.{item.name}.y_max"] = dims[1]
                for m in item.memories or ():
                    self.memory(m, f"target.{item.name}.{m.name}")

    def unique_target(self, item: A.Memory | A.Tile) -> bool:
        if not self.name_ok(item, item.name):
            return False
        if item.name in self.memories or item.name in self.tile_arrays:
            self.problem(item, f"'{item.name}' is declared twice in the target segment")
            return False
        return True

    def memory(self, m: A.Memory, prefix: str) -> None:
        """A memory array: its fields become target values (``target.g.x_max``, ``y_max``...
        per dimension, ``count`` = how many memories, ``size`` and ``width`` in bytes) and
        its ``MemoryInfo`` what data placements and capacities are checked against."""
        dims = self.positive_ints(m.dims, {}, f"the count of memory '{m.name}'") or ()
        for k, d in enumerate(dims):
            self.target_values[f"{prefix}.{axis_name(k)}_max"] = d
        if not dims:
            self.target_values[f"{prefix}.x_max"] = 1
        info = MemoryInfo(prefix[len("target.") :], tuple(dims), None, None, m.line)
        self.target_values[f"{prefix}.count"] = info.count
        values: dict[str, int] = {}
        for f in m.fields:
            if f.name not in ("size", "width"):
                self.problem(
                    f, f"memory '{m.name}' has no field '{f.name}'; a memory declares size and width"
                )
                continue
            if f.name in values or f"{f.name}?" in values:
                self.problem(f, f"memory '{m.name}' declares its {f.name} twice")
            if f.value == "?":
                values[f"{f.name}?"] = 0
                continue
            match = _SIZE.fullmatch(f.value)
            if match is None or (f.name == "width" and match.group(2)):
                self.problem(
                    f,
                    f"'{f.value}' is not a {f.name}; write e.g. {'8G or 16K' if f.name == 'size' else '8B'}, or ? when unknown",
                )
                continue
            values[f.name] = int(match.group(1)) * _UNITS[match.group(2)]
            self.target_values[f"{prefix}.{f.name}"] = values[f.name]
        self.memory_infos[info.name] = MemoryInfo(
            info.name, info.dims, values.get("size"), values.get("width"), m.line
        )

    # -- config -----------------------------------------------------------------------------

    def check_config(self, seg: A.Config) -> None:
        for g in seg.groups:
            self.group(g, None)
        self.check_overlap()

    def group(self, g: A.Group, parent: GroupInfo | None) -> None:
        if not self.name_ok(g, g.name):
            return
        if g.name in self.groups:
            self.problem(g, f"group '{g.name}' is declared twice (first at line {self.groups[g.name].line})")
            return
        dims = self.positive_ints(g.dims, self.target_values, f"the size of group '{g.name}'")
        if dims is None:
            return
        if not dims:
            self.problem(g, f"group '{g.name}' has no size; write group {g.name}[n] (or [rows][cols]...)")
            return
        info = GroupInfo(g.name, dims, g.line, parent, column=g.column)
        self.groups[g.name] = info
        if parent is not None:
            parent.children.append(info)
        maps = [i for i in g.items if isinstance(i, A.TileMap)]
        subgroups = [i for i in g.items if isinstance(i, A.Group)]
        if maps and subgroups or len(maps) > 1:
            self.problem(
                g,
                f"group '{g.name}' must either map its members to tiles (one 'tile ...;') or hold groups, not both",
            )
        elif not maps and not subgroups:
            self.problem(g, f"group '{g.name}' maps no tiles; add 'tile target.t[x][y];' (or nested groups)")
        for sub in subgroups:
            self.group(sub, info)
        if len(maps) == 1 and not subgroups:
            self.tile_map(info, maps[0])

    def tile_map(self, info: GroupInfo, tmap: A.TileMap) -> None:
        base, indices = A.index_chain(tmap.ref)
        if not (isinstance(base, A.Ref) and len(base.parts) == 2 and base.parts[0] == "target"):
            self.problem(tmap, "a group's members map to tiles as 'tile target.t[x][y];'")
            return
        array = base.parts[1]
        if array not in self.tile_arrays:
            self.problem(
                base,
                f"'{base.dotted}' is not a tile array of the target; tile arrays: {', '.join(self.tile_arrays) or 'none'}",
            )
            return
        shape = self.tile_arrays[array]
        if len(indices) != len(shape):
            self.problem(
                tmap, f"tile array '{array}' has {len(shape)} dimension(s) but is indexed with {len(indices)}"
            )
            return
        info.tile_array, info.tile_map = array, tmap.ref
        chain = info.chain
        for combo in itertools.product(*(itertools.product(*(range(d) for d in g.dims)) for g in chain)):
            env = dict(self.target_values)
            for g, coords in zip(chain, combo):
                for k, c in enumerate(coords):
                    env[f"{g.name}.{axis_name(k)}"] = c
                    env[f"{g.name}.{axis_name(k)}_max"] = g.dims[k]
            for k, c in enumerate(combo[-1]):
                env[axis_name(k)] = c
                env[f"{axis_name(k)}_max"] = info.dims[k]
            before = len(self.problems)
            coords = [self.evaluate(i, env, f"the tile of group '{info.name}'") for i in indices]
            if len(self.problems) > before:
                return
            if not all(isinstance(c, int) and 0 <= c < n for c, n in zip(coords, shape)):
                member = "".join(f"[{c}]" for level in combo for c in level)
                self.problem(
                    tmap,
                    f"member {member} of group '{info.name}' maps to tile {array}{''.join(f'[{c}]' for c in coords)}, "
                    f"outside the {'x'.join(map(str, shape))} tile array",
                )
                return
            info.members[combo] = tuple(coords)

    def check_overlap(self) -> None:
        owner: dict[tuple[str, tuple[int, ...]], tuple[GroupInfo, tuple]] = {}
        reported: set[tuple[str, str]] = set()
        for g in self.groups.values():
            for member, tile in g.members.items():
                key = (g.tile_array or "", tile)
                if key in owner:
                    other, other_member = owner[key]
                    pair = (other.name, g.name)
                    if pair in reported:
                        continue
                    reported.add(pair)
                    where = f"target.{key[0]}" + "".join(f"[{c}]" for c in tile)
                    if other is g:
                        self.problem(
                            self.group_node(g),
                            f"group '{g.name}' maps two members to the same tile {where}; give each member its own tile",
                        )
                    else:
                        self.problem(
                            self.group_node(g),
                            f"groups '{other.name}' (line {other.line}) and '{g.name}' (line {g.line}) overlap: both use tile "
                            f"{where}; map one of them to other tiles (offset its tile map, as in tile target.{key[0]}[x+2][y])",
                        )
                else:
                    owner[key] = (g, member)

    def group_node(self, g: GroupInfo) -> A.Node:
        return A.Node(line=g.line, column=g.column)

    # -- data -------------------------------------------------------------------------------

    def data_env(self) -> dict[str, Any]:
        env: dict[str, Any] = dict(self.target_values)
        env.update(self.consts)
        return env

    def check_data(self, seg: A.Data) -> None:
        first_array: A.ArrayDecl | A.IOArrayDecl | None = None
        for item in seg.items:
            if not self.name_ok(item, item.name):
                continue
            if isinstance(item, (A.ArrayDecl, A.IOArrayDecl)):
                first_array = first_array or item
            elif isinstance(item, A.Const) and first_array is not None:
                self.problem(
                    item,
                    f"constant '{item.name}' is declared after array '{first_array.name}' (line "
                    f"{first_array.line}); constants come before every memory mapping (seed 002): move it up",
                )
            if item.name in self.consts or item.name in self.layouts or item.name in self.arrays:
                self.problem(item, f"'{item.name}' is declared twice in the data segment")
                continue
            if isinstance(item, A.Const):
                value = self.evaluate(item.value, self.data_env(), f"constant '{item.name}'")
                if isinstance(value, int) and not isinstance(value, bool) and not INT_MIN <= value <= INT_MAX:
                    self.problem(
                        item,
                        f"constant '{item.name}' is {value}, which does not fit in 64 bits; make it smaller",
                    )
                elif value is not None:
                    self.consts[item.name] = value
            elif isinstance(item, A.LayoutDecl):
                layout, direction = self.flags(item.flags, f"layout '{item.name}'")
                if direction is not None:
                    self.problem(
                        item,
                        f"layout '{item.name}' says host/device; that is a property of an array, not a layout",
                    )
                if layout is not None:
                    self.layouts[item.name] = layout
            elif isinstance(item, A.ArrayDecl):
                self.array_decl(item)
            else:
                self.io_array_decl(item)
        self.check_capacities()

    def array_shape(self, item: A.ArrayDecl | A.IOArrayDecl) -> tuple[int, ...] | None:
        shape = self.positive_ints(item.dims, self.data_env(), f"a dimension of array '{item.name}'")
        return shape

    def grid_problem(self, node: A.Node, name: str, grid: tuple[int, ...], placed: bool) -> None:
        """A partition grid is a group of tiles' extents, a memory array's (``block[target.g.x_max]``:
        one part per memory), or any grid whose parts a memory placement (``target.g[x]``) puts
        somewhere."""
        extents = {g.dims for g in self.groups.values() if g.tile_map is not None}
        extents |= {m.dims for m in self.memory_infos.values() if m.dims}
        if grid not in extents and not placed:
            known = (
                ", ".join(f"{g.name}{''.join(f'[{d}]' for d in g.dims)}" for g in self.groups.values())
                or "none"
            )
            memories = ", ".join(f"target.{m.name}{_dims(m.dims)}" for m in self.memory_infos.values())
            self.problem(
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
                self.problem(
                    item.distribution,
                    f"'= {item.distribution.kind}[..]' is not a partition; write '= block[rows][cols]' and put the "
                    "distribution (chunked, strided, replicated) among the flags",
                )
            grid = self.positive_ints(
                item.distribution.dims, self.data_env(), f"the partition grid of '{item.name}'"
            )
            if grid is not None:
                placed = layout is not None and layout.place is not None
                self.grid_problem(item.distribution, item.name, grid, placed)
        if direction is None:
            self.problem(
                item,
                f"array '{item.name}' says neither host (an input) nor device (an output); add one of them",
            )
        parts = self.parts(item.name, layout, grid)
        if shape is not None and direction is not None and parts is not None:
            self.arrays[item.name] = ArrayInfo(
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
        if layout is None or layout.place is None or layout.memory not in self.memory_infos:
            return {}
        memory = self.memory_infos[layout.memory]
        _, indices = A.index_chain(layout.place)
        if grid is not None and int(np.prod(grid)) > MAX_PARTS:
            self.problem(
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
            env = self.data_env()
            for k, c in enumerate(point):
                env[axis_name(k)] = c
                env[f"{axis_name(k)}_max"] = grid[k]  # type: ignore[index]
            before = len(self.problems)
            where = [self.evaluate(i, env, f"the placement of '{name}'") for i in indices]
            if len(self.problems) > before:
                return None
            if not all(type(c) is int and 0 <= c < d for c, d in zip(where, memory.dims)):
                self.problem(
                    layout.place,
                    f"part {_dims(point) or '(the whole array)'} of array '{name}' goes to memory "
                    f"target.{memory.name}{_dims(where)}, outside the memory array target.{memory.name}"
                    f"{_dims(memory.dims)}; keep the placement's indices inside it",
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
        for a in self.arrays.values():
            if not a.parts or a.layout is None or a.layout.memory not in self.memory_infos:
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
            memory = self.memory_infos[name]
            if memory.size is None or name in reported:
                continue
            holds = memory.size * (memory.count if where is None else 1)
            total = sum(n for _, n in users)
            if total <= holds:
                continue
            reported.add(name)
            what = f"target.{name}{_dims(where) if where is not None else ''}"
            shares = ", ".join(f"'{a.name}' {n} bytes" for a, n in users)
            arrays = "array" if len(users) == 1 else "arrays"
            size = f"size {memory.size} bytes" + (f" × {memory.count} memories" if where is None else "")
            last = max(users, key=lambda u: u[0].line)[0]
            self.problem(
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
                    self.problem(p, "a location is a group or tile array: 'location : config.tg'")
                elif ref.parts[1] in self.groups:
                    grid, group = self.groups[ref.parts[1]].dims, ref.parts[1]
                elif ref.parts[1] in self.tile_arrays:
                    grid = self.tile_arrays[ref.parts[1]]
                else:
                    self.problem(
                        ref,
                        f"location '{ref.dotted}' names no group or tile array; groups: {', '.join(self.groups) or 'none'}",
                    )
            elif p.key == "layout":
                if isinstance(p.value, A.Ref) and len(p.value.parts) == 1:
                    layout, _ = self.flags((p.value,), f"array '{item.name}'")
                else:
                    self.problem(
                        p, "a layout is block, chunked, strided, replicated or a layout declared in data"
                    )
            else:
                self.problem(
                    p,
                    f"unknown property '{p.key}' of array '{item.name}'; the properties are location and layout",
                )
        if shape is not None:
            self.arrays[item.name] = ArrayInfo(
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
                size = self.evaluate(f.args[0], self.data_env(), f"the chunk size of {what}")
                if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
                    self.problem(f, f"the chunk size of {what} is {size!r}; it is a positive integer")
                    size = None
                kind, chunk = self.set_kind(f, kind, "chunked", what), size
            elif word in DISTRIBUTIONS:
                kind = self.set_kind(f, kind, "strided" if word == "striped" else word, what)
            elif word in PLACEMENTS:
                placement = word
            elif word in DIRECTIONS:
                if direction is not None:
                    self.problem(f, f"{what} says host or device twice")
                direction = DIRECTIONS[word]
            elif word is not None and word in self.layouts:
                named = self.layouts[word]
                kind, chunk = self.set_kind(f, kind, named.kind, what), named.chunk
                placement = placement or named.placement
                memory, place = memory or named.memory, place or named.place
            elif isinstance(base, A.Ref) and base.parts[0] == "target":
                name = ".".join(base.parts[1:])
                if name not in self.memory_infos and name not in self.tile_arrays:
                    self.problem(
                        base,
                        f"'{base.dotted}' is not a memory of the target; memories: {', '.join(sorted(self.memory_infos)) or 'none'}",
                    )
                else:
                    memory, place = name, f
            elif word is not None:
                self.problem(
                    f,
                    f"'{word}' in {what} is not a flag or a declared layout; the flags are global, local, block, "
                    "chunked, chunked(N), strided, replicated, host, device, a target memory, or a layout declared in data",
                )
            else:
                self.problem(f, f"this flag of {what} is not understood; see docs/hbir.md for the flags")
        layout = LayoutInfo(kind or "block", chunk, placement, memory, place)
        return layout, direction

    def set_kind(self, node: A.Node, current: str | None, new: str, what: str) -> str:
        if current is not None and current != new:
            self.problem(node, f"{what} has two distributions ({current} and {new}); keep one")
        return new

    # -- code -------------------------------------------------------------------------------

    def check_code(self, seg: A.Code) -> None:
        seen_block = False
        for item in seg.items:
            if isinstance(item, A.VarDecl):
                if seen_block:
                    self.problem(
                        item, f"global '{item.name}' is declared after a code block; declare globals first"
                    )
                self.global_decl(item)
            else:
                seen_block = True
                self.block(item, len(self.blocks))

    def global_decl(self, d: A.VarDecl) -> None:
        if not self.name_ok(d, d.name):
            return
        if d.dims or isinstance(d.init, A.ArrayInit):
            self.problem(
                d,
                f"global '{d.name}' is an array; globals are scalars — declare a shared array in data "
                "(out G : int[n] { }) or a local array inside a code block",
            )
            return
        if d.name in self.globals or d.name in self.arrays or d.name in self.consts:
            self.problem(d, f"'{d.name}' is already declared; a global needs a name of its own")
            return
        init: Any = 0
        if d.init is not None:
            init = self.evaluate(d.init, self.data_env(), f"the initial value of global '{d.name}'")
            if init is None:
                return
        self.globals[d.name] = GlobalInfo(d.name, d.elem, init, d.line)

    def outer_symbols(self, group: GroupInfo, binders: tuple[str | None, ...]) -> dict[str, Symbol]:
        return outer_symbols(self.target_values, self.consts, self.arrays, self.globals, group, binders)

    def block(self, b: A.Block, index: int) -> None:
        group = self.groups.get(b.group)
        if group is None:
            self.problem(b, f"'config.{b.group}' names no group; groups: {', '.join(self.groups) or 'none'}")
            return
        if group.tile_map is None:
            inner = ", ".join(c.name for c in group.children)
            self.problem(
                b,
                f"group '{b.group}' holds groups, not tiles; write the block for its inner group ({inner}) and use {b.group}.x there",
            )
            return
        if len(b.indices) != len(group.dims):
            self.problem(
                b,
                f"group '{b.group}' has {len(group.dims)} dimension(s) but the block gives {len(b.indices)} index(es)",
            )
            return
        binders: list[str | None] = []
        fixed: list[int | None] = []
        for k, idx in enumerate(b.indices):
            if isinstance(idx, A.Ref) and len(idx.parts) == 1:
                name = idx.parts[0]
                if self.name_ok(idx, name) and name in binders:
                    self.problem(idx, f"'{name}' names two coordinates of the block")
                elif name in self.consts or name in self.arrays or name in self.globals:
                    self.problem(
                        idx,
                        f"'{name}' is already declared in data or as a global; name the coordinate otherwise",
                    )
                binders.append(idx.parts[0])
                fixed.append(None)
            elif isinstance(idx, A.IntLit):
                if not 0 <= idx.value < group.dims[k]:
                    self.problem(
                        idx,
                        f"tile coordinate {idx.value} is outside group '{b.group}' (0..{group.dims[k] - 1})",
                    )
                binders.append(None)
                fixed.append(idx.value)
            else:
                self.problem(
                    idx, "a block's index is a name (every tile) or an integer (the tiles at that coordinate)"
                )
                return
        self.blocks.append(BlockInfo(b, group, tuple(binders), tuple(fixed), index))
        scope = Scope(self.outer_symbols(group, tuple(binders)))
        scope.push()
        self.stmts(b.body, scope, 0, group)
        scope.pop()

    # statements ----------------------------------------------------------------------------

    def stmts(self, stmts: tuple[A.Stmt, ...], scope: Scope, loops: int, group: GroupInfo) -> None:
        for s in stmts:
            self.stmt(s, scope, loops, group)

    def typed(self, e: A.Expr, scope: Scope) -> str | None:
        return expr_type(e, scope, self.problem)

    def stmt(self, s: A.Stmt, scope: Scope, loops: int, group: GroupInfo) -> None:
        if isinstance(s, A.VarDecl):
            shape = self.local_array(s, scope) if s.dims else ()
            if isinstance(s.init, A.ArrayInit) and not s.dims:
                self.problem(
                    s.init,
                    f"braces initialise arrays, but '{s.name}' is a scalar; write {s.elem} {s.name} = value;",
                )
            elif s.init is not None and not s.dims:
                self.typed(s.init, scope)  # type: ignore[arg-type]
            if not self.name_ok(s, s.name):
                return
            existing = scope.lookup(s.name)
            if existing is not None and existing.kind != "local":
                self.problem(
                    s, f"'{s.name}' is already a {_kind_words(existing.kind)}; give the variable another name"
                )
            elif scope.declared_here(s.name):
                self.problem(s, f"'{s.name}' is declared twice in the same braces")
            elif existing is not None:
                self.problem(s, f"'{s.name}' shadows a variable of an enclosing scope; give it another name")
            scope.declare(s.name, Symbol("local", s.elem, rank=len(shape or s.dims)))
        elif isinstance(s, A.Assign):
            self.assign(s, scope)
        elif isinstance(s, A.ExprStmt):
            self.call_stmt(s, scope)
        elif isinstance(s, A.If):
            self.typed(s.cond, scope)
            for body in (s.then, s.orelse or ()):
                scope.push()
                self.stmts(body, scope, loops, group)
                scope.pop()
        elif isinstance(s, A.While):
            self.typed(s.cond, scope)
            scope.push()
            self.stmts(s.body, scope, loops + 1, group)
            scope.pop()
        elif isinstance(s, A.For):
            scope.push()
            if s.init is not None:
                self.stmt(s.init, scope, loops, group)
            if s.cond is not None:
                self.typed(s.cond, scope)
            if s.step is not None:
                self.stmt(s.step, scope, loops, group)
            scope.push()
            self.stmts(s.body, scope, loops + 1, group)
            scope.pop()
            scope.pop()
        elif isinstance(s, A.ForIn):
            self.for_in(s, scope, loops, group)
        elif isinstance(s, (A.Break, A.Continue)):
            if loops == 0:
                word = "break" if isinstance(s, A.Break) else "continue"
                self.problem(s, f"'{word}' outside a loop; to end this tile's block use bsg_finish()")
        elif isinstance(s, A.Compound):
            scope.push()
            self.stmts(s.body, scope, loops, group)
            scope.pop()

    def local_array(self, s: A.VarDecl, scope: Scope) -> tuple[int, ...] | None:
        """A local array's shape (constant, positive, one or two dimensions) after checking
        its initialiser; ``None`` when it has none."""
        shape = self.positive_ints(s.dims, self.data_env(), f"a dimension of local array '{s.name}'")
        if shape is not None and len(shape) > 2:
            self.problem(
                s,
                f"local array '{s.name}' has {len(shape)} dimensions; local arrays have one or two (declare "
                "a larger one in data)",
            )
            shape = None
        if s.init is None:
            return shape
        if not isinstance(s.init, A.ArrayInit):
            self.problem(
                s.init,
                f"an array is initialised with braces: {s.elem} {s.name}{''.join('[..]' for _ in s.dims)} = {{...}};",
            )
            self.typed(s.init, scope)
            return shape
        items = s.init.items
        nested = [isinstance(i, A.ArrayInit) for i in items]
        if shape is not None and len(shape) == 2 and all(nested) and items:
            if len(items) > shape[0]:
                self.problem(s.init, f"{len(items)} rows initialise '{s.name}', which has {shape[0]}")
            for row in items:
                self.init_values(row, shape[1], f"a row of '{s.name}'", scope)  # type: ignore[arg-type]
        else:
            size = None if shape is None else shape[0] * (shape[1] if len(shape) == 2 else 1)
            self.init_values(s.init, size, f"'{s.name}'", scope)
        return shape

    def init_values(self, init: A.ArrayInit, size: int | None, what: str, scope: Scope) -> None:
        """A flat brace list: at most ``size`` values, none of them braces, each typed."""
        if size is not None and len(init.items) > size:
            self.problem(init, f"{len(init.items)} values initialise {what}, which holds {size}")
        for item in init.items:
            if isinstance(item, A.ArrayInit):
                self.problem(
                    item, f"too many braces in the initialiser of {what}; nest one level per dimension"
                )
            else:
                self.typed(item, scope)

    def assign(self, s: A.Assign, scope: Scope) -> None:
        value_type = self.typed(s.value, scope)
        target = s.target
        if isinstance(target, A.Ref):
            sym = resolve_ref(target, scope)
            if sym is None:
                self.problem(
                    target,
                    f"'{target.dotted}' is not declared; declare it first (int {target.dotted} = ...;)",
                )
                return
            if sym.kind not in ("local", "global"):
                self.problem(target, f"cannot assign to {_kind_words(sym.kind)} '{target.dotted}'")
                return
            if sym.rank:
                self.problem(
                    target,
                    f"cannot assign to the whole array '{target.dotted}'; assign its elements ({target.dotted}"
                    + "[i]" * sym.rank
                    + " = ...)",
                )
                return
            elem = sym.elem
        elif isinstance(target, A.Index):
            elem = expr_type(target, scope, self.problem)
            if elem is None:
                return
        else:
            self.problem(target, "only variables and array elements can be assigned")
            return
        if s.op != "=" and "bool" in (elem, value_type):
            self.problem(s, f"'{s.op}' on a bool; arithmetic takes ints and floats")
        elif s.op == "%=" and "float" in (elem, value_type):
            self.problem(s, "'%=' takes ints; the remainder of floats is not HBIR")

    def call_stmt(self, s: A.ExprStmt, scope: Scope) -> None:
        call = s.expr
        if not isinstance(call, A.Call):
            self.typed(call, scope)
            self.problem(
                s,
                "this expression statement does nothing; statements assign, declare, branch, loop or call printf / bsg_finish",
            )
            return
        if call.name == "bsg_finish":
            if call.args:
                self.problem(call, "bsg_finish() takes no arguments")
        elif call.name == "printf":
            if not call.args or not isinstance(call.args[0], A.StrLit):
                self.problem(call, 'printf\'s first argument is its format string: printf("x = %d\\n", x)')
                return
            conversions = printf_conversions(call.args[0].value)
            letters: list[str | None] = [None] * (len(call.args) - 1)
            if isinstance(conversions, str):
                self.problem(call.args[0], conversions)
            elif len([c for c in conversions if c != "s"]) > LOG_VALUES:
                self.problem(
                    call,
                    f"printf prints at most {LOG_VALUES} values (strings of %s do not count); split it in two",
                )
            elif len(conversions) != len(call.args) - 1:
                self.problem(
                    call,
                    f"printf's format has {len(conversions)} conversion(s) but {len(call.args) - 1} value(s) follow it",
                )
            else:
                letters = list(conversions)
            for letter, a in zip(letters, call.args[1:], strict=True):
                if letter == "s" and not isinstance(a, A.StrLit):
                    self.typed(a, scope)
                    self.problem(
                        a,
                        "'%s' prints a string literal (HBIR has no string values); write one, or use %d / %f",
                    )
                elif letter not in (None, "s") and isinstance(a, A.StrLit):
                    self.problem(a, f"a string is printed with '%s', not '%{letter}'")
                elif not isinstance(a, A.StrLit):
                    self.typed(a, scope)
        else:
            self.problem(
                call, f"unknown function '{call.name}'; HBIR code calls printf(...) and bsg_finish()"
            )

    def for_in(self, s: A.ForIn, scope: Scope, loops: int, group: GroupInfo) -> None:
        if len(s.args) != 2 + len(group.dims):
            coords = ", ".join(axis_name(k) for k in range(len(group.dims)))
            self.problem(
                s,
                f"iterator<...> takes the range, the layout and the {len(group.dims)} coordinate(s) of a tile of "
                f"group '{group.name}': iterator<n, L, {coords}>",
            )
        else:
            if self.typed(s.args[0], scope) not in (None, "int"):
                self.problem(s.args[0], "the range of an iterator is an int")
            layout = s.args[1]
            name = layout.parts[0] if isinstance(layout, A.Ref) and len(layout.parts) == 1 else None
            if name is None or (name not in self.layouts and name not in DISTRIBUTIONS):
                self.problem(
                    layout,
                    f"'{_text(layout)}' is not a layout; name one declared in data (layout L {{ ... }}) or block/chunked/strided/replicated",
                )
            for c in s.args[2:]:
                if self.typed(c, scope) not in (None, "int"):
                    self.problem(c, "a tile coordinate is an int")
        if s.elem != "int":
            self.problem(s, f"an iterator's variable is an int, not a {s.elem}")
        scope.push()
        if self.name_ok(s, s.var):
            existing = scope.lookup(s.var)
            if existing is not None:
                self.problem(s, f"'{s.var}' is already declared; give the loop variable another name")
            scope.declare(s.var, Symbol("local", "int"))
        scope.push()
        self.stmts(s.body, scope, loops + 1, group)
        scope.pop()
        scope.pop()


def outer_symbols(
    target_values: dict[str, int],
    consts: dict[str, Any],
    arrays: dict[str, ArrayInfo],
    globals_: dict[str, GlobalInfo],
    group: GroupInfo,
    binders: tuple[str | None, ...],
) -> dict[str, Symbol]:
    """What a block's code sees before its own declarations: target fields, constants, arrays,
    globals, the coordinates and extents of its group and of the groups around it."""
    syms: dict[str, Symbol] = {}
    for key, value in target_values.items():
        syms[key] = Symbol("target", "int", value=value)
    for name, value in consts.items():
        elem = "bool" if isinstance(value, bool) else "float" if isinstance(value, float) else "int"
        syms[name] = Symbol("const", elem, value=value)
    for a in arrays.values():
        syms[a.name] = Symbol("array", a.elem, rank=len(a.shape), python=a.name)
    for g in globals_.values():
        syms[g.name] = Symbol("global", g.elem, python=f"{g.name}[0]")
    for level, g in enumerate(group.chain):
        for k in range(len(g.dims)):
            axis = axis_name(k)
            syms[f"{g.name}.{axis}"] = Symbol("group", "int", value=(level, k), python=f"{g.name}__{axis}")
            syms[f"{g.name}.{axis}_max"] = Symbol("extent", "int", value=g.dims[k], python=str(g.dims[k]))
    for k in range(len(group.dims)):
        axis = axis_name(k)
        syms[f"{axis}_max"] = Symbol("extent", "int", value=group.dims[k], python=str(group.dims[k]))
        if binders[k] is not None:
            syms[binders[k]] = Symbol("coord", "int", value=k, python=f"{group.name}__{axis}")
    return syms


def part_bytes(a: ArrayInfo, point: tuple[int, ...]) -> int:
    """The bytes of ``a`` that part ``point`` of its partition grid owns (its layout's
    ownership, docs/hbir.md; the whole array without a grid or when replicated)."""
    whole = int(np.prod(a.shape)) * a.dtype.itemsize
    if a.grid is None or a.layout is None or a.layout.kind == "replicated":
        return whole
    from .ownership import owned

    ranges = owned(a, a.grid, point)
    return int(np.prod([sum(len(r) for r in axis) for axis in ranges])) * a.dtype.itemsize


def _dims(dims: Any) -> str:
    return "".join(f"[{d}]" for d in dims)


def _text(e: A.Expr) -> str:
    from .printer import format_expr

    return format_expr(e)


def _kind_words(kind: str) -> str:
    return {
        "const": "data constant",
        "array": "data array",
        "coord": "tile coordinate",
        "extent": "group extent",
        "target": "target field",
        "group": "group coordinate",
        "global": "global",
        "local": "variable",
    }[kind]


def fold(e: A.Expr, env: dict[str, Any]) -> Any:
    """The value of a constant expression over ``env`` (``None`` if it has none); what
    ``Checker.evaluate`` computes, without reporting, for the code generator to reuse."""
    if isinstance(e, (A.IntLit, A.FloatLit, A.BoolLit)):
        return e.value
    if isinstance(e, A.Ref):
        return env.get(e.dotted[len("data.") :] if e.parts[0] == "data" else e.dotted)
    if isinstance(e, A.Unary):
        v = fold(e.operand, env)
        return None if v is None else (not v) if e.op == "!" else -v
    if isinstance(e, A.Binary):
        a, b = fold(e.left, env), fold(e.right, env)
        try:
            return None if a is None or b is None else _binary(e.op, a, b)
        except ZeroDivisionError:
            return None
    if isinstance(e, A.Cond):
        c = fold(e.cond, env)
        return None if c is None else fold(e.then if c else e.orelse, env)
    return None


def _known(env: dict[str, Any]) -> str:
    names = sorted(env)
    return ", ".join(names[:12]) + (", ..." if len(names) > 12 else "") if names else "nothing"


def _binary(op: str, a: Any, b: Any) -> Any:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return c_div(a, b)
    if op == "%":
        return c_rem(a, b)
    if op == "&&":
        return bool(a) and bool(b)
    if op == "||":
        return bool(a) or bool(b)
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def check(program: A.Program) -> Model:
    """The program's ``Model``; ``HBIRCheckError`` listing every problem if it has any."""
    return Checker(program).run()


__all__ = [
    "HBIRCheckError",
    "c_div",
    "c_rem",
    "c_unescape",
    "check",
    "fold",
    "inline_strings",
    "outer_symbols",
    "printf_conversions",
]
