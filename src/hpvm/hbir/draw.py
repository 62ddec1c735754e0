"""The tile map of a checked HBIR program, drawn with matplotlib (``program.draw(path)``,
``hpvm hbir show FILE -o map.svg``).

Each tile array is a grid of squares, one per tile, row x from the top and column y from
the left. A tile that belongs to a group is filled with the group's colour and labelled
with its member coordinates (``tg[1][2]``; ``grid[1].row[2]`` for nested groups); below the
label, each array partitioned over that group lists the part the tile owns
(``C[8:16,136:144,…]``) — the ownership of docs/hbir.md, the same the iterator visits. The
target's memories are boxes under the tiles, naming the arrays placed in them. Matplotlib
is imported here only, when a picture is drawn.
"""

from __future__ import annotations

from pathlib import Path

from . import ownership
from .model import ArrayInfo, GroupInfo, Model

_PALETTE = [
    "#8dd3c7",
    "#ffffb3",
    "#bebada",
    "#fb8072",
    "#80b1d3",
    "#fdb462",
    "#b3de69",
    "#fccde5",
    "#d9d9d9",
    "#bc80bd",
]
#: Above this many tiles in an array, tiles are coloured but not labelled (text would not fit).
MAX_LABELLED = 256


def _ranges(parts: list[range], limit: int = 3) -> str:
    if not parts:
        return "—"
    out = []
    for r in parts[:limit]:
        text = f"{r.start}:{r.stop}" if r.step == 1 else f"{r.start}:{r.stop}:{r.step}"
        out.append(text)
    return ",".join(out) + (",…" if len(parts) > limit else "")


def owned_text(array: ArrayInfo, grid: tuple[int, ...], ids: tuple[int, ...]) -> str:
    """What tile ``ids`` of ``grid`` owns of ``array``, as ``A[0:8,64:72]`` (docs/hbir.md,
    ``ownership.py``): a 1-D array is dealt over the tiles in row-major order, a 2-D array
    over a 2-D grid by rows along x and columns along y, and so on for more dimensions."""
    assert array.layout is not None
    if array.layout.kind == "replicated":
        return f"{array.name} (copy)"
    owned = ownership.owned(array, grid, ids)
    return array.name + "".join(f"[{_ranges(axis)}]" for axis in owned)


#: Above this many memories holding parts, the map shows one box per memory array instead.
MAX_MEMORY_BOXES = 8


def memory_contents(model: Model) -> dict[str, list[str]]:
    """What each memory holds, for the boxes under the tiles: per memory of an array
    (``target.g[1]``) the parts placed in it (``src0[250:500]``), or per memory array the
    arrays that name it without indices (or when there are too many memories to show)."""
    per_memory: dict[str, list[str]] = {}
    whole: dict[str, list[str]] = {}
    for a in model.arrays.values():
        if a.layout is None or not a.layout.memory:
            continue
        name = f"target.{a.layout.memory}"
        placed = {p: w for p, w in a.parts.items() if w is not None}
        if not placed:
            whole.setdefault(name, []).append(a.name)
        for point, where in placed.items():
            part = owned_text(a, a.grid, point) if a.grid else a.name  # type: ignore[arg-type]
            per_memory.setdefault(name + "".join(f"[{c}]" for c in where), []).append(part)
    if len(per_memory) > MAX_MEMORY_BOXES:
        for key in per_memory:
            whole.setdefault(key.split("[")[0], [])
        for a in model.arrays.values():
            if a.layout is not None and a.layout.memory and any(a.parts.values()):
                whole[f"target.{a.layout.memory}"].append(a.name)
        per_memory = {}
    return {**dict(sorted(per_memory.items())), **whole}


