"""Passes over programs: small named objects with ``apply(module)``, verified after each.

``run_passes(root, passes)`` copies the program (the original stays intact), applies each
pass to the copy and verifies the result after every one. ``CodeGenTraversal`` is seed 001's
traversal: every node, bottom-up, in topological order, with ``visit_leaf`` and
``visit_internal``.

The passes themselves load on first use (``import hpvm`` reaches ``passes.base`` through
the back-end registry, and need not pay for every pass module).
"""

from __future__ import annotations

from ..ir.lazy import lazy_attributes
from .base import Module, Pass, PassManager, copy_program, lower, run_passes

_LAZY = {
    "CodeGenTraversal": "traversal",
    "FlattenStreams": "flatten_streams",
    "FuseHPVMTensorNodes": "fuse_tensor_nodes",
    "FuseOneToOne": "fuse_one_to_one",
    "FusionRecord": "fuse_tensor_nodes",
    "PlaceAllocations": "place_allocations",
    "SplitByTarget": "split_by_target",
}


__getattr__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "CodeGenTraversal",
    "FlattenStreams",
    "FuseHPVMTensorNodes",
    "FuseOneToOne",
    "FusionRecord",
    "Module",
    "Pass",
    "PassManager",
    "PlaceAllocations",
    "copy_program",
    "lower",
    "SplitByTarget",
    "run_passes",
]
