"""What a leaf does to its arrays: reads, writes and atomic updates per array parameter,
its purity, the arrays it uses only through atomics, and whether it computes the same
thing in every parent instance.

Why: the back ends asked these questions of the leaf's text, each its own way
(``cpu/privatize.py`` and ``dask/ownership.py`` both found "arrays used only by atomics").
These are the one answer, computed once per leaf IR (``manager.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...types import ArrayType
from .. import ops
from .manager import ANALYSES, AnalysisManager


@dataclass(frozen=True)
class ArrayUse:
    """How a leaf uses one array parameter (directly or through a view of it: ``row =
    m[i]``, ``shared = buffer.view(f32)``): ``read`` (an element loaded), ``written`` (an
    element stored), ``atomics`` (the atomic operations applied, e.g. ``{"add"}``)."""

    read: bool = False
    written: bool = False
    atomics: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Effects:
    """``arrays``: every array parameter's ``ArrayUse``; ``pure``: the leaf writes no memory
    but its own local arrays (no store into a parameter or a ``malloc`` buffer, no atomic)
    and waits at no barrier: running it has no effect beyond its outputs."""

    arrays: dict[str, ArrayUse]
    pure: bool


def _roots(e: ops.Expr, aliases: dict[str, set[str]]) -> set[str]:
    """The array parameters (or ``"<malloc>"``) the array value ``e`` may be a view of."""
    if isinstance(e, ops.Var):
        return aliases.get(e.name, set())
    if isinstance(e, (ops.Load, ops.Retype)):
        return _roots(e.array, aliases)
    if isinstance(e, ops.IfExp):
        return _roots(e.body, aliases) | _roots(e.orelse, aliases)
    if isinstance(e, ops.IntrinsicOp) and e.intrinsic.kind == "malloc":
        return {"<malloc>"}
    return set()


def view_roots(ir: ops.LeafIR) -> dict[str, set[str]]:
    """Array variable -> the array parameters (or ``"<malloc>"``) it may view: each parameter
    itself, and each local array assigned a view of one (to a fixed point: a local may be
    assigned several times)."""
    aliases: dict[str, set[str]] = {p.name: {p.name} for p in ir.params if isinstance(p.type, ArrayType)}
    assigns = [s for s in ops.walk_stmts(ir.body) if isinstance(s, ops.Assign)]
    changed = True
    while changed:
        changed = False
        for s in assigns:
            if isinstance(s.target.type, ArrayType):
                found = _roots(s.value, aliases)
                known = aliases.setdefault(s.target.name, set())
                if not found <= known:
                    known |= found
                    changed = True
    return aliases


@dataclass(frozen=True)
class ArrayEffects:
    """The leaf's ``Effects`` (reads/writes per array parameter, purity)."""

    name: str = "array-effects"

    def run(self, ir: ops.LeafIR, manager: AnalysisManager) -> Effects:
        aliases = view_roots(ir)
        read: set[str] = set()
        written: set[str] = set()
        atomics: dict[str, set[str]] = {}
        pure = True
        for stmt in ops.walk_stmts(ir.body):
            if isinstance(stmt, ops.Store):
                roots = _roots(stmt.array, aliases)
                written |= roots
                pure = pure and not roots  # (a store into the leaf's own local array is no effect)
            for top in ops.stmt_exprs(stmt):
                for e in ops.walk_expr(top):
                    if isinstance(e, ops.Load) and not isinstance(e.type, ArrayType):
                        read |= _roots(e.array, aliases)
                    elif isinstance(e, ops.IntrinsicOp) and e.intrinsic.kind == "atomic":
                        for root in _roots(e.args[0], aliases):
                            atomics.setdefault(root, set()).add(e.intrinsic.op or "")
                        pure = False
                    elif isinstance(e, ops.IntrinsicOp) and e.intrinsic.kind == "barrier":
                        pure = False
        arrays = {
            p.name: ArrayUse(p.name in read, p.name in written, frozenset(atomics.get(p.name, ())))
            for p in ir.params
            if isinstance(p.type, ArrayType)
        }
        return Effects(arrays, pure)


