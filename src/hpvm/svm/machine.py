"""Machines: the physical entities of the seed (processors, memories, FIFOs, links) read
from TOML metadata, or "this computer" built in code.

A ``Machine`` is plain data: the runtime (``runtime.py``) gives its memories bytes and its
processors threads. ``reachable(processor)`` answers restriction A6: the memories and
FIFOs a processor reaches over links with no processor or memory in between.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from .errors import SVMError

USER_DEFINED_KERNEL = "USER_DEFINED_KERNEL"
PREDEFINED_KERNELS = ("Move", "StridedScatter", "StridedGather", "IndexedScatter", "IndexedGather")


@dataclass(frozen=True)
class Memory:
    """Random-access storage of ``size`` bytes, accessed ``width`` bytes at a time."""

    name: str
    size: int
    width: int = 4
    cost: float = 1.0
    description: str = ""


@dataclass(frozen=True)
class Fifo:
    """A hardware first-in first-out buffer of ``depth`` slots of ``element_size`` bytes."""

    name: str
    depth: int
    element_size: int
    cost: float = 1.0
    description: str = ""


@dataclass(frozen=True)
class Processor:
    """Logic that runs kernels (or control code, when it is its own master)."""

    name: str
    master: tuple[str, ...]
    supported_kernels: tuple[str, ...] = ()
    is_dma: bool = False
    max_concurrent_kernels: int = 1
    cost: float = 1.0
    description: str = ""

    @property
    def is_control(self) -> bool:
        """A processor that is its own master runs control code (seed: binding)."""
        return self.name in self.master

    def supports(self, kernel_name: str, user_defined: bool) -> bool:
        if user_defined:
            return USER_DEFINED_KERNEL in self.supported_kernels
        return kernel_name in self.supported_kernels


@dataclass(frozen=True)
class Link:
    """Connects two or more ends: processors, memories, FIFOs or other links."""

    name: str
    ends: tuple[str, ...]
    cost: float = 1.0
    description: str = ""


@dataclass
class Machine:
    """A machine description: name → entry for each kind of physical entity."""

    name: str
    processors: dict[str, Processor]
    memories: dict[str, Memory] = field(default_factory=dict)
    fifos: dict[str, Fifo] = field(default_factory=dict)
    links: dict[str, Link] = field(default_factory=dict)
    description: str = ""
    source: str = "<code>"
    _reach: dict[str, frozenset[str]] = field(default_factory=dict, repr=False, compare=False)
    _paths: dict[str, dict[str, float]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_references(self)

    def _repr_svg_(self) -> str | None:
        """The machine's picture in a notebook (``hpvm svm machine -o``'s)."""
        from ..ir.pictures import svg_text
        from .picture import draw_machine

        return svg_text(lambda path: draw_machine(self, path), f"machine {self.name!r}")

    @property
    def control_processor(self) -> Processor:
        """The processor the control code runs on: the first that is its own master."""
        for proc in self.processors.values():
            if proc.is_control:
                return proc
        raise SVMError(
            f"{self.source}: machine {self.name!r} has no control processor: give one processor "
            'itself as master (master = "ITS_NAME")'
        )

    def reachable(self, processor: str) -> frozenset[str]:
        """Names of the memories and FIFOs that ``processor`` reaches over links alone
        (restriction A6: no processor or memory in between)."""
        if processor not in self._reach:
            self._reach[processor] = _reach_from(self, processor)
        return self._reach[processor]

    def link_costs(self, processor: str) -> dict[str, float]:
        """For each memory and FIFO that ``processor`` reaches (``reachable``), the cost of
        the cheapest path of links to it: the sum of the costs of the links it crosses
        (a link joined to a link counts both). The HLC mapping adds these to a stream's cost."""
        if processor not in self._paths:
            self._paths[processor] = _path_costs(self, processor)
        return self._paths[processor]

    def kind_of(self, name: str) -> str | None:
        for kind, table in (
            ("processor", self.processors),
            ("memory", self.memories),
            ("FIFO", self.fifos),
            ("link", self.links),
        ):
            if name in table:
                return kind
        return None


