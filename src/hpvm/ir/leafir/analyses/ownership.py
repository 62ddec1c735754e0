"""Ownership by the instance id x: which rows of each array parameter an instance touches,
when its indexing proves that chunks of instances ``[lo, hi)`` run apart on row slices.

Why: the Dask back end splits a replicated leaf along x and hands each chunk row slices of
its arrays (``dask/ownership.py`` says what that needs). That is the same computation
exactly when the leaf uses its instance id x for nothing but the first index of its array
parameters. This is that proof, read from the index facts (``indices.py``) instead of the
leaf's text. Sound by construction: false negatives only; each refusal says why.

Accepted: every access of an array parameter has, on its first axis, the own instance id x
plus a constant ``c >= 0`` (an id variable of stride 1 counts), or no instance id x at all
(a *broadcast* read: the same elements in every chunk); arrays are used only so indexed,
as ``a.shape[k]`` with ``k >= 1``, or as the target of commutative atomics (one family,
``Intrinsic.family``, per array; each a statement of its own, its old value unused; such an
array is indexed nowhere); array parameters are never assigned; the id x appears nowhere
else (``out[i] = i`` would compute from it); and the leaf does not call the intrinsics whose
meaning spans the whole grid along x (``get_num_node_instances_x``, ``barrier``,
``malloc``). A written array (``outs``, or stored into) must be indexed at one offset only,
and never without the id.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...types import ArrayType
from .. import ops
from .indices import IndexAccess, IndexFacts, IndexInfo
from .manager import ANALYSES, AnalysisManager

#: The intrinsics whose meaning spans all instances along x.
SPANNING = ("get_num_node_instances_x", "barrier", "malloc")


@dataclass
class Ownership:
    """``problem`` (why the node cannot be split), else: ``combined`` — array parameters
    updated only by commutative atomics, with their family; ``rows`` — array parameter ->
    (lowest, highest) offset from the id x of the rows it indexes (a written array has one);
    ``broadcast`` — read-only arrays indexed without the id x."""

    problem: str | None = None
    combined: dict[str, str] = field(default_factory=dict)
    rows: dict[str, tuple[int, int]] = field(default_factory=dict)
    broadcast: set[str] = field(default_factory=set)


class _Refused(Exception):
    """A reason the proof fails (carried out of the walk)."""


@dataclass(frozen=True)
class OwnershipByInstance:
    """The leaf's ``Ownership`` (module doc); ``outs``: the leaf's declared output arrays
    (written, whether or not the leaf stores into them)."""

    outs: frozenset[str] = frozenset()
    name: str = "ownership-by-instance"

    def run(self, ir: ops.LeafIR, manager: AnalysisManager) -> Ownership:
        try:
            return _prove(ir, manager.get(IndexFacts(), ir), self.outs)
        except _Refused as why:
            return Ownership(problem=str(why))


def _x_ids(info: IndexInfo) -> dict[str, int]:
    """The id variables holding the id x plus a constant: name -> the constant."""
    return {v: a.offset for v, a in info.ids.items() if a.dim == 0 and a.stride == 1}


def _prove(ir: ops.LeafIR, info: IndexInfo, outs: frozenset[str]) -> Ownership:
    leaf = f"leaf '{ir.name}'"
    arrays = {p.name for p in ir.params if isinstance(p.type, ArrayType)}
    for name in sorted(arrays):
        if info.assigned[name]:
            raise _Refused(f"{leaf} assigns its array parameter '{name}'")
    ids = _x_ids(info)
    combined = _atomics(ir, leaf, arrays)
    accounted: set[int] = set()  # ids of the expressions whose use is accounted for
    offsets: dict[str, set[int]] = {}
    plain: set[str] = set()
    for stmt in ir.body:
        if isinstance(stmt, ops.Assign) and stmt.target.name in ids:  # k = i + c
            accounted |= _id_uses(stmt.value, info, ids)
    for access in info.accesses:
        if access.array in combined:
            raise _Refused(
                f"{leaf} indexes '{access.array}' (line {access.line}), which it also updates with atomics"
            )
        offset = _row(access, ids)
        if offset is None and not any(_id_uses(i, info, ids) for i in access.indices):
            plain.add(access.array)  # an element every chunk reads alike (if never written)
            continue
        where = f"{leaf} indexes '{access.array}' at line {access.line}"
        if offset is None:
            raise _Refused(
                f"{where} with something other than its instance id x (plus a constant) on the first axis"
            )
        if offset < 0:
            raise _Refused(
                f"{where} before the row of its own instance (a negative offset from the instance id x)"
            )
        offsets.setdefault(access.array, set()).add(offset)
        accounted |= _id_uses(access.indices[0], info, ids)
    for stmt in ops.walk_stmts(ir.body):
        for top in _read(stmt, arrays):
            _check_uses(top, leaf, arrays, combined, info, ids, accounted)
    written = set(outs) | {
        s.array.name
        for s in ops.walk_stmts(ir.body)
        if isinstance(s, ops.Store) and isinstance(s.array, ops.Var)
    }
    for name in sorted(written & set(offsets)):
        if len(offsets[name]) > 1:
            rows = ", ".join(f"x + {c}" for c in sorted(offsets[name]))
            raise _Refused(
                f"{leaf} reads or writes '{name}', which it writes, at several rows around its instance ({rows})"
            )
    for name in sorted(plain):
        if name in written:
            raise _Refused(f"{leaf} writes '{name}' at elements that do not follow its instance id x")
        if name in offsets:
            raise _Refused(
                f"{leaf} indexes '{name}' both by its instance id x and without it (a chunk holds only its rows)"
            )
    return Ownership(
        combined=combined, rows={n: (min(c), max(c)) for n, c in offsets.items()}, broadcast=plain
    )


def _row(access: IndexAccess, ids: dict[str, int]) -> int | None:
    """The constant ``c`` when the access's first index is the id x plus ``c``."""
    first = access.affine[0] if access.affine else None
    return first.offset if first is not None and first.dim == 0 and first.stride == 1 else None


