"""A picture of an HLC mapping (``hpvm svm map FILE -o out.png``): the machine as
``draw_machine`` draws it, each kernel named above its processor with its stages, and each
stream drawn in red from its writer's processor to its FIFO or memory and on to its
reader's processor, labelled beside its place. matplotlib is imported only here."""

from __future__ import annotations

import os
from pathlib import Path

from .mapping import HOST, Mapping
from .picture import machine_axes, save

STREAM_COLOUR = "#d62728"


def draw_mapping(mapping: Mapping, path: str | os.PathLike[str]) -> Path:
    """Draw ``mapping`` over its machine into ``path`` (PNG, SVG or PDF); returns the path."""
    machine = mapping.machine
    fig, ax, pos = machine_axes(machine)
    control = machine.control_processor.name
    processor_of = {k.name: k.processor for k in mapping.kernels}
    processor_of[HOST] = control
    for k in mapping.kernels:
        x, y = pos[k.processor]
        stages = "\n".join(mapping.stages[i] for i in k.stages)
        ax.text(x, y + 0.22, f"{k.name}\n{stages}", ha="center", va="bottom", fontsize=6, color=STREAM_COLOUR)
    below: dict[str, int] = {}
    for s in mapping.streams:
        lx, ly = pos[s.location]
        for end in (s.src, s.dst):
            px, py = pos[processor_of[end]]
            ax.plot([px, lx], [py, ly], color=STREAM_COLOUR, linewidth=1.5, alpha=0.6, zorder=2)
        row = below.get(s.location, 0)
        below[s.location] = row + 1
        ax.text(
            lx,
            ly - 0.2 - 0.12 * row,
            f"{s.name}: {s.src} → {s.dst}",
            ha="center",
            va="top",
            fontsize=6,
            color=STREAM_COLOUR,
        )
    lowest = max(below.values(), default=0)
    ax.set_ylim(-0.5 - 0.12 * lowest, 2.5 + 0.1 * max((len(k.stages) for k in mapping.kernels), default=0))
    ax.set_title(f"{len(mapping.stages)} stage(s) mapped onto {machine.name} (cost {mapping.cost:g})")
    return save(fig, path, "draw_mapping")
