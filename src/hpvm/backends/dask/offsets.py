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

Why this still rewrites the syntax tree (issue 25 wants no back end reading Python): it
*produces* code. The facts it needs (which calls query the split node's x) are in the leaf
IR, but turning a changed leaf IR back into Python to run needs an emitter from the leaf
IR, which does not exist yet (deliverable 4, docs/leafir.md); it moves when that does.
"""

from __future__ import annotations

import ast

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
from ...ir.leafinfo import handle_level, intrinsic_name, leaf_namespace, parse_leaf
from ...ir.pysource import generated_body, unparse_with_lines
from ...ir.types import i64

LO = "__hpvm_lo_x"  # the first instance id along x of the chunk
NX = "__hpvm_n_x"  # the node's extent along x (the whole node's, not the chunk's)
COUNT = "__hpvm_chunk_n"  # the chunk's number of instances along x


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
    if parse_leaf(leaf) is None:
        return f"the source of leaf '{leaf.name}' cannot be read"
    return None


class _Queries(ast.NodeTransformer):
    """Rewrites the leaf's own-node x queries (module doc), statement by statement."""

    def __init__(self, env: dict, level: int) -> None:
        self.env = env
        self.level = level  # the handle level of the node being split, seen from this leaf
        self.handles: dict[str, int] = {}

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            level = handle_level(node.value, self.handles, self.env)
            if level is not None:
                self.handles[node.targets[0].id] = level
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        name = intrinsic_name(node, self.env)
        if name not in ("get_node_instance_id_x", "get_num_node_instances_x") or len(node.args) != 1:
            return node
        if handle_level(node.args[0], self.handles, self.env) != self.level:
            return node
        extra = ast.Name(LO if name == "get_node_instance_id_x" else NX, ast.Load())
        new: ast.expr = ast.BinOp(node, ast.Add(), extra) if name == "get_node_instance_id_x" else extra
        return ast.copy_location(new, node)


def offset_leaf(leaf: LeafFunction, level: int = 0) -> LeafFunction:
    """``leaf`` taking ``LO`` and ``NX`` after its ports, its x queries of the node
    ``level`` levels up (0: its own) rewritten (module doc)."""
    func = parse_leaf(leaf)
    assert func is not None, offset_problem(leaf)
    env = leaf_namespace(leaf)
    func = _Queries(env, level).visit(func)
    func.args.args.extend([ast.arg(LO), ast.arg(NX)])
    func.decorator_list = []
    ast.fix_missing_locations(func)
    text, lines = unparse_with_lines(func)
    body = leaf.body
    if isinstance(body, GeneratedBody):  # map the generated lines on to the foreign file's
        origin = body.origin
        lines = tuple(body.origin_of(line - leaf.source_line + 1).line if line else 0 for line in lines)
    else:
        origin = leaf.location.file
    made = generated_body(leaf.name, text, origin, lines, namespace=env)
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
