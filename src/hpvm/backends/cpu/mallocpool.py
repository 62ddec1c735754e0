"""``hpvm.malloc`` buffers reused across launches (and within one): a stack per thread.

Why: a graph with an allocation node mallocs one buffer per parent instance per launch
(the block reduction: 16 384 each time); allocating and freeing each costs more than
taking memory that is already there, and memory used a moment ago is still in the cache.

How. Every run of a compiled graph (one launch, or one streamed item of one stage) checks
out a **pool**: one stack of bytes per Numba thread id (rows of one ``uint8`` arena) and a
``state`` row per thread (top of stack, counters; one cache line each, no atomics needed:
a thread only touches its own row). ``malloc(n)`` in a leaf takes the next ``n`` bytes of
its thread's stack (rounded up to 64, so buffers start on cache lines) and zero-fills them,
like a fresh buffer. Thread ids are unique among the threads of one parallel region
(``numba.get_thread_id``), and a run has a single parallel region at a time, so within a
run no memory is handed out twice while it is live.

**Freed with the parent instance.** The graph function of an internal node whose outputs
cannot carry ``malloc``'d memory (``MallocFlow``) marks its thread's stack when it starts
and pops back to the mark when it returns: its buffers die with its instance, and the next
parent instance the thread runs gets the same, cache-warm memory. A buffer that leaves its
parent instance (the suite's ``malloc-escapes`` program: a block's buffer read later by a
sibling of the block) is not popped; it stays on the stack until the run ends.

**Reused across runs.** After the run the pool goes back to the program's free-list (at
most ``KEEP_IDLE`` pools), grown to the deepest stack the run needed if that was more than
it had: a call that does not fit allocates a fresh ``np.zeros`` buffer (the first run, or
sizes grew — they are expressions of the inputs), and the next run fits. Two runs in flight
at once (two launches of one root on worker threads, concurrent pipeline stages) hold
different pools. A run whose buffers may outlive it — a root output, or a stage's output
sent to another stage, that may carry ``malloc``'d memory — gets a new empty pool and does
not return it: every one of its calls allocates fresh, so nothing handed out is reused.

Leaves with barriers keep the plain ``malloc`` (a fresh buffer per call): their group
functions have a fixed signature, and the allocation-node pattern puts ``malloc`` in a
barrier-free leaf.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...ir.analysis import returned_params
from ...ir.graph import InternalFunction, LeafFunction, NodeFunction, functions
from ...ir.types import ArrayType
from ...passes.clone_leaves import LeafClone

ALIGN = 64  # bytes: every pooled buffer starts on its own cache line
KEEP_IDLE = 4  # pools kept per program between runs (more concurrent runs allocate their own)
ARENA_PARAM = "__hpvm_arena"
STATE_PARAM = "__hpvm_mstate"
POOL_PARAMS = (ARENA_PARAM, STATE_PARAM)
MALLOC = "__hpvm_malloc"
POOLED_MALLOC = "__hpvm_malloc_pooled"
MARK = "__hpvm_pool_mark"
RELEASE = "__hpvm_pool_release"


# -- leaf clones ----------------------------------------------------------------------------


def uses_malloc(clone: LeafClone) -> bool:
    """Whether the clone calls ``hpvm.malloc`` (what CloneLeaves found: ``LeafClone.calls``)."""
    return "malloc" in clone.calls


def poolable(clone: LeafClone) -> bool:
    """Whether the clone's ``malloc`` calls draw from the run's pool: it has no barrier (its
    group function's signature is fixed), calls ``malloc``, and has a lowered leaf IR to
    rewrite (a leaf outside the dialect keeps the plain ``malloc``: a fresh buffer per call)."""
    return clone.ir is not None and not clone.uses_barrier and uses_malloc(clone)


def pooled_clone(clone: LeafClone) -> LeafClone:
    """The clone taking the pool as two extra parameters after the context tuple, its
    ``malloc`` calls drawing from it (``__hpvm_malloc_pooled(arena, state, n)``): its
    lowered IR emitted again with that spelling. Renamed by a hash of its new code (Numba's
    disk cache is keyed by name and file)."""
    assert clone.ir is not None, "only a clone with a lowered leaf IR is pooled (poolable)"
    spelling = replace(
        clone.spelling,
        extra_params=(*clone.spelling.extra_params, *POOL_PARAMS),
        calls=(*clone.spelling.calls, ("malloc", (POOLED_MALLOC, POOL_PARAMS))),
    )
    return clone.reemitted(clone.ir, "pool", spelling)


_JITTED: dict[str, Any] = {}


def pool_helpers() -> dict[str, Any]:
    """The compiled helpers generated code calls, by name (Numba, built once)."""
    # ``numba.get_thread_id`` lives in Numba's threading layer, which is loaded only when a
    # parallel region first runs: a graph without one would fail to link ("Symbol not
    # found: get_thread_id") and abort the process. Load it first (idempotent, cheap).
    from numba.np.ufunc.parallel import _launch_threads

    _launch_threads()
    if not _JITTED:
        import numba

        # Inlined into the leaf (and so into the graph function calling it): as a call of its
        # own it cost the block reduction (256 floats a block, 1 thread) about a fifth of its
        # time — a call returning an array, with the arena's and state's references taken
        # and dropped on every call (in a model of its graph code: 2.7x -> 2.1x the
        # hand-written loops; zero-filling the piece or not made no difference).
        @numba.njit(nogil=True, cache=True, inline="always")
        def hpvm_malloc_pooled(arena, state, nbytes):  # type: ignore[no-untyped-def]
            if nbytes < 0:
                raise ValueError("hpvm.malloc() needs a non-negative number of bytes")
            t = numba.get_thread_id()
            size = (nbytes + 63) & ~63
            if t >= state.shape[0]:  # not a thread the pool knows (never expected): a fresh buffer
                return np.zeros(nbytes, np.uint8)
            row = arena.shape[0] // state.shape[0]
            top = state[t, 0]
            state[t, 0] = top + size
            state[t, 1] += 1
            if top + size > state[t, 3]:
                state[t, 3] = top + size
            if top + size <= row:
                buf = arena[t * row + top : t * row + top + nbytes]
                buf[:] = 0  # as a fresh buffer: zero-filled
                return buf
            state[t, 2] += 1
            return np.zeros(nbytes, np.uint8)

        @numba.njit(nogil=True, cache=True, inline="always")
        def hpvm_pool_mark(state):  # type: ignore[no-untyped-def]
            t = numba.get_thread_id()
            return (t, state[t, 0] if t < state.shape[0] else 0)

        @numba.njit(nogil=True, cache=True, inline="always")
        def hpvm_pool_release(state, mark):  # type: ignore[no-untyped-def]
            t, top = mark
            if t < state.shape[0]:
                state[t, 0] = top

        _JITTED.update({POOLED_MALLOC: hpvm_malloc_pooled, MARK: hpvm_pool_mark, RELEASE: hpvm_pool_release})
    return dict(_JITTED)


# -- which outputs may carry malloc'd memory --------------------------------------------------


class MallocFlow:
    """Which node outputs may hold ``malloc``'d memory (a conservative data-flow analysis).

    A leaf's array output is clean when every ``return`` gives one of its array parameters,
    unchanged, and that parameter is clean; otherwise it may hold malloc'd memory if the
    leaf mallocs or receives any such array (it may return a view of it). Parameters are
    tainted by what feeds them (binds, edges) in *any* place the function is used, and an
    internal node's outputs by what is bound to them. Root parameters (the user's arrays)
    are clean.
    """

    def __init__(self, root: InternalFunction, malloc_leaves: set[int]):
        self.root = root
        fns = list(functions(root))
        params: set[tuple[int, int]] = set()
        outputs: set[tuple[int, int]] = set()
        returns = {id(fn): returned_params(fn) for fn in fns if isinstance(fn, LeafFunction)}
        changed = True
        while changed:
            changed = False
            before = (len(params), len(outputs))
            for fn in fns:
                if isinstance(fn, InternalFunction):
                    self._internal(fn, params, outputs)
                else:
                    assert isinstance(fn, LeafFunction)
                    tainted_in = any((id(fn), i) in params for i in _array_params(fn))
                    for port, t in enumerate(fn.out_types):
                        if not isinstance(t, ArrayType):
                            continue
                        source = returns[id(fn)][port]
                        if source is None:
                            hot = id(fn) in malloc_leaves or tainted_in
                        else:
                            hot = (id(fn), source) in params
                        if hot:
                            outputs.add((id(fn), port))
            changed = (len(params), len(outputs)) != before
        self.outputs = outputs

    @staticmethod
    def _internal(fn: InternalFunction, params: set[tuple[int, int]], outputs: set[tuple[int, int]]) -> None:
        graph = fn.graph
        for b in graph.in_binds:
            if (id(fn), b.ip) in params:
                params.add((id(b.dst.function), b.ic))
        for e in graph.edges:
            if (id(e.src.function), e.sp) in outputs:
                params.add((id(e.dst.function), e.dp))
        for b in graph.out_binds:
            if (id(b.src.function), b.oc) in outputs:
                outputs.add((id(fn), b.op))

    def may_hold(self, fn: NodeFunction, port: int) -> bool:
        return (id(fn), port) in self.outputs

    def releasing(self, pooled: frozenset[int]) -> frozenset[int]:
        """Internal functions (below the root) whose graph functions free what their
        subtree malloc'd when they return: the subtree mallocs and no output may carry it."""
        mallocs: set[int] = set()
        for fn in functions(self.root):  # children first
            if isinstance(fn, LeafFunction):
                if id(fn) in pooled:
                    mallocs.add(id(fn))
            elif isinstance(fn, InternalFunction) and any(id(n.function) in mallocs for n in fn.graph.nodes):
                mallocs.add(id(fn))
        return frozenset(
            id(fn)
            for fn in functions(self.root)
            if isinstance(fn, InternalFunction)
            and fn is not self.root
            and id(fn) in mallocs
            and not any(self.may_hold(fn, op) for op in range(len(fn.out_types)))
        )

    def root_escapes(self) -> bool:
        """Whether a root output may be a malloc'd buffer (then runs do not recycle pools)."""
        return any(self.may_hold(self.root, op) for op in range(len(self.root.out_types)))


