"""A node that runs a range of its instances along x, keeping their original ids.

Why. A declared layout says which elements *instance i* owns, in terms of i and of the
grid's extent: a block of ``ceil(n / G)`` elements, every G-th element, ... Its code
indexes by those too (``first = id_x * chunk``). A chunk of instances ``[lo, hi)`` run as
a node of ``hi - lo`` instances would see ids from 0 and an extent of ``hi - lo``, and
touch the wrong elements. The ``cpu`` back end runs whole nodes only, so the chunk runs
the same leaf rewritten: its own-node queries ``get_node_instance_id_x(node)`` become
``get_node_instance_id_x(node) + __hpvm_lo_x`` and ``get_num_node_instances_x(node)``
becomes ``__hpvm_n_x`` — two more scalar parameters the chunk root binds. Queries of a
parent node, and of y and z, are left alone (a chunk keeps every instance along y and z,
and its parent is the same root).

A replicated *internal* node is split the same way, whole instances at a time (never one
parent instance across chunks, so its children's barriers and ``malloc`` keep their
meaning): the chunk runs a copy of its function and of every function below it, each
taking ``LO`` and ``NX`` after its ports and binding them on to its children, and each leaf
``d`` levels below it rewrites its queries of the handle ``d`` levels up (its
``get_parent_node`` chain) instead of its own.

The rewrite runs on the worker (``tasks.py``), once per graph: the rewritten body is
generated code, which is cheaper to rebuild there than to ship.

How, without reading Python: the leaf's IR (``ir/leafir``) is rewritten (``shift_queries``:
which node a handle denotes is the index facts' ``handle_level``) and emitted as Python
(``ir/leafir/pyemit.py``). A leaf outside the IR's dialect, or one that queries x of a
handle whose node is not known statically, is not rewritten (``offset_problem`` says why:
its node is not split by its layouts and runs whole).
"""

from __future__ import annotations

from dataclasses import replace

from ...ir import expr as size_expr
from ...ir.bodies import GeneratedBody
from ...ir.graph import (
    ChildGraph,
    Edge,
    InputBind,
    InternalFunction,
    LeafFunction,
    Node,
    NodeFunction,
    OutputBind,
    Param,
    functions,
)
from ...ir.leafir import LeafIRUnsupported, leaf_ir, ops
from ...ir.leafir.analyses import index_facts
from ...ir.leafir.pyemit import emit_problem, emit_python, namespace
from ...ir.leafir.rewrite import rewrite_block
from ...ir.pysource import generated_body
from ...ir.types import i64

LO = "__hpvm_lo_x"  # the first instance id along x of the chunk
NX = "__hpvm_n_x"  # the node's extent along x (the whole node's, not the chunk's)
COUNT = "__hpvm_chunk_n"  # the chunk's number of instances along x
_ID_X, _COUNT_X = "get_node_instance_id_x", "get_num_node_instances_x"


def offset_problem(fn: NodeFunction) -> str | None:
    """Why ``fn`` (a leaf, or an internal function and every leaf below it) cannot be
    rewritten (``None`` if it can)."""
    for leaf in functions(fn):
        if isinstance(leaf, LeafFunction):
            problem = _leaf_problem(leaf)
            if problem is not None:
                return problem
    return None


def _leaf_problem(leaf: LeafFunction) -> str | None:
    if leaf.body_kind not in ("python", "generated"):
        return f"leaf '{leaf.name}' has a {leaf.body_kind} body (only Python code is rewritten for chunks)"
    if isinstance(leaf.body, GeneratedBody) and leaf.body.context is not None:
        return f"leaf '{leaf.name}' is a clone reading its context"
    try:
        ir = leaf_ir(leaf)
    except LeafIRUnsupported as refused:
        return f"leaf '{leaf.name}' is not rewritten: {refused.construct} is outside the leaf IR"
    problem = emit_problem(ir)
    if problem is not None:
        return problem
    info = index_facts(ir)
    for stmt in ops.walk_stmts(ir.body):
        for top in ops.stmt_exprs(stmt):
            for e in ops.walk_expr(top):
                if _x_query(e) and info.handle_level(e.args[0]) is None:  # type: ignore[union-attr]
                    return (
                        f"leaf '{leaf.name}' queries x of a node handle it does not assign once, at the top "
                        f"level (line {stmt.line}): which node it is is not known"
                    )
    return None


def _x_query(e: ops.Expr) -> bool:
    return isinstance(e, ops.IntrinsicOp) and e.intrinsic.name in (_ID_X, _COUNT_X)