def _reach_from(machine: Machine, processor: str) -> frozenset[str]:
    touching: dict[str, list[str]] = {}
    for link in machine.links.values():
        for end in link.ends:
            touching.setdefault(end, []).append(link.name)
            touching.setdefault(link.name, []).append(end)
    found: set[str] = set()
    seen = {processor}
    frontier = list(touching.get(processor, []))
    while frontier:
        name = frontier.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in machine.memories or name in machine.fifos:
            found.add(name)
        elif name in machine.links:
            frontier.extend(touching.get(name, []))
    return frozenset(found)


def _path_costs(machine: Machine, processor: str) -> dict[str, float]:
    """Dijkstra over the links from ``processor``: a path enters a link at its cost and
    goes on only through links (A6), ending at a memory or FIFO that the last link touches."""
    import heapq

    links = machine.links
    places = {**machine.memories, **machine.fifos}
    best: dict[str, float] = {}
    done: set[str] = set()
    queue = [(link.cost, name) for name, link in links.items() if processor in link.ends]
    heapq.heapify(queue)
    while queue:
        cost, name = heapq.heappop(queue)
        if name in done:
            continue
        done.add(name)
        for end in links[name].ends:
            if end in places:
                best[end] = min(best.get(end, cost), cost)
        joined = [
            other
            for other, lk in links.items()
            if other not in done and (name in lk.ends or other in links[name].ends)
        ]
        for other in joined:
            heapq.heappush(queue, (cost + links[other].cost, other))
    return best


def _check_references(machine: Machine) -> None:
    src = machine.source
    owners: dict[str, str] = {}
    for kind, table in (
        ("processors", machine.processors),
        ("memories", machine.memories),
        ("fifos", machine.fifos),
        ("links", machine.links),
    ):
        for name in table:
            if name in owners:
                raise SVMError(
                    f"{src}: {kind}.{name}: the name {name!r} is also used in [{owners[name]}]; "
                    "every processor, memory, FIFO and link needs its own name"
                )
            owners[name] = kind
    for proc in machine.processors.values():
        for master in proc.master:
            if master not in machine.processors:
                raise SVMError(
                    f"{src}: processors.{proc.name}: key 'master': {master!r} is not a processor "
                    f"(processors: {', '.join(machine.processors)})"
                )
    for link in machine.links.values():
        for end in link.ends:
            if end not in owners:
                raise SVMError(
                    f"{src}: links.{link.name}: key 'ends': {end!r} names no processor, memory, "
                    f"FIFO or link (known: {', '.join(owners)})"
                )
            if end == link.name:
                raise SVMError(f"{src}: links.{link.name}: key 'ends': a link cannot end at itself")


def _format_validation_error(source: str, err: object) -> str:
    lines = []
    for item in err.errors():  # type: ignore[attr-defined]
        loc = [str(part) for part in item["loc"]]
        if loc and loc[0] == "machine":
            where = "[machine]" + (f": key {'.'.join(loc[1:])!r}" if len(loc) > 1 else "")
        elif len(loc) >= 3:
            where = f"{loc[0]}.{loc[1]}: key {'.'.join(loc[2:])!r}"
        elif len(loc) == 2:
            where = f"{loc[0]}.{loc[1]}"
        else:
            where = f"[{loc[0]}]" if loc else "file"
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown key (check its spelling against docs/svm.md)"
        elif item["type"] == "missing":
            message = "required key missing"
        lines.append(f"{source}: {where}: {message}")
    return "\n".join(lines)


