"""SplitByTarget: which back end runs each child of the root (graphs that mix devices).

Seed 000 lets every node carry a hint; DESIGN.md resolves a hint to the first available back
end of its device class. A leaf without a hint takes the hint of its nearest ancestor that
has one (the root's included); no hint anywhere means the CPU. The graph is split at the
root's children: each child, with everything below it, runs on one back end, written on the
node as its ``target`` attribute — what the mixed dispatch (``backends/mixed.py``) reads. A
child whose own leaves select several back ends is an error naming them: make each device's
part a child of the root.

Resolving a hint needs to know which back ends exist here, which the IR does not: the pass
is given the resolver (``backends.backend_for_hint``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import BackendUnavailableError
from ..ir.graph import InternalFunction, LeafFunction, NodeFunction
from .base import Module, Pass

TARGET = "target"


@dataclass(frozen=True)
class SplitByTarget(Pass):
    """Annotate every child of the root with the back end its hints select (``target``)."""

    resolve: Callable[[str | None], str]
    name = "split-by-target"

    def apply(self, module: Module) -> None:
        root = module.root
        for node in root.graph.nodes:
            chosen = self.leaf_targets(node.function, root.hint)
            if len(chosen) > 1:
                detail = "; ".join(f"{b}: {', '.join(names)}" for b, names in chosen.items())
                raise BackendUnavailableError(
                    f"node '{node.name}' of '{root.name}' ({node.location}) holds leaves whose hints "
                    f"select different back ends ({detail}); graphs are split between devices at the "
                    f"root's children only: make each device's part a child of '{root.name}', or pass "
                    "target= to run the whole graph on one back end"
                )
            node.attrs[TARGET] = next(iter(chosen)) if chosen else self.resolve(root.hint)

    def leaf_targets(self, fn: NodeFunction, inherited: str | None) -> dict[str, list[str]]:
        """Back end name → the leaves below ``fn`` (itself included) that select it."""
        hint = fn.hint if fn.hint is not None else inherited
        if isinstance(fn, LeafFunction):
            return {self.resolve(hint): [fn.name]}
        chosen: dict[str, list[str]] = {}
        assert isinstance(fn, InternalFunction)
        for node in fn.graph.nodes:
            for target, leaves in self.leaf_targets(node.function, hint).items():
                chosen.setdefault(target, []).extend(leaves)
        return chosen


__all__ = ["TARGET", "SplitByTarget"]
