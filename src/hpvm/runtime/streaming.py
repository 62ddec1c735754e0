"""Streaming execution: the root's children as concurrent pipeline stages over bounded buffers.

Each ``push`` supplies every root input for one execution of the graph. Children joined by
non-streaming edges run together in one stage; streaming edges are bounded FIFO buffers
between stages, each stage a thread. Results go to an unbounded host-side buffer, so a host
that pushes many items before popping never deadlocks; push blocks only while a stage's
input buffer is full.

**Batches.** A stage takes the items waiting for it and runs them with one
``Backend.run_stage_batch`` call — one warning scope, one run context, and on ``cpu`` one
compiled loop — so that the cost of scheduling is paid per batch, not per item. With small
items that cost was everything: two scalar stages on ``cpu`` ran about 25,000 items/s on a
2-core machine when each item was a back-end call of its own, about 170,000 in batches
(issue 10, item 12; ``benchmarks/streaming.py``). A batch's outputs go downstream
when the whole batch is done, so a batch must stay short, or the next stage idles while it
runs: a stage takes as many items as its previous batch says it can run in
``BATCH_SECONDS`` (one item at first; at most ``capacity``: no more can wait). Small items
go in batches, items that take milliseconds one at a time, as before.

**No polling.** Every buffer of a stream is guarded by one lock. Whoever waits — a stage for
its inputs or for room downstream, ``push`` for room, ``pop`` for a result, ``wait`` for the
end — waits on a condition of that lock, and whoever changes what it waits for wakes it; a
failure, or a stage that stops, wakes everyone. The one timed wait left is a ``pop`` with
nothing in flight, which must notice when the threads that could push have ended.

**Fused on the host.** Threads cost more than small items do: each item a stage thread takes
is a lock, a wake-up and a turn of the GIL, and a pipeline of two ``cpu`` stages of scalars
ran at 0.3–0.5× a hand-written pair of ``queue.Queue`` threads (issue 24, item 2). So a
stream whose stages exchange only scalars, and whose root takes and gives only scalars, on
``cpu`` starts *fused*: every stage in one back-end call (one compiled loop over the batch,
the stages composed per item), run by whichever host call needs it — ``pop`` when its
result is not there yet, ``push`` when ``capacity`` items per stage already wait, ``wait`` for the
rest — with no thread at all. Only one call runs a batch at a time, so order holds. The
first batches are short (1, 2, 4... items). When fused batches turn out slow (over
``INLINE_SECONDS`` and ``INLINE_ITEM_SECONDS`` an item, of the thread's CPU time,
``INLINE_SLOW_BATCHES`` times in a row; not the first, which may compile, nor one a full
garbage collection ran in), the stream goes over to stage threads for the items after
them, so that long stages overlap, and later launches of the root start with threads.

**Stages that each fill the machine run as one.** When a stream has more stages than the
machine has cores, every stage runs a replicated node, and the back end spreads each
replicated node over at least as many threads as there are cores (``cpu``: Numba's
threads), one stage thread runs every stage, per item one after the other, each loop on
every core: a pipeline of stages that are themselves parallel has nothing to gain from
overlapping them there, and a thread per stage lost. With six stage threads on 2 cores
each stage's loops got one thread (``cores // stages``), so the stream was bound by its
largest stage on one core (the edge detection's smoothing, 60–70 % of the work) while the
other core waited: 1.27–1.39× the same stages called in turn, slower than the same graph
launched per frame (issue 24). The host still overlaps its pushes and pops with the
stage thread; results, order, back-pressure (``capacity`` items wait) and failures are
those of any stage (``one_stage``; ``FUSE_PARALLEL = False`` keeps a thread per stage).

**Whole items side by side.** When a stream has more stages than cores and every one of
them may run several items at once (``replicas.policy``: bounded leaves that do not print,
on a back end whose stages release the GIL: ``cpu``), the stages run as one stage whose
items run whole, each on a replica thread of its own, as many at once as there are cores
(``whole_items``). An item is then handed on once, not once per stage, and the cores are
shared by items, not by stages of different lengths: the edge detection's stream reaches
what whole frames launched from two host threads give. Whether two items do run at once is
decided per item as for any replica (below): items that write a shared array run one at a
time, in push order. This comes before the rule above (``WHOLE_ITEMS = False`` turns it off).

**Replicas.** A stage that bounds the stream may run several items at once, on extra
threads of its own, when no item in flight shares an array it writes: ``replicas.py`` says
when, ``stagethreads.py`` hands the items on in push order (``Stage.taken``/``delivered``).
With a thread per stage the edge detection's stream was bound by its smoothing (60–70 % of
the work) on one core; two frames smoothed at once lift that bound (issue 24, item 2).

**Failures.** An exception in a stage stops the pipeline: it is raised at the next pop or
wait, naming the node, and push raises too — nothing is left blocked. The failure travels
down the pipeline as a marker in item order, so the items pushed before the failing one are
still delivered by pop (even by slow stages, and when it fails in the middle of a batch) and
the pop of the failing item raises. After a failure a stage goes on while it has items to
run, and stops when it would have to wait for something that can no longer come.
"""