def _array_params(fn: LeafFunction) -> list[int]:
    return [i for i, p in enumerate(fn.params) if isinstance(p.type, ArrayType)]


# -- pools ------------------------------------------------------------------------------------


def _arena(nbytes: int) -> np.ndarray:
    """A ``uint8`` array of ``nbytes`` whose first byte is ``ALIGN``-aligned."""
    raw = np.empty(nbytes + ALIGN, np.uint8)
    skip = -raw.ctypes.data % ALIGN
    return raw[skip : skip + nbytes]


def thread_slots() -> int:
    """How many thread ids a pool has room for: Numba's most threads (ids are below it)."""
    import numba

    return max(1, int(numba.config.NUMBA_NUM_THREADS))


class Pool:
    """The memory one run's pooled ``malloc`` calls draw from: a stack per thread.

    ``arena`` holds ``slots`` rows of ``row`` bytes, row *t* being thread *t*'s stack;
    ``state[t]`` (one cache line per thread) is ``[top, calls, fresh, high water]``.
    """

    def __init__(self, slots: int, row: int = 0):
        self.state = np.zeros((slots, 8), np.int64)
        self.grow(row)

    def grow(self, row: int) -> None:
        """Give every thread ``row`` bytes (the old contents are not kept)."""
        self.row = row
        self.arena = _arena(self.state.shape[0] * row)


