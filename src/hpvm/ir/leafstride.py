"""Which instance id a Python leaf indexes its arrays with at unit stride.

Why. A back end that runs a node's instances as a loop nest (``cpu``) vectorizes the
innermost loop, and walks memory in order only when the innermost loop's id is the one that
moves the leaf's array accesses by one element. Leaves are written in two conventions: the
NumPy one (``d[x, y]``: x the outer, slow index) and the GPU one (``d[y, x]``, ``d[z, y, x]``
or ``d[y * w + x]``: x the fastest index, as CUDA's and HPVM's examples write it). This
module tells them apart from the leaf's code, once per leaf, so that back ends need not read
Python themselves (``ir/leafinfo.py`` holds the other facts found from a leaf's code).

How. Every expression of the leaf gets an *affine form* in its own node's instance ids
(level 0; a parent's ids are uniform across the node's instances): a coefficient per id —
an integer, or ``SYMBOLIC`` for a factor that is not a constant (``y * w``) — or no form at
all when an id enters in another way (``x // 2``, ``idx[x]``, ``x * y``). Locals take the
form of what they are assigned (flow-insensitively: a local assigned two different forms
has none). Then each access to an array parameter votes:

- a multi-dimensional access (``d[z, y, x]``, also ``d[y][x]``) by its last subscript, the
  one that moves along memory (C order);
- a one-dimensional access (``d[y * w + x]``) by its whole index.

An access votes for the id whose coefficient is 1 or -1 when exactly one id has such a
coefficient; accesses without one (``a[row, k]``, ``d[2 * x]``, a gather) do not vote. The id
with strictly the most votes wins (the rule ``backends/llvm_native/access.py`` applies to LLVM
leaves); no votes or a tie: ``None``, and back ends keep their default order.

The answer only ever chooses a schedule (any order of a node's instances is legal), so the
analysis may be approximate: a wrong answer costs speed, never correctness.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from . import instance_context as ictx
from .bodies import GeneratedBody, PythonBody
from .graph import LeafFunction
from .leafinfo import handle_level, intrinsic_name, parse_leaf, visible_names
from .pyast import walk_own
from .types import ArrayType

SYMBOLIC = "symbolic"  # a coefficient that is not a constant (``y * w``: w an input)
Coef = int | str
Form = dict[int, Coef]  # instance axis (0 = x, 1 = y, 2 = z) -> coefficient; {} = uniform

_IDS = {"get_node_instance_id_x": 0, "get_node_instance_id_y": 1, "get_node_instance_id_z": 2}
# Calls that pass an integer through unchanged (for the access's stride).
_PASS_THROUGH = frozenset({"int", "int32", "int64", "intp", "uint32", "uint64", "uintp"})
_CACHE_KEY = "_unit_stride"  # (``LeafFunction._forget_facts`` drops it with the other facts)


def unit_stride_axis(leaf: LeafFunction) -> int | None:
    """The instance axis (0 = x, 1 = y, 2 = z) that ``leaf``'s array accesses move along with
    unit stride, or ``None`` without a clear answer (module docstring). Cached on the leaf."""
    if _CACHE_KEY not in leaf.__dict__:
        votes = access_votes(leaf)
        leaf.__dict__[_CACHE_KEY] = winner(votes)
    return leaf.__dict__[_CACHE_KEY]


def nest_order(dims: int, answers: Iterable[int | None]) -> tuple[int, ...]:
    """The instance loops of ``dims`` dimensions, outermost first, for leaves whose
    unit-stride axes (``unit_stride_axis``, or a back end's own analysis of a leaf in
    another language) are ``answers`` — the one rule every back end orders instances by.

    Default: x outermost, the last axis innermost (row-major, as NumPy indexes). When the
    leaves with an answer agree on one axis (those without one do not mind), that axis goes
    innermost; when it is x, the leaves follow the GPU convention (x fastest in memory, then
    y, then z) and the whole nest is reversed, z outermost, so that every loop steps through
    memory in order; another axis goes innermost with the others keeping their order.
    Leaves that disagree: the default."""
    default = tuple(range(dims))
    found = {a for a in answers if a is not None}
    if dims < 2 or len(found) != 1:
        return default
    inner = found.pop()
    if inner >= dims:
        return default
    if inner == 0:
        return default[::-1]
    return (*(a for a in default if a != inner), inner)


def winner(votes: Counter[int]) -> int | None:
    """The axis with strictly the most votes, or ``None`` (no votes, or a tie)."""
    ranked = votes.most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def access_votes(leaf: LeafFunction) -> Counter[int]:
    """How many of ``leaf``'s array accesses move with unit stride along each axis."""
    body = leaf.body
    if not isinstance(body, (PythonBody, GeneratedBody)):
        return Counter()
    func = parse_leaf(leaf)
    if func is None:
        return Counter()
    arrays = {p.name for p in leaf.params if isinstance(p.type, ArrayType)}
    context = body.context if isinstance(body, GeneratedBody) else None
    forms = _Forms(func, visible_names(leaf), context)
    votes: Counter[int] = Counter()
    for index in _accesses(func, arrays):
        axis = unit_axis(forms.form(index))
        if axis is not None:
            votes[axis] += 1
    return votes