def _partition_ids(
    array: ArrayInfo, group: GroupInfo, member: tuple
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The grid and coordinates that place ``array`` on this member of ``group`` (its own
    grid, or an enclosing group's), or ``None`` when the array is not partitioned over it."""
    if array.grid is None or array.layout is None:
        return None
    for g, coords in reversed(list(zip(group.chain, member))):
        if array.partitioned_over(g):
            return g.dims, coords
    return None


def draw(model: Model, path: str | Path) -> None:
    """Write the tile map of ``model`` to ``path`` (.svg, .png or .pdf)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    colours = {
        g: _PALETTE[i % len(_PALETTE)]
        for i, g in enumerate(n for n, g in model.groups.items() if g.tile_map is not None)
    }
    tiles: dict[tuple[str, tuple[int, ...]], tuple[GroupInfo, tuple]] = {}
    for g in model.groups.values():
        for member, tile in g.members.items():
            tiles[(g.tile_array or "", tile)] = (g, member)
    cell = 2.4
    width = (
        max((dims[-1] if len(dims) == 2 else dims[0]) for dims in model.tile_arrays.values()) * cell
        if model.tile_arrays
        else cell
    )
    heights = [(dims[0] if len(dims) == 2 else 1) * cell + 1.0 for dims in model.tile_arrays.values()]
    memories = memory_contents(model)
    width = max(width, len(memories) * cell * 1.6)
    total = sum(heights) + (1.8 if memories else 0) + 0.6
    fig = Figure(figsize=(max(width, 6) * 0.9, total * 0.9))
    ax = fig.add_subplot()
    ax.set_xlim(-0.2, max(width, 6) + 0.2)
    ax.set_ylim(-total, 0.2)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"{Path(model.filename).name}: tiles, groups and data", fontsize=11)
    top = 0.0
    for (name, dims), height in zip(model.tile_arrays.items(), heights):
        rows, cols = (dims[0], dims[1]) if len(dims) == 2 else (1, dims[0])
        ax.text(0, top - 0.35, f"target.{name}[{']['.join(map(str, dims))}]", fontsize=9, weight="bold")
        labelled = rows * cols <= MAX_LABELLED
        for x in range(rows):
            for y in range(cols):
                coords = (x, y) if len(dims) == 2 else (y,)
                left, bottom = y * cell, top - 0.8 - (x + 1) * cell
                owner = tiles.get((name, coords))
                face = colours[owner[0].name] if owner else "white"
                ax.add_patch(
                    Rectangle((left, bottom), cell * 0.95, cell * 0.95, facecolor=face, edgecolor="#555555")
                )
                if not labelled:
                    continue
                lines = [f"{name}[{']['.join(map(str, coords))}]"]
                if owner is not None:
                    g, member = owner
                    lines.append(
                        ".".join(f"{c.name}[{']['.join(map(str, m))}]" for c, m in zip(g.chain, member))
                    )
                    for a in model.arrays.values():
                        placed = _partition_ids(a, g, member)
                        if placed is not None:
                            lines.append(owned_text(a, *placed))
                ax.text(
                    left + 0.08,
                    bottom + cell * 0.87,
                    "\n".join(lines),
                    fontsize=6,
                    va="top",
                    family="monospace",
                )
        top -= height
    if memories:
        ax.text(0, top - 0.35, "memories", fontsize=9, weight="bold")
        for k, (mem, held) in enumerate(memories.items()):
            left = k * cell * 1.6
            ax.add_patch(
                Rectangle((left, top - 1.7), cell * 1.5, 1.1, facecolor="#eeeeee", edgecolor="#555555")
            )
            ax.text(
                left + 0.1,
                top - 0.7,
                "\n".join([mem, *held[:4]] + (["…"] if len(held) > 4 else [])),
                fontsize=6,
                va="top",
                family="monospace",
            )
    handles = [Rectangle((0, 0), 1, 1, facecolor=c) for c in colours.values()]
    if handles:
        ax.legend(handles, [f"group {n}" for n in colours], loc="upper right", fontsize=7, frameon=False)
    fig.savefig(str(path), bbox_inches="tight")


__all__ = ["MAX_LABELLED", "MAX_MEMORY_BOXES", "draw", "memory_contents", "owned_text"]