@dataclass(frozen=True)
class MallocStats:
    """What pooled ``malloc`` calls did, summed over a program's finished runs.

    ``calls`` = ``reused`` + ``fresh``: ``reused`` calls took memory of the run's pool
    (memory an earlier run, or an earlier parent instance of this run, used), ``fresh`` ones
    allocated a new buffer (the pool was too small: the first run, or sizes grew).
    ``recycled_runs`` counts the runs whose pool went back to the free-list; runs whose
    buffers may outlive them do not recycle.
    """

    calls: int = 0
    fresh: int = 0
    recycled_runs: int = 0
    runs: int = 0

    @property
    def reused(self) -> int:
        return self.calls - self.fresh


class BufferPools:
    """A program's free-list of pools, and its statistics. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[Pool] = []
        self._stats = MallocStats()

    def checkout(self, recycle: bool) -> Pool:
        """A pool for one run: an idle one if the run may recycle it, else a new empty one."""
        pool = None
        if recycle:
            with self._lock:
                pool = self._idle.pop() if self._idle else None
        if pool is None:
            pool = Pool(thread_slots())
        else:
            pool.state.fill(0)
        return pool

    def checkin(self, pool: Pool, recycle: bool, runs: int = 1) -> None:
        """After the run: count its calls; grow the pool to what the run needed; keep it.
        (``runs``: how many runs used it one after the other — a batch of streamed items.)"""
        rows = pool.state.tolist()  # (a row per thread: Python's sums of a few rows take a
        # microsecond, NumPy's reductions five — on every launch that mallocs)
        calls = sum(row[1] for row in rows)
        fresh = sum(row[2] for row in rows)
        need = max(row[3] for row in rows)
        if recycle and need > pool.row:
            pool.grow(need)
        with self._lock:
            s = self._stats
            self._stats = MallocStats(
                s.calls + calls, s.fresh + fresh, s.recycled_runs + recycle * runs, s.runs + runs
            )
            if recycle and len(self._idle) < KEEP_IDLE:
                self._idle.append(pool)

    def idle_rows(self) -> list[int]:
        """Bytes per thread of each idle pool (introspection: how deep the stacks got)."""
        with self._lock:
            return [p.row for p in self._idle]

    @property
    def stats(self) -> MallocStats:
        with self._lock:
            return self._stats
