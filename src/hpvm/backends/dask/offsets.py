"""A leaf that runs a range of its node's instances along x, keeping their original ids.

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

The rewrite runs on the worker (``tasks.py``), once per graph: the rewritten body is
generated code, which is cheaper to rebuild there than to ship.
"""

from __future__ import annotations

import ast

from ...ir import expr as size_expr
from ...ir.bodies import GeneratedBody
from ...ir.graph import ChildGraph, InputBind, InternalFunction, LeafFunction, Node, OutputBind, Param
from ...ir.leafinfo import handle_level, intrinsic_name, leaf_namespace, parse_leaf
from ...ir.pysource import generated_body, unparse_with_lines
from ...ir.types import i64

LO = "__hpvm_lo_x"  # the first instance id along x of the chunk
NX = "__hpvm_n_x"  # the node's extent along x (the whole node's, not the chunk's)
COUNT = "__hpvm_chunk_n"  # the chunk's number of instances along x


def offset_problem(leaf: LeafFunction) -> str | None:
    """Why the leaf cannot be rewritten (``None`` if it can)."""
    if leaf.body_kind not in ("python", "generated"):
        return f"leaf '{leaf.name}' has a {leaf.body_kind} body (only Python code is rewritten for chunks)"
    if isinstance(leaf.body, GeneratedBody) and leaf.body.context is not None:
        return f"leaf '{leaf.name}' is a clone reading its context"
    if parse_leaf(leaf) is None:
        return f"the source of leaf '{leaf.name}' cannot be read"
    return None


class _Queries(ast.NodeTransformer):
    """Rewrites the leaf's own-node x queries (module doc), statement by statement."""

    def __init__(self, env: dict) -> None:
        self.env = env
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
        if handle_level(node.args[0], self.handles, self.env) != 0:
            return node
        extra = ast.Name(LO if name == "get_node_instance_id_x" else NX, ast.Load())
        new: ast.expr = ast.BinOp(node, ast.Add(), extra) if name == "get_node_instance_id_x" else extra
        return ast.copy_location(new, node)


def offset_leaf(leaf: LeafFunction) -> LeafFunction:
    """``leaf`` taking ``LO`` and ``NX`` after its ports, its x queries rewritten (module doc)."""
    func = parse_leaf(leaf)
    assert func is not None, offset_problem(leaf)
    env = leaf_namespace(leaf)
    func = _Queries(env).visit(func)
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
    return LeafFunction(
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


def offset_root(root: InternalFunction, node: Node, rest: tuple[int, ...]) -> InternalFunction:
    """``root`` (one child, ``node``) as a chunk: the rewritten leaf over ``COUNT``
    instances along x (the other dimensions fixed to ``rest``), taking ``COUNT``, ``LO``
    and ``NX`` after the root's own inputs."""
    leaf = offset_leaf(node.function)  # type: ignore[arg-type]
    sizes = (size_expr.Param(COUNT), *(size_expr.Const(s) for s in rest))
    child = Node(node.name, leaf, sizes, node.location)
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
