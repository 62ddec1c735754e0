"""Scratch buffers allocated once per chunk of parent instances, not once per instance.

Why. The block reduction (``examples/reduction.py``) runs 16 384 instances of its internal
node ``sum_block`` a launch; each called the node's graph function, which marked its
thread's ``malloc`` pool, ran the allocation leaf (the pooled ``malloc``: a thread-id
lookup, a slice, a zero-fill), called the barrier leaf's group function and released the
pool — three ``numba.get_thread_id`` calls, the buffer's reference taken and dropped, and
a ``raise`` (a negative replication size) that kept Numba from pruning the reference counts
of the arrays the call received. The hand-written Numba loops allocate one scratch per
thread and reuse it for every block.

What. A replicated internal node whose function has *scratch allocations*
(``ir/scratch.py``: single-instance leaves that only ``malloc`` a size computed from the
parent's inputs, their buffer sent only to siblings), whose buffers die with the instance
(``MallocFlow``: the function is in ``release``), that mallocs nothing else, and whose
inputs are the same in every instance (``flatten.uniform_input``), gets two graph
functions instead of one:

- ``<graph>_pre`` — run once per chunk of instances (a parallel loop's chunk function, or
  before a sequential loop): the pool's mark, every child's size and its checks, the
  allocation leaves; returns the mark and the buffers;
- ``<graph>_each`` — one instance: the buffers zero-filled again (a fresh ``malloc`` is
  zero-filled: docs/semantics.md §11, as ``interp`` gives it), then the other children.
  Its sizes are the same expressions, without the checks (they passed in ``_pre``).

**Not zero-filled when nothing can read the zeros.** When a buffer's one consumer is a
1-D barrier leaf whose every instance stores its own element before the first barrier and
before anything reads the buffer (``ir/scratch.covering_store``), and the instances cover
every byte (checked at run time by ``_pre``: instances × element size ≥ the buffer's bytes),
no instance can see the old contents: ``_pre`` returns a flag saying so, and the chunk
runs its loop over ``_each_nz`` (no zero-fill) — or, where the flag says the zero-fill is
needed, calls a chunk function of its own looping over ``_each``. Any zero-fill in the fast
loop's function (inside the loop, on a branch never taken, or in a second copy of the loop
beside it) kept LLVM from optimizing the block reduction's loop across the inlined group
function: 1.0-1.1x against 0.4-0.6x Numba on one thread. ``_pre`` and both ``_each``
functions are inlined: LLVM then sees where the buffer comes from (the pool's slice, as
long as the instances' view), which the fast loop needs too.

**HPVM-C (LLVM) leaves** (issue 24 item 4). The same plan holds for an internal node whose
allocation children are LLVM leaves whose node function is a plain allocation in LLVM's
form (``ir/scratch.plain_llvm_allocation``: the HPVM-C allocation node, ``__hpvm__malloc(n)``
returned with ``n``) and whose buffers die with the instance by the host heap's rule
(``heap_release``: ``llvm_native/host.py``). Their ``malloc`` draws from the thread's host
heap, not the pool: ``_pre`` marks the heap (``numba_call.HEAP_MARK``, the thread's heap found once)
and runs the allocation leaves, the chunk's loop hands every instance the same buffer, and
the heap is released to the mark after the loop. Before, every parent instance called the
allocation leaf (a heap lookup, a 64-byte-rounded piece ``memset``), the heap's mark and its
release. Their consumer's covering store is proven on LLVM's form
(``ir/scratch.covering_llvm_store``, the consumer's node function as LLVM prints it: the
compiler's ``llvm_cover``): where it holds, such a buffer gets ``_each_nz`` as above; where it
does not, it is zero-filled for every instance (``_each``; no ``_each_nz`` is made, nor a
second loop).

After the loop the pool (or the heap) is released to the mark. The sizes and allocations are those the
first instance would have made first (the allocation leaves come first in the child
order, a condition), so a size or ``malloc`` error is the same error, raised at the same
instance. The peeled last instance (when the node's outputs leave its loop) calls the
ordinary graph function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...ir.analysis import FeedTable
from ...ir.bodies import LLVMBody
from ...ir.graph import InternalFunction, LeafFunction, Node, functions
from ...ir.scratch import covering_store, plain_allocation, scratch_allocations
from ...ir.verify import topological_order
from ...passes.clone_leaves import LeafClone
from ...passes.fuse_one_to_one import fused_runs
from .block import Block, Read
from .flatten import uniform_input
from .mallocpool import RELEASE, STATE_PARAM, uses_malloc

INLINED = "_inl"  # a Python barrier leaf's group function compiled inline="always": <symbol>_inl
BUFFER = "__hpvm_scr"  # the _each function's buffer parameters: __hpvm_scr0, __hpvm_scr1...


@dataclass(frozen=True)
class ScratchPlan:
    """``fn``'s allocation children run once per chunk (``nodes``, first in child order)."""

    fn: InternalFunction
    nodes: tuple[Node, ...]
    # Per node: (its one consumer, bytes each consumer instance stores) when the consumer
    # overwrites the buffer before reading it (module doc), else None.
    covers: tuple[tuple[Node, int] | None, ...]
    # The buffers come from LLVM leaves' host heap (marked and released with HEAP_MARK and
    # HEAP_RELEASE), not from the pool (MARK, RELEASE).
    heap: bool = False

    def zero_only(self) -> bool:
        """Whether every instance zero-fills the buffers (no covering store is known for
        one of them): then no loop without the zero-fill is made."""
        return any(cover is None for cover in self.covers)

    def fresh_test(self, index: dict[int, int]) -> str:
        """``_pre``'s expression: whether the buffers must be zero-filled for each instance
        (``index``: the graph's node names, ``__hn<k>``)."""
        tests = []
        for node, cover in zip(self.nodes, self.covers):
            if cover is None:
                return "True"
            consumer, size = cover
            buf = f"__hn{index[id(node)]}_v0"
            tests.append(
                f"__hn{index[id(consumer)]}_s0 * {size} >= {buf}.nbytes and {buf}.nbytes % {size} == 0"
            )
        return f"not ({' and '.join(f'({t})' for t in tests)})"

    def buffer(self, node: Node) -> str | None:
        """The ``_each`` function's parameter holding ``node``'s buffer, if it is hoisted."""
        for j, n in enumerate(self.nodes):
            if n is node:
                return f"{BUFFER}{j}"
        return None


