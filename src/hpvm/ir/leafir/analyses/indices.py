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
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ...types import ArrayType
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
class IndexAccess:
    """One load or store (``store``) of array parameter ``array`` at ``indices``, each with its
    ``affine`` form (``None``: not affine in an instance id); ``line``: its statement's line;
    ``unconditional``: every instance evaluates it (module doc)."""

    array: str
    store: bool
    indices: tuple[ops.Expr, ...]
    affine: tuple[Affine | None, ...]
    line: int
    unconditional: bool


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
        every = True  # whether every instance reaches the current top-level statement
        for top in ir.body:
            nested = list(ops.walk_stmts((top,)))
            for stmt in nested:
                unconditional = every and stmt is top and not ops.children(top)
                sure = {id(e) for x in ops.stmt_exprs(stmt) for e in evaluated(x)} if unconditional else set()
                if isinstance(stmt, ops.Store):
                    found += _access(info, arrays, stmt.array, stmt.indices, True, stmt.line, unconditional)
                for x in ops.stmt_exprs(stmt):
                    for e in ops.walk_expr(x):
                        if isinstance(e, ops.Load):
                            found += _access(
                                info, arrays, e.array, e.indices, False, stmt.line, id(e) in sure
                            )
            # (A raise does not end "every instance": an instance that raises fails the launch,
            # so the accesses after it are still made by every instance of a run that succeeds.)
            if any(isinstance(s, ops.Return) for s in nested):
                every = False
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
) -> list[IndexAccess]:
    if not isinstance(array, ops.Var) or array.name not in arrays:
        return []
    affine = tuple(info.affine(i) for i in indices)
    return [IndexAccess(array.name, store, indices, affine, line, unconditional)]


def index_facts(ir: ops.LeafIR) -> IndexInfo:
    """``IndexFacts`` of ``ir``, computed once (``ANALYSES``)."""
    return ANALYSES.get(IndexFacts(), ir)
