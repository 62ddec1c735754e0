"""Analyses of a leaf IR as cached passes: computed on demand, once per leaf IR.

Why: the back ends recomputed facts about a leaf from its text on every use, with no cache
and no invalidation, and wrote the same analysis twice. Here an analysis is a small frozen
(hashable) object with a ``name`` and ``run(ir, manager)``; ``AnalysisManager.get(analysis,
ir)`` computes it on demand and keeps the result with the IR it was computed on
(``LeafIR.analyses``), keyed by the analysis object itself (so a parametrized analysis,
``OwnershipByInstance(outs=...)``, caches one result per parameter value). An analysis may
ask the manager for others (ownership reads the index facts): each is still computed once.

Invalidation. A leaf IR never changes (its nodes are frozen), so a pass that changes a
leaf returns a *new* leaf IR, which starts with no results: nothing stale can be read.
``AnalysisManager.run_pass`` also drops the old IR's results when a pass returns a changed
IR (memory: the old IR is dead) and keeps them when it returns the IR itself (unchanged).
The leaf passes — ``lowering.lower_queries``, ``cpu/privatize.privatize_atomics``,
``gpu/zeros.private_zeros`` — are functions from a leaf IR to a new one, called where a back
end lowers a clone (``passes/clone_leaves.py``, the back ends' emitters): what they return
starts with no results, so an analysis asked of it is computed on it. The program-level
``passes.PassManager`` runs graph passes; it does not drive leaf passes.
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol, TypeVar

from .. import ops

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
