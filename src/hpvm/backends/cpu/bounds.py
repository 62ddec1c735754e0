"""Replication sizes that would index past an array, caught before the node's leaves run.

Why. Compiled code does not check bounds, so ``hpvm run examples/vector_add.py ... --arg
n=100`` with 4-element arrays wrote past them and killed the process (exit 139). Most leaves
index their arrays with their own instance id, ``c[i] = a[i] + b[i]``, and sizes are bare
parameters or simple expressions: whether the last instance stays in bounds is then known
from the sizes and the shapes alone, before anything runs.

What. ``unconditional_accesses`` finds, in a leaf's clone, the subscripts of its array
parameters that *every* instance evaluates and whose index along some axis is the
instance id x, y or z (of the leaf's own node) plus a constant — directly, or through
variables assigned such a value (``k = id + 1``, then ``a[k + 1]``: the id plus 2). The graph function checks
each one where it computes the node's sizes: when the node has instances and the last one's
index ``size - 1 + offset`` is at least the array's extent, it raises ``OutOfBoundsError``
naming the node, the array, the size and the line, before any instance runs. One comparison
per access per execution of the graph: nothing measurable.

Sound: the error is raised only for a run that would certainly index out of bounds. The
access must be in a top-level statement of the leaf (not under ``if``, ``for``, ``while``,
``try`` or ``with``, nor on a branch of ``x if c else y``, ``and``/``or``, a comprehension
or a lambda), with no ``return`` in any statement before it — so every instance reaches it
(an exception raised earlier fails the run anyway); the id variables are assigned once, at
the top level, and the array parameter never. Guarded leaves (``if i < n: ...``), indices
computed otherwise (``tile * 16 + i``) and arrays not passed in by the enclosing graph are
not checked: the interpreter reports those.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass

from ...errors import OutOfBoundsError
from ...ir import instance_context as ictx
from ...ir.graph import InternalFunction, Node, Param
from ...ir.types import ArrayType
from ...passes.clone_leaves import CTX_PARAM, LeafClone

_OWN_IDS = {ictx.index(0, axis): axis for axis in range(3)}  # context slot -> x, y, z
_COMPOUND = (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.Match, ast.AsyncFor, ast.AsyncWith)


@dataclass(frozen=True)
class Access:
    """``param[..., id_dim + offset (at axis), ...]`` in every instance, at ``line``."""

    param: int  # the leaf's array parameter
    axis: int  # the array axis indexed
    dim: int  # 0, 1, 2: the instance id x, y, z
    offset: int
    line: int


class SizeOutOfBounds(OutOfBoundsError):
    """Raised by generated code, whose exceptions carry a constant message and run-time
    values: the message's ``{}`` are the values. The back end raises it again as a plain
    ``OutOfBoundsError``."""

    def __init__(self, template: str, *values: int) -> None:
        super().__init__(template.format(*values))


def bounds_checks(
    node: Node, fn: InternalFunction, clone: LeafClone, sizes: list[str], arrays: dict[int, tuple[str, Param]]
) -> list[str]:
    """Generated lines raising ``SizeOutOfBounds`` when ``node`` (a leaf node of ``fn``, whose
    sizes are in the variables ``sizes``) would index one of ``arrays`` past its end.
    ``arrays``: the leaf's parameters fed by ``fn``'s inputs -> (generated name, ``fn``'s input)."""
    lines: list[str] = []
    for access in unconditional_accesses(clone):
        if access.param not in arrays or access.dim >= node.dims:
            continue
        name, given = arrays[access.param]
        assert isinstance(given.type, ArrayType)
        if access.axis >= given.type.rank:
            continue  # a[i, j] of a 1-D array: Numba refuses it
        size = sizes[access.dim]
        instances = " and ".join(f"{s} > 0" for s in sizes)
        last = f"{size} - 1 + {access.offset}" if access.offset else f"{size} - 1"
        lines.append(f"if {instances} and {last} >= {name}.shape[{access.axis}]:")
        lines.append(
            f"    raise __hpvm_SizeOutOfBounds({_message(node, fn, clone, access, given)!r}, "
            f"{size}, {name}.shape[{access.axis}])"
        )
    return lines


def _message(node: Node, fn: InternalFunction, clone: LeafClone, access: Access, given: Param) -> str:
    """The error's text, ``{}`` standing for the size and the array's extent."""

    def text(value: object) -> str:  # literal text of the template
        return str(value).replace("{", "{{").replace("}", "}}")

    offset = f" {'+' if access.offset > 0 else '-'} {abs(access.offset)}" if access.offset else ""
    array = clone.leaf.params[access.param].name
    where = f"'{given.name}' of '{fn.name}'" if given.name != array else f"of '{fn.name}'"
    return (
        f"node '{text(node.name)}' ({text(node.location)}): replication size "
        f"{text(node.sizes[access.dim])} is {{}}, but every instance of leaf '{text(clone.user.name)}' "
        f"indexes '{text(array)}' (input {text(where)}, {{}} long on axis {access.axis}) with its "
        f"instance id {'xyz'[access.dim]}{offset} ({text(clone.user.locate(None, access.line))}): the "
        "last instances would index past its end (compiled code does not check bounds; "
        "target='interp' does)"
    )


def unconditional_accesses(clone: LeafClone) -> list[Access]:
    """The accesses of the module doc, the largest offset per (param, axis, dim)."""
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
    found: dict[tuple[int, int, int], Access] = {}
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
                if key not in found or offset > found[key].offset:
                    found[key] = Access(param, axis, dim, offset, sub.lineno)
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
