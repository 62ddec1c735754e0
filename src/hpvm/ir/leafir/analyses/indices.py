"""Index facts: each access of an array parameter, with its index along every axis as
``stride * id + offset`` where that index is affine in one of the node's own instance ids.

Why: ``backends/bounds.py`` (is the last instance in bounds?) and ``dask/ownership.py``
(which rows does each chunk own?) both read this from the leaf's text, each with its own
walk. Here it is found once per leaf IR.

What counts as an instance id: ``hpvm.get_node_instance_id_{x,y,z}`` of the leaf's own
node — ``hpvm.get_node()`` itself, or a *handle variable* assigned such a handle once, in a
top-level statement. An *id variable* is a variable assigned once, in a top-level statement,
an affine id: an id, an id variable, and those plus or minus an integer constant, or times
one (``k = i + 1``, then ``a[k + 1]``: the id plus 2). Anything else (a variable assigned
twice or inside a branch, an id times a variable) is not affine here: an access indexed by
it has ``None`` on that axis.

*Unconditional* accesses are the ones every instance evaluates: in a top-level statement
(not under ``if``/``for``/``while``, nor on a branch of ``x if c else y`` or after the first
operand of ``and``/``or``), with no ``return`` in any statement before it and no
compound statement holding one before it. An exception raised earlier fails the run anyway.

*Guarded* accesses are the ones every instance *that passes a test of its ids* evaluates:
in a statement directly in the body of a top-level ``if`` that every instance reaches (as
above), before any statement of that body holding a ``return``, evaluated whenever the
statement is — the CUDA programmer's ``if i < n: c[i] = a[i] + b[i]``. Their ``guards`` say
which instances: the test is a comparison (``<``, ``<=``, ``>``, ``>=``, ``==``, chains
too) of an affine id and a *bound* — an integer constant, a scalar parameter the leaf never
assigns or the length of an array parameter it never assigns (``d.shape[1]``, ``len(d)``),
either plus or minus a constant — or an ``and`` of such comparisons, or ``not``
of a test whose negation is one (below); any other test (``or``, ``!=``, a part not
understood) gives its accesses no guards (not facts). The statements directly in the
``else`` of such an ``if`` are guarded by the negated test: ``not (i < n)`` is ``i >= n``,
``not (i != 0)`` is ``i == 0``, ``not (a or b)`` is ``not a and not b``; ``not (a and b)``
is an ``or``, not understood. And the other CUDA form, the early exit: after a top-level
``if <test>: return`` (nothing else in it) the instances that go on are those passing the
negated test, so the top-level statements after it are guarded by it (and the ``if``
statements after it add their own tests) — ``if x >= w or y >= h: return`` then
``out[y, x] = ...`` guards the store by ``x < w`` and ``y < h``. An exit whose test is not
understood ends the facts, as any other ``return`` does.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ...types import ArrayType, ScalarType
from .. import ops
from .manager import ANALYSES, AnalysisManager


@dataclass(frozen=True)
class Affine:
    """``stride * id + offset``, ``id`` the own instance id of axis ``dim`` (0, 1, 2: x, y, z)."""

    dim: int
    stride: int
    offset: int

    def plus(self, c: int) -> Affine:
        return Affine(self.dim, self.stride, self.offset + c)

    def times(self, c: int) -> Affine:
        return Affine(self.dim, self.stride * c, self.offset * c)


@dataclass(frozen=True)
class Guard:
    """A test an instance passes: ``term + k * scalar + constant`` is ``<= 0``, or ``== 0``
    where ``equal`` (``scalar`` a scalar parameter's name, ``(array, axis)`` for an array
    parameter's length along an axis, or ``None`` and ``k`` 0)."""

    term: Affine
    scalar: str | tuple[str, int] | None
    k: int
    constant: int
    equal: bool = False


@dataclass(frozen=True)
class IndexAccess:
    """One load or store (``store``) of array parameter ``array`` at ``indices``, each with its
    ``affine`` form (``None``: not affine in an instance id); ``line``: its statement's line;
    ``unconditional``: every instance evaluates it (module doc); ``guards``: the tests of a
    guarded access (module doc) — every instance passing all of them evaluates it."""

    array: str
    store: bool
    indices: tuple[ops.Expr, ...]
    affine: tuple[Affine | None, ...]
    line: int
    unconditional: bool
    guards: tuple[Guard, ...] = ()


@dataclass(frozen=True)
class IndexInfo:
    """``assigned``: how many statements assign each variable (``Assign`` and ``for``);
    ``handles``: handle variables -> how many levels up their node is (0: the leaf's own);
    ``ids``: id variables -> their affine form; ``accesses``: every access of an array
    parameter, in statement order."""

    assigned: Counter[str]
    handles: dict[str, int]
    ids: dict[str, Affine]
    accesses: tuple[IndexAccess, ...]

    def handle_level(self, e: ops.Expr) -> int | None:
        """Which node the handle ``e`` denotes: 0 the leaf's own, 1 its parent... (``None``:
        not known statically)."""
        if isinstance(e, ops.Var):
            return self.handles.get(e.name)
        if isinstance(e, ops.IntrinsicOp) and e.intrinsic.name == "get_node":
            return 0
        if isinstance(e, ops.IntrinsicOp) and e.intrinsic.name == "get_parent_node":
            inner = self.handle_level(e.args[0])
            return None if inner is None else inner + 1
        return None

    def own_id(self, e: ops.Expr) -> int | None:
        """The axis of ``e`` when it is the query of the leaf's own instance id on it."""
        if (
            isinstance(e, ops.IntrinsicOp)
            and e.intrinsic.kind == "query"
            and not e.intrinsic.counts
            and self.handle_level(e.args[0]) == 0
        ):
            return e.intrinsic.axis
        return None

    def affine(self, e: ops.Expr) -> Affine | None:
        """``e`` as ``stride * id + offset`` (module doc), or ``None``."""
        if isinstance(e, ops.Var):
            return self.ids.get(e.name)
        dim = self.own_id(e)
        if dim is not None:
            return Affine(dim, 1, 0)
        if not isinstance(e, ops.Binary) or e.op not in ("+", "-", "*"):
            return None
        right, left = _int(e.right), _int(e.left)
        if right is not None:
            base = self.affine(e.left)
            if base is None:
                return None
            return base.times(right) if e.op == "*" else base.plus(right if e.op == "+" else -right)
        if left is not None and e.op in ("+", "*"):
            base = self.affine(e.right)
            if base is None:
                return None
            return base.times(left) if e.op == "*" else base.plus(left)
        return None

    def uses_id(self, e: ops.Expr, dims: tuple[int, ...] = (0, 1, 2)) -> bool:
        """Whether ``e`` reads an own instance id of ``dims``, directly or through an id variable."""
        for sub in ops.walk_expr(e):
            if isinstance(sub, ops.Var) and sub.name in self.ids and self.ids[sub.name].dim in dims:
                return True
            if self.own_id(sub) in dims:
                return True
        return False


def _int(e: ops.Expr) -> int | None:
    """The value of an integer constant (not a bool)."""
    return e.value if isinstance(e, ops.Const) and type(e.value) is int else None


def evaluated(e: ops.Expr) -> list[ops.Expr]:
    """``e`` and the sub-expressions evaluated whenever it is: not a branch of ``x if c else
    y``, nor the operands of ``and``/``or`` after the first."""
    out = [e]
    if isinstance(e, ops.IfExp):
        return out + evaluated(e.test)
    if isinstance(e, ops.BoolOp):
        return out + evaluated(e.values[0])
    for sub in ops.operands(e):
        out += evaluated(sub)
    return out


@dataclass(frozen=True)
class IndexFacts:
    """The leaf's ``IndexInfo`` (module doc)."""

    name: str = "index-facts"

    def run(self, ir: ops.LeafIR, manager: AnalysisManager) -> IndexInfo:
        assigned: Counter[str] = Counter()
        for stmt in ops.walk_stmts(ir.body):
            if isinstance(stmt, ops.Assign):
                assigned[stmt.target.name] += 1
            elif isinstance(stmt, ops.For):
                assigned[stmt.var.name] += 1
        info = IndexInfo(assigned, {}, {}, ())
        arrays = {p.name for p in ir.params if isinstance(p.type, ArrayType)}
        found: list[IndexAccess] = []
        # the guards of the instances reaching the current top-level statement: () every
        # instance, more after an early exit (``if i >= n: return``), None not known
        reach: tuple[Guard, ...] | None = ()
        names = {p.name for p in ir.params}  # (a bound: a scalar, or an array's length)
        for top in ir.body:
            nested = list(ops.walk_stmts((top,)))
            guarded = _guarded(info, top, names) if reach is not None and isinstance(top, ops.If) else {}
            for stmt in nested:
                top_level = reach is not None and stmt is top and not ops.children(top)
                unconditional = top_level and not reach
                on = (reach or ()) + guarded[id(stmt)] if id(stmt) in guarded else (reach or ())
                sure = (
                    {id(e) for x in ops.stmt_exprs(stmt) for e in evaluated(x)}
                    if top_level or id(stmt) in guarded
                    else set()
                )
                if not sure:
                    on = ()
                if isinstance(stmt, ops.Store):
                    found += _access(
                        info, arrays, stmt.array, stmt.indices, True, stmt.line, unconditional, on
                    )
                for x in ops.stmt_exprs(stmt):
                    for e in ops.walk_expr(x):
                        if isinstance(e, ops.Load):
                            certain = id(e) in sure
                            found += _access(
                                info, arrays, e.array, e.indices, False, stmt.line,
                                certain and unconditional, on if certain else (),
                            )  # fmt: skip
            # (A raise does not end "every instance": an instance that raises fails the launch,
            # so the accesses after it are still made by every instance of a run that succeeds.)
            if reach is not None and any(isinstance(s, ops.Return) for s in nested):
                staying = _guards(info, _negated(top.test), _constant(info, names)) if _exits(top) else ()
                reach = reach + staying if staying else None
            if isinstance(top, ops.Assign) and assigned[top.target.name] == 1:
                level = info.handle_level(top.value)
                if level is not None:
                    info.handles[top.target.name] = level
                term = info.affine(top.value)
                if term is not None:
                    info.ids[top.target.name] = term
        return IndexInfo(assigned, info.handles, info.ids, tuple(found))


def _access(
    info: IndexInfo,
    arrays: set[str],
    array: ops.Expr,
    indices: tuple[ops.Expr, ...],
    store: bool,
    line: int,
    unconditional: bool,
    guards: tuple[Guard, ...] = (),
) -> list[IndexAccess]:
    if not isinstance(array, ops.Var) or array.name not in arrays:
        return []
    affine = tuple(info.affine(i) for i in indices)
    return [IndexAccess(array.name, store, indices, affine, line, unconditional, guards)]


def _constant(info: IndexInfo, names: set[str]) -> set[str]:
    """The parameters a test may bound an id by (a scalar, an array's length): those the
    leaf never assigns."""
    return {name for name in names if not info.assigned[name]}


def _guarded(info: IndexInfo, top: ops.If, names: set[str]) -> dict[int, tuple[Guard, ...]]:
    """The statements of the top-level ``if`` ``top`` whose accesses are guarded (module
    doc: directly in its body, or in its ``else``, before any statement holding a
    ``return``, not compound), each with its guards: the test's on the body, the negated
    test's on the ``else``; none on a branch whose test is not understood."""
    usable = _constant(info, names)
    chosen: dict[int, tuple[Guard, ...]] = {}
    negated = _negated(top.test)
    for test, branch in ((top.test, top.body), (negated, top.orelse)):
        guards = _guards(info, test, usable) if test is not None and branch else ()
        for stmt in branch if guards else ():
            if any(isinstance(s, ops.Return) for s in ops.walk_stmts((stmt,))):
                break  # (the accesses after it are made only by the instances that do not return)
            if not ops.children(stmt):
                chosen[id(stmt)] = guards
    return chosen


def _exits(top: ops.Stmt) -> bool:
    """Whether ``top`` is an early exit: ``if <test>: return``, nothing else in it."""
    return (
        isinstance(top, ops.If)
        and not top.orelse
        and len(top.body) == 1
        and isinstance(top.body[0], ops.Return)
    )


#: ``not (a op b)`` as ``a op' b`` (integers: no NaN to tell them apart)
_NEGATIONS = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "!=": "=="}