@dataclass(frozen=True)
class AtomicOnlyArrays:
    """Array parameters used only as the target of atomics whose old value is unused (each
    such atomic a statement of its own), besides reads of their shape (``a.shape[k]``,
    ``a.size``, ``len(a)``): parameter name -> the atomic operations applied to it. An
    array also indexed, stored into, viewed, assigned or passed anywhere else is left out.

    Its users decide what they can do with the operations: ``cpu/privatize.py`` gives each
    thread a private copy when there is one operation that commutes
    (``Intrinsic.family``)."""

    name: str = "atomic-only-arrays"

    def run(self, ir: ops.LeafIR, manager: AnalysisManager) -> dict[str, frozenset[str]]:
        arrays = {p.name for p in ir.params if isinstance(p.type, ArrayType)}
        found: dict[str, set[str]] = {}
        bad: set[str] = set()
        for stmt in ops.walk_stmts(ir.body):
            exprs: tuple[ops.Expr, ...] = ops.stmt_exprs(stmt)
            value = stmt.value if isinstance(stmt, ops.ExprStmt) else None
            if isinstance(value, ops.IntrinsicOp) and value.intrinsic.kind == "atomic":
                target = value.args[0]
                if isinstance(target, ops.Var) and target.name in arrays:
                    found.setdefault(target.name, set()).add(value.intrinsic.op or "")
                    exprs = value.args[1:]
            if isinstance(stmt, ops.Assign):
                bad.add(stmt.target.name)
                exprs = (stmt.value,)
            for e in exprs:
                bad |= _other_uses(e)
        return {name: frozenset(found[name]) for name in sorted(found) if name not in bad}


def _other_uses(e: ops.Expr) -> set[str]:
    """The variables ``e`` uses other than for their shape."""
    if isinstance(e, ops.Var):
        return {e.name}
    if isinstance(e, (ops.Shape, ops.Size)) and isinstance(e.array, ops.Var):
        return set()
    used: set[str] = set()
    for sub in ops.operands(e):
        used |= _other_uses(sub)
    return used


#: Intrinsics whose result is the same in every parent instance: the leaf's own node and
#: its grid, and ``malloc`` (a fresh buffer each run) — not ancestors, barriers or atomics.
PARENT_INDEPENDENT_INTRINSICS = frozenset(
    {
        "malloc",
        "get_node",
        "get_node_instance_id_x",
        "get_node_instance_id_y",
        "get_node_instance_id_z",
        "get_num_node_instances_x",
        "get_num_node_instances_y",
        "get_num_node_instances_z",
        "get_num_dims",
    }
)


@dataclass(frozen=True)
class ParentIndependence:
    """Whether every run of the leaf with the same inputs over the same grid computes the
    same outputs (``ir/purity.parent_independent``: the GPU back ends then run an
    allocation leaf once, not in every parent instance). On the leaf IR it is a short
    question, because the dialect leaves nothing else to doubt: module values are numbers
    baked in as constants, calls are ``math``/NumPy scalar functions, ``min``, ``max``,
    ``abs`` and array constructors, there are no helper functions, ``global`` statements or
    generators. What remains is which intrinsics the leaf calls: only those of
    ``PARENT_INDEPENDENT_INTRINSICS``. ``None`` where the IR cannot tell: a ``raise``,
    whose exception the IR keeps as opaque text (it may read any of the module's names)."""

    name: str = "parent-independence"

    def run(self, ir: ops.LeafIR, manager: AnalysisManager) -> bool | None:
        for stmt in ops.walk_stmts(ir.body):
            if isinstance(stmt, ops.Raise) and stmt.exc is not None:
                return None
            for top in ops.stmt_exprs(stmt):
                for e in ops.walk_expr(top):
                    if (
                        isinstance(e, ops.IntrinsicOp)
                        and e.intrinsic.name not in PARENT_INDEPENDENT_INTRINSICS
                    ):
                        return False
        return True


def parent_independence(ir: ops.LeafIR) -> bool | None:
    """``ParentIndependence`` of ``ir``, computed once."""
    return ANALYSES.get(ParentIndependence(), ir)


def atomic_only_arrays(ir: ops.LeafIR) -> dict[str, frozenset[str]]:
    """``AtomicOnlyArrays`` of ``ir``, computed once (``ANALYSES``)."""
    return ANALYSES.get(AtomicOnlyArrays(), ir)


def effects(ir: ops.LeafIR) -> Effects:
    """``ArrayEffects`` of ``ir``, computed once (``ANALYSES``)."""
    return ANALYSES.get(ArrayEffects(), ir)
