"""Streaming execution: the root's children as concurrent pipeline stages over bounded queues.

Each ``push`` supplies every root input for one execution of the graph. Children joined by
non-streaming edges run together in one stage (one after the other, per item); streaming
edges are bounded FIFO queues between stages, each stage a thread. Results go to an
unbounded host-side buffer, so a host that pushes many items before popping never
deadlocks; push blocks only while the first stage's input buffer is full.

An exception in a stage stops the pipeline: it is raised at the next pop or wait, naming
the node, and push raises too — nothing is left blocked. The failure travels down the
pipeline as a marker in item order, so the items pushed before the failing one are still
delivered by pop (even by slow stages) and the pop of the failing item raises.
"""

from __future__ import annotations

import graphlib
import itertools
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..backends.base import Backend, RunContext, collecting_warnings
from ..backends.memory import MemoryTracker
from ..errors import HPVMError, NodeExecutionError, StreamError
from ..ir.graph import InternalFunction, Node
from .workers import internal_thread, is_internal

_POLL = 0.05  # seconds between checks for failure while blocked
_END = object()
_FAILED = object()  # sent downstream (and to the host) in place of the item that failed
THREAD_PREFIX = "hpvm-stage"
_stream_ids = itertools.count()


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


@dataclass
class _Stage:
    index: int
    nodes: list[Node]
    args_in: queue.Queue = field(default_factory=queue.Queue)
    inputs: list[queue.Queue] = field(default_factory=list)  # from upstream stages
    outputs: list[queue.Queue] = field(default_factory=list)  # to downstream stages
    results: queue.Queue | None = None  # to the host (root outputs, or item completion)
    thread: threading.Thread | None = None


