"""SplitByTarget: which back end runs each node of a graph that mixes devices, at any depth.

Seed 000 lets every node carry a hint; DESIGN.md resolves a hint to the first available back
end of its device class. A leaf without a hint takes the hint of its nearest ancestor that
has one (the root's included); no hint anywhere means the CPU. The pass writes, on every
node of the hierarchy, the ``target`` attribute the mixed dispatch (``backends/mixed.py``)
reads:

- a node whose leaves all select one back end gets that back end's name: the node, with
  everything below it, is handed to that back end whole (a GPU internal node of GPU leaves
  stays one back-end call, one kernel where the back end fuses);
- an internal node whose leaves select several back ends gets ``MIXED``: it runs on the
  host, as seed 001's DFG2LLVM_CPU runs a CPU internal node — each of its instances runs its
  children, each child (or group of consecutive children) on its own back end. Its own hint
  does not move it off the host; it still is what its unhinted leaves inherit. Its
  function's ``root_dims`` is set to the node's dimensions: a back end runs its parts with
  that function as their root, one instance of the node at a time, and its leaves may
  query that instance.

An internal function used by several nodes is copied for a use whose inherited hint splits
it differently, so that each use's nodes carry their own targets.

Resolving a hint needs to know which back ends exist here, which the IR does not: the pass
is given the resolver (``backends.backend_for_hint``). A hint no available back end serves
is a ``BackendUnavailableError`` naming the node path that selected it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import BackendUnavailableError
from ..ir.graph import InternalFunction, NodeFunction
from .base import Module, Pass, copy_program

TARGET = "target"
#: The ``target`` of an internal node whose leaves select several back ends (run on the host).
MIXED = "mixed"


@dataclass(frozen=True)
class SplitByTarget(Pass):
    """Annotate every node with the back end its hints select, or ``MIXED`` (``target``)."""

    resolve: Callable[[str | None], str]
    name = "split-by-target"

    def apply(self, module: Module) -> None:
        root = module.root
        self._annotate(root, root.hint, root.name, {}, {})

    def _annotate(
        self,
        fn: InternalFunction,
        inherited: str | None,
        path: str,
        seen: dict[int, str | None],
        grids: dict[int, int],
    ) -> set[str]:
        """Annotate the nodes of ``fn``'s graph; return the back ends its leaves select.

        ``seen``: internal function (by id) → the inherited hint it was annotated under;
        ``grids``: the function of a ``MIXED`` node (by id) → that node's dimensions."""
        hint = fn.hint if fn.hint is not None else inherited
        seen[id(fn)] = hint
        chosen: set[str] = set()
        for node in fn.graph.nodes:
            where = f"{path}/{node.name}"
            child = node.function
            if isinstance(child, InternalFunction):
                if id(child) in seen and seen[id(child)] != _effective(child, hint):
                    child = node.function = copy_program(child)  # another use, other targets
                below = self._annotate(child, hint, where, seen, grids)
                if not below:  # no leaves below: it runs where its own hint says
                    below = {self._resolve(_effective(child, hint), where, child)}
            else:
                below = {self._resolve(_effective(child, hint), where, child)}
            node.attrs[TARGET] = next(iter(below)) if len(below) == 1 else MIXED
            if node.attrs[TARGET] == MIXED:  # its parts run with its function as their root
                assert isinstance(child, InternalFunction)
                if grids.setdefault(id(child), node.dims) != node.dims:  # another use, another grid
                    child = node.function = copy_program(child)
                    grids[id(child)] = node.dims
                child.root_dims = node.dims
            chosen |= below
        return chosen

    def _resolve(self, hint: str | None, where: str, fn: NodeFunction) -> str:
        try:
            return self.resolve(hint)
        except BackendUnavailableError as e:
            raise BackendUnavailableError(
                f"node {where} ({fn.describe()}) is hinted to {hint!r}: {e}"
            ) from None


def _effective(fn: NodeFunction, inherited: str | None) -> str | None:
    return fn.hint if fn.hint is not None else inherited


def leaf_backends(fn: InternalFunction) -> set[str]:
    """The back ends the nodes of a split graph run on, looking inside ``MIXED`` nodes."""
    found: set[str] = set()
    for node in fn.graph.nodes:
        target = node.attrs[TARGET]
        if target == MIXED:
            assert isinstance(node.function, InternalFunction)
            found |= leaf_backends(node.function)
        else:
            found.add(target)
    return found


__all__ = ["MIXED", "TARGET", "SplitByTarget", "leaf_backends"]
