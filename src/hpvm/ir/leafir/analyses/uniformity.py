"""Uniformity: which values and conditions are the same for every instance of a group.

Why: a barrier under a condition some instances of a group take and others do not hangs
(or is undefined, seed 000); a value the same for the whole group can be computed once per
group, a branch on it does not diverge. Those questions need to know what depends on the
instance id. A value is *varying* when it may differ between the instances of one parent
instance (a group): it reads an own instance id (``get_node_instance_id_*`` of the leaf's
node; the parent's ids and every instance count are the same across a group), the old value
of an atomic, an element of an array the leaf itself writes (another instance may have
written it), or a variable assigned a varying value — or assigned anywhere under a varying
condition or in a loop whose bounds or condition vary (which assignments happen then
differs between instances). A ``return``, ``break`` or ``continue`` under a varying condition
makes the rest of its block divergent, and a loop it leaves divergent as a whole. Local
arrays a leaf writes count as written too (their elements may hold varying values).
Between two barriers only the arrays written in that *barrier interval* count as written
(``intervals.py``): a load at uniform indices right after a barrier, in a phase that writes
no such array, is uniform. Everything else is *uniform*. Computed to a fixed point, so a loop-carried variable is
varying when any of its assignments is. Conservative: "varying" may be said of a value
that happens to be the same everywhere, never the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ... import instance_context as ictx
from .. import ops
from .effects import ArrayEffects, view_roots
from .intervals import BarrierIntervals
from .manager import ANALYSES, AnalysisManager

#: The own instance ids that differ within a group: all three.
ALL_AXES = (0, 1, 2)


@dataclass(frozen=True)
class Uniform:
    """``varying``: the variables that may differ between instances of a group;
    ``divergent``: the lines of the ``if``/``while``/``for`` statements whose condition or
    bounds may differ (everything inside them is executed by some instances only);
    ``written``: the array variables whose elements the leaf (any instance) changes, so
    that a load from them varies; ``written_at``: the same for the barrier interval of each
    statement (by ``id``)."""

    varying: frozenset[str]
    divergent: frozenset[int]
    written: frozenset[str]
    written_at: dict[int, frozenset[str]] = field(default_factory=dict, compare=False)
    axes: tuple[int, ...] = ALL_AXES  # (``Uniformity.axes``)

    def is_uniform(self, e: ops.Expr, at: ops.Stmt | None = None) -> bool:
        """Whether ``e`` (an expression of statement ``at``, if given) has the same value in
        every instance of a group."""
        written = self.written if at is None else self.written_at.get(id(at), self.written)
        return not _varies(e, self.varying, written, self.axes)


def _varies(
    e: ops.Expr, varying: frozenset[str] | set[str], written: frozenset[str], axes: tuple[int, ...] = ALL_AXES
) -> bool:
    for sub in ops.walk_expr(e):
        if isinstance(sub, ops.Var) and sub.name in varying:
            return True
        if isinstance(sub, ops.CtxRead) and sub.level == 0 and sub.field - ictx.ID in axes:
            return True  # an own instance id, lowered (``lowering.py``)
        if isinstance(sub, ops.IntrinsicOp):
            kind = sub.intrinsic.kind
            if kind == "atomic":
                return True
            if kind == "query" and not sub.intrinsic.counts and _own(sub.args[0]):
                if sub.intrinsic.axis is None or sub.intrinsic.axis in axes:
                    return True
        if isinstance(sub, ops.Load) and not isinstance(sub.type, ops.ArrayType):
            if any(isinstance(a, ops.Var) and a.name in written for a in ops.walk_expr(sub.array)):
                return True
    return False


def _own(handle: ops.Expr) -> bool:
    """Whether ``handle`` may be the leaf's own node (anything but a ``get_parent_node``)."""
    return not (isinstance(handle, ops.IntrinsicOp) and handle.intrinsic.name == "get_parent_node")