from __future__ import annotations

import gc
import graphlib
import itertools
import operator
import os
import threading
import time
import warnings
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..backends.base import Backend, RunContext, StageBatch, collecting_warnings
from ..backends.memory import MemoryTracker
from ..errors import HPVMError, HPVMWarning, NodeExecutionError, StreamError
from ..ir.bounded import unbounded_reason
from ..ir.graph import ALL_TO_ALL, InternalFunction, LeafFunction, Node, functions
from ..ir.types import ScalarType
from ..passes import PassManager
from ..passes.flatten_streams import FlattenStreams, nested_streams
from . import replicas
from .stagebuffers import (
    FAILED,
    Channel,
    Producers,
    Signal,
    Stage,
    check_can_arrive,
    raise_stream_failure,
)
from .stagethreads import StageLoop
from .workers import internal_thread

_POLL = 0.05  # seconds: how often a pop with nothing in flight checks that a producer lives
BATCH_SECONDS = 0.5e-3  # about how long one batch of a stage may run (see above)
FUSE = True  # scalar streams on cpu start fused on the host (see above); False: always threads
WHOLE_ITEMS = True  # stages that may run items side by side run as one (see above); False: never
FUSE_PARALLEL = True  # stages that each fill the machine run as one stage (see above); False: never
INLINE_SECONDS = 1e-3  # a fused batch slower than this in all ...
INLINE_ITEM_SECONDS = 20e-6  # ... and than this per item, ...
INLINE_SLOW_BATCHES = 2  # ... so many times in a row goes to threads
THREAD_PREFIX = "hpvm-stage"
_stream_ids = itertools.count()


#: root -> (its flattened copy, or None when it has no nested streams; why nodes were kept)
_FLAT: weakref.WeakKeyDictionary[InternalFunction, tuple[InternalFunction | None, list[str]]] = (
    weakref.WeakKeyDictionary()
)


def streaming_root(root: InternalFunction) -> InternalFunction:
    """What a streaming launch of ``root`` runs: ``root`` itself, or — when graphs below it
    hold streaming edges or stream binds — its copy with those graphs inlined up to the root
    (``passes/flatten_streams.py``), so that ``plan_stages`` sees their stages. Made once per
    root (back ends cache their compiled code per root object); each call warns, naming the
    node, about every internal node left in place, whose stages then do not overlap."""
    cached = _FLAT.get(root)
    if cached is None:
        if nested_streams(root):
            module = PassManager([FlattenStreams()]).run_module(root)
            cached = (module.root, module.notes[FlattenStreams.name])
        else:
            cached = (None, [])
        _FLAT[root] = cached
    flat, kept = cached
    for why in kept:
        warnings.warn(f"streaming launch of '{root.name}': {why}", HPVMWarning, stacklevel=3)
    return root if flat is None else flat


