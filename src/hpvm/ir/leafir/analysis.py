"""Analyses of a leaf IR as cached passes, and the first of them: atomic-only arrays.

Why: the back ends recomputed facts about a leaf from its text on every use, and wrote
the same analysis twice ("arrays used only by atomics": ``cpu/privatize.py`` and
``dask/ownership.py``). Here an analysis is a small frozen object with a ``name`` and
``run(ir, manager)``; ``AnalysisManager.get(analysis, ir)`` computes it on demand, once per
leaf IR: the result is kept with the IR it was computed on. A leaf IR never changes (its
nodes are frozen), so a pass that changes a leaf returns a *new* leaf IR, which starts with
no results; ``AnalysisManager.run_pass`` drops the old IR's results when a pass returns a
changed one and keeps them when it returns the IR itself.

The program-level ``passes.PassManager`` does not drive leaf passes yet (no pass on the
leaf IR exists); this is the API it will use (docs/leafir.md).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Protocol, TypeVar

from ..types import ArrayType
from . import ops

T = TypeVar("T")


class LeafAnalysis(Protocol[T]):  # type: ignore[misc]
    """A fact about a leaf IR: a pure function of it (so it can be cached with it)."""

    name: str

    def run(self, ir: ops.LeafIR, manager: AnalysisManager) -> T: ...


class LeafPass(Protocol):
    """A transformation of a leaf IR: returns ``ir`` itself when it changes nothing."""

    name: str

    def apply(self, ir: ops.LeafIR) -> ops.LeafIR: ...


class AnalysisManager:
    """Computes analyses on demand, caching each result with the leaf IR it describes.

    ``computed`` counts the runs of each analysis (what tests and measurements read to see
    that a result was computed once)."""

    def __init__(self) -> None:
        self.computed: Counter[str] = Counter()

    def get(self, analysis: LeafAnalysis[T], ir: ops.LeafIR) -> T:
        cache = ir.analyses
        if analysis not in cache:
            cache[analysis] = analysis.run(ir, self)
            self.computed[analysis.name] += 1
        return cache[analysis]  # type: ignore[no-any-return]

    def run_pass(self, leaf_pass: LeafPass, ir: ops.LeafIR) -> ops.LeafIR:
        """Apply ``leaf_pass``; a changed result invalidates what was known about ``ir``."""
        new = leaf_pass.apply(ir)
        if new is not ir:
            self.invalidate(ir)
        return new

    def invalidate(self, ir: ops.LeafIR) -> None:
        ir.analyses.clear()


#: The manager the back ends share (results live with each leaf IR, not in the manager).
ANALYSES = AnalysisManager()


@dataclass(frozen=True)
class AtomicOnlyArrays:
    """Array parameters used only as the target of atomics whose old value is unused (each
    such atomic a statement of its own), besides reads of their shape (``a.shape[k]``,
    ``a.size``, ``len(a)``): parameter name -> the atomic operations applied to it. An
    array also indexed, stored into, viewed, assigned or passed anywhere else is left out.

    Its users decide what they can do with the operations: ``cpu/privatize.py`` gives each
    thread a private copy when there is one privatizable operation."""

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


def atomic_only_arrays(ir: ops.LeafIR) -> dict[str, frozenset[str]]:
    """``AtomicOnlyArrays`` of ``ir``, computed once (``ANALYSES``)."""
    return ANALYSES.get(AtomicOnlyArrays(), ir)


__all__ = [
    "ANALYSES",
    "AnalysisManager",
    "AtomicOnlyArrays",
    "LeafAnalysis",
    "LeafPass",
    "atomic_only_arrays",
]