def scratch_plans(
    root: InternalFunction,
    clones: dict[int, LeafClone],
    pooled: frozenset[int],
    release: frozenset[int],
    heap_release: frozenset[int],
    heap_leaves: frozenset[int] = frozenset(),
    llvm_plain: Callable[[LeafFunction], bool] | None = None,
    llvm_cover: Callable[[LeafFunction, str], int | None] | None = None,
) -> dict[int, ScratchPlan]:
    """The internal functions (by id) whose allocation children can be hoisted (module doc).
    ``heap_leaves``: the LLVM leaves that ``malloc`` from the host heap; ``llvm_plain``:
    whether such a leaf's node function is a plain allocation (LLVM's form); ``llvm_cover``:
    an LLVM barrier leaf's covering store of its parameter (``covering_llvm_store``)."""

    def pool_plain(leaf: LeafFunction) -> bool:
        clone = clones[id(leaf)]
        return id(leaf) in pooled and clone.ir is not None and plain_allocation(clone.ir)

    def heap_plain(leaf: LeafFunction) -> bool:
        return id(leaf) in heap_leaves and llvm_plain is not None and llvm_plain(leaf)

    def mallocs(node: Node) -> bool:
        below = [node.function] if isinstance(node.function, LeafFunction) else functions(node.function)
        return any(
            isinstance(f, LeafFunction) and (uses_malloc(clones[id(f)]) or id(f) in heap_leaves)
            for f in below
        )

    plans: dict[int, ScratchPlan] = {}
    for fn in functions(root):
        if not isinstance(fn, InternalFunction) or (id(fn) in release) == (id(fn) in heap_release):
            continue  # (neither, or both a pool's and a heap's buffers: kept per instance)
        heap = id(fn) in heap_release
        nodes = scratch_allocations(fn, heap_plain if heap else pool_plain)
        if not nodes:
            continue
        order = topological_order(fn.graph)
        head = order[: len(nodes)]
        if {id(n) for n in head} != {id(n) for n in nodes} or any(mallocs(n) for n in order[len(nodes) :]):
            continue
        if any(
            len(run) > 1 and any(id(n) in {id(m) for m in nodes} for n in run) for run in fused_runs(order)
        ):
            continue  # (a buffer fused with a sibling into one loop: not a loop group of its own)
        covers = tuple(_cover(fn, n, clones, llvm_cover) for n in head)
        plans[id(fn)] = ScratchPlan(fn, tuple(head), covers, heap)
    return plans