def plan_stages(root: InternalFunction) -> list[list[Node]]:
    """Partition the root's children into stages: connected by non-streaming edges.

    Merging may create a cycle between stages (a→s→b with a—b not streaming); stages on such
    a cycle are merged too. The result is in topological order.
    """
    graph = root.graph
    parent = {id(n): id(n) for n in graph.nodes}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: int, b: int) -> None:
        parent[find(a)] = find(b)

    for e in graph.edges:
        if not e.stream:
            union(id(e.src), id(e.dst))
    while True:
        deps: dict[int, set[int]] = {find(id(n)): set() for n in graph.nodes}
        for e in graph.edges:
            a, b = find(id(e.src)), find(id(e.dst))
            if a != b:
                deps[b].add(a)
        try:
            order = list(graphlib.TopologicalSorter(deps).static_order())
            break
        except graphlib.CycleError as err:
            cycle = err.args[1]
            for a, b in zip(cycle, cycle[1:]):
                union(a, b)
    by_stage: dict[int, list[Node]] = {}
    for n in graph.nodes:
        by_stage.setdefault(find(id(n)), []).append(n)
    return [by_stage[s] for s in order]


#: roots whose fused batches were slow: their streaming launches start with stage threads
_SLOW: weakref.WeakSet[InternalFunction] = weakref.WeakSet()


def fusable(root: InternalFunction, backend: Backend, plan: list[list[Node]]) -> bool:
    """Whether a streaming launch of ``root`` on ``backend`` starts fused on the host: on
    ``cpu``, with scalars only at the root's boundary and on every edge between stages —
    what its batch loop runs in compiled code. (An array a stage hands on may be written by
    the host between items, and a fused run would also let the next item's ``malloc`` reuse
    it: those keep their threads.) Every leaf's run must also be bounded (``ir/bounded.py``:
    no ``while`` loop, no early exit from a ``for``, no helper of the user's): a fused batch
    runs on the host thread, where Ctrl-C waits until it ends, so a stage that could spin
    keeps its thread (where the host stays interruptible), as a launch does (``quick.py``)."""
    if not FUSE or not backend.fuses_streams or not plan or root.array_params() or root in _SLOW:
        return False
    if not all(isinstance(t, ScalarType) for t in root.out_types):
        return False
    if any(unbounded_reason(fn) is not None for fn in functions(root) if isinstance(fn, LeafFunction)):
        return False
    stage_of = {id(n): k for k, nodes in enumerate(plan) for n in nodes}
    return all(
        isinstance(e.src.function.out_types[e.sp], ScalarType) and (e.repl == ALL_TO_ALL or e.src.dims == 0)
        for e in root.graph.edges
        if stage_of[id(e.src)] != stage_of[id(e.dst)]
    )