def _negated(test: ops.Expr) -> ops.Expr | None:
    """``not test`` as a test ``_guards`` may understand: one comparison turned round, an
    ``or`` of such as the ``and`` of their negations, ``not x`` as ``x``; else ``None``
    (``not (a and b)`` is an ``or``: no box of ids)."""
    if isinstance(test, ops.Compare) and len(test.ops) == 1 and test.ops[0] in _NEGATIONS:
        return ops.Compare((_NEGATIONS[test.ops[0]],), test.operands, test.type)
    if isinstance(test, ops.BoolOp) and test.op == "or":
        parts = [_negated(value) for value in test.values]
        return None if any(p is None for p in parts) else ops.BoolOp("and", tuple(parts), test.type)  # type: ignore[arg-type]
    if isinstance(test, ops.Unary) and test.op == "not":
        return test.operand
    return None


#: ``a op b`` as ``a - b`` (``sign`` 1) or ``b - a`` (``sign`` -1) plus ``extra``, ``<= 0``
#: (``==`` where ``equal``): integers only.
_RELATIONS = {
    "<": (1, 1, False),
    "<=": (1, 0, False),
    ">": (-1, 1, False),
    ">=": (-1, 0, False),
    "==": (1, 0, True),
}


def _guards(info: IndexInfo, test: ops.Expr, usable: set[str]) -> tuple[Guard, ...]:
    """``test`` as guards: a comparison chain, or an ``and`` of them (module doc); ``()``
    where any part is not understood."""
    if isinstance(test, ops.Unary) and test.op == "not":
        negated = _negated(test.operand)
        return () if negated is None else _guards(info, negated, usable)
    if isinstance(test, ops.BoolOp) and test.op == "and":
        parts = [_guards(info, value, usable) for value in test.values]
        return () if not all(parts) else tuple(g for part in parts for g in part)
    if not isinstance(test, ops.Compare):
        return ()
    found: list[Guard] = []
    for op, left, right in zip(test.ops, test.operands, test.operands[1:]):
        if op not in _RELATIONS:
            return ()
        sign, extra, equal = _RELATIONS[op]
        term, bound = info.affine(left), _bound(right, usable)
        if term is None or bound is None:  # (the id on the right: the relation turned round)
            term, bound, sign = info.affine(right), _bound(left, usable), -sign
        if term is None or bound is None:
            return ()
        scalar, k, c = bound
        found.append(Guard(term.times(sign), scalar, -sign * k, -sign * c + extra, equal))
    return tuple(found)


