"""Passes over programs: small named objects with ``apply(module)``, verified after each.

``run_passes(root, passes)`` copies the program (the original stays intact), applies each
pass to the copy and verifies the result after every one. ``CodeGenTraversal`` is seed 001's
traversal: every node, bottom-up, in topological order, with ``visit_leaf`` and
``visit_internal``.
"""

from .base import Module, Pass, PassManager, copy_program, run_passes
from .fuse_tensor_nodes import FuseHPVMTensorNodes, FusionRecord
from .split_by_target import SplitByTarget
from .traversal import CodeGenTraversal

__all__ = [
    "CodeGenTraversal",
    "FuseHPVMTensorNodes",
    "FusionRecord",
    "Module",
    "Pass",
    "PassManager",
    "copy_program",
    "SplitByTarget",
    "run_passes",
]
