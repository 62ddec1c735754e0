"""Analyses of the leaf IR as cached passes (``manager.py``), and the analyses themselves:
what a leaf does to its arrays, its purity and whether it depends on its parent instance (``effects.py``), uniformity
(``uniformity.py``), index offsets and bounds facts (``indices.py``), ownership by the
instance id x (``ownership.py``). docs/leafir.md says which back end reads which."""

from __future__ import annotations

from .effects import (
    ArrayEffects,
    ArrayUse,
    AtomicOnlyArrays,
    Effects,
    ParentIndependence,
    atomic_only_arrays,
    effects,
    parent_independence,
)
from .indices import Affine, IndexAccess, IndexFacts, IndexInfo, index_facts
from .manager import ANALYSES, AnalysisManager, LeafAnalysis, LeafPass
from .ownership import Ownership, OwnershipByInstance, ownership
from .uniformity import Uniform, Uniformity, uniformity

__all__ = [
    "ANALYSES",
    "Affine",
    "AnalysisManager",
    "ArrayEffects",
    "ArrayUse",
    "AtomicOnlyArrays",
    "Effects",
    "IndexAccess",
    "IndexFacts",
    "IndexInfo",
    "LeafAnalysis",
    "LeafPass",
    "Ownership",
    "ParentIndependence",
    "OwnershipByInstance",
    "Uniform",
    "Uniformity",
    "atomic_only_arrays",
    "effects",
    "index_facts",
    "ownership",
    "parent_independence",
    "uniformity",
]