def machine_cores() -> int:
    """The cores this process may run on (its affinity, where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (macOS, Windows)
        return os.cpu_count() or 1


def whole_items(backend: Backend, root: InternalFunction, plan: list[list[Node]]) -> bool:
    """Whether a streaming launch of ``root`` on ``backend`` runs ``plan``'s stages as one
    stage whose items run whole, side by side, on as many replicas as there are cores: when
    there are more stages than cores and the stage of every node may run several items at
    once (``replicas.policy``: every leaf bounded, none prints; the back end runs stages as
    compiled code that releases the GIL). Whether two items do run at once is still decided
    per item, by the arrays they write (``replicas.py``): items that share one run one at a
    time, in order.

    Why: with a thread per stage, more stages than cores share the cores, each item is
    handed on once per stage, and the stream is bound by how the stages' times split over
    the cores. Items run whole are handed on once, never wait for a stage, and keep their
    arrays in one core's cache: the edge detection's six stages reach what whole frames
    on two host threads give (``pipeline1``: 1.80–1.89× the stages in turn, against
    1.63–1.74× with a thread per stage and a replicated smoothing; with the loops on both
    cores, 1.08–1.16× against 0.96–1.00× for one stage thread)."""
    if not FUSE_PARALLEL or not WHOLE_ITEMS or len(plan) <= machine_cores():
        return False
    if not (replicas.REPLICAS and backend.stage_replicas):
        return False
    return replicas.policy(root, [n for nodes in plan for n in nodes]) is not None


def one_stage(backend: Backend, plan: list[list[Node]]) -> bool:
    """Whether a streaming launch runs ``plan``'s stages as one stage, per item one after
    the other, on one stage thread: when there are more stages than cores, every stage
    runs a replicated node, and ``backend`` runs each replicated node's instances on at
    least as many threads as there are cores (``Backend.loop_threads``) — each stage fills
    the machine by itself, so stage threads would only fight for it. (On ``cpu``, each of
    the edge detection's six stage threads ran its loops on one thread, and the stream was
    bound by its largest stage, 60 % of the work, on one core: 1.27–1.39× the same stages
    called in turn, 0.88× the graph launched per frame. ``docs/backends/cpu.md`` §6.)"""
    if not FUSE_PARALLEL or len(plan) < 2:
        return False
    cores = machine_cores()
    return (
        len(plan) > cores
        and backend.loop_threads() >= cores  # (0 for back ends that do not use this process's threads)
        and all(any(n.dims > 0 for n in nodes) for nodes in plan)
    )


class _Batches:
    """Runs batches of a stream's items through its stages: the back-end call with its run
    context, memory tracking and warnings, the size of the next batch (``BATCH_SECONDS``),
    the check that the back end accounted for every item, and the fused path's batches on
    the host (``INLINE_SECONDS``...), which may send the stream over to stage threads. Apart
    from ``Stream`` (which holds the buffers and serves the host's calls) because this is the
    part that calls the back end; here, not in its own module, because it reads this
    module's settings."""

    def __init__(self, stream: Stream):
        self.stream = stream
        self.root, self.backend, self.tracker = stream.root, stream.backend, stream.tracker
        self.cluster, self.capacity = stream.cluster, stream.capacity
        # Array arguments need the memory tracker around each run; scalars do not.
        self.arrays = bool(stream.root.array_params())
        self.out_range = range(len(stream.root.out_types))

    def run(
        self, st: Stage, args: list[Any], upstream: list[dict[str, Any]]
    ) -> tuple[StageBatch, list[tuple[str, type[Warning]]]]:
        """Run a batch of items through ``st``'s nodes (no lock held: stages run concurrently),
        checked to account for every item; with the warnings it reported (the caller hands
        them to the host in item order)."""
        s = self.stream
        with collecting_warnings() as caught:
            # (fused: one at a time; else every stage thread, replicas included, runs at once)
            stages = 1 if st is s.fused else sum(max(1, len(x.threads)) for x in s.stages)
            ctx = RunContext(self.tracker, stages=stages, cluster=self.cluster, checked=True)
            tracker = self.tracker
            tokens = (
                [tracker.prepare_for(self.backend, self.root, a, ctx.transfers) for a in args]
                if self.arrays
                else []
            )
            start = time.perf_counter()
            try:
                batch = self.backend.run_stage_batch(self.root, args, st.nodes, upstream, ctx)
            finally:
                for token in tokens:
                    tracker.finished(token)
            per_item = (time.perf_counter() - start) / len(args)
            # What replicas.allowed compares: the least recent time per item, let rise by a
            # tenth a batch, so that a batch another process delayed does not count.
            st.seconds = per_item if st.seconds is None else min(per_item, st.seconds * 1.1)
            st.batch = max(
                1, min(self.capacity, int(BATCH_SECONDS / per_item) if per_item > 0 else self.capacity)
            )
        return self._checked(batch, len(args)), caught

    def _checked(self, batch: StageBatch, count: int) -> StageBatch:
        """``batch``, if it accounts for each of its ``count`` items: a result, or the error
        that stopped it (a back end that lost items would leave pop waiting for them)."""
        ran = len(batch.produced)
        if len(batch.outputs) != ran or not (ran < count if batch.error is not None else ran == count):
            raise RuntimeError(
                f"{type(self.backend).__name__}.run_stage_batch returned {ran} result(s), "
                f"{len(batch.outputs)} output(s) and {'an' if batch.error else 'no'} error for "
                f"{count} item(s)"
            )
        return batch

    def run_fused(self, fused: Stage) -> None:
        """Run every item waiting in ``fused`` as one batch on the calling host thread (the
        lock held on entry and on return, released while it runs). A failure becomes the
        stream's, in item order; a slow batch sends the stream over to stage threads."""
        s = self.stream
        waiting = fused.args  # the first batches short (1, 2, 4... items): a slow stage shows soon
        args = [waiting.popleft() for _ in range(min(len(waiting), 1 << min(fused.index, 30)))]
        s.busy = True
        s.room.wake()
        s.lock.release()
        slow = False
        caught: list[tuple[str, type[Warning]]] = []
        try:
            # CPU time of this thread: not the turns of the GIL other threads take meanwhile
            # (and not a batch a full garbage collection ran in, nor the first: it may compile)
            start, collections = time.thread_time(), gc.get_stats()[2]["collections"]
            batch, caught = self.run(fused, args, [{}] * len(args))
            seconds = time.thread_time() - start
            if gc.get_stats()[2]["collections"] != collections or not fused.index:
                pass
            elif seconds > INLINE_SECONDS and seconds > INLINE_ITEM_SECONDS * len(args):
                fused.slow += 1
            else:
                fused.slow = 0
            slow = fused.slow >= INLINE_SLOW_BATCHES
            fused.index += 1
            outputs, error = batch.outputs, batch.error
        except KeyboardInterrupt:  # Ctrl-C in the middle of a batch: those items are lost
            outputs, error = [], StreamError("the stream was interrupted (Ctrl-C) while it ran items")
            s.fail(fused, error)
            raise
        except BaseException as e:  # the failure of the stream, never lost
            outputs, error = [], e
        finally:
            s.lock.acquire()
            s.busy = False
        fused.results.extend(self._as_tuples(outputs))  # type: ignore[union-attr]
        s.caught.extend(caught)
        if error is not None:
            s.lock.release()
            try:
                s.fail(fused, error)
            finally:
                s.lock.acquire()
        elif slow and not s.failed:
            _SLOW.add(s.root)  # its later launches start with threads
            s.unfuse()
        s.wake_all()

    def _as_tuples(self, outputs: list[dict[int, Any]]) -> list[tuple[Any, ...]]:
        """Root outputs by index as the tuples ``pop`` returns (made per batch, not per pop)."""
        count = len(self.out_range)
        if count == 1:
            return [(o[0],) for o in outputs]
        if count == 0:
            return [() for _ in outputs]
        return list(map(operator.itemgetter(*self.out_range), outputs))


class Stream:
    """A running streaming launch: its stages (``stagebuffers.py``) wired by their channels,
    run by stage threads (``stagethreads.py``) or fused on the host, their batches run by
    ``_Batches``, and the host's calls (push, pop, wait). ``lock``, ``room``, ``host``, the
    flags, ``fail``, ``wake_all`` and ``unfuse`` are shared with those collaborators."""

    def __init__(
        self,
        root: InternalFunction,
        backend: Backend,
        capacity: int,
        tracker: MemoryTracker,
        cluster: Callable[[], Any] | None = None,
    ):
        self.root, self.backend, self.capacity, self.tracker = root, backend, capacity, tracker
        self.cluster = cluster  # the runtime's Dask client hook (RunContext.cluster)
        self.error: BaseException | None = None
        self.failed = False
        self.closed = False
        self.abandoned = False  # cleanup: stages stop at once, dropping what they hold
        self._interrupted = False  # Ctrl-C reached the host in push/pop/wait: stop() waits for no stage
        self.pushed = 0
        self.popped = 0
        self.lock = threading.Lock()  # guards every buffer, counter and flag of the stream
        self.room = Signal(self.lock)  # push waits here while a stage's input is full
        self.host = Signal(self.lock)  # pop and wait wait here for results, or the end
        self.caught: list[tuple[str, type[Warning]]] = []  # issued on the host at pop/wait
        # The threads that can push: the one that launched the stream, every one that has
        # pushed to it, and every thread started since the launch (a producer thread may not
        # have pushed yet) that is not hpvm's own. A pop that nothing is in flight for waits
        # only while one of them other than the popping thread is alive; anything else would
        # wait forever. (Threads alive before the launch — Jupyter's, Dask's — cannot become
        # producers without pushing, and then they are tracked.)
        self.producers = Producers()
        plan = plan_stages(root)
        # More stages than cores whose items may run whole side by side, or that each fill
        # the machine, run as one stage (the module's docstring).
        whole = whole_items(backend, root, plan)
        staged = [[n for nodes in plan for n in nodes]] if whole or one_stage(backend, plan) else plan
        self.stages = self._build(staged)
        # Replicas (replicas.py): how many items of one stage may run at once at most — the
        # cores each stage's loops do not already take, or for whole items every core (each
        # replica's loops then get their share: ``Backend.run_stage`` is told how many
        # stage threads run).
        share = (
            max(1, backend.loop_threads() // len(staged))
            if any(n.dims > 0 for ns in staged for n in ns)
            else 1
        )
        self.replica_cores = machine_cores() if whole else machine_cores() // share
        self._loop = StageLoop(self)
        self.batches = _Batches(self)
        self._result_stages = [st for st in self.stages if st.results is not None]
        self._out_range = range(len(root.out_types))
        self._sid = next(_stream_ids)
        # Fused (see the module's docstring): every node in one stage that host calls run
        # (its index counts its batches); its results are the root outputs of whole items,
        # popped before any stage's.
        self.fused: Stage | None = None
        self._done: deque[Any] = deque()
        self.busy = False  # a host call is running a fused batch (one at a time: order)
        # The items a fused stream holds waiting: as many as its stages' buffers would hold
        # with threads, so that fusing keeps the memory bound and runs longer batches.
        # (Of the stages as planned: what may fuse on the host is what they hand each other.)
        self._fused_bound = capacity * len(plan)
        if fusable(root, backend, plan):
            nodes = [n for stage in plan for n in stage]
            self.fused = Stage(0, nodes, self.host, self.host, results=self._done)  # (no thread waits)
        else:
            self._start_threads()

    def _start_threads(self) -> None:
        for st in self.stages:
            self.start_thread(st)

    def start_thread(self, st: Stage) -> None:
        """Start a thread of ``st``: its first, or a replica (``stagethreads.py``, with the
        lock held: its ``live`` count is what says the stage has stopped)."""
        name = f"{THREAD_PREFIX}-{self._sid}-{st.index}" + (f".{len(st.threads)}" if st.threads else "")
        thread = internal_thread(self._loop.run, name, st)
        st.threads.append(thread)
        st.live += 1
        thread.start()

    def _build(self, plan: list[list[Node]]) -> list[Stage]:
        stages = [Stage(i, nodes, Signal(self.lock), Signal(self.lock)) for i, nodes in enumerate(plan)]
        if replicas.REPLICAS and self.backend.stage_replicas:
            for st in stages:
                st.policy = replicas.policy(self.root, st.nodes)
                st.prior = replicas.remembered(self.root, st.nodes)
        stage_of = {id(n): st for st in stages for n in st.nodes}
        links: set[tuple[int, int]] = set()
        for e in self.root.graph.edges:
            a, b = stage_of[id(e.src)], stage_of[id(e.dst)]
            if a is not b and (a.index, b.index) not in links:
                links.add((a.index, b.index))
                channel = Channel(a, b)
                a.outputs.append(channel)
                b.inputs.append(channel)
        bound = {id(b.src) for b in self.root.graph.out_binds}
        for st in stages:
            if not st.outputs or any(id(n) in bound for n in st.nodes):
                st.results = deque()  # unbounded: the host may pop late
        return stages

    # -- failures and wake-ups (shared with the stage threads' loop, stagethreads.py) ----

    def fail(self, st: Stage, error: BaseException | None) -> None:
        """``st`` stops at a failed item: its own (``error``) or one that failed upstream
        (``None``). The marker goes where that item's outputs would have gone; everyone is
        woken, so that nothing stays blocked waiting for it."""
        error = self.named(st, error) if error is not None else None
        with self.lock:
            self.mark_failed(st, error)

    @staticmethod
    def named(st: Stage, error: BaseException) -> BaseException:
        """``error`` as the stream reports it: an ``HPVMError`` as it is, anything else as a
        ``NodeExecutionError`` naming the stage's nodes."""
        if isinstance(error, HPVMError):
            return error
        names = ", ".join(n.name for n in st.nodes)
        wrapped = NodeExecutionError(f"stage running node(s) {names} raised {type(error).__name__}: {error}")
        wrapped.__cause__ = error
        return wrapped

    def mark_failed(self, st: Stage, error: BaseException | None) -> None:
        """``fail`` with the lock held and ``error`` already ``named``: the stage halts (its
        replicas drop the batches after this one)."""
        if error is not None and self.error is None:  # the first failure is the one reported
            self.error = error
        for channel in st.outputs:
            channel.items.append(FAILED)
        if st.results is not None:
            st.results.append(FAILED)
        st.halted = True
        self.failed = True
        self.wake_all()

    def wake_all(self) -> None:
        """Wake every waiter of the stream (the lock held): its state changed for all."""
        for st in self.stages:
            st.ready.wake()
            st.room.wake()
        self.room.wake()
        self.host.wake()

    def take_warnings(self) -> list[tuple[str, type[Warning]]]:
        """The warnings the stages reported since the last call (the runtime issues them)."""
        if not self.caught:
            return []
        with self.lock:
            caught, self.caught = self.caught, []
        return caught

    # -- fused on the host (the batches: _Batches.run_fused) ------------------------------

    def unfuse(self) -> None:
        """Go over to stage threads (the lock held, no fused batch running): the items not
        yet run go to every stage, after the fused results, which ``pop`` returns first."""
        fused, self.fused = self.fused, None
        assert fused is not None
        for st in self.stages:
            st.args.extend(fused.args)
        self._start_threads()

    # -- host side ----------------------------------------------------------------------

    def _push(self, args: Sequence[Any]) -> None:
        with self.lock:
            self.producers.add_current()  # (also while it waits for room)
            fused = self.fused
            if fused is not None and len(fused.args) < self._fused_bound and not (self.closed or self.failed):
                fused.args.append(args)  # the common case, fused: nothing else to check
                self.pushed += 1
                self.host.wake()
                return
            while True:
                if self.closed:
                    raise StreamError(
                        "push(): the stream was ended by hpvm.wait(); launch it again to push more"
                    )
                if self.failed:
                    self._raise_error("push")
                fused = self.fused
                if fused is not None:
                    if len(fused.args) < self._fused_bound:
                        break
                    if not self.busy:  # make room by running what waits
                        self.batches.run_fused(fused)
                        continue
                else:
                    for st in self.stages:
                        if len(st.args) >= self.capacity:
                            break
                    else:
                        break
                self.room.wait()
            if fused is not None:
                fused.args.append(args)
                self.host.wake()
            else:
                for st in self.stages:
                    st.args.append(args)
                    if st.fed():  # (a stage waiting for its upstream's outputs too is not woken)
                        st.ready.wake()
            self.pushed += 1
            if not self.stages:
                self.host.wake()

    def _pop(self, timeout: float | None = None) -> tuple[Any, ...]:
        deadline = None if timeout is None else time.monotonic() + timeout
        stages = self._result_stages
        with self.lock:
            while True:
                done = self._done  # fused results come first: they are the oldest items
                if done:
                    if done[0] is FAILED:
                        self._raise_error("pop")
                    self.popped += 1
                    return done.popleft()  # type: ignore[no-any-return]
                fused = self.fused
                if fused is None and self._can_pop(stages):
                    break
                if fused is not None and self.failed:
                    self._raise_error("pop")
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise StreamError("pop(): timed out waiting for a result")
                if fused is not None and fused.args and not self.busy:
                    self.batches.run_fused(fused)  # the result popped next is among them
                elif self.popped < self.pushed or self.failed:
                    self.host.wait(remaining)  # a result, the failure or a stop will come
                else:
                    self._check_can_arrive()
                    self.host.wait(_POLL if remaining is None else min(_POLL, remaining))
            self.popped += 1
            if not stages:  # a graph without children: an item is done once pushed
                return ()
            if len(stages) == 1:
                outputs = stages[0].results.popleft()  # type: ignore[union-attr]
            else:
                outputs = {}
                for st in stages:
                    outputs.update(st.results.popleft())  # type: ignore[union-attr]
        return tuple(map(outputs.__getitem__, self._out_range))

    def _can_pop(self, stages: list[Stage]) -> bool:
        """Whether the next result is there (the lock held); raises the stream's error when
        it is the failed item's, or when a stage that would deliver it has stopped."""
        if not stages:
            return self.popped < self.pushed
        ready = True
        for st in stages:
            results = st.results
            if results:
                if results[0] is FAILED:
                    self._raise_error("pop")
            elif self.failed and st.stopped:
                self._raise_error("pop")
            else:
                ready = False
        return ready

    def _check_can_arrive(self) -> None:
        """Raise instead of blocking forever when no result can ever come (nothing in flight)."""
        check_can_arrive(self.closed, self.pushed, self.producers)

    def _raise_error(self, api: str) -> None:
        """Raise the failure (set before any failure marker is sent or ``failed`` is set)."""
        raise_stream_failure(self.error, api)

    # push, pop and wait are host calls that Ctrl-C may interrupt: then cleanup does not wait
    # for the stages, which may sit in native code for as long as a leaf runs
    # (docs/semantics.md, "Ctrl-C"). (A plain ``try``, not a context manager: a push of a
    # small item costs a few microseconds, and a ``contextlib`` block as much again.)

    def push(self, args: Sequence[Any]) -> None:
        try:
            self._push(args)
        except KeyboardInterrupt:
            self._host_interrupted()
            raise

    def pop(self, timeout: float | None = None) -> tuple[Any, ...]:
        try:
            return self._pop(timeout)
        except KeyboardInterrupt:
            self._host_interrupted()
            raise

    def wait(self) -> None:
        try:
            self._wait()
        except KeyboardInterrupt:
            self._host_interrupted()
            raise

    def _host_interrupted(self) -> None:
        """Ctrl-C reached the host in push, pop or wait: stop() will wait for no stage, and
        the arrays of the items in flight are given up."""
        self._interrupted = True
        with self.lock:
            items = [a for st in self.stages for a in [*st.running, *st.args]]
        self.tracker.abandon([v for item in items for v in item if isinstance(v, np.ndarray)])

    def _wait(self) -> None:
        with self.lock:
            if not self.closed:
                self.closed = True
                self.wake_all()  # stages waiting for items end; a blocked push raises
            while (fused := self.fused) is not None and not self.failed and (fused.args or self.busy):
                if self.busy:
                    self.host.wait()
                else:
                    self.batches.run_fused(fused)
            while self.fused is None and not self.failed and not all(st.stopped for st in self.stages):
                self.host.wait()
            if self.failed:
                self._raise_error("wait")
        if self.fused is None and self.backend.stage_replicas:
            replicas.remember(self.root, [(st.nodes, st.seconds) for st in self.stages])
        for st in self.stages:  # every stage has stopped: its threads are ending
            for thread in st.threads:
                thread.join()

    def finished(self) -> bool:
        """Whether every stage thread has ended."""
        return not any(thread.is_alive() for st in self.stages for thread in st.threads)

    def stop(self) -> None:
        """Abandon the stream (cleanup): drop the items not yet run, end every stage thread."""
        with self.lock:
            self.abandoned = True
            self.closed = True
            if self.error is None:
                self.error = StreamError("the runtime was cleaned up while the stream ran")
            self.failed = True
            self.wake_all()
        if self._interrupted:
            return  # the host gave up on it: stages end when their current item does
        for st in self.stages:
            for thread in list(st.threads):
                thread.join(timeout=5)