def machine_from_dict(data: Mapping[str, object], source: str = "<dict>") -> Machine:
    """Validate parsed metadata (the TOML file's tables) and build the ``Machine``."""
    from pydantic import ValidationError

    from .schema import MachineSpec

    try:
        spec = MachineSpec.model_validate(data)
    except ValidationError as exc:
        raise SVMError(_format_validation_error(source, exc)) from None
    return Machine(
        name=spec.machine.name,
        description=spec.machine.description,
        source=source,
        processors={
            name: Processor(
                name=name,
                master=(p.master,) if isinstance(p.master, str) else tuple(p.master),
                supported_kernels=tuple(p.supported_kernels),
                is_dma=p.dma,
                max_concurrent_kernels=p.max_concurrent_kernels,
                cost=p.cost,
                description=p.description,
            )
            for name, p in spec.processors.items()
        },
        memories={
            name: Memory(name, m.size, m.width, m.cost, m.description) for name, m in spec.memories.items()
        },
        fifos={
            name: Fifo(name, f.depth, f.element_size, f.cost, f.description) for name, f in spec.fifos.items()
        },
        links={name: Link(name, tuple(lk.ends), lk.cost, lk.description) for name, lk in spec.links.items()},
    )


def load_machine(path: str | os.PathLike[str]) -> Machine:
    """Read a TOML machine description (format: docs/svm.md). A bare name such as
    ``"pca_tiled"`` loads the machine of that name shipped with hpvm."""
    p = Path(path)
    if not p.exists() and p.suffix == "" and len(p.parts) == 1:
        shipped = resources.files("hpvm.svm") / "machines" / f"{p.name}.toml"
        if shipped.is_file():
            return _parse(shipped.read_text(encoding="utf-8"), f"{p.name}.toml")
        raise SVMError(
            f"no machine file {str(path)!r} and no shipped machine of that name (shipped: {', '.join(shipped_machines())})"
        )
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SVMError(f"cannot read machine file {str(path)!r}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise SVMError(
            f"{path}: not a machine description: not UTF-8 text ({exc.reason} at byte {exc.start}); "
            "a machine file is TOML (docs/svm.md)"
        ) from None
    return _parse(text, str(path))


def shipped_machines() -> list[str]:
    """Names of the example machines shipped in ``hpvm/svm/machines/``."""
    folder = resources.files("hpvm.svm") / "machines"
    return sorted(
        entry.name.removesuffix(".toml") for entry in folder.iterdir() if entry.name.endswith(".toml")
    )


def _parse(text: str, source: str) -> Machine:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SVMError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:  # (tomllib recurses into nested arrays and tables)
        raise SVMError(
            f"{source}: TOML nested too deeply to read; a machine file is a few flat tables"
        ) from None
    return machine_from_dict(data, source)


THIS_COMPUTER_RAM = 1 << 30


def this_computer(cores: int | None = None) -> Machine:
    """ "This computer": control processor ``CONTROL``, stream processors ``PROC0``…
    (one per core), a DMA processor ``DMA`` and host RAM ``RAM`` (1 GiB, allocated lazily),
    all on one bus ``BUS``."""
    n = max(1, cores if cores is not None else (os.cpu_count() or 1))
    procs: dict[str, Processor] = {
        "CONTROL": Processor("CONTROL", ("CONTROL",), (), description="the Python control thread")
    }
    for i in range(n):
        procs[f"PROC{i}"] = Processor(
            f"PROC{i}", ("CONTROL",), (USER_DEFINED_KERNEL, *PREDEFINED_KERNELS, "rle", "zip")
        )
    procs["DMA"] = Processor("DMA", ("CONTROL",), PREDEFINED_KERNELS, is_dma=True, max_concurrent_kernels=4)
    return Machine(
        name="this computer",
        description=f"{n} cores sharing host RAM",
        processors=procs,
        memories={"RAM": Memory("RAM", THIS_COMPUTER_RAM, 8, description="host RAM")},
        links={"BUS": Link("BUS", (*procs, "RAM"))},
        source="<this computer>",
    )