class Stream:
    """A running streaming launch."""

    def __init__(self, root: InternalFunction, backend: Backend, capacity: int, tracker: MemoryTracker):
        self.root, self.backend, self.capacity, self.tracker = root, backend, capacity, tracker
        self.error: BaseException | None = None
        self.failed = threading.Event()
        self.closed = False
        self.pushed = 0
        self.popped = 0
        self._push_lock = threading.Lock()
        self._pop_lock = threading.Lock()
        self._error_lock = threading.Lock()
        self._warnings: list[tuple[str, type[Warning]]] = []  # issued on the host at pop/wait
        # The threads that can push: the one that launched the stream, every one that has
        # pushed to it, and every thread started since the launch (a producer thread may not
        # have pushed yet) that is not hpvm's own. A pop that nothing is in flight for waits
        # only while one of them other than the popping thread is alive; anything else would
        # wait forever. (Threads alive before the launch — Jupyter's, Dask's — cannot become
        # producers without pushing, and then they are tracked.)
        self._producers: set[threading.Thread] = {threading.current_thread()}
        self._bystanders: set[threading.Thread] = set(threading.enumerate())
        self._producers_lock = threading.Lock()  # (not the push lock: a push may block)
        self.stages = self._build(plan_stages(root))
        sid = next(_stream_ids)
        for st in self.stages:
            st.thread = internal_thread(self._run_stage, f"{THREAD_PREFIX}-{sid}-{st.index}", st)
            st.thread.start()

    def _build(self, plan: list[list[Node]]) -> list[_Stage]:
        stages = [_Stage(i, nodes, queue.Queue(self.capacity)) for i, nodes in enumerate(plan)]
        stage_of = {id(n): st for st in stages for n in st.nodes}
        links: set[tuple[int, int]] = set()
        for e in self.root.graph.edges:
            a, b = stage_of[id(e.src)], stage_of[id(e.dst)]
            if a is not b and (a.index, b.index) not in links:
                links.add((a.index, b.index))
                q: queue.Queue = queue.Queue(self.capacity)
                a.outputs.append(q)
                b.inputs.append(q)
        bound = {id(b.src) for b in self.root.graph.out_binds}
        for st in stages:
            if not st.outputs or any(id(n) in bound for n in st.nodes):
                st.results = queue.Queue()  # unbounded: the host may pop late
        return stages

    # -- stage threads ------------------------------------------------------------------

    def _get(self, q: queue.Queue) -> Any:
        while True:
            try:
                return q.get(timeout=_POLL)
            except queue.Empty:
                if self.failed.is_set():
                    raise _Stopped() from None

    def _put(self, q: queue.Queue, item: Any) -> None:
        while True:
            try:
                q.put(item, timeout=_POLL)
                return
            except queue.Full:
                if self.failed.is_set():
                    raise _Stopped() from None

    def _run_stage(self, st: _Stage) -> None:
        try:
            while True:
                args = self._get(st.args_in)
                if args is _END:
                    for q in st.outputs:
                        self._put(q, _END)
                    return
                upstream: dict[str, Any] = {}
                upstream_failed = False
                for q in st.inputs:
                    item = self._get(q)
                    if item is _FAILED:
                        upstream_failed = True
                    else:
                        upstream.update(item)
                if upstream_failed:  # pass the failure on, in item order, and stop
                    self._send_failure(st)
                    return
                with collecting_warnings() as caught:
                    ctx = RunContext(self.tracker, stages=len(self.stages))
                    token = self.tracker.prepare_for(self.backend, self.root, args, ctx.transfers)
                    try:
                        produced, outputs = self.backend.run_stage(self.root, args, st.nodes, upstream, ctx)
                    finally:
                        self.tracker.finished(token)
                if caught:
                    with self._error_lock:
                        self._warnings.extend(caught)
                for q in st.outputs:
                    self._put(q, produced)
                if st.results is not None:
                    st.results.put(outputs)
        except _Stopped:
            return
        except BaseException as e:  # reported to the host at pop/wait, never lost
            if not isinstance(e, HPVMError):
                names = ", ".join(n.name for n in st.nodes)
                wrapped = NodeExecutionError(f"stage running node(s) {names} raised {type(e).__name__}: {e}")
                wrapped.__cause__ = e
                e = wrapped
            with self._error_lock:
                if self.error is None:  # the first failure is the one reported
                    self.error = e
            self._send_failure(st)
            self.failed.set()

    def _send_failure(self, st: _Stage) -> None:
        """Put the failure marker where this stage's next item would go. Never blocks: when a
        bounded queue is full its consumer still has items to process, then finds the queue
        empty with ``failed`` set and stops; pop treats a stopped stage as failed."""
        for q in st.outputs:
            try:
                q.put_nowait(_FAILED)
            except queue.Full:
                pass
        if st.results is not None:
            st.results.put(_FAILED)

    def take_warnings(self) -> list[tuple[str, type[Warning]]]:
        """The warnings the stages reported since the last call (the runtime issues them)."""
        with self._error_lock:
            caught, self._warnings = self._warnings, []
        return caught

    # -- host side ----------------------------------------------------------------------

    def push(self, args: Sequence[Any]) -> None:
        if self.closed:
            raise StreamError("push(): the stream was ended by hpvm.wait(); launch it again to push more")
        self._raise_if_failed("push")
        with self._producers_lock:
            self._producers.add(threading.current_thread())
        with self._push_lock:
            try:
                for st in self.stages:
                    self._put(st.args_in, args)
            except _Stopped:
                self._raise_if_failed("push")
            self.pushed += 1

    def pop(self, timeout: float | None = None) -> tuple[Any, ...]:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._pop_lock:
            if not any(st.results is not None for st in self.stages):
                # A graph without children: an item is done once pushed. Count them, so
                # that pop still says when nothing can come instead of returning () forever.
                while self.popped >= self.pushed:
                    self._check_can_arrive(deadline)
                    time.sleep(_POLL)
                self.popped += 1
                return ()
            merged: dict[int, Any] = {}
            for st in self.stages:
                if st.results is None:
                    continue
                merged.update(self._next_result(st, deadline))
            self.popped += 1
        return tuple(merged[i] for i in range(len(self.root.out_types)))

    def _next_result(self, st: _Stage, deadline: float | None) -> dict[int, Any]:
        """The next result of ``st``; raises the stream's error once ``st`` can deliver no more."""
        while True:
            try:
                item = st.results.get(timeout=_POLL)  # type: ignore[union-attr]
            except queue.Empty:
                if not self.failed.is_set():
                    self._check_can_arrive(deadline)
                    continue
                # After a failure a stage still delivers the items before the failing one,
                # then the failure marker, then stops: wait for it unless it has stopped.
                if st.thread is not None and st.thread.is_alive():
                    if deadline is not None and time.monotonic() > deadline:
                        raise StreamError("pop(): timed out waiting for a result") from None
                    continue
                try:
                    item = st.results.get_nowait()  # type: ignore[union-attr]
                except queue.Empty:
                    item = _FAILED
            if item is _FAILED:
                self._raise_error("pop")
            return item

    def _check_can_arrive(self, deadline: float | None) -> None:
        """Raise instead of blocking forever when no result can ever come."""
        if deadline is not None and time.monotonic() > deadline:
            raise StreamError("pop(): timed out waiting for a result")
        if self.popped < self.pushed:
            return  # an item is in flight: its result will come (or its error)
        if self.closed:
            raise StreamError(
                f"pop(): all {self.pushed} pushed item(s) have been popped and the stream has ended"
            )
        if not self._other_producer_alive():
            raise StreamError(
                f"pop(): all {self.pushed} pushed item(s) have been popped and no other thread "
                "that launched or pushed to this stream is running, so this pop would wait "
                "forever; push before popping"
            )

    def _other_producer_alive(self) -> bool:
        me = threading.current_thread()
        with self._producers_lock:
            if any(t is not me and t.is_alive() for t in self._producers):
                return True
        return any(
            t is not me and t not in self._bystanders and not is_internal(t) for t in threading.enumerate()
        )

    def _raise_if_failed(self, api: str) -> None:
        if self.failed.is_set():
            self._raise_error(api)

    def _raise_error(self, api: str) -> None:
        """Raise the failure (set before any failure marker is sent or ``failed`` is set)."""
        err = self.error
        if isinstance(err, HPVMError):
            raise err
        raise StreamError(f"{api}(): the stream failed: {err}") from err

    def wait(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                with self._push_lock:
                    for st in self.stages:
                        self._put(st.args_in, _END)
            except _Stopped:
                pass
        for st in self.stages:
            while st.thread is not None and st.thread.is_alive():
                st.thread.join(timeout=_POLL)
                if self.failed.is_set():
                    break
        self._raise_if_failed("wait")

    def finished(self) -> bool:
        """Whether every stage thread has ended."""
        return not any(st.thread is not None and st.thread.is_alive() for st in self.stages)

    def stop(self) -> None:
        """Abandon the stream (cleanup): stop every stage thread."""
        self.closed = True
        if self.error is None:
            self.error = StreamError("the runtime was cleaned up while the stream ran")
        self.failed.set()
        for st in self.stages:
            if st.thread is not None:
                st.thread.join(timeout=5)


class _Stopped(Exception):
    """Raised inside a stage thread when the stream failed elsewhere."""
