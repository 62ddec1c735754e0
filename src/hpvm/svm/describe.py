"""A machine as text, for ``hpvm svm machine FILE``: what the metadata declares and what
each processor reaches over links (restriction A6) — a check of a metadata file."""

from __future__ import annotations

from .machine import Machine


def _size(n: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n % scale == 0:
            return f"{n // scale} {unit}iB"
    return f"{n} B"


def describe(machine: Machine) -> str:
    """Processors (control, stream, DMA), memories, FIFOs and links, one line each."""
    lines = [
        f"machine {machine.name!r} ({machine.source})"
        + (f": {machine.description}" if machine.description else "")
    ]
    lines.append(f"processors ({len(machine.processors)}):")
    for p in machine.processors.values():
        role = "control" if p.is_control else "DMA" if p.is_dma else "stream"
        slots = f", {p.max_concurrent_kernels} concurrent" if p.is_dma else ""
        kernels = ", ".join(p.supported_kernels) or "no kernels"
        reach = ", ".join(sorted(machine.reachable(p.name))) or "nothing"
        lines.append(
            f"  {p.name:<10} {role}{slots}; master {', '.join(p.master)}; runs {kernels}; reaches {reach}; cost {p.cost:g}"
        )
    lines.append(f"memories ({len(machine.memories)}):")
    for m in machine.memories.values():
        lines.append(f"  {m.name:<10} {_size(m.size)}, width {m.width} B; cost {m.cost:g}")
    lines.append(f"FIFOs ({len(machine.fifos)}):")
    for f in machine.fifos.values():
        lines.append(f"  {f.name:<10} {f.depth} × {f.element_size} B; cost {f.cost:g}")
    lines.append(f"links ({len(machine.links)}):")
    for link in machine.links.values():
        lines.append(f"  {link.name:<10} {' — '.join(link.ends)}; cost {link.cost:g}")
    return "\n".join(lines)