def unit_axis(form: Form | None) -> int | None:
    """The one axis with coefficient 1 or -1 in ``form``, if exactly one has it."""
    if form is None:
        return None
    units = [axis for axis, coef in form.items() if coef in (1, -1)]
    return units[0] if len(units) == 1 else None


def _accesses(func: ast.FunctionDef, arrays: set[str]) -> Iterator[ast.expr]:
    """The index that decides the stride of each access to an array parameter: the last
    subscript of a chain (``d[y][x]``: ``x``) or of a tuple index (``d[z, y, x]``: ``x``),
    else the whole (flattened) index. Slices give nothing."""
    inner = set()
    for node in walk_own(func):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Subscript):
            inner.add(id(node.value))  # part of a longer chain: its outermost link decides
    for node in walk_own(func):
        if not isinstance(node, ast.Subscript) or id(node) in inner:
            continue
        root: ast.expr = node
        while isinstance(root, ast.Subscript):
            root = root.value
        if not (isinstance(root, ast.Name) and root.id in arrays):
            continue
        index = node.slice
        if isinstance(index, ast.Tuple):
            if not index.elts:
                continue
            index = index.elts[-1]
        if not isinstance(index, (ast.Slice, ast.Starred)):
            yield index


def _add(a: Form, b: Form, sign: int = 1) -> Form:
    out: Form = dict(a)
    for axis, coef in b.items():
        if axis in out:
            old = out[axis]
            new = old + sign * coef if isinstance(old, int) and isinstance(coef, int) else SYMBOLIC
        else:
            new = sign * coef if isinstance(coef, int) else SYMBOLIC
        if new == 0:
            out.pop(axis, None)
        else:
            out[axis] = new
    return out


def _scaled(form: Form, factor: int | None) -> Form:
    """``form`` times a constant ``factor`` (``None``: a uniform value that is not constant)."""
    if factor == 0:
        return {}
    if factor is None:
        return {axis: SYMBOLIC for axis in form}
    return {axis: coef * factor if isinstance(coef, int) else SYMBOLIC for axis, coef in form.items()}


