"""FlattenStreams: pipelines inside internal nodes become stages of the root's pipeline.

Why a graph transformation: the streaming runtime (``runtime/streaming.py``), the ``dask``
stage runner and the HLC mapping onto the SVM all cut *the root's* children into stages
(``plan_stages``). Rather than teach each of them to nest pipelines, this pass inlines every
internal node whose child graph holds streaming edges or stream binds into its parent,
bottom-up, until the streaming parts reach the root; the existing stage partition then sees
the nested stages like any others, and every back end that runs root stages runs them.

Inlining child graph ``N`` into its parent ``P`` (``N`` a node of ``P``):

* ``N``'s children become children of ``P`` named ``N/child`` (the node path, which is
  what errors and the interpreter's instance paths name), with their sizes rewritten from
  ``N``'s inputs to ``P``'s and ``N``'s hint (if the child has none of its own);
* ``N``'s internal edges are kept; a feed of ``N``'s input ``ip`` (an edge from ``X`` or a
  bind of ``P``'s input) joined with ``N``'s bind of ``ip`` to child ``D`` becomes one edge
  ``X → D`` (or one bind ``P → D``); ``N``'s output bind from child ``S`` joined with a use
  of that output in ``P`` (an edge to ``Y``, or a bind to ``P``'s output) becomes ``S → Y``
  (or ``S → P``'s output);
* a joined edge or bind streams if either part did (a stream bind inside ``N`` is a stage
  boundary once ``N`` is gone); a joined edge stays one-to-one only between two
  single-instance nodes, else it is all-to-all — the value ``N`` passed on was the last
  instance's (docs/semantics.md §6), which is what all-to-all delivers, after every
  instance, as ``N`` waited for.

A node is left in place, its streams running as ordinary edges as before, when inlining it
would change what the program means; the pass records why (``module.notes``) and the
streaming launch warns with it:

* it is replicated: each instance runs its own child graph with its own inputs, which a
  single set of inlined stages cannot represent;
* a child's replication size reads an input of ``N`` that an edge feeds (a value computed
  by a sibling, which ``P``'s size expressions cannot name);
* a child of ``N`` would stop waiting for a node that feeds ``N``, or a node ``N`` feeds
  would stop waiting for a child of ``N`` (``N`` ran as a whole: after everything feeding
  it, before everything it feeds; an array written on one side and read on the other relies
  on that order, so it must survive as edge paths).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass

from ..ir.expr import renamed
from ..ir.graph import (
    ALL_TO_ALL,
    ONE_TO_ONE,
    ChildGraph,
    Edge,
    InputBind,
    InternalFunction,
    Node,
    NodeFunction,
    OutputBind,
    functions,
)
from ..ir.verify import topological_order
from .base import Module, Pass


def holds_streams(graph: ChildGraph) -> bool:
    """Whether ``graph`` has a streaming edge or a stream bind (its own, not its children's)."""
    return (
        any(e.stream for e in graph.edges)
        or any(b.stream for b in graph.in_binds)
        or any(b.stream for b in graph.out_binds)
    )


def nested_streams(root: InternalFunction) -> bool:
    """Whether a graph below ``root``'s own holds streams: whether ``FlattenStreams`` has
    anything to do (a launch without them skips the pass and its copy of the program)."""
    return any(
        isinstance(fn, InternalFunction) and fn is not root and holds_streams(fn.graph)
        for fn in functions(root)
    )


@dataclass(frozen=True)
class FlattenStreams(Pass):
    """Inline every internal node holding streams into its parent, recursively up to the
    root; the nodes left in place are listed, with why, in ``module.notes[name]``."""

    name = "flatten-streams"

    def apply(self, module: Module) -> None:
        kept: list[str] = []
        for fn in list(functions(module.root)):  # children before parents
            if isinstance(fn, InternalFunction):
                _flatten(fn, kept)
        module.notes[self.name] = kept


def _flatten(parent: InternalFunction, kept: list[str]) -> None:
    """Inline, into ``parent``'s graph, each child whose graph holds streams (whose own
    children were flattened already)."""
    for node in list(parent.graph.nodes):
        child = node.function
        if not isinstance(child, InternalFunction) or not holds_streams(child.graph):
            continue
        why = _inline(parent, node)
        if why is not None:
            kept.append(
                f"node '{node.name}' ({node.location}) in '{parent.name}' holds streaming edges or "
                f"binds, but its stages run one after the other, not as a pipeline, because {why}"
            )


def _inline(parent: InternalFunction, node: Node) -> str | None:
    """Replace ``node`` in ``parent``'s graph by its child graph; or leave the graph as it is
    and say why not."""
    inner = node.function
    assert isinstance(inner, InternalFunction)
    if node.dims:
        return (
            f"it is replicated ({node.dims}-D: each instance runs its own child graph); to pipeline "
            f"its stages, create '{inner.name}' as a single node and replicate its children instead"
        )
    graph, body = parent.graph, inner.graph
    feeds: dict[int, Edge | InputBind] = {}  # input of ``node`` -> what feeds it in ``parent``
    for e in graph.edges:
        if e.dst is node:
            feeds[e.dp] = e
    for b in graph.in_binds:
        if b.dst is node:
            feeds[b.ic] = b
    names = {inner.params[b.ic].name: parent.params[b.ip].name for b in graph.in_binds if b.dst is node}
    for child in body.nodes:
        computed = sorted({p for size in child.sizes for p in size.params()} - names.keys())
        if computed:
            return (
                f"the replication size of its child '{child.name}' reads input(s) "
                f"{', '.join(computed)}, which an edge feeds (a value computed in '{parent.name}'); "
                f"pass the size as an input of '{parent.name}' to pipeline its stages"
            )
    taken = {n.name for n in graph.nodes if n is not node}
    new: dict[int, Node] = {}
    for child in body.nodes:
        name = _unique(f"{node.name}/{child.name}", taken)
        new[id(child)] = Node(
            name,
            _with_hint(child.function, inner.hint),
            tuple(renamed(s, names) for s in child.sizes),
            child.location,
            dict(child.attrs),
        )
    edges = [e for e in graph.edges if e.src is not node and e.dst is not node]
    in_binds = [b for b in graph.in_binds if b.dst is not node]
    out_binds = [b for b in graph.out_binds if b.src is not node]
    edges += [
        Edge(new[id(e.src)], e.sp, new[id(e.dst)], e.dp, e.repl, e.stream, e.location) for e in body.edges
    ]
    for b in body.in_binds:
        feed, dst = feeds[b.ip], new[id(b.dst)]
        if isinstance(feed, Edge):
            repl = _joined(feed.repl, feed.src, dst)
            edges.append(Edge(feed.src, feed.sp, dst, b.ic, repl, feed.stream or b.stream, feed.location))
        else:
            in_binds.append(InputBind(feed.ip, dst, b.ic, feed.stream or b.stream, feed.location))
    bound = {b.op: b for b in body.out_binds}
    for e in graph.edges:
        if e.src is node:
            ob = bound[e.sp]
            src = new[id(ob.src)]
            repl = _joined(e.repl, src, e.dst)
            edges.append(Edge(src, ob.oc, e.dst, e.dp, repl, e.stream or ob.stream, e.location))
    for b in graph.out_binds:
        if b.src is node:
            ob = bound[b.oc]
            out_binds.append(OutputBind(new[id(ob.src)], ob.oc, b.op, b.stream or ob.stream, b.location))
    order = topological_order(graph)
    at = order.index(node)
    flat = ChildGraph(None, [*order[:at], *new.values(), *order[at + 1 :]], edges, in_binds, out_binds)
    lost = _lost_order(graph, node, flat, list(new.values()))
    if lost is not None:
        return lost
    graph.nodes, graph.edges, graph.in_binds, graph.out_binds = flat.nodes, edges, in_binds, out_binds
    return None


def _joined(repl: int, src: Node, dst: Node) -> int:
    """The replication of an edge joined through ``N``'s port: one-to-one only between two
    single-instance nodes (both ends saw the one value ``N`` passed on), else all-to-all."""
    return repl if repl == ONE_TO_ONE and not src.dims and not dst.dims else ALL_TO_ALL


def _with_hint(fn: NodeFunction, hint: str | None) -> NodeFunction:
    """``fn``, or a shallow copy of it with ``hint`` when it has none of its own: a node
    without a hint ran on its parent's device, and the inlined node has lost that parent."""
    if hint is None or fn.hint is not None:
        return fn
    hinted = copy.copy(fn)
    hinted.hint = hint
    return hinted


def _unique(base: str, taken: set[str]) -> str:
    name, i = base, 1
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    taken.add(name)
    return name


def _lost_order(graph: ChildGraph, node: Node, flat: ChildGraph, inlined: list[Node]) -> str | None:
    """Whether inlining ``node`` as ``inlined`` (in ``flat``) drops an order its graph kept:
    everything feeding ``node`` ran before all of it, all of it before everything it fed."""
    before = {id(e.src): e.src for e in graph.edges if e.dst is node}
    after = {id(e.dst): e.dst for e in graph.edges if e.src is node}
    succ: dict[int, list[Node]] = {}
    for e in flat.edges:
        succ.setdefault(id(e.src), []).append(e.dst)
    for x in before.values():
        reach = _reachable([x], succ)
        missing = [n.name for n in inlined if id(n) not in reach]
        if missing:
            return (
                f"'{x.name}' feeds it and would no longer run before its child(ren) "
                f"{', '.join(missing)}, which no edge would join to '{x.name}'; bind an input fed "
                f"by '{x.name}' to them (or send the value on through them) to pipeline its stages"
            )
    for n in inlined:
        reach = _reachable([n], succ)
        missing = [y.name for y in after.values() if id(y) not in reach]
        if missing:
            return (
                f"its child '{n.name}' would no longer run before {', '.join(missing)}, which it "
                "feeds but which no edge would join to that child; bind an output of that child "
                "(or send a value on through it) to pipeline its stages"
            )
    return None


def _reachable(start: Iterable[Node], succ: dict[int, list[Node]]) -> set[int]:
    """``id``s of the nodes an edge path leads to from ``start`` (``start`` included)."""
    seen: set[int] = set()
    todo = list(start)
    while todo:
        n = todo.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        todo.extend(succ.get(id(n), ()))
    return seen


__all__ = ["FlattenStreams", "holds_streams", "nested_streams"]
