"""Graph analyses every back end's lowering needs, written once.

Each of these used to be written per back end, and the copies drifted apart (the ``cpu``
back end fused across streaming edges, the GPU lowering did not). They read the graph and
return fresh results: passes mutate graphs in place, so nothing here is cached on a graph
or a function — each analysis is linear in the size of one child graph, and back ends run
them when they compile, not per launch.

* ``feed_table``: what feeds each input port of each child node.
* ``returned_params``: which array parameter a leaf returns unchanged from each output.
* ``fusion_groups``: which adjacent children run fused in one loop nest or one kernel.
* ``param_writers``: which array parameters of an internal function its leaves write.
* ``one_to_one_sources``: which children order a child's instance *i* after their own
  instance *i* only (the interpreter's race detector).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import Literal

from .graph import (
    ALL_TO_ALL,
    ONE_TO_ONE,
    ChildGraph,
    Edge,
    InternalFunction,
    LeafFunction,
    Node,
    NodeFunction,
)
from .leafinfo import parse_leaf
from .types import ArrayType
from .verify import topological_order

#: An input port fed by input ``ip`` of the parent: ``("bind", ip)``.
BindFeed = tuple[Literal["bind"], int]
#: An input port fed by an edge: ``("edge", edge)``.
EdgeFeed = tuple[Literal["edge"], Edge]
#: What feeds one input port. A tuple, so that ``kind, item = feed`` reads it in hot loops.
Feed = BindFeed | EdgeFeed
#: ``id(child node)`` -> one entry per input port of its function; ``None`` for a port
#: nothing feeds (the verifier rejects such graphs, so back ends may assume a feed).
FeedTable = dict[int, list[Feed | None]]
#: A leaf that writes an array, and the parameter (in its ``outs``) the array arrives in.
Writer = tuple[LeafFunction, str]


def feed_table(graph: ChildGraph) -> FeedTable:
    """What feeds each input port of each child of ``graph`` (see ``Feed``)."""
    table: FeedTable = {id(n): [None] * len(n.function.params) for n in graph.nodes}
    for b in graph.in_binds:
        table[id(b.dst)][b.ic] = ("bind", b.ip)
    for e in graph.edges:
        table[id(e.dst)][e.dp] = ("edge", e)
    return table


def returned_params(fn: LeafFunction) -> tuple[int | None, ...]:
    """Per output port of ``fn``: the index of the array parameter that every ``return``
    gives back unchanged from that port, or ``None``.

    Why back ends ask: such an output is the very array the leaf received, so it can be
    resolved where the argument is known (on the host, for the GPU lowering), needs no
    per-instance comparison when every instance receives the same array (``cpu``), and
    carries ``malloc``'d memory only if that parameter does (the ``cpu`` malloc pools).
    "Unchanged" is syntactic and conservative: every ``return`` names the parameter itself
    (the same element of the returned tuple, for several outputs), and the leaf never
    assigns or deletes that name. Scalar outputs, leaves without source and anything else
    give ``None``.
    """
    count = len(fn.out_types)
    func = parse_leaf(fn)
    if func is None:
        return (None,) * count
    rebound = {
        n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))
    }
    returns = [n.value for n in ast.walk(func) if isinstance(n, ast.Return)]
    return tuple(
        _returned_param(fn, port, returns, rebound) if isinstance(t, ArrayType) else None
        for port, t in enumerate(fn.out_types)
    )


def _returned_param(
    fn: LeafFunction, port: int, returns: list[ast.expr | None], rebound: set[str]
) -> int | None:
    count = len(fn.out_types)
    names: set[str | None] = set()
    for value in returns:
        if count > 1:
            value = value.elts[port] if isinstance(value, ast.Tuple) and len(value.elts) == count else None
        names.add(value.id if isinstance(value, ast.Name) else None)
    if len(names) != 1:
        return None
    name = names.pop()
    index = fn.param_index(name) if name is not None and name not in rebound else None
    if index is None or not isinstance(fn.params[index].type, ArrayType):
        return None
    return index


def fusion_groups(
    order: Sequence[Node],
    feeds: FeedTable,
    fusible: Callable[[Node], bool],
    part: Callable[[Node], object] = lambda node: None,
) -> list[list[Node]]:
    """``order`` (children in topological order) cut into runs that execute fused: in one
    loop nest (``cpu``) or one kernel (GPU), instance *i* of each member right after
    instance *i* of the members before it.

    The rule: a node joins the run before it when both it and the run's nodes are
    ``fusible`` (what a back end can put in one loop or kernel — never a leaf that calls
    ``hpvm.barrier()``, whose instances must all reach the barrier first), it has the
    run's number of dimensions, at least one of its inputs comes from a member over a
    one-to-one edge, and none comes from a member over an all-to-all edge (which waits for
    every instance) or a streaming edge (a pipeline boundary: its two ends run as different
    stages). Legal because a one-to-one sink instance waits only for its own source
    instance; the grids themselves are compared at run time. Nodes for which ``part``
    differs (parts of the graph run by different back ends) never share a run.
    """
    groups: list[list[Node]] = []
    open_group: list[Node] | None = None  # the last run, if more nodes may join it
    for node in order:
        if (
            open_group is not None
            and fusible(node)
            and part(node) == part(open_group[0])
            and _joins(node, open_group, feeds)
        ):
            open_group.append(node)
            continue
        group = [node]
        groups.append(group)
        open_group = group if fusible(node) else None
    return groups


def _joins(node: Node, group: list[Node], feeds: FeedTable) -> bool:
    if node.dims != group[0].dims:
        return False
    members = {id(n) for n in group}
    linked = False
    for feed in feeds[id(node)]:
        if feed is None or feed[0] != "edge" or id(feed[1].src) not in members:
            continue
        edge = feed[1]
        if edge.repl != ONE_TO_ONE or edge.stream:
            return False
        linked = True
    return linked


def param_writers(fn: InternalFunction) -> dict[int, Writer]:
    """Per array parameter of ``fn`` that running it writes: a leaf that writes it, and the
    name of the leaf's parameter in whose ``outs`` entry it arrives.

    Why the runtime asks: an array the host made read-only (``flags.writeable = False``)
    cannot be passed where a leaf writes it — the host back ends cannot store into it and a
    GPU back end cannot copy its results back — so ``launch`` refuses it, naming the leaf.
    The array is followed through input binds to leaf parameters in the leaf's ``outs``, and
    through the outputs that return it unchanged (``returned_params``) along edges and
    output binds; an array a leaf returns that is not recognisably one of its parameters
    (``a[1:]``) is not followed, so this never names a parameter nothing writes.
    """
    memo: dict[tuple[int, int], tuple[Writer | None, frozenset[int]]] = {}
    found: dict[int, Writer] = {}
    for port, p in enumerate(fn.params):
        if isinstance(p.type, ArrayType):
            writer, _ = _flow(fn, port, memo, 0)
            if writer is not None:
                found[port] = writer
    return found


def _flow(
    fn: NodeFunction, port: int, memo: dict[tuple[int, int], tuple[Writer | None, frozenset[int]]], depth: int
) -> tuple[Writer | None, frozenset[int]]:
    """Where the array given to input ``port`` of ``fn`` goes: a leaf that writes it (or
    ``None``) and the outputs of ``fn`` that give it back unchanged."""
    key = (id(fn), port)
    if key in memo:
        return memo[key]
    memo[key] = (None, frozenset())  # (a recursive hierarchy: the verifier reports it)
    if isinstance(fn, LeafFunction):
        name = fn.params[port].name
        writer = (fn, name) if name in fn.outs else None
        result = (writer, frozenset(k for k, r in enumerate(returned_params(fn)) if r == port))
    elif isinstance(fn, InternalFunction) and depth < 64:
        result = _internal_flow(fn, port, memo, depth)
    else:
        result = (None, frozenset())
    memo[key] = result
    return result


def _internal_flow(
    fn: InternalFunction,
    port: int,
    memo: dict[tuple[int, int], tuple[Writer | None, frozenset[int]]],
    depth: int,
) -> tuple[Writer | None, frozenset[int]]:
    graph = fn.graph
    todo = [(b.dst, b.ic) for b in graph.in_binds if b.ip == port]
    seen: set[tuple[int, int]] = set()
    passes: set[int] = set()
    while todo:
        node, index = todo.pop()
        if (id(node), index) in seen:
            continue
        seen.add((id(node), index))
        writer, outputs = _flow(node.function, index, memo, depth + 1)
        if writer is not None:
            return writer, frozenset()
        for k in outputs:
            todo.extend((e.dst, e.dp) for e in graph.edges if e.src is node and e.sp == k)
            passes.update(b.op for b in graph.out_binds if b.src is node and b.oc == k)
    return None, frozenset(passes)


def one_to_one_sources(graph: ChildGraph, pipeline: bool = False) -> dict[int, list[Node]]:
    """``id(child)`` -> the children that reach it through one-to-one edges only, in
    topological order; children without such sources are not keys.

    Why the interpreter's race detector asks: a one-to-one edge orders instance *i* of its
    sink after instance *i* of its source only (docs/semantics.md §6), so what the other
    instances of such a source did is not ordered before instance *i*. A path with an
    all-to-all edge orders every instance of its ends; children no path joins run in the
    topological order, as every back end runs them. ``pipeline``: ``graph`` is the root's,
    whose streaming edges are pipeline boundaries (§13) — the sink's stage gets an item once
    the source's stage has finished it, every instance — so they order like all-to-all ones.
    """
    orders_all = [e.repl == ALL_TO_ALL or (pipeline and e.stream) for e in graph.edges]
    if all(orders_all):
        return {}
    incoming: dict[int, list[tuple[Edge, bool]]] = {id(n): [] for n in graph.nodes}
    for e, every_instance in zip(graph.edges, orders_all):
        incoming[id(e.dst)].append((e, every_instance))
    order = topological_order(graph)
    every: dict[int, set[int]] = {}  # children every instance of which runs before every instance
    paired: dict[int, set[int]] = {}  # children joined by one-to-one paths
    result: dict[int, list[Node]] = {}
    for node in order:
        before, pairs = set(), set()
        for e, every_instance in incoming[id(node)]:
            src = id(e.src)
            if every_instance:
                before |= every[src] | paired[src] | {src}
            else:
                pairs |= paired[src] | {src}
                before |= every[src]
        every[id(node)], paired[id(node)] = before, pairs
        if pairs - before:
            result[id(node)] = [n for n in order if id(n) in pairs and id(n) not in before]
    return result