@dataclass(frozen=True)
class Uniformity:
    """The leaf's ``Uniform`` facts (module doc). ``axes``: the own instance ids that
    differ between the instances asked about (default all three: a group). The ``cpu`` back
    end's jammed instances (``backends/cpu/jam.py``) are neighbours along one axis, whose
    other ids are the same: ``axes=(0,)`` for neighbours in x.

    ``in_turn``: the instances run a statement that differs between them one after another
    (the jammed clone writes such a loop or ``if`` whole once per lane), not in lockstep —
    so a ``for`` over a variable that varies (``for k in range(x % 4)`` before ``for k in
    range(n)``) is run per instance too, and what it assigns varies, even where every
    instance would compute the same value: one variable for all would run on from one
    instance's copy into the next (``tests/cpu/test_cpu_field_row_share.py``)."""

    name: str = "uniformity"
    axes: tuple[int, ...] = ALL_AXES
    in_turn: bool = False

    def run(self, ir: ops.LeafIR, manager: AnalysisManager) -> Uniform:
        found = manager.get(_ArrayWrites(), ir)
        written_at = manager.get(BarrierIntervals(), ir)
        varying: set[str] = set()
        divergent: set[int] = set()
        changed = True
        while changed:
            before = (len(varying), len(divergent))
            _block(ir.body, False, varying, divergent, written_at, self.axes, self.in_turn)
            changed = (len(varying), len(divergent)) != before
        return Uniform(frozenset(varying), frozenset(divergent), found, written_at, self.axes)


def _block(
    block: ops.Block,
    under: bool,
    varying: set[str],
    divergent: set[int],
    written_at: dict[int, frozenset[str]],
    axes: tuple[int, ...],
    in_turn: bool = False,
    loop: int | None = None,
) -> None:
    """One round over ``block`` (``under``: some instances only run it; ``in_turn``:
    ``Uniformity.in_turn``; ``loop``: the line of the innermost loop around it)."""
    for stmt in block:
        written = written_at[id(stmt)]
        if isinstance(stmt, ops.Assign):
            if under or _varies(stmt.value, varying, written, axes):
                varying.add(stmt.target.name)
            continue
        if not isinstance(stmt, (ops.If, ops.While, ops.For)):
            continue
        tests = (stmt.start, stmt.stop, stmt.step) if isinstance(stmt, ops.For) else (stmt.test,)
        varies = under or stmt.line in divergent or any(_varies(t, varying, written, axes) for t in tests)
        varies |= in_turn and isinstance(stmt, ops.For) and stmt.var.name in varying
        if varies:
            divergent.add(stmt.line)
            if isinstance(stmt, ops.For):
                varying.add(stmt.var.name)
        inner_loop = loop if isinstance(stmt, ops.If) else stmt.line
        for inner in ops.children(stmt):
            _block(inner, varies, varying, divergent, written_at, axes, in_turn, inner_loop)
        if varies and _leaves(stmt):
            under = True  # some instances left the block here: the rest is divergent
            if loop is not None:
                divergent.add(loop)  # and the loop around it runs a varying number of times


def _leaves(stmt: ops.Stmt) -> bool:
    """Whether ``stmt`` holds a ``return``, ``break`` or ``continue``."""
    return any(
        isinstance(s, (ops.Return, ops.Raise, ops.Break, ops.Continue)) for s in ops.walk_stmts((stmt,))
    )


@dataclass(frozen=True)
class _ArrayWrites:
    """The array variables (parameters and their views) the leaf writes or updates."""

    name: str = "array-writes"

    def run(self, ir: ops.LeafIR, manager: AnalysisManager) -> frozenset[str]:
        roots = view_roots(ir)
        uses = manager.get(ArrayEffects(), ir).arrays
        changed = {p for p, u in uses.items() if u.written or u.atomics} | {"<malloc>"}
        stored = {
            e.name
            for s in ops.walk_stmts(ir.body)
            if isinstance(s, ops.Store)
            for e in ops.walk_expr(s.array)
            if isinstance(e, ops.Var)
        }
        return frozenset(name for name, r in roots.items() if r & changed) | stored


def uniformity(ir: ops.LeafIR) -> Uniform:
    """``Uniformity`` of ``ir``, computed once (``ANALYSES``)."""
    return ANALYSES.get(Uniformity(), ir)
