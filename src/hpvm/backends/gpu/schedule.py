"""The static part of the GPU lowering: the schedule of one child graph.

The graph comes lowered by the GPU back ends' passes (``GPUBackend.lowering``): FuseOneToOne
(``fuse``: which children share a kernel) and PlaceAllocations (``place``: allocation
nodes run on the host; ``shared``: buffers that may live in their user's shared memory).
Children in topological order become steps — a kernel (one leaf node, or a fused run), a
host step (an allocation leaf, run by the interpreter) or a graph step (an internal node,
recursed into) — plus, for every output, what later steps need of it (``each`` instance's
value or the ``last`` instance's) and, for leaves' array outputs, which array parameter
they return unchanged. A barrier leaf's barriers must be reached by every instance of one
parent instance (``passes/uniformity.py``: a ``CompileError`` otherwise). See ``plan.py``
for the mapping.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import CompileError
from ...ir.analysis import FeedTable, feed_table, returned_params
from ...ir.graph import ONE_TO_ONE, InternalFunction, LeafFunction, Node
from ...ir.leafinfo import analyze_leaf
from ...ir.types import ArrayType
from ...ir.verify import topological_order
from ...passes.clone_leaves import clone_of
from ...passes.fuse_one_to_one import fused_runs
from ...passes.place_allocations import PLACE
from ...passes.uniformity import check_uniform_barriers


@dataclass
class Step:
    kind: str  # "kernel" | "host" | "graph"
    nodes: list[Node]
    barrier: bool = False


@dataclass
class GraphSchedule:
    fn: InternalFunction
    steps: list[Step]
    feeds: FeedTable  # what feeds each child's inputs
    needs: dict[tuple[int, int], set[str]]  # (node id, port) -> {"each", "last"}
    step_of: dict[int, Step]  # node id -> its step
    passthrough: dict[tuple[int, int], int | None]  # leaf array output -> parameter index it returns


def schedule(fn: InternalFunction, backend: str, part: frozenset[int] | None = None) -> GraphSchedule:
    """``fn``'s schedule; with ``part`` (node ids), of those children only: a pipeline stage or
    this back end's share of a graph that mixes devices (nothing outside it is run or fused)."""
    graph = fn.graph
    feeds = feed_table(graph)
    order = [n for n in topological_order(graph) if part is None or id(n) in part]
    steps: list[Step] = []
    step_of: dict[int, Step] = {}
    for group in fused_runs(order):
        node = group[0]
        fn_ = node.function
        if isinstance(fn_, InternalFunction):
            step = Step("graph", group)
        elif _is_allocation(node):
            for p in fn_.params:
                if isinstance(p.type, ArrayType):
                    raise CompileError(
                        f"node '{node.name}' ({node.location}): leaf '{fn_.name}' calls hpvm.malloc, so on "
                        f"the {backend} back end it is an allocation node and runs on the host, where it "
                        f"may take scalars only, but it takes array '{p.name}'; move the work on "
                        "arrays into another leaf"
                    )
            step = Step("host", group)
        else:
            barrier = analyze_leaf(fn_).uses_barrier
            if barrier:  # (a barrier leaf is never fused: it is alone in its step)
                check_uniform_barriers(clone_of(fn_, backend), backend)
            step = Step("kernel", group, barrier)
        steps.append(step)
        for member in group:
            step_of[id(member)] = step
    needs: dict[tuple[int, int], set[str]] = {}
    for e in graph.edges:
        if id(e.src) not in step_of:
            continue  # produced outside this part
        if e.repl == ONE_TO_ONE and step_of[id(e.src)] is step_of.get(id(e.dst)):
            continue  # fused: passed in registers
        needs.setdefault((id(e.src), e.sp), set()).add("each" if e.repl == ONE_TO_ONE else "last")
    for b in graph.out_binds:
        if id(b.src) in step_of:
            needs.setdefault((id(b.src), b.oc), set()).add("last")
    passthrough: dict[tuple[int, int], int | None] = {}
    for node in graph.nodes:
        fn_ = node.function
        if id(node) not in step_of or not isinstance(fn_, LeafFunction) or _is_allocation(node):
            continue
        sources = returned_params(fn_)
        for port, t in enumerate(fn_.out_types):
            if not isinstance(t, ArrayType):
                continue
            source = sources[port]
            passthrough[(id(node), port)] = source
            if source is None and (id(node), port) in needs:
                raise CompileError(
                    f"node '{node.name}' ({node.location}): output {port} of leaf '{fn_.name}' is an "
                    f"array that is not one of its array parameters returned unchanged; on the {backend} "
                    "back end such an array can only travel over a one-to-one edge to a leaf fused "
                    "into the same kernel (same grid, adjacent, no barrier) — return an array "
                    "parameter, or try target='interp'"
                )
    return GraphSchedule(fn, steps, feeds, needs, step_of, passthrough)


def _is_allocation(node: Node) -> bool:
    """An allocation node, which PlaceAllocations placed on the host."""
    return node.attrs.get(PLACE) == "host"