def _bound(e: ops.Expr, usable: set[str]) -> tuple[str | tuple[str, int] | None, int, int] | None:
    """``e`` as ``k * scalar + c`` (``(scalar, k, c)``, ``k`` 0 or 1): an integer constant, a
    scalar parameter the leaf never assigns or the length of such an array parameter along
    an axis (``d.shape[1]``, ``len(d)``: ``(name, axis)``), either plus or minus a constant;
    else ``None``."""
    value = _int(e)
    if value is not None:
        return None, 0, value
    if isinstance(e, ops.Var) and e.name in usable and isinstance(e.type, ScalarType) and e.type.is_integer:
        return e.name, 1, 0
    if (
        isinstance(e, ops.Shape)
        and isinstance(e.array, ops.Var)
        and e.array.name in usable
        and isinstance(e.array.type, ArrayType)
    ):
        return (e.array.name, e.axis), 1, 0
    if isinstance(e, ops.Binary) and e.op in ("+", "-"):
        right, left = _int(e.right), _int(e.left)
        if right is not None:
            inner = _bound(e.left, usable)
            return (
                None if inner is None else (inner[0], inner[1], inner[2] + (right if e.op == "+" else -right))
            )
        if left is not None and e.op == "+":
            inner = _bound(e.right, usable)
            return None if inner is None else (inner[0], inner[1], inner[2] + left)
    return None


def index_facts(ir: ops.LeafIR) -> IndexInfo:
    """``IndexFacts`` of ``ir``, computed once (``ANALYSES``)."""
    return ANALYSES.get(IndexFacts(), ir)