def shift_queries(ir: ops.LeafIR, level: int) -> ops.LeafIR:
    """``ir`` taking ``LO`` and ``NX`` after its ports, its x queries of the node ``level``
    levels up (0: its own) shifted (module doc): ``id_x(h)`` becomes ``id_x(h) + LO``,
    ``count_x(h)`` becomes ``NX``."""
    info = index_facts(ir)
    lo, nx = ops.Var(LO, i64), ops.Var(NX, i64)

    def rule(e: ops.Expr) -> ops.Expr:
        if not _x_query(e) or info.handle_level(e.args[0]) != level:  # type: ignore[union-attr]
            return e
        return ops.Binary("+", e, lo, i64) if e.intrinsic.name == _ID_X else nx  # type: ignore[union-attr]

    params = (*ir.params, Param(LO, i64), Param(NX, i64))
    return replace(ir, params=params, body=rewrite_block(ir.body, rule))


def offset_leaf(leaf: LeafFunction, level: int = 0) -> LeafFunction:
    """``leaf`` taking ``LO`` and ``NX`` after its ports, its x queries of the node
    ``level`` levels up (0: its own) rewritten (module doc): its leaf IR shifted
    (``shift_queries``) and emitted as Python (``ir/leafir/pyemit.py``), each line mapped to
    the leaf's own file (the foreign file for generated code)."""
    assert offset_problem(leaf) is None, offset_problem(leaf)
    ir = shift_queries(leaf_ir(leaf), level)
    text, lines = emit_python(ir)
    made = generated_body(leaf.name, text, ir.file, lines, namespace=namespace(), static_base=namespace)
    params = [Param(p.name, p.type, p.layout) for p in leaf.params] + [Param(LO, i64), Param(NX, i64)]
    offset = LeafFunction(
        None,
        leaf.name,
        params,
        list(leaf.outputs),
        leaf.hint,
        leaf.ins,
        leaf.outs,
        leaf.location,
        body=made,
    )
    offset.materialize()  # (made to run: what the workers get is its function, not ``env``)
    return offset


def offset_function(fn: NodeFunction, level: int, made: dict[tuple[int, int], NodeFunction]) -> NodeFunction:
    """``fn`` (``level`` levels below the node being split; 0: that node) taking ``LO`` and
    ``NX`` after its ports: a leaf rewritten, an internal function copied with its children
    so, binding both on to each."""
    known = made.get((id(fn), level))
    if known is not None:
        return known
    if isinstance(fn, LeafFunction):
        made[(id(fn), level)] = out = offset_leaf(fn, level)
        return out
    assert isinstance(fn, InternalFunction)
    graph = fn.graph
    n = len(fn.params)
    copies = {
        id(node): Node(node.name, offset_function(node.function, level + 1, made), node.sizes, node.location)
        for node in graph.nodes
    }
    extra = []
    for node in graph.nodes:
        ports = len(node.function.params)
        extra += [InputBind(n, copies[id(node)], ports), InputBind(n + 1, copies[id(node)], ports + 1)]
    sub = ChildGraph(
        nodes=list(copies.values()),
        edges=[
            Edge(copies[id(e.src)], e.sp, copies[id(e.dst)], e.dp, e.repl, e.stream, e.location)
            for e in graph.edges
        ],
        in_binds=[InputBind(b.ip, copies[id(b.dst)], b.ic, b.stream, b.location) for b in graph.in_binds]
        + extra,
        out_binds=[OutputBind(copies[id(b.src)], b.oc, b.op, b.stream, b.location) for b in graph.out_binds],
    )
    params = [Param(p.name, p.type, p.layout) for p in fn.params] + [Param(LO, i64), Param(NX, i64)]
    out_fn = InternalFunction(
        fn.name, params, graph=sub, hint=fn.hint, ins=fn.ins, outs=fn.outs, location=fn.location
    )
    made[(id(fn), level)] = out_fn
    return out_fn


def offset_root(root: InternalFunction, node: Node, rest: tuple[int, ...]) -> InternalFunction:
    """``root`` (one child, ``node``) as a chunk: ``node``'s function rewritten over
    ``COUNT`` instances along x (the other dimensions fixed to ``rest``), taking ``COUNT``,
    ``LO`` and ``NX`` after the root's own inputs."""
    fn = offset_function(node.function, 0, {})
    sizes = (size_expr.Param(COUNT), *(size_expr.Const(s) for s in rest))
    child = Node(node.name, fn, sizes, node.location)
    n = len(root.params)
    ports = len(node.function.params)
    graph = ChildGraph(
        nodes=[child],
        in_binds=[InputBind(b.ip, child, b.ic) for b in root.graph.in_binds]
        + [InputBind(n + 1, child, ports), InputBind(n + 2, child, ports + 1)],
        out_binds=[OutputBind(child, b.oc, b.op) for b in root.graph.out_binds],
    )
    params = [Param(p.name, p.type) for p in root.params] + [
        Param(COUNT, i64),
        Param(LO, i64),
        Param(NX, i64),
    ]
    return InternalFunction(f"{root.name}__layout_chunk", params, graph=graph, location=root.location)
