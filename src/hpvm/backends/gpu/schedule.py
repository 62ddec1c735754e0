"""The static part of the GPU lowering: the schedule of one child graph.

Children in topological order become steps — a kernel (one leaf node, or several fused
along one-to-one edges), a host step (an allocation leaf, run by the interpreter) or a
graph step (an internal node, recursed into) — plus, for every output, what later steps
need of it (``each`` instance's value or the ``last`` instance's) and, for leaves' array
outputs, which array parameter they return unchanged. See ``plan.py`` for the mapping.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from ...errors import CompileError
from ...ir.graph import ONE_TO_ONE, InternalFunction, LeafFunction, Node
from ...ir.leafinfo import analyze_leaf, parse_leaf
from ...ir.types import ArrayType
from ...ir.verify import topological_order


@dataclass
class Step:
    kind: str  # "kernel" | "host" | "graph"
    nodes: list[Node]
    barrier: bool = False


@dataclass
class GraphSchedule:
    fn: InternalFunction
    steps: list[Step]
    feeds: dict[int, list[tuple[str, Any]]]  # node id -> per input port: ("bind", ip) | ("edge", edge)
    needs: dict[tuple[int, int], set[str]]  # (node id, port) -> {"each", "last"}
    step_of: dict[int, Step]  # node id -> its step
    passthrough: dict[tuple[int, int], int | None]  # leaf array output -> parameter index it returns


def schedule(fn: InternalFunction, backend: str, part: frozenset[int] | None = None) -> GraphSchedule:
    """``fn``'s schedule; with ``part`` (node ids), of those children only: a pipeline stage or
    this back end's share of a graph that mixes devices (nothing outside it is run or fused)."""
    graph = fn.graph
    feeds: dict[int, list[tuple[str, Any]]] = {
        id(n): [("none", None)] * len(n.function.params) for n in graph.nodes
    }
    for b in graph.in_binds:
        feeds[id(b.dst)][b.ic] = ("bind", b.ip)
    for e in graph.edges:
        feeds[id(e.dst)][e.dp] = ("edge", e)
    steps: list[Step] = []
    step_of: dict[int, Step] = {}
    for node in topological_order(graph):
        if part is not None and id(node) not in part:
            continue
        fn_ = node.function
        if isinstance(fn_, InternalFunction):
            step = Step("graph", [node])
        elif _is_allocation(fn_):
            for p in fn_.params:
                if isinstance(p.type, ArrayType):
                    raise CompileError(
                        f"node '{node.name}' ({node.location}): leaf '{fn_.name}' calls hpvm.malloc, so on "
                        f"the {backend} back end it is an allocation node and runs on the host, where it "
                        f"may take scalars only, but it takes array '{p.name}'; move the work on "
                        "arrays into another leaf"
                    )
            step = Step("host", [node])
        else:
            barrier = analyze_leaf(fn_).uses_barrier
            last = steps[-1] if steps else None
            if last is not None and _can_fuse(node, last, feeds, barrier):
                last.nodes.append(node)
                step_of[id(node)] = last
                continue
            step = Step("kernel", [node], barrier)
        steps.append(step)
        step_of[id(node)] = step
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
        if id(node) not in step_of or not isinstance(fn_, LeafFunction) or _is_allocation(fn_):
            continue
        for port, t in enumerate(fn_.out_types):
            if not isinstance(t, ArrayType):
                continue
            source = _returned_param(fn_, port)
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


def _is_allocation(fn: LeafFunction) -> bool:
    return any(name == "malloc" for name, _ in analyze_leaf(fn).calls)


def _can_fuse(node: Node, step: Step, feeds: dict[int, list[tuple[str, Any]]], barrier: bool) -> bool:
    if step.kind != "kernel" or barrier or step.barrier or node.dims != step.nodes[0].dims:
        return False
    members = {id(n) for n in step.nodes}
    linked = False
    for kind, item in feeds[id(node)]:
        if kind != "edge" or id(item.src) not in members:
            continue
        if item.repl != ONE_TO_ONE or item.stream:
            return False
        linked = True
    return linked


def _returned_param(fn: LeafFunction, port: int) -> int | None:
    """The parameter a leaf returns unchanged from array output ``port`` in every ``return``."""
    func = parse_leaf(fn)
    if func is None:
        return None
    names: set[str] = set()
    for ret in (n for n in ast.walk(func) if isinstance(n, ast.Return)):
        value = ret.value
        if len(fn.out_types) > 1:
            if not isinstance(value, ast.Tuple) or len(value.elts) != len(fn.out_types):
                return None
            value = value.elts[port]
        if not isinstance(value, ast.Name):
            return None
        names.add(value.id)
    if len(names) != 1:
        return None
    name = names.pop()
    stored = any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(func)
    )
    index = fn.param_index(name)
    if index is None or stored or not isinstance(fn.params[index].type, ArrayType):
        return None
    return index