def _id_uses(e: ops.Expr, info: IndexInfo, ids: dict[str, int]) -> set[int]:
    """The reads of the id x in ``e`` (queries of it, x id variables), by ``id``."""
    return {
        id(sub)
        for sub in ops.walk_expr(e)
        if (isinstance(sub, ops.Var) and sub.name in ids) or info.own_id(sub) == 0
    }


def _atomics(ir: ops.LeafIR, leaf: str, arrays: set[str]) -> dict[str, str]:
    """The arrays updated by commutative atomic statements, with their family."""
    statements = {id(s.value) for s in ops.walk_stmts(ir.body) if isinstance(s, ops.ExprStmt)}
    combined: dict[str, str] = {}
    for stmt in ops.walk_stmts(ir.body):
        for top in ops.stmt_exprs(stmt):
            for e in ops.walk_expr(top):
                if not (isinstance(e, ops.IntrinsicOp) and e.intrinsic.kind == "atomic"):
                    continue
                name, family = e.intrinsic.name, e.intrinsic.family
                if family is None:
                    raise _Refused(
                        f"{leaf} calls {name} (line {stmt.line}), which does not combine across chunks"
                    )
                if id(e) not in statements:
                    raise _Refused(
                        f"{leaf} uses the old value {name} returns (line {stmt.line}), which depends on other chunks"
                    )
                target = e.args[0]
                if not isinstance(target, ops.Var) or target.name not in arrays:
                    raise _Refused(
                        f"{leaf} calls {name} (line {stmt.line}) on something other than an array parameter"
                    )
                if combined.setdefault(target.name, family) != family:
                    raise _Refused(f"{leaf} mixes atomics of different kinds on '{target.name}'")
    return combined


def _read(stmt: ops.Stmt, arrays: set[str]) -> tuple[ops.Expr, ...]:
    """The expressions ``stmt`` reads: not the variable it assigns, nor the array parameter
    it stores into (accounted for by its access)."""
    if isinstance(stmt, ops.Assign):
        return (stmt.value,)
    if isinstance(stmt, ops.For):
        return (stmt.start, stmt.stop, stmt.step)
    if isinstance(stmt, ops.Store) and isinstance(stmt.array, ops.Var) and stmt.array.name in arrays:
        return (*stmt.indices, stmt.value)
    return ops.stmt_exprs(stmt)


def _check_uses(
    e: ops.Expr,
    leaf: str,
    arrays: set[str],
    combined: dict[str, str],
    info: IndexInfo,
    ids: dict[str, int],
    accounted: set[int],
) -> None:
    """Refuse a use of an array parameter or of the id x that the proof does not account for."""
    if isinstance(e, ops.IntrinsicOp) and e.intrinsic.name in SPANNING:
        raise _Refused(f"{leaf} calls {e.intrinsic.name}, whose meaning spans all instances of the node")
    if isinstance(e, (ops.Load,)) and isinstance(e.array, ops.Var) and e.array.name in arrays:
        subs: tuple[ops.Expr, ...] = e.indices  # (the array itself: accounted by its access)
    elif isinstance(e, ops.Shape) and isinstance(e.array, ops.Var) and e.array.name in arrays and e.axis >= 1:
        subs = ()
    elif (
        isinstance(e, ops.IntrinsicOp)
        and e.intrinsic.kind == "atomic"
        and isinstance(e.args[0], ops.Var)
        and e.args[0].name in combined
    ):
        subs = e.args[1:]
    else:
        if id(e) not in accounted:
            if info.own_id(e) == 0:
                raise _Refused(f"{leaf} uses its instance id x other than as the first index of an array")
            if isinstance(e, ops.Var) and e.name in arrays:
                raise _Refused(f"{leaf} uses its array '{e.name}' other than indexed by its instance id x")
            if isinstance(e, ops.Var) and e.name in ids:
                raise _Refused(
                    f"{leaf} uses its instance id x ('{e.name}') other than as the first index of an array"
                )
        subs = ops.operands(e)
    for sub in subs:
        _check_uses(sub, leaf, arrays, combined, info, ids, accounted)


def ownership(ir: ops.LeafIR, outs: frozenset[str] = frozenset()) -> Ownership:
    """``OwnershipByInstance(outs)`` of ``ir``, computed once (``ANALYSES``)."""
    return ANALYSES.get(OwnershipByInstance(outs), ir)