def _cover(
    fn: InternalFunction,
    node: Node,
    clones: dict[int, LeafClone],
    llvm_cover: Callable[[LeafFunction, str], int | None] | None,
) -> tuple[Node, int] | None:
    """``node``'s buffer's one consumer and the bytes each of its instances stores, when it
    overwrites the buffer before reading it (``ir/scratch.covering_store``, or its LLVM form
    through ``llvm_cover`` for an LLVM consumer)."""
    edges = [e for e in fn.graph.edges if e.src is node]
    if len(edges) != 1 or edges[0].dst.dims != 1 or not isinstance(edges[0].dst.function, LeafFunction):
        return None
    consumer = edges[0].dst
    param = consumer.function.params[edges[0].dp].name
    if isinstance(consumer.function.body, LLVMBody):
        size = llvm_cover(consumer.function, param) if llvm_cover is not None else None
        return (consumer, size) if size else None
    clone = clones[id(consumer.function)]
    if not clone.uses_barrier or clone.ir is None:
        return None
    size = covering_store(clone.ir, param)
    return (consumer, size) if size else None


def uniform_node(node: Node, feeds: FeedTable) -> bool:
    """Whether every input of ``node`` is the same in all its instances (then its sizes and
    its scratch buffers' sizes are too)."""
    return all(uniform_input(node, i, feeds) for i in range(len(node.function.params)))


@dataclass(frozen=True)
class ScratchCall:
    """A loop over the instances of ``node`` calling its ``_each`` graph function ``each``
    (or ``each_nz``, without the zero-fill) with ``count`` buffers made by its ``_pre``
    function ``pre``; ``prefix`` names the loop's locals (``<prefix>_scr<j>``,
    ``<prefix>_mark``, ``<prefix>_zero``: whether the buffers need the zero-fill).
    ``zero``: which of the two the calls of this loop make."""

    node: Node
    pre: str
    each: str
    each_nz: str
    count: int
    prefix: str
    zero: bool = True
    heap: bool = False  # (ScratchPlan.heap: the host heap's mark and release, not the pool's)
    zero_only: bool = False  # (ScratchPlan.zero_only: one loop, zero-filling every instance)

    def callee(self) -> str:
        """The function one instance calls in this loop."""
        return self.each if self.zero else self.each_nz

    def flag(self) -> str:
        """The local ``_pre``'s zero-fill flag is unpacked into."""
        return f"{self.prefix}_zero"

    def buffers(self) -> list[str]:
        """The locals holding the buffers, passed to every ``_each`` call after the pool."""
        return [f"{self.prefix}_scr{j}" for j in range(self.count)]

    def setup(self, args: list[Read], ctx: Read, pool: list[str]) -> Block:
        """The lines run once per chunk: ``_pre``'s call, its mark and buffers unpacked."""
        sp, mark = f"{self.prefix}_sp", f"{self.prefix}_mark"
        texts = [*(a.text for a in args), ctx.text, *pool]
        reads = [*(n for a in args for n in a.names), *ctx.names, *pool]
        out = Block().add(f"{sp} = {self.pre}({', '.join(texts)})", reads, [sp])
        out.add(f"{mark} = {sp}[0]", [sp], [mark])
        flag = [] if self.zero_only else [self.flag()]  # (one loop: no flag to pick it by)
        for j, name in enumerate([*self.buffers(), *flag]):
            out.add(f"{name} = {sp}[{j + 1}]", [sp], [name])
        return out

    def teardown(self) -> Block:
        """The line run after the chunk's instances: the pool (or the heap) back to the mark."""
        mark = f"{self.prefix}_mark"
        if self.heap:
            from ..llvm_native.numba_call import HEAP_RELEASE  # (only such graphs load it)

            return Block().add(f"{HEAP_RELEASE}({mark})", [mark])
        return Block().add(f"{RELEASE}({STATE_PARAM}, {mark})", [STATE_PARAM, mark])
