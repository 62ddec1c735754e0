"""The target and config segments of an HBIR program: the machine (memories, tile arrays)
and the groups of tiles mapped onto it.

Why a class of its own: these two segments declare what every later one is checked
against (target values, memories, groups and their tiles); their checks — sizes, a tile
map inside its tile array, groups that do not overlap — need nothing of data or code.
"""

from __future__ import annotations

import itertools
import re

from . import ast as A
from .checkcontext import CheckContext
from .model import GroupInfo, MemoryInfo, axis_name

_SIZE = re.compile(r"([0-9]+)([KMG]?)B?")
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


class TargetChecker:
    """Checks the target and config segments into ``cx``'s target values, memories, tile
    arrays and groups."""

    def __init__(self, cx: CheckContext):
        self.cx = cx

    def check_target(self, seg: A.Target) -> None:
        for item in seg.items:
            if isinstance(item, A.Memory):
                self.memory(item, f"target.{item.name}")
                self.cx.memories.add(item.name)
            else:
                if not self.unique_target(item):
                    continue
                dims = self.cx.positive_ints(item.dims, {}, f"the size of tile array '{item.name}'")
                if dims is None:
                    continue
                if len(dims) not in (1, 2):
                    self.cx.problem(
                        item,
                        f"tile array '{item.name}' has {len(dims)} dimensions; declare tile {item.name}[rows][cols]",
                    )
                    continue
                self.cx.tile_arrays[item.name] = dims
                self.cx.target_values[f"target.{item.name}.x_max"] = dims[0]
                if len(dims) == 2:
                    self.cx.target_values[f"target.{item.name}.y_max"] = dims[1]
                for m in item.memories or ():
                    self.memory(m, f"target.{item.name}.{m.name}")

    def unique_target(self, item: A.Memory | A.Tile) -> bool:
        if not self.cx.name_ok(item, item.name):
            return False
        if item.name in self.cx.memories or item.name in self.cx.tile_arrays:
            self.cx.problem(item, f"'{item.name}' is declared twice in the target segment")
            return False
        return True

    def memory(self, m: A.Memory, prefix: str) -> None:
        """A memory array: its fields become target values (``target.g.x_max``, ``y_max``...
        per dimension, ``count`` = how many memories, ``size`` and ``width`` in bytes) and
        its ``MemoryInfo`` what data placements and capacities are checked against."""
        dims = self.cx.positive_ints(m.dims, {}, f"the count of memory '{m.name}'") or ()
        for k, d in enumerate(dims):
            self.cx.target_values[f"{prefix}.{axis_name(k)}_max"] = d
        if not dims:
            self.cx.target_values[f"{prefix}.x_max"] = 1
        info = MemoryInfo(prefix[len("target.") :], tuple(dims), None, None, m.line)
        self.cx.target_values[f"{prefix}.count"] = info.count
        values: dict[str, int] = {}
        for f in m.fields:
            if f.name not in ("size", "width"):
                self.cx.problem(
                    f, f"memory '{m.name}' has no field '{f.name}'; a memory declares size and width"
                )
                continue
            if f.name in values or f"{f.name}?" in values:
                self.cx.problem(f, f"memory '{m.name}' declares its {f.name} twice")
            if f.value == "?":
                values[f"{f.name}?"] = 0
                continue
            match = _SIZE.fullmatch(f.value)
            if match is None or (f.name == "width" and match.group(2)):
                self.cx.problem(
                    f,
                    f"'{f.value}' is not a {f.name}; write e.g. {'8G or 16K' if f.name == 'size' else '8B'}, or ? when unknown",
                )
                continue
            values[f.name] = int(match.group(1)) * _UNITS[match.group(2)]
            self.cx.target_values[f"{prefix}.{f.name}"] = values[f.name]
        self.cx.memory_infos[info.name] = MemoryInfo(
            info.name, info.dims, values.get("size"), values.get("width"), m.line
        )

    def check_config(self, seg: A.Config) -> None:
        for g in seg.groups:
            self.group(g, None)
        self.check_overlap()

    def group(self, g: A.Group, parent: GroupInfo | None) -> None:
        if not self.cx.name_ok(g, g.name):
            return
        if g.name in self.cx.groups:
            self.cx.problem(
                g, f"group '{g.name}' is declared twice (first at line {self.cx.groups[g.name].line})"
            )
            return
        dims = self.cx.positive_ints(g.dims, self.cx.target_values, f"the size of group '{g.name}'")
        if dims is None:
            return
        if not dims:
            self.cx.problem(g, f"group '{g.name}' has no size; write group {g.name}[n] (or [rows][cols]...)")
            return
        info = GroupInfo(g.name, dims, g.line, parent, column=g.column)
        self.cx.groups[g.name] = info
        if parent is not None:
            parent.children.append(info)
        maps = [i for i in g.items if isinstance(i, A.TileMap)]
        subgroups = [i for i in g.items if isinstance(i, A.Group)]
        if maps and subgroups or len(maps) > 1:
            self.cx.problem(
                g,
                f"group '{g.name}' must either map its members to tiles (one 'tile ...;') or hold groups, not both",
            )
        elif not maps and not subgroups:
            self.cx.problem(
                g, f"group '{g.name}' maps no tiles; add 'tile target.t[x][y];' (or nested groups)"
            )
        for sub in subgroups:
            self.group(sub, info)
        if len(maps) == 1 and not subgroups:
            self.tile_map(info, maps[0])

    def tile_map(self, info: GroupInfo, tmap: A.TileMap) -> None:
        base, indices = A.index_chain(tmap.ref)
        if not (isinstance(base, A.Ref) and len(base.parts) == 2 and base.parts[0] == "target"):
            self.cx.problem(tmap, "a group's members map to tiles as 'tile target.t[x][y];'")
            return
        array = base.parts[1]
        if array not in self.cx.tile_arrays:
            self.cx.problem(
                base,
                f"'{base.dotted}' is not a tile array of the target; tile arrays: {', '.join(self.cx.tile_arrays) or 'none'}",
            )
            return
        shape = self.cx.tile_arrays[array]
        if len(indices) != len(shape):
            self.cx.problem(
                tmap, f"tile array '{array}' has {len(shape)} dimension(s) but is indexed with {len(indices)}"
            )
            return
        info.tile_array, info.tile_map = array, tmap.ref
        chain = info.chain
        for combo in itertools.product(*(itertools.product(*(range(d) for d in g.dims)) for g in chain)):
            env = dict(self.cx.target_values)
            for g, coords in zip(chain, combo):
                for k, c in enumerate(coords):
                    env[f"{g.name}.{axis_name(k)}"] = c
                    env[f"{g.name}.{axis_name(k)}_max"] = g.dims[k]
            for k, c in enumerate(combo[-1]):
                env[axis_name(k)] = c
                env[f"{axis_name(k)}_max"] = info.dims[k]
            before = len(self.cx.problems)
            coords = [self.cx.evaluate(i, env, f"the tile of group '{info.name}'") for i in indices]
            if len(self.cx.problems) > before:
                return
            if not all(isinstance(c, int) and 0 <= c < n for c, n in zip(coords, shape)):
                member = "".join(f"[{c}]" for level in combo for c in level)
                self.cx.problem(
                    tmap,
                    f"member {member} of group '{info.name}' maps to tile {array}{''.join(f'[{c}]' for c in coords)}, "
                    f"outside the {'x'.join(map(str, shape))} tile array",
                )
                return
            info.members[combo] = tuple(coords)

    def check_overlap(self) -> None:
        owner: dict[tuple[str, tuple[int, ...]], tuple[GroupInfo, tuple]] = {}
        reported: set[tuple[str, str]] = set()
        for g in self.cx.groups.values():
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
                        self.cx.problem(
                            self.group_node(g),
                            f"group '{g.name}' maps two members to the same tile {where}; give each member its own tile",
                        )
                    else:
                        self.cx.problem(
                            self.group_node(g),
                            f"groups '{other.name}' (line {other.line}) and '{g.name}' (line {g.line}) overlap: both use tile "
                            f"{where}; map one of them to other tiles (offset its tile map, as in tile target.{key[0]}[x+2][y])",
                        )
                else:
                    owner[key] = (g, member)

    def group_node(self, g: GroupInfo) -> A.Node:
        return A.Node(line=g.line, column=g.column)
