"""FuseOneToOne: which adjacent children of a graph run fused, one rule for every back end.

Leaves joined by one-to-one edges can run fused — in one loop nest (``cpu``) or one kernel
(the GPU back ends), instance *i* of each member right after instance *i* of the members
before it, values passing in registers. The rule (``ir.analysis.fusion_groups``): in
topological order, a node joins the run before it when both are fusible, it has the run's
number of dimensions, at least one of its inputs comes from a member over a one-to-one edge,
and none over an all-to-all edge (which waits for every instance) or a streaming edge (a
pipeline boundary). Nodes a graph split puts on different back ends (their ``target``
attributes differ: ``split_by_target.py``) never fuse.

What "fusible" means is the one thing that differs between back ends, named by ``policy``:

* ``"loop"`` (``cpu``): a replicated node that is not a barrier leaf (a barrier leaf's
  instances run as a group function of their own); internal nodes may join a loop nest;
* ``"kernel"`` (GPU): a leaf that neither calls ``hpvm.barrier()`` (its kernel's blocks are
  its parent's instances) nor ``hpvm.malloc`` (an allocation node runs on the host).

The pass writes ``fuse = "<first member's name>"`` on every member of a run of two or more
nodes; ``fused_runs`` reads them back as the runs a back end lowers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..ir.analysis import feed_table, fusion_groups
from ..ir.graph import InternalFunction, LeafFunction, Node, functions
from ..ir.leafinfo import analyze_leaf
from ..ir.verify import topological_order
from .base import Module, Pass
from .split_by_target import TARGET

FUSE = "fuse"
POLICIES = ("loop", "kernel")


def is_allocation(fn: LeafFunction) -> bool:
    """Whether a leaf calls ``hpvm.malloc`` (seed 001's allocation node)."""
    return any(name == "malloc" for name, _ in analyze_leaf(fn).calls)


def _is_barrier_leaf(node: Node) -> bool:
    fn = node.function
    return isinstance(fn, LeafFunction) and analyze_leaf(fn).uses_barrier


def loop_fusible(node: Node) -> bool:
    """The ``cpu`` policy: a replicated node (a 0-dim node's outputs are plain variables:
    nothing to fuse) that is not a barrier leaf."""
    return node.dims > 0 and not _is_barrier_leaf(node)


def kernel_fusible(node: Node) -> bool:
    """The GPU policy: a leaf that neither allocates nor calls ``hpvm.barrier()``."""
    fn = node.function
    return isinstance(fn, LeafFunction) and not is_allocation(fn) and not analyze_leaf(fn).uses_barrier


@dataclass(frozen=True)
class FuseOneToOne(Pass):
    """Annotate the runs of fused children of every graph (``fuse``), by ``policy``."""

    policy: str = "loop"
    name = "fuse-one-to-one"

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {', '.join(POLICIES)}, not {self.policy!r}")

    def apply(self, module: Module) -> None:
        fusible = loop_fusible if self.policy == "loop" else kernel_fusible
        for fn in functions(module.root):
            if not isinstance(fn, InternalFunction):
                continue
            graph = fn.graph
            for node in graph.nodes:
                node.attrs.pop(FUSE, None)
            order = topological_order(graph)
            for group in fusion_groups(order, feed_table(graph), fusible, _target):
                if len(group) > 1:
                    for node in group:
                        node.attrs[FUSE] = group[0].name


def _target(node: Node) -> str | None:
    return node.attrs.get(TARGET)


def fused_runs(order: Sequence[Node]) -> list[list[Node]]:
    """``order`` (children in topological order, or a part of them) as the runs the pass
    annotated: consecutive nodes with the same ``fuse`` attribute form one run; every other
    node is a run of its own."""
    runs: list[list[Node]] = []
    for node in order:
        key = node.attrs.get(FUSE)
        if key is not None and runs and runs[-1][0].attrs.get(FUSE) == key:
            runs[-1].append(node)
        else:
            runs.append([node])
    return runs


__all__ = ["FUSE", "FuseOneToOne", "fused_runs", "is_allocation", "kernel_fusible", "loop_fusible"]
