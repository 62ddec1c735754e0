"""A picture of what a program did: its kernels (with their processors) and control code
as boxes, each stream an arrow from a writer to a reader labelled with its name and where
it lives, each block a dashed arrow. Drawn from what the run observed (``svm.draw_program``,
``hpvm svm show FILE.py``), since in Python which streams a kernel reads is known only
when it reads them. matplotlib is imported only here."""

from __future__ import annotations

import os
from pathlib import Path

from .picture import save
from .runtime import ProgramUse, program_uses

CONTROL = "control code"


def arrows(uses: list[ProgramUse]) -> list[tuple[str, str, ProgramUse]]:
    """(writer, reader, use) for every pair; a side nobody used is the memory itself —
    ``"[LOCALMEM1]>"`` where data was put in place, ``">[LOCALMEM1]"`` where results were
    left — outside the SVM's calls."""
    out = []
    for use in uses:
        writers = sorted(use.writers) or [f"[{use.location}]>"]
        readers = sorted(use.readers) or [f">[{use.location}]"]
        for w in writers:
            for r in readers:
                out.append((w, r, use))
    return out


def layers(nodes: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Longest-path layers from the sources (edges into control code ignored: it is drawn
    once, first); cycles are cut by capping the relaxation at ``len(nodes)`` rounds."""
    layer = dict.fromkeys(nodes, 0)
    for _ in range(len(nodes)):
        changed = False
        for a, b in edges:
            if b != CONTROL and a != b and layer[b] < layer[a] + 1:
                layer[b] = layer[a] + 1
                changed = True
        if not changed:
            break
    return layer


def draw_program(path: str | os.PathLike[str]) -> Path:
    """Draw the kernels, streams and blocks of the running (or last) SVM program into
    ``path`` (PNG, SVG or PDF by its suffix); returns the path."""
    kernels, uses = program_uses()
    pairs = arrows(uses)
    nodes = list(dict.fromkeys([CONTROL, *kernels, *(n for w, r, _ in pairs for n in (w, r))]))
    nodes = [n for n in nodes if n != CONTROL or any(CONTROL in (w, r) for w, r, _ in pairs)]
    layer = layers(nodes, [(w, r) for w, r, _ in pairs])
    columns: dict[int, list[str]] = {}
    for n in nodes:
        columns.setdefault(layer[n], []).append(n)
    pos = {n: (float(col), -float(row)) for col, names in columns.items() for row, n in enumerate(names)}

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    depth = max((len(v) for v in columns.values()), default=1)
    fig, ax = plt.subplots(figsize=(max(5.0, 2.6 * len(columns)), max(2.5, 1.3 * depth)))
    seen: dict[tuple[str, str], int] = {}
    for w, r, use in pairs:
        (x0, y0), (x1, y1) = pos[w], pos[r]
        bend = 0.25 * seen.get((w, r), 0) + (0.3 if x1 <= x0 else 0.0)
        seen[(w, r)] = seen.get((w, r), 0) + 1
        ax.annotate(
            "",
            xy=(x1, y1),
            xytext=(x0, y0),
            arrowprops={
                "arrowstyle": "-|>",
                "color": "#4a90d9" if use.kind == "stream" else "#5aae61",
                "linestyle": "-" if use.kind == "stream" else "--",
                "connectionstyle": f"arc3,rad={bend}",
                "shrinkA": 28,
                "shrinkB": 28,
            },
            zorder=1,
        )
        ax.text(
            x0 + 0.4 * (x1 - x0),
            y0 + 0.4 * (y1 - y0) + 0.1 + bend / 2,
            f"{use.name} @ {use.location}",
            ha="center",
            fontsize=7,
            color="#333",
            zorder=2,
        )
    for n, (x, y) in pos.items():
        if n == CONTROL:
            label, colour = n, "#8e6cc6"
        elif n.startswith("[") or n.startswith(">["):
            label, colour = f"memory\n{n.strip('[]>')}", "#dfe6df"
        else:
            label, colour = f"{n}\non {kernels.get(n, '?')}", "#cfe0f5"
        ax.text(
            x,
            y,
            label,
            ha="center",
            va="center",
            fontsize=8,
            zorder=3,
            bbox={"boxstyle": "round,pad=0.45", "facecolor": colour, "edgecolor": "#333"},
        )
    xs = [x for x, _ in pos.values()] or [0.0]
    ys = [y for _, y in pos.values()] or [0.0]
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 0.6, max(ys) + 0.6)
    ax.axis("off")
    ax.set_title("SVM program: kernels, streams (solid) and blocks (dashed)")
    return save(fig, path, "draw_program")
