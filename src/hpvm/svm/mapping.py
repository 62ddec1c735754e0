"""The HLC mapping's placement: pipeline stages onto stream processors, the streams between
them onto FIFOs or memories, using the machine metadata's links (restriction A6) and costs.

This module knows nothing of hpvm graphs: it places *stages* (names, in topological order)
joined by *edges* (stage index pairs), with the host (control code) feeding the source
stages and taking results from the result stages. ``hpvm.runtime.svm_target`` builds that
description from a streaming graph and runs it; ``hpvm svm map`` prints and draws it.

Rules (docs/svm.md, "The HLC mapping"):

- A kernel runs on a processor that supports ``USER_DEFINED_KERNEL`` and has the control
  processor among its masters. A stage kernel loops until the end of the stream, so two
  on one stream processor would wait for each other (A4): every kernel gets a processor of
  its own. With more stages than such processors, consecutive stages (topological order)
  share one kernel, in groups as even as possible.
- A stream joins two kernels (or the control code and a kernel): it goes on a FIFO or in a
  memory that *both* processors reach over links (A6), a FIFO holding one stream at a time,
  with room for at least one of its elements (``element_bytes`` says how big they are: an
  item number, and the values that travel by value). Results for the host go in a memory
  only (they are not popped until the host asks, so they get all the room left there).
- The cost of a mapping is the sum of its processors' costs and of its streams' costs; a
  stream costs its FIFO's or memory's cost plus the cheapest link paths from its writer's
  processor to that place and from there to its reader's (``Machine.link_costs``: the sum
  of the costs of the links crossed).
- Kernels are placed in stage order; each takes the cheapest free processor for which every
  stream to an already placed kernel (and to the control code) has a place, each stream the
  cheapest place (ties: a FIFO before a memory). The search backtracks (trying one of
  each set of interchangeable processors) and keeps the cheapest complete mapping it finds
  within ``SEARCH_LIMIT`` steps.
- When no placement exists with one kernel per processor (the links do not join the
  processors the way the stages are joined), the stages are grouped into one kernel fewer,
  and so on down to a single kernel; only when even that has no place is it an error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import SVMError
from .machine import USER_DEFINED_KERNEL, Machine, Processor

HOST = "host"  # the control code's end of a stream
ELEMENT_BYTES = 8  # the smallest stream element: an item's sequence number (int64)
RESULT_CAPACITY = 1 << 16  # at most this many results wait in a result stream
ALIGN = 8
SEARCH_LIMIT = 20_000  # placement steps: then the best mapping found so far is taken (or none)


@dataclass(frozen=True)
class KernelPlace:
    """One kernel: the stages it runs (indices), on ``processor``."""

    name: str
    stages: tuple[int, ...]
    processor: str
    cost: float


@dataclass(frozen=True)
class StreamPlace:
    """One stream: from ``src`` to ``dst`` (kernel names or ``HOST``), on ``location``
    (a FIFO, or a memory at byte ``address``) holding ``capacity`` elements."""

    name: str
    src: str
    dst: str
    location: str
    kind: str  # "FIFO" or "memory"
    address: int
    capacity: int
    cost: float  # the place's cost plus its link paths'
    element_bytes: int = ELEMENT_BYTES
    link_cost: float = 0.0  # of that, the links'

    @property
    def to_host(self) -> bool:
        return self.dst == HOST


@dataclass
class Mapping:
    """Where each kernel and stream goes, and the sum of their costs."""

    machine: Machine
    stages: list[str]
    kernels: list[KernelPlace]
    streams: list[StreamPlace]
    cost: float = 0.0
    carried: dict[str, list[str]] = field(default_factory=dict)  # stream -> what it carries, how

    def kernel_of(self, stage: int) -> KernelPlace:
        return next(k for k in self.kernels if stage in k.stages)

    def _repr_svg_(self) -> str | None:
        """The mapping's picture in a notebook (``hpvm svm map -o``'s)."""
        from ..ir.pictures import svg_text
        from .mapping_picture import draw_mapping

        return svg_text(lambda path: draw_mapping(self, path), f"the mapping onto {self.machine.name!r}")

    def describe(self) -> str:
        """The mapping as text: stage → kernel → processor, stream → place, with costs."""
        m = self.machine
        lines = [f"mapping onto machine {m.name!r} ({m.source}), total cost {self.cost:g}"]
        lines.append("kernels:")
        for k in self.kernels:
            names = ", ".join(self.stages[i] for i in k.stages)
            lines.append(f"  {k.name} on {k.processor} (cost {k.cost:g}): {names}")
        lines.append("streams:")
        for s in self.streams:
            where = s.location if s.kind == "FIFO" else f"{s.location} @ {s.address:#x}"
            lines.append(
                f"  {s.name}: {s.src} -> {s.dst} on {s.kind} {where}, {s.capacity} element(s) "
                f"of {s.element_bytes} B (cost {s.cost:g}: links {s.link_cost:g})"
            )
            lines.extend(f"    {line}" for line in self.carried.get(s.name, []))
        return "\n".join(lines)


@dataclass
class _Need:
    """A stream to place: between kernel groups (``None`` is the host)."""

    src: int | None
    dst: int | None
    bytes: int = ELEMENT_BYTES  # of one element

    @property
    def to_host(self) -> bool:
        return self.dst is None


@dataclass
class _State:
    procs: dict[int, str] = field(default_factory=dict)  # group -> processor
    places: dict[int, tuple[str, str, float, float]] = field(default_factory=dict)  # need -> place
    fifos: set[str] = field(default_factory=set)
    used: dict[str, int] = field(default_factory=dict)  # memory -> bytes taken
    cost: float = 0.0


def kernel_processors(machine: Machine) -> list[Processor]:
    """The processors a stage kernel may run on, cheapest first (then in file order)."""
    control = machine.control_processor.name
    found = [
        p
        for p in machine.processors.values()
        if USER_DEFINED_KERNEL in p.supported_kernels and control in p.master and not p.is_control
    ]
    return sorted(found, key=lambda p: p.cost)


def group_stages(count: int, groups: int) -> list[tuple[int, ...]]:
    """``count`` stages in ``groups`` consecutive runs, as even as possible."""
    base, extra = divmod(count, groups)
    out, start = [], 0
    for g in range(groups):
        size = base + (1 if g < extra else 0)
        out.append(tuple(range(start, start + size)))
        start += size
    return out


ElementBytes = Callable[[tuple[int, ...] | None, tuple[int, ...] | None], int]


def map_pipeline(
    machine: Machine,
    stages: list[str],
    edges: list[tuple[int, int]],
    results: list[int],
    capacity: int,
    element_bytes: ElementBytes | None = None,
    max_kernels: int | None = None,
) -> Mapping:
    """Place ``stages`` (topological order) joined by ``edges`` (stage index pairs, forward)
    on ``machine``: source stages are fed by the host, ``results`` stages deliver to it.
    ``capacity``: elements of each stream between kernels and from the host (a FIFO holds
    what it can). ``element_bytes(src, dst)``: the bytes of one element of the stream from
    the kernel running stages ``src`` to the one running ``dst`` (``None``: the host);
    default ``ELEMENT_BYTES``. ``max_kernels``: at most so many kernels (the host runs
    stages that each fill its cores as one kernel: ``hpvm.runtime.svm_target``). Raises
    ``SVMError`` naming the stage or edge that has no place."""
    if capacity < 1:
        raise SVMError(
            f"capacity {capacity}: a stream must hold at least one element; launch with capacity >= 1"
        )
    if not stages:
        raise SVMError("the graph has no stages to map: give the root at least one child node")
    procs = kernel_processors(machine)
    if not procs:
        raise SVMError(
            f"{machine.source}: machine {machine.name!r} has no processor that runs user-defined "
            f'kernels for stage {stages[0]!r}: add "{USER_DEFINED_KERNEL}" to the supported_kernels '
            f"of a processor whose master is {machine.control_processor.name!r}"
        )
    failures: list[str] = []
    most = min(len(stages), len(procs), max_kernels if max_kernels is not None else len(stages))
    for count in range(max(1, most), 0, -1):
        groups = group_stages(len(stages), count)
        needs = _needs(groups, edges, results, element_bytes)
        search = _Search(machine, procs, needs, len(groups), capacity)
        best = search.run()
        if best is not None:
            return _build(machine, stages, groups, needs, best, capacity)
        failures.append(search.failure_message(stages, groups))
    message = failures[0]
    if len(failures) > 1:  # the first says why the stages cannot be apart, the last why not together
        message += f"\nWith every stage in one kernel: {failures[-1]}"
    raise SVMError(message + _FIX)


def _needs(
    groups: list[tuple[int, ...]],
    edges: list[tuple[int, int]],
    results: list[int],
    element_bytes: ElementBytes | None,
) -> list[_Need]:
    """The streams a grouping needs: from the host to each group with a source stage,
    between groups joined by edges, and to the host from each group with a result stage."""
    group_of = {s: g for g, members in enumerate(groups) for s in members}
    fed = {dst for _, dst in edges}
    needs = [_Need(None, g) for g, members in enumerate(groups) if any(s not in fed for s in members)]
    pairs: list[tuple[int, int]] = []
    for a, b in edges:
        pair = (group_of[a], group_of[b])
        if pair[0] != pair[1] and pair not in pairs:
            pairs.append(pair)
    needs.extend(_Need(a, b) for a, b in pairs)
    needs.extend(_Need(g, None) for g in sorted({group_of[s] for s in results}))
    if element_bytes is not None:
        for need in needs:
            src = None if need.src is None else groups[need.src]
            need.bytes = max(1, element_bytes(src, None if need.dst is None else groups[need.dst]))
    return needs


class _Search:
    def __init__(
        self, machine: Machine, procs: list[Processor], needs: list[_Need], groups: int, capacity: int
    ):
        self.machine, self.procs, self.needs, self.groups, self.capacity = (
            machine,
            procs,
            needs,
            groups,
            capacity,
        )
        self.control = machine.control_processor.name
        # What the groups from ``h`` on cost at least (the cheapest processor each, the
        # cheapest place and two cheapest links for each stream placed with them): a bound
        # that ends the search at once when every processor, place and link costs the same.
        cheapest = min(p.cost for p in procs)
        places = [*machine.fifos.values(), *machine.memories.values()]
        cheapest_link = min((lk.cost for lk in machine.links.values()), default=0.0)
        cheapest_place = min((x.cost for x in places), default=0.0) + 2 * cheapest_link
        placed_with = [max(e for e in (n.src, n.dst) if e is not None) for n in needs]
        self.rest = [
            (groups - h) * cheapest + sum(1 for w in placed_with if w >= h) * cheapest_place
            for h in range(groups + 1)
        ]
        self.best: _State | None = None
        self.steps = 0
        self.gave_up = False  # the step limit came before any complete mapping
        self.deepest = -1
        self.blocked: tuple[int, list[str], list[str]] | None = None  # group, tried procs, need text

    def run(self) -> _State | None:
        self._place(0, _State())
        return self.best

    def _place(self, g: int, state: _State) -> None:
        if g == self.groups:
            if self.best is None or state.cost < self.best.cost:
                self.best = state
            return
        tried: list[str] = []
        failed_needs: list[str] = []
        alike: set[tuple[float, frozenset[tuple[str, float]]]] = set()
        for proc in self.procs:
            if self.steps >= SEARCH_LIMIT:
                self.gave_up = self.best is None
                return
            if proc.name in state.procs.values():
                continue
            # Free processors of one cost reaching the same places are interchangeable:
            # trying one of them here is trying them all (the 64 cores of a big "this
            # computer" are one choice, not 64).
            signature = (proc.cost, frozenset(self.machine.link_costs(proc.name).items()))
            if signature in alike:
                continue
            alike.add(signature)
            self.steps += 1
            tried.append(proc.name)
            nxt = _State(
                {**state.procs, g: proc.name},
                dict(state.places),
                set(state.fifos),
                dict(state.used),
                state.cost + proc.cost,
            )
            missing = self._streams_for(g, nxt)
            if missing is not None:
                failed_needs.append(missing)
                continue
            if self.best is not None and nxt.cost + self.rest[g + 1] >= self.best.cost:
                continue
            self._place(g + 1, nxt)
        if self.best is None and g >= self.deepest:  # the furthest the search got: report it
            if g > self.deepest or self.blocked is None:
                self.deepest, self.blocked = g, (g, [], [])
            _, all_tried, all_failed = self.blocked
            all_tried.extend(p for p in tried if p not in all_tried)
            all_failed.extend(f for f in failed_needs if f not in all_failed)

    def _streams_for(self, g: int, state: _State) -> str | None:
        """Place every stream between group ``g`` and the host or earlier groups; what could
        not be placed (text) or None."""
        for i, need in enumerate(self.needs):
            ends = (need.src, need.dst)
            if g not in ends:
                continue
            other = need.src if need.dst == g else need.dst
            if other is not None and other > g:
                continue  # placed with the later group
            a = state.procs[g]
            b = self.control if other is None else state.procs[other]
            place, why = self._place_stream(a, b, need, state)
            if place is None:
                return (
                    f"{_end(need.src)} -> {_end(need.dst)} between {a} and {b} "
                    f"({need.bytes}-byte elements{why})"
                )
            loc, kind, cost, _ = place
            state.places[i] = place
            state.cost += cost
            if kind == "FIFO":
                state.fifos.add(loc)
            else:
                state.used[loc] = state.used.get(loc, 0) + self._bytes(need)
        return None

    def _bytes(self, need: _Need) -> int:
        """Bytes a stream of ``capacity`` elements takes in a memory (aligned)."""
        return stream_bytes(self.capacity, need.bytes)

    def _place_stream(
        self, a: str, b: str, need: _Need, state: _State
    ) -> tuple[tuple[str, str, float, float] | None, str]:
        """The cheapest place for ``need`` between processors ``a`` and ``b`` (location,
        kind, cost with links, links' cost), or None and why the places both reach do not
        fit (text, empty when they reach none)."""
        paths_a, paths_b = self.machine.link_costs(a), self.machine.link_costs(b)
        both = paths_a.keys() & paths_b.keys()
        options: list[tuple[float, int, str, str, float]] = []
        small: list[str] = []
        if not need.to_host:
            for name in sorted(both & self.machine.fifos.keys()):
                fifo = self.machine.fifos[name]
                if fifo.depth * fifo.element_size < need.bytes:
                    small.append(f"FIFO {name} holds {fifo.depth * fifo.element_size} B in all")
                elif name not in state.fifos:
                    links = paths_a[name] + paths_b[name]
                    options.append((fifo.cost + links, 0, name, "FIFO", links))
        for name in sorted(both & self.machine.memories.keys()):
            mem = self.machine.memories[name]
            if state.used.get(name, 0) + self._bytes(need) <= mem.size:
                links = paths_a[name] + paths_b[name]
                options.append((mem.cost + links, 1, name, "memory", links))
            elif self._bytes(need) > mem.size:
                small.append(f"memory {name} ({mem.size} B) is smaller than {self.capacity} element(s)")
            else:
                left = mem.size - state.used.get(name, 0)
                small.append(f"memory {name} has {left} B left, {self._bytes(need)} B needed")
        if not options:
            return None, f": {'; '.join(small)}" if small else ""
        cost, _, name, kind, links = min(options)
        return (name, kind, cost, links), ""

    def failure_message(self, stages: list[str], groups: list[tuple[int, ...]]) -> str:
        m = self.machine
        g, tried, failed = self.blocked if self.blocked else (0, [], [])
        names = ", ".join(repr(stages[i]) for i in groups[g])
        detail = "; ".join(failed) if failed else "every processor that runs user kernels is taken"
        if self.gave_up:
            detail += f" (the search stopped after {SEARCH_LIMIT} placements)"
        return (
            f"{m.source}: cannot map stage(s) {names} onto machine {m.name!r} (as kernel{g} of "
            f"{len(groups)}): tried processor(s) {', '.join(tried) or 'none'}, but no free FIFO or "
            f"memory with room is reachable over links from both ends of stream(s): {detail}"
        )


_FIX = (
    "\nFix the machine file: link a memory with room (or a FIFO, between two kernels) to both "
    "processors, or link the processors to a bus with a memory on it; a FIFO or memory must "
    "hold at least one of the stream's elements (their size is above), and a memory "
    "`capacity` of them"
)


def stream_bytes(capacity: int, element_bytes: int) -> int:
    """Bytes a stream of ``capacity`` elements takes in a memory (rounded up to ``ALIGN``)."""
    return -(-capacity * element_bytes // ALIGN) * ALIGN


def _end(group: int | None) -> str:
    return HOST if group is None else f"kernel{group}"


def _build(
    machine: Machine,
    stages: list[str],
    groups: list[tuple[int, ...]],
    needs: list[_Need],
    state: _State,
    capacity: int,
) -> Mapping:
    procs = machine.processors
    kernels = [
        KernelPlace(f"kernel{g}", members, state.procs[g], procs[state.procs[g]].cost)
        for g, members in enumerate(groups)
    ]
    # Addresses: streams of fixed size first, then results share what is left of the memory.
    next_free: dict[str, int] = {}
    addresses: dict[int, tuple[int, int]] = {}
    for i, need in enumerate(needs):
        loc, kind, _, _ = state.places[i]
        if kind == "FIFO":
            fifo = machine.fifos[loc]
            slots = -(-need.bytes // fifo.element_size)
            addresses[i] = (0, fifo.depth // slots)
        elif not need.to_host:
            addresses[i] = (next_free.get(loc, 0), capacity)
            next_free[loc] = next_free.get(loc, 0) + stream_bytes(capacity, need.bytes)
    result_needs = [i for i, need in enumerate(needs) if need.to_host]
    for loc in {state.places[i][0] for i in result_needs}:
        mine = [i for i in result_needs if state.places[i][0] == loc]
        start = next_free.get(loc, 0)
        widest = max(needs[i].bytes for i in mine)
        share = (machine.memories[loc].size - start) // len(mine) // widest
        each = max(capacity, min(RESULT_CAPACITY, share))
        for i in mine:
            addresses[i] = (start, each)
            start += stream_bytes(each, needs[i].bytes)
    streams = []
    for i, need in enumerate(needs):
        loc, kind, cost, links = state.places[i]
        address, cap = addresses[i]
        streams.append(
            StreamPlace(
                f"s{i}", _end(need.src), _end(need.dst), loc, kind, address, cap, cost, need.bytes, links
            )
        )
    return Mapping(machine, stages, kernels, streams, state.cost)
