"""Passes over programs: small named objects with ``apply(module)``, verified after each.

``run_passes(root, passes)`` copies the program (the original stays intact), applies each
pass to the copy and verifies the result after every one. ``CodeGenTraversal`` is seed 001's
traversal: every node, bottom-up, in topological order, with ``visit_leaf`` and
``visit_internal``.
"""

from .base import Module, Pass, PassManager, copy_program, lower, run_passes
from .fuse_one_to_one import FuseOneToOne
from .fuse_tensor_nodes import FuseHPVMTensorNodes, FusionRecord
from .place_allocations import PlaceAllocations
from .split_by_target import SplitByTarget
from .traversal import CodeGenTraversal

__all__ = [
    "CodeGenTraversal",
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