def _constant(expr: ast.expr) -> int | None:
    """``expr``'s value when it is an integer literal (or its negation)."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, int) and not isinstance(expr.value, bool):
        return expr.value
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
        value = _constant(expr.operand)
        if value is not None:
            return -value if isinstance(expr.op, ast.USub) else value
    return None


class _Forms:
    """The affine forms of a leaf's expressions in its own instance ids."""

    def __init__(self, func: ast.FunctionDef, env: dict[str, Any], context: str | None):
        self.env = env
        self.context = context  # generated code's context parameter (ids read from it)
        self.handles: dict[str, int] = {}
        self.locals: dict[str, Form | None] = {}
        assigns = [n for n in walk_own(func) if isinstance(n, (ast.Assign, ast.AugAssign, ast.For))]
        for _ in range(4):  # node handles first (n = get_node(); p = get_parent_node(n))
            for node in assigns:
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                    if isinstance(target, ast.Name):
                        lvl = handle_level(node.value, self.handles, env)
                        if lvl is not None:
                            self.handles[target.id] = lvl
        for _ in range(6):  # then the locals' forms, to a fixpoint
            found: dict[str, Form | None] = {}
            for node in assigns:
                for name, form in self._bindings(node):
                    if name in self.handles:
                        continue
                    found[name] = form if name not in found or found[name] == form else None
            if found == self.locals:
                break
            self.locals = found
        else:
            self.locals = dict.fromkeys(self.locals)  # not settled: nothing known

    def _bindings(self, node: ast.AST) -> Iterator[tuple[str, Form | None]]:
        """(local, form) for each name the statement ``node`` assigns."""
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield from self._bind(target, node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            # ``i += 1`` keeps i's coefficients (its other assignments decide them); adding
            # an id, or another operation on an id-dependent value, leaves it without a form.
            value = self.form(node.value)
            if value != {} or not isinstance(node.op, (ast.Add, ast.Sub)):
                if value != {} or self.locals.get(node.target.id, {}) != {}:
                    yield node.target.id, None
        elif isinstance(node, ast.For):
            uniform = self.form(node.iter) == {}
            for name in _names(node.target):
                yield name, {} if uniform else None

    def _bind(self, target: ast.expr, value: ast.expr) -> Iterator[tuple[str, Form | None]]:
        if isinstance(target, ast.Name):
            yield target.id, self.form(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts):
                    yield from self._bind(t, v)
            else:
                for name in _names(target):
                    yield name, None

    def form(self, expr: ast.expr) -> Form | None:
        """``expr``'s affine form in the node's own ids, or ``None`` when it has none."""
        if isinstance(expr, ast.Constant):
            return {}
        if isinstance(expr, ast.Name):
            return self.locals.get(expr.id, {})  # inputs, globals and handles are uniform
        if isinstance(expr, ast.BinOp):
            left, right = self.form(expr.left), self.form(expr.right)
            if left is None or right is None:
                return None
            if isinstance(expr.op, (ast.Add, ast.Sub)):
                return _add(left, right, 1 if isinstance(expr.op, ast.Add) else -1)
            if isinstance(expr.op, ast.Mult):
                if not left:
                    return _scaled(right, _constant(expr.left)) if right else {}
                if not right:
                    return _scaled(left, _constant(expr.right))
                return None
            return {} if not left and not right else None
        if isinstance(expr, ast.UnaryOp):
            inner = self.form(expr.operand)
            if isinstance(expr.op, ast.USub) and inner is not None:
                return _scaled(inner, -1)
            if isinstance(expr.op, ast.UAdd):
                return inner
            return {} if inner == {} else None
        if isinstance(expr, ast.Call):
            return self._call(expr)
        if isinstance(expr, ast.Subscript):
            if self.context is not None and _is_name(expr.value, self.context):
                offset = _constant(expr.slice)
                for axis in range(3):
                    if offset == ictx.index(0, ictx.ID + axis):
                        return {axis: 1}
            return self._uniform_or_none(expr)  # a value read from memory: not affine in ids
        if isinstance(expr, ast.IfExp):
            body, orelse = self.form(expr.body), self.form(expr.orelse)
            return body if body == orelse and self.form(expr.test) == {} else None
        return self._uniform_or_none(expr)

    def _call(self, call: ast.Call) -> Form | None:
        name = intrinsic_name(call, self.env)
        if name in _IDS:
            level = handle_level(call.args[0], self.handles, self.env) if len(call.args) == 1 else None
            if level is None:
                return None  # whose id it is is not known statically
            return {_IDS[name]: 1} if level == 0 else {}  # an ancestor's id is uniform here
        func = call.func
        short = (
            func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        )
        if short in _PASS_THROUGH and len(call.args) == 1 and not call.keywords:
            return self.form(call.args[0])
        return self._uniform_or_none(call)

    def _uniform_or_none(self, expr: ast.expr) -> Form | None:
        """``{}`` when nothing in ``expr`` depends on an id, else ``None``."""
        for child in ast.iter_child_nodes(expr):
            if isinstance(child, ast.expr) and self.form(child) != {}:
                return None
        return {}


def _is_name(expr: ast.expr, name: str) -> bool:
    return isinstance(expr, ast.Name) and expr.id == name


def _names(target: ast.expr) -> Iterator[str]:
    for node in ast.walk(target):
        if isinstance(node, ast.Name):
            yield node.id
