"""A picture of a machine: processors on top, memories and FIFOs below, links between
them as small diamonds (a link joined to a link is a line between two diamonds).
``hpvm svm machine FILE -o machine.png``; matplotlib is imported only here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .errors import SVMError
from .machine import Machine

COLOURS = {
    "control": "#8e6cc6",
    "stream": "#4a90d9",
    "DMA": "#e8a33d",
    "memory": "#5aae61",
    "FIFO": "#9aa5b1",
    "link": "#555555",
}


def _size(n: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n % scale == 0:
            return f"{n // scale} {unit}iB"
    return f"{n} B"


def _point_to_point(machine: Machine, link: str) -> bool:
    """A link with two ends, neither a link: drawn as a wire, not as a bus."""
    ends = machine.links[link].ends
    return len(ends) == 2 and not any(e in machine.links for e in ends)


def positions(machine: Machine) -> dict[str, tuple[float, float]]:
    """x, y of every entry: processors at y = 2 in file order (control first), links at
    y = 1, memories and FIFOs at y = 0, each row ordered by where its neighbours are."""
    procs = sorted(machine.processors.values(), key=lambda p: (not p.is_control, p.is_dma))
    pos = {p.name: (float(i), 2.0) for i, p in enumerate(procs)}
    neighbours: dict[str, set[str]] = {}
    for link in machine.links.values():
        for end in link.ends:
            neighbours.setdefault(link.name, set()).add(end)
            neighbours.setdefault(end, set()).add(link.name)

    def mean_x(name: str, seen: set[str]) -> float | None:
        xs = []
        for other in neighbours.get(name, ()):
            if other in pos and pos[other][1] == 2.0:
                xs.append(pos[other][0])
            elif other in machine.links and other not in seen:
                x = mean_x(other, seen | {name})
                if x is not None:
                    xs.append(x)
        return sum(xs) / len(xs) if xs else None

    width = max(len(procs) - 1, 1)
    bottom = [*machine.memories, *machine.fifos]
    order = sorted(bottom, key=lambda n: mean_x(n, set()) if mean_x(n, set()) is not None else width + 1)
    spread = width / max(len(order) - 1, 1) if len(order) > 1 else 0.0
    for i, name in enumerate(order):
        pos[name] = (i * spread if len(order) > 1 else width / 2, 0.0)
    for name in machine.links:
        xs = [pos[e][0] for e in machine.links[name].ends if e in pos]
        pos[name] = (sum(xs) / len(xs) if xs else width / 2, 1.0)
    for name in machine.links:  # links joined only to links: between them
        if not any(
            e in machine.processors or e in machine.memories or e in machine.fifos
            for e in machine.links[name].ends
        ):
            xs = [pos[e][0] for e in machine.links[name].ends]
            pos[name] = (sum(xs) / len(xs), 1.0)
    return pos


def draw_machine(machine: Machine, path: str | os.PathLike[str]) -> Path:
    """Draw ``machine`` into ``path`` (PNG, SVG or PDF by its suffix); returns the path.
    A link between two entries is a wire; a bus (more ends, or joined to a link) is a
    labelled diamond wired to each of its ends."""
    fig, ax, _ = machine_axes(machine)
    ax.set_title(f"machine {machine.name}")
    return save(fig, path, "draw_machine")


def machine_axes(machine: Machine) -> tuple[Any, Any, dict[str, tuple[float, float]]]:
    """A matplotlib figure and axes with ``machine`` drawn, and where each entry is (for
    pictures drawn over the machine, such as ``hpvm svm map``'s)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    pos = positions(machine)
    n = max(len(machine.processors), len(machine.memories) + len(machine.fifos), 2)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * n), 4.2))
    for link in machine.links.values():
        if _point_to_point(machine, link.name):  # a plain wire between its two ends
            (x0, y0), (x1, y1) = (pos[e] for e in link.ends)
            ax.plot([x0, x1], [y0, y1], color=COLOURS["link"], linewidth=1, zorder=1)
            continue
        x0, y0 = pos[link.name]
        for end in link.ends:
            x1, y1 = pos[end]
            ax.plot([x0, x1], [y0, y1], color=COLOURS["link"], linewidth=1, zorder=1)
        ax.scatter(x0, y0, marker="D", s=30, color=COLOURS["link"], zorder=2)
        ax.annotate(link.name, (x0, y0), xytext=(6, 4), textcoords="offset points", fontsize=7, color="#333")

    def box(name: str, kind: str, detail: str) -> None:
        x, y = pos[name]
        ax.text(
            x,
            y,
            f"{name}\n{detail}",
            ha="center",
            va="center",
            fontsize=7,
            zorder=3,
            bbox={"boxstyle": "round,pad=0.4", "facecolor": COLOURS[kind], "edgecolor": "#333", "alpha": 0.9},
        )

    for p in machine.processors.values():
        kind = "control" if p.is_control else "DMA" if p.is_dma else "stream"
        detail = f"{kind}" + (f", {p.max_concurrent_kernels} at once" if p.is_dma else "")
        box(p.name, kind, detail)
    for m in machine.memories.values():
        box(m.name, "memory", _size(m.size))
    for f in machine.fifos.values():
        box(f.name, "FIFO", f"{f.depth} × {f.element_size} B")
    xs = [x for x, _ in pos.values()]
    ax.set_xlim(min(xs) - 0.7, max(xs) + 0.7)
    ax.set_ylim(-0.5, 2.5)
    ax.axis("off")
    ax.legend(
        handles=[Patch(color=c, label=k) for k, c in COLOURS.items()],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize="small",
    )
    return fig, ax, pos


def save(fig: Any, path: str | os.PathLike[str], function: str) -> Path:
    """Write ``fig`` to ``path`` and close it; an ``SVMError`` if it cannot be written."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out = Path(path)
    try:
        fig.savefig(out, dpi=120)
    except (OSError, ValueError) as exc:
        raise SVMError(f"{function}: cannot write {str(out)!r}: {exc}") from exc
    finally:
        plt.close(fig)
    return out
