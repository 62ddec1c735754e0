"""Nested replication run as one parallel space: parent instances × their children's.

Why. Only one level of parallel loops can be active (a parallel loop inside another runs
on one thread: Numba's OpenMP layer nests no teams), and the level that runs in parallel is the outermost replicated one
(``graphgen.py``). When that level has few instances — 2 tiles of 512×512 elements, or
one instance of an internal node that replicates its leaf: the HPVM-C style — parallelizing
it alone leaves cores idle. Parent instances are independent of each other, and so are the
instances of the loop a parent runs: any order of the (parent, child) pairs is a legal
schedule, as the GPU back ends' grids of blocks × threads already show.

When. A replicated internal node ``N`` of a parallel graph function, in a loop of its own
(not fused with other children), is *flattened* when its function ``P``

- runs one loop: its children form a single fused group (one replicated leaf, or a chain
  joined by one-to-one edges), without barriers;
- has no outputs (nothing to take from the last instance of each parent);
- does not free ``malloc`` buffers per instance (``mallocpool.py``: it is not in
  ``release``);
- sizes its children with expressions of inputs that are the same for every instance of
  ``N`` (bound from the enclosing graph, or sent over an all-to-all edge or by a
  single-instance node): the child grid is then one grid, computed once.

Then the graph function runs one parallel loop over the parents' instances times the extent
of the children's outermost dimension, cut into one contiguous chunk per thread; a chunk
walks its parents in order and, in each, its share of the outer dimension, with the
children's inner dimensions in full (the innermost narrowed and vectorized as usual). The
children see the same context as under ``P``'s own graph function: their own ids, then
``N``'s instance and extents, then the levels above.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...ir.analysis import FeedTable, feed_table
from ...ir.graph import ALL_TO_ALL, InternalFunction, Node
from ...ir.types import ArrayType
from ...ir.verify import topological_order
from ...passes.fuse_one_to_one import fused_runs


@dataclass(frozen=True)
class FlatPlan:
    """A flattenable node: ``node``, its function's one loop ``inner`` and that graph's feeds."""

    node: Node
    inner: list[Node]
    feeds: FeedTable


def flat_plan(
    node: Node, feeds: FeedTable, release: frozenset[int], is_barrier: Callable[[Node], bool]
) -> FlatPlan | None:
    """``node`` (of a graph whose feed table is ``feeds``) as a ``FlatPlan``, if the module
    doc's conditions hold."""
    fn = node.function
    if not isinstance(fn, InternalFunction) or node.dims == 0 or fn.out_types or id(fn) in release:
        return None
    runs = fused_runs(topological_order(fn.graph))
    if len(runs) != 1 or runs[0][0].dims == 0 or is_barrier(runs[0][0]):
        return None
    inner = runs[0]
    used = set().union(*(e.params() for n in inner for e in n.sizes))
    for i, param in enumerate(fn.params):
        if param.name in used and not uniform_input(node, i, feeds):
            return None
    return FlatPlan(node, inner, feed_table(fn.graph))


def uniform_input(node: Node, port: int, feeds: FeedTable) -> bool:
    """Whether input ``port`` of ``node`` has the same value in every instance of ``node``."""
    feed = feeds[id(node)][port]
    if feed is None or feed[0] == "bind":
        return True
    edge = feed[1]
    return (
        edge.repl == ALL_TO_ALL
        or edge.src.dims == 0
        or isinstance(edge.src.function.out_types[edge.sp], ArrayType)  # the one shared array
    )
