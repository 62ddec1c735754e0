"""Bounds facts read from a leaf clone's syntax tree: the fallback for leaves outside the
leaf IR's dialect.

Why: the pre-run bounds check (``backends/bounds.py``) reads a Python leaf's accesses
``a[id + c]`` from its leaf IR's index facts. A leaf the dialect does not cover yet (a call
of the user's helper function, a slice, ``try``...) has no leaf IR, and without facts a
compiled back end would run a launch with more instances than its arrays have elements
past their ends — silently on ``cpu``. Until the dialect covers such leaves, their facts
come from here: the clone's syntax tree (its instance-id reads are ``ctx[...]`` subscripts,
``CloneLeaves``'s lowering), the largest constant offset per (array parameter, axis,
instance dimension) of the accesses every instance makes — top-level simple statements up
to the first compound statement holding a ``return``. It lives here, beside the clone it
reads, so that no back end reads Python.
"""

from __future__ import annotations

import ast
from collections import Counter

from ..ir import instance_context as ictx
from ..ir.types import ArrayType
from .clone_leaves import CTX_PARAM, LeafClone

_OWN_IDS = {ictx.index(0, axis): axis for axis in range(3)}  # context slot -> x, y, z
_COMPOUND = (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.Match, ast.AsyncFor, ast.AsyncWith)

#: (array parameter index, axis, instance dimension, largest offset, source line)
CloneAccess = tuple[int, int, int, int, int]


def clone_accesses(clone: LeafClone) -> list[CloneAccess]:
    """The clone's unconditional ``a[id + c]`` accesses (module doc)."""
    func = clone.func
    leaf = clone.leaf
    names = [a.arg for a in func.args.args[: len(leaf.params)]]
    stores = Counter(n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    arrays = {
        name: p
        for p, name in enumerate(names)
        if isinstance(leaf.params[p].type, ArrayType) and not stores[name]
    }
    ids: dict[str, tuple[int, int]] = {}  # variables holding an instance id + c: name -> (dim, c)
    found: dict[tuple[int, int, int], CloneAccess] = {}
    for stmt in func.body:
        if isinstance(stmt, _COMPOUND):
            if any(isinstance(n, ast.Return) for n in ast.walk(stmt)):
                break
            continue
        for sub in _evaluated(stmt):
            if not isinstance(sub, ast.Subscript) or not isinstance(sub.value, ast.Name):
                continue
            param = arrays.get(sub.value.id)
            if param is None:
                continue
            index = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
            for axis, item in enumerate(index):
                term = _id_term(item, ids)
                if term is None:
                    continue
                dim, offset = term
                key = (param, axis, dim)
                if key not in found or offset > found[key][3]:
                    found[key] = (param, axis, dim, offset, sub.lineno)
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stores[stmt.targets[0].id] == 1
        ):
            term = _id_term(stmt.value, ids)
            if term is not None:
                ids[stmt.targets[0].id] = term
        if isinstance(stmt, ast.Return):
            break
    return list(found.values())


def _evaluated(node: ast.AST) -> list[ast.AST]:
    """The nodes of a simple statement that are evaluated whenever it runs."""
    out = [node]
    if isinstance(node, ast.IfExp):
        return out + _evaluated(node.test)
    if isinstance(node, ast.BoolOp):
        return out + _evaluated(node.values[0])
    if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return out
    for child in ast.iter_child_nodes(node):
        out += _evaluated(child)
    return out


def _own_id(expr: ast.AST) -> int | None:
    """0, 1, 2 when ``expr`` is the clone's read of the node's own instance id x, y, z."""
    if (
        isinstance(expr, ast.Subscript)
        and isinstance(expr.value, ast.Name)
        and expr.value.id == CTX_PARAM
        and isinstance(expr.slice, ast.Constant)
    ):
        return _OWN_IDS.get(expr.slice.value)
    return None


def _id_term(expr: ast.AST, ids: dict[str, tuple[int, int]]) -> tuple[int, int] | None:
    """(dim, offset) when ``expr`` is an instance id, or a variable of ``ids``, plus or minus
    integer constants."""
    if isinstance(expr, ast.Name):
        return ids.get(expr.id)
    dim = _own_id(expr)
    if dim is not None:
        return dim, 0
    if not isinstance(expr, ast.BinOp) or not isinstance(expr.op, (ast.Add, ast.Sub)):
        return None
    if isinstance(expr.right, ast.Constant):
        const, other = expr.right, expr.left
    elif isinstance(expr.left, ast.Constant) and isinstance(expr.op, ast.Add):
        const, other = expr.left, expr.right
    else:
        return None
    term = _id_term(other, ids)
    if term is None or type(const.value) is not int:
        return None
    return term[0], term[1] + (-const.value if isinstance(expr.op, ast.Sub) else const.value)
