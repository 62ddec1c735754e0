"""The root's children in groups that can run as concurrent Dask tasks.

Why. Children of the root that no edge joins, directly or through others, may run in any
order — on a cluster, at the same time on different workers. But on a cluster each task
works on its own copy of the arrays and the written ones are copied back whole (or by owned
rows), so two groups may only run apart when neither writes an array the other reads or
writes (``param_writers``: followed through binds, edges and returned arrays). Groups that
share an array that way are merged: they run together, on one worker, in the order the
``cpu`` back end gives them — as on every other back end.

What. ``independent_parts(root)``: the groups, each as a root of its own (the same inputs,
the group's nodes, edges and binds, its outputs renumbered from 0) with the root outputs it
produces. One group — the root itself — when nothing can be separated.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.analysis import param_writers
from ...ir.graph import (
    ChildGraph,
    Edge,
    InputBind,
    InternalFunction,
    LeafFunction,
    Node,
    OutputBind,
    Param,
    functions,
)
from ...ir.types import ArrayType


@dataclass
class Part:
    """One group: its root, the original root outputs it produces (in its own output
    order), and the indices of the root's array inputs it reads and writes."""

    root: InternalFunction
    ops: list[int]
    reads: set[int]
    writes: set[int]


def written_params(root: InternalFunction) -> set[int]:
    """The array inputs of ``root`` a run may write (every array input when a leaf below it
    returns an array: such an array may be written further on without being recognisable)."""
    if any(
        isinstance(t, ArrayType) for f in functions(root) if isinstance(f, LeafFunction) for t in f.out_types
    ):
        return {i for i, p in enumerate(root.params) if isinstance(p.type, ArrayType)}
    return set(param_writers(root))


def independent_parts(root: InternalFunction) -> list[Part]:
    graph = root.graph
    nodes = list(graph.nodes)
    whole = [Part(root, sorted({b.op for b in graph.out_binds}), set(), written_params(root))]
    if len(nodes) < 2:
        return whole
    group = {id(n): k for k, n in enumerate(nodes)}

    def find(k: int) -> int:
        while group[id(nodes[k])] != k:
            k = group[id(nodes[k])]
        return k

    def join(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            group[id(nodes[max(ra, rb)])] = min(ra, rb)

    index = {id(n): k for k, n in enumerate(nodes)}
    for e in graph.edges:
        join(index[id(e.src)], index[id(e.dst)])
    while True:  # merge groups until none writes what another touches
        parts = _build(root, nodes, [find(k) for k in range(len(nodes))])
        clash = next(
            (
                (a, b)
                for a in range(len(parts))
                for b in range(len(parts))
                if a != b and parts[a].writes & (parts[b].reads | parts[b].writes)
            ),
            None,
        )
        if clash is None:
            return parts if len(parts) > 1 else whole
        first = [find(k) for k in range(len(nodes))]
        leaders = sorted(set(first))
        join(leaders[clash[0]], leaders[clash[1]])


def _build(root: InternalFunction, nodes: list[Node], leaders: list[int]) -> list[Part]:
    graph = root.graph
    parts = []
    for leader in sorted(set(leaders)):
        members = [n for n, k in zip(nodes, leaders) if k == leader]
        copies = {id(n): Node(n.name, n.function, n.sizes, n.location, dict(n.attrs)) for n in members}
        binds_out = sorted((b for b in graph.out_binds if id(b.src) in copies), key=lambda b: b.op)
        ops = sorted({b.op for b in binds_out})
        sub = ChildGraph(
            nodes=list(copies.values()),
            edges=[
                Edge(copies[id(e.src)], e.sp, copies[id(e.dst)], e.dp, e.repl, e.stream, e.location)
                for e in graph.edges
                if id(e.src) in copies and id(e.dst) in copies
            ],
            in_binds=[
                InputBind(b.ip, copies[id(b.dst)], b.ic, b.stream, b.location)
                for b in graph.in_binds
                if id(b.dst) in copies
            ],
            out_binds=[
                OutputBind(copies[id(b.src)], b.oc, ops.index(b.op), b.stream, b.location) for b in binds_out
            ],
        )
        names = ", ".join(n.name for n in members)
        part_root = InternalFunction(
            f"{root.name}[{names}]",
            [Param(p.name, p.type) for p in root.params],
            graph=sub,
            location=root.location,
        )
        reads = {
            b.ip
            for b in graph.in_binds
            if id(b.dst) in copies and isinstance(root.params[b.ip].type, ArrayType)
        }
        parts.append(Part(part_root, ops, reads, written_params(part_root)))
    return parts


def stage_root(root: InternalFunction, nodes: list[Node]) -> InternalFunction:
    """A root of ``nodes`` alone (their binds and the edges between them): what
    ``written_params`` reads to know which of the root's arrays a pipeline stage may write."""
    return _build(root, list(nodes), [0] * len(nodes))[0].root if nodes else root
