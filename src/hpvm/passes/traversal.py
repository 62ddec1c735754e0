"""``CodeGenTraversal`` (seed 001): visit every node bottom-up in topological order.

Within a child graph the nodes are visited in topological order (creation order breaking
ties); an internal node's own graph is traversed before the internal node function itself is
visited, so children always come before their parents and the root comes last. Each internal
node function is traversed once, however many nodes use it.
"""

from __future__ import annotations

from ..ir.graph import InternalFunction, LeafFunction, Node
from ..ir.verify import topological_order
from .base import Module, Pass


class CodeGenTraversal(Pass):
    """A pass that visits leaves (``visit_leaf``) and internal functions (``visit_internal``)."""

    name = "codegen-traversal"

    def apply(self, module: Module) -> None:
        self.traverse(module.root, set())

    def traverse(self, fn: InternalFunction, done: set[int]) -> None:
        """Visit ``fn``'s graph bottom-up, then ``fn`` itself (``done``: the ids of the
        internal functions already traversed in this run)."""
        if id(fn) in done:
            return
        done.add(id(fn))
        for node in list(topological_order(fn.graph)):  # a snapshot: visits may change the graph
            child = node.function
            if isinstance(child, InternalFunction):
                self.traverse(child, done)
            elif isinstance(child, LeafFunction):
                self.visit_leaf(node, fn)
        self.visit_internal(fn)

    def visit_leaf(self, node: Node, parent: InternalFunction) -> None:  # noqa: B027 — optional hook
        """Seed 001's ``codeGen(DFLeafNode*)``: called for each leaf node of ``parent``'s graph."""

    def visit_internal(self, fn: InternalFunction) -> None:  # noqa: B027 — optional hook
        """Seed 001's ``codeGen(DFInternalNode*)``: called once per internal function, after
        every node of its graph (and the graphs below) was visited; the root is visited last."""
