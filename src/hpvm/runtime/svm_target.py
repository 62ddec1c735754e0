"""``target="svm"``: a streaming launch compiled onto the Streaming Virtual Machine (the
HLC → SVM mapping of seed 003; docs/svm.md, "The HLC mapping").

The pipeline stages of ``plan_stages`` become SVM user kernels on stream processors, the
streaming edges between them SVM streams on FIFOs or in memories that both processors
reach, placed by ``hpvm.svm.mapping`` from the machine's metadata. A stage kernel runs its
leaves through an existing back end (``cpu`` where Numba is installed, else ``interp``)
with ``run_stage_batch`` and a ``RunContext``, exactly as a stage thread of
``runtime.streaming`` does: the SVM decides *where* and *in which order* items move, the
back end computes them.

**Elements.** Every stream carries *item numbers*: an element with number *n* on a stream
says "item *n* is ready there". Values whose size the program's types fix (scalars, and
per-instance scalars of constant replication) travel *by value* in the same element, a
structured record in the stream's SVM memory (``svm_values``); the others (arrays, sizes
that change per push, root arguments) stay in host-side tables keyed by the number. The
streams carry all the synchronisation: a stage waits until its input streams hold an
item, a full stream stalls its writer (back-pressure), the EOS tag ends the pipeline.
Every stream carries the items in one order, that of the host's pushes.

This glue lives in ``hpvm.runtime``: the import contract lets ``runtime`` import both
``backends`` and ``svm``, which must not import each other. It is imported only by a launch
with ``target="svm"`` (``import hpvm`` stays cheap).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .. import svm
from ..backends import backend_for_hint, get_backend
from ..backends.base import Backend, RunContext, StageBatch, check_bodies, collecting_warnings
from ..backends.memory import MemoryTracker
from ..errors import HPVMError, LaunchError, NodeExecutionError, StreamError
from ..ir.graph import InternalFunction, Node
from ..svm.mapping import HOST, Mapping, map_pipeline
from . import replicas
from .streaming import (
    BATCH_SECONDS,
    Producers,
    check_can_arrive,
    machine_cores,
    one_stage,
    plan_stages,
    raise_stream_failure,
    streaming_root,
    whole_items,
)
from .svm_values import SEQ, Layout, Layouts

MACHINE_VARIABLE = "HPVM_SVM_MACHINE"
LEAVES_VARIABLE = "HPVM_SVM_LEAVES"
CHECK_VARIABLE = "HPVM_SVM_CHECK"  # set (not "0"): run the mapped program in assertion mode
_END = -1  # the element pushed (tagged EOS) after the last item: the stream has ended
_FAILED = object()  # in a table, in place of the values of an item that failed
_POLL = 0.05  # seconds: a pop with nothing in flight checks that a producer thread lives


def machine_from_environment() -> svm.Machine:
    """The machine ``HPVM_SVM_MACHINE`` names (a TOML path or a shipped machine's name);
    "this computer" when it is unset, empty or ``this``."""
    spec = os.environ.get(MACHINE_VARIABLE, "").strip()
    if spec in ("", "this"):
        return svm.this_computer()
    try:
        return svm.load_machine(spec)
    except svm.SVMError as exc:
        raise svm.SVMError(f"{MACHINE_VARIABLE}={spec!r}: {exc}") from None


def stage_names(stages: list[list[Node]]) -> list[str]:
    return [f"stage{i} ({', '.join(n.name for n in nodes)})" for i, nodes in enumerate(stages)]


def stage_edges(root: InternalFunction, stages: list[list[Node]]) -> tuple[list[tuple[int, int]], list[int]]:
    """The (producer, consumer) stage pairs joined by edges, and the stages whose nodes give
    root outputs or that feed no other stage (their items are done when they finish)."""
    stage_of = {id(n): i for i, nodes in enumerate(stages) for n in nodes}
    edges: list[tuple[int, int]] = []
    for e in root.graph.edges:
        pair = (stage_of[id(e.src)], stage_of[id(e.dst)])
        if pair[0] != pair[1] and pair not in edges:
            edges.append(pair)
    bound = {stage_of[id(b.src)] for b in root.graph.out_binds}
    feeding = {a for a, _ in edges}
    results = sorted(bound | {i for i in range(len(stages)) if i not in feeding})
    return edges, results


def plan(root: InternalFunction, machine: svm.Machine, capacity: int) -> tuple[list[list[Node]], Mapping]:
    """The stages of ``root`` (its nested pipelines inlined: ``streaming_root``) and their
    mapping onto ``machine`` (its report says what each stream carries by value and by
    reference)."""
    stages, mapping, _ = plan_with_layouts(streaming_root(root), machine, capacity)
    return stages, mapping


def plan_with_layouts(
    root: InternalFunction, machine: svm.Machine, capacity: int, backend: Backend | None = None
) -> tuple[list[list[Node]], Mapping, dict[str, Layout]]:
    """``plan``, and each stream's ``Layout`` (by stream name): the mapper sizes each
    stream's elements by it. With ``backend`` (the one the kernels run leaves with), stages
    that each fill the host's cores run as one kernel, as ``runtime.streaming`` runs them
    as one stage thread (``one_stage``): kernels on processors of their own would each get
    ``cores // kernels`` of the cores for their loops, and the stream would be bound by its
    largest kernel on one core (edge detection on a 2-core "this computer": two kernels of
    three stages, 1.35x cpu's time, the smoothing's kernel 60-70 % of the work)."""
    stages = plan_stages(root)
    edges, results = stage_edges(root, stages)
    layouts = Layouts(root, stages)
    fused = backend is not None and one_stage(backend, stages)
    mapping = map_pipeline(
        machine,
        stage_names(stages),
        edges,
        results,
        capacity,
        layouts.element_bytes,
        max_kernels=1 if fused else None,
    )
    members = {k.name: k.stages for k in mapping.kernels}
    by_stream = {p.name: layouts.get(members.get(p.src), members.get(p.dst)) for p in mapping.streams}
    mapping.carried = {name: layout.report for name, layout in by_stream.items()}
    return stages, mapping, by_stream


def run_nodes(stage_nodes: list[list[Node]], kernels: int) -> list[list[Node]]:
    """The node lists a kernel running ``stage_nodes`` hands the back end per batch, in
    order: the one kernel of a stream (its stages fill the machine one after the other) all
    of them in one call, as ``runtime.streaming`` runs the stages it fuses — a call per
    stage set each item up once per stage (docs/svm.md §6); else a call per stage."""
    return [[n for nodes in stage_nodes for n in nodes]] if kernels == 1 else stage_nodes


class _StageKernel(svm.Kernel):
    """A kernel running one or more consecutive stages; ``ins`` / ``outs`` are its streams
    (data members, so that the assertion mode sees them)."""

    ins: list[svm.Stream]
    outs: list[svm.Stream]
    in_names: list[str]  # the input streams from other kernels (they have value tables)
    all_in: list[str]  # the names of ``ins``
    out_names: list[str]
    stage_nodes: list[list[Node]]
    run_nodes: list[list[Node]]  # the node lists it hands the back end per batch, in order
    handed: int = 0  # items handed on: the position (in stream order) of the next one


class SVMStream:
    """A running streaming launch on the SVM: the host side of ``push`` / ``pop`` / ``wait``
    (the interface of ``runtime.streaming.Stream``)."""

    def __init__(
        self,
        root: InternalFunction,
        backend: Backend,
        capacity: int,
        tracker: MemoryTracker,
        machine: svm.Machine | None = None,
    ) -> None:
        self.root, self.backend, self.capacity, self.tracker = root, backend, capacity, tracker
        self.machine = machine if machine is not None else machine_from_environment()
        self.stages, self.mapping, self.layouts = plan_with_layouts(root, self.machine, capacity, backend)
        self._params = [p.name for p in root.params]
        #: one kernel running every stage, whose items may run whole side by side
        #: (``_loop_side_by_side``): the policy that says when two of them may
        self.whole = (
            replicas.policy(root, [n for nodes in self.stages for n in nodes])
            if len(self.mapping.kernels) == 1 and whole_items(backend, root, self.stages)
            else None
        )
        self.cores = machine_cores()
        self._helpers: ThreadPoolExecutor | None = None  # (made by the first batch side by side)
        self.error: BaseException | None = None
        self.failed = False
        self.fail_at: int | None = None  # the position of the item that failed
        self.closed = False
        self.pushed = 0
        self.popped = 0
        self._cond = threading.Condition()  # guards the tables, counters and flags below
        self._args: dict[int, list[Any]] = {}  # seq -> [root arguments, kernels still to run it]
        self._tables: dict[str, dict[int, Any]] = {s.name: {} for s in self.mapping.streams}
        self._delivered: dict[str, int] = {}  # result stream -> results delivered
        self._drained: dict[str, deque[Any]] | None = None  # after wait: results not yet popped
        self._warnings: list[tuple[str, type[Warning]]] = []
        self._arrays = bool(root.array_params())
        self._ended = False
        self._start()
        # (threads alive now, the SVM's included, are bystanders; processors started later too)
        self.producers = Producers(ignore=lambda t: t.name.startswith("svm-"))

    # -- building the SVM program ---------------------------------------------------------

    def _start(self) -> None:
        try:
            running = svm.current_machine()
        except svm.SVMError:
            running = None
        if running is not None:
            raise svm.SVMError(
                f"launch(target='svm'): the SVM is already running (machine {running.name!r}): "
                "one streaming launch at a time owns it; hpvm.wait() the other stream, or "
                "svm.cleanup() your own SVM program, before launching"
            )
        svm.init(self.machine, check=os.environ.get(CHECK_VARIABLE, "") not in ("", "0"))
        try:
            self.streams: dict[str, svm.Stream] = {}
            for place in self.mapping.streams:
                s = svm.Stream()
                s.name = place.name
                dtype = self.layouts[place.name].dtype
                if place.kind == "FIFO":
                    svm.stream_init_fifo(s, place.location, dtype)
                else:
                    svm.stream_init_ram(s, place.location, place.address, place.capacity, dtype)
                self.streams[place.name] = s
                if place.to_host:
                    self._delivered[place.name] = 0
            self.inputs = [self.streams[p.name] for p in self.mapping.streams if p.src == HOST]
            self.results = [p.name for p in self.mapping.streams if p.to_host]
            self.kernels: list[_StageKernel] = []
            for place in self.mapping.kernels:
                k = _StageKernel()
                k.ins = [self.streams[p.name] for p in self.mapping.streams if p.dst == place.name]
                k.outs = [self.streams[p.name] for p in self.mapping.streams if p.src == place.name]
                k.in_names = [p.name for p in self.mapping.streams if p.dst == place.name and p.src != HOST]
                k.all_in = [p.name for p in self.mapping.streams if p.dst == place.name]
                k.out_names = [p.name for p in self.mapping.streams if p.src == place.name]
                k.stage_nodes = [self.stages[i] for i in place.stages]
                k.run_nodes = run_nodes(k.stage_nodes, len(self.mapping.kernels))
                svm.kernel_init(k, place.processor, None, self._work, name=place.name)
                self.kernels.append(k)
            for k in self.kernels:
                svm.kernel_run(k)
        except BaseException:
            svm.cleanup()
            raise

    # -- the stage kernels ----------------------------------------------------------------

    def _work(self, k: _StageKernel) -> None:
        """The work function of a stage kernel: take the items its input streams announce
        (a batch of those waiting), run its stages, announce them downstream."""
        try:
            self._loop(k)
        except BaseException as exc:  # after a failure elsewhere, an SVM error here is its echo
            if not self.failed:  # the items ``k`` handed on went on; the next one cannot
                self._fail(k, k.handed, exc)
            raise

    def _loop(self, k: _StageKernel) -> None:
        batch = 1
        first = k.ins[0]
        while True:
            svm.stream_peek(first, 0)  # wait for an item (or the end)
            todo, popped, ending = self._take(k, max(1, min(batch, len(first))))
            if todo:
                start = time.perf_counter()
                if not self._run_items(k, todo, popped):
                    return
                per_item = (time.perf_counter() - start) / len(todo)
                batch = max(
                    1, min(self.capacity, int(BATCH_SECONDS / per_item) if per_item > 0 else self.capacity)
                )
                if not ending and self.whole is not None and per_item >= replicas.REPLICA_SECONDS:
                    self._loop_side_by_side(k)
                    return
            if ending:
                self._push_end(k)
                return

    def _take(self, k: _StageKernel, count: int) -> tuple[list[int], dict[str, np.ndarray], bool]:
        """Pop the next ``count`` elements of each of ``k``'s input streams: the numbers of
        the items they announce, the elements by stream name, and whether the end came."""
        popped = {k.all_in[0]: svm.stream_pop_many(k.ins[0], count)}
        for name, other in zip(k.all_in[1:], k.ins[1:]):
            popped[name] = svm.stream_pop_many(other, count)  # the same numbers, in the same order
        seqs = self._seqs(k.all_in[0], popped[k.all_in[0]])
        ending = int(seqs[-1]) == _END
        return [int(s) for s in (seqs[:-1] if ending else seqs)], popped, ending

    def _push_end(self, k: _StageKernel) -> None:
        for name, s in zip(k.out_names, k.outs):
            svm.stream_push_with_eos(s, self._end_element(name))

    def _loop_side_by_side(self, k: _StageKernel) -> None:
        """The rest of the stream, for a kernel that runs every stage and whose items may run
        whole side by side (``self.whole``: ``streaming.whole_items``' rule), items that take
        at least ``replicas.REPLICA_SECONDS`` each: each item is one back-end call on a
        helper thread, as many running at once as there are cores, each call's loops on its
        share of them — as ``runtime.streaming`` runs such a stream's replicas. The kernel
        keeps up to twice that many items in flight (a helper that ends an item starts the
        next at once), hands them on in item order, and takes an item that shares an array
        it writes with one in flight (``replicas.py``) only once those are handed on.

        Why: on 2 cores the edge detection's six stages as one kernel ran each frame's
        loops on both cores, one frame after the other: 1.33x the same stream's time on
        ``cpu``, whose frames run whole, two at once. Taking two items and waiting for both
        gained little on a busy host: a core idled whenever one of the two was slower.

        A failure stops the kernel at that item: the items after it that already ran are
        dropped (what they wrote into their own arrays stays written), as with replicas."""
        if self._helpers is None:
            self._helpers = ThreadPoolExecutor(self.cores, thread_name_prefix="svm-item")
        assert self.whole is not None and len(k.run_nodes) == 1
        first, (nodes,) = k.ins[0], k.run_nodes
        flight: deque[tuple[int, list[Any], Any, Any]] = deque()  # (seq, args, envs, future)
        ending = False
        while True:
            if not ending and len(flight) < 2 * self.cores and (len(first) or not flight):
                svm.stream_peek(first, 0)  # (waits only when nothing is in flight)
                todo, popped, ending = self._take(k, 1)
                if not todo:
                    continue
                seq = todo[0]
                args, envs, failed_at = self._ready(k, todo, popped)
                mine = self.whole.footprint(args, envs) if failed_at else None
                while (
                    flight
                    and mine is not None
                    and any(mine.overlaps(self.whole.footprint(a, e)) for _, a, e, _ in flight)
                ):
                    if not self._hand_on_first(k, flight):
                        return
                if not failed_at:  # (an item that failed upstream: its marker goes on after those before it)
                    while flight:
                        if not self._hand_on_first(k, flight):
                            return
                    self._hand_on(k, todo, envs, [], args, 0, None)
                    return
                future = self._helpers.submit(self._call, nodes, args, envs, self.cores)
                flight.append((seq, args, envs, future))
            elif flight:
                if not self._hand_on_first(k, flight):
                    return
            else:
                self._push_end(k)
                return

    def _hand_on_first(self, k: _StageKernel, flight: deque[tuple[int, list[Any], Any, Any]]) -> bool:
        """Wait for the oldest item in flight and hand it on; False: it failed (the items
        after it are dropped) — the kernel stops."""
        seq, args, envs, future = flight.popleft()
        batch, caught = future.result()
        self._keep_warnings(caught)
        outputs: list[dict[int, Any]] = [dict(o) for o in batch.outputs]
        for env, produced in zip(envs, batch.produced):
            env.update(produced)
        ok = self._hand_on(k, [seq], envs, outputs, args, len(batch.produced), batch.error)
        if not ok:
            self._drop(flight)
        return ok

    def _drop(self, flight: deque[tuple[int, list[Any], Any, Any]]) -> None:
        """Let the items still in flight end, and forget them (an item before them failed)."""
        for *_, future in flight:
            future.result()
        flight.clear()

    def _seqs(self, name: str, elements: np.ndarray) -> np.ndarray:
        """The item numbers of elements popped from stream ``name``."""
        return elements if self.layouts[name].plain else elements[SEQ]

    def _end_element(self, name: str) -> Any:
        """The element that ends stream ``name`` (pushed tagged EOS): item number -1."""
        layout = self.layouts[name]
        if layout.plain:
            return np.int64(_END)
        record = np.zeros(1, layout.dtype)
        record[SEQ] = _END
        return record[0]

    def _run_items(self, k: _StageKernel, seqs: list[int], popped: dict[str, np.ndarray]) -> bool:
        """Run ``seqs`` through ``k``'s stages and announce them; False: the kernel stops
        (an item failed, here or upstream). ``popped``: their elements, by stream name."""
        args, envs, failed_at = self._ready(k, seqs, popped)
        error = None
        outputs: list[dict[int, Any]] = [{} for _ in range(failed_at)]
        ran = failed_at
        for nodes in k.run_nodes:
            if not ran:
                break
            batch = self._execute(nodes, args[:ran], envs[:ran])
            for j, (produced, outs) in enumerate(zip(batch.produced, batch.outputs)):
                envs[j].update(produced)
                outputs[j].update(outs)
            if batch.error is not None:
                ran, error = len(batch.produced), batch.error
        return self._hand_on(k, seqs, envs, outputs, args, ran, error)

    def _ready(
        self, k: _StageKernel, seqs: list[int], popped: dict[str, np.ndarray]
    ) -> tuple[list[Any], list[dict[str, Any]], int]:
        """The items' root arguments, their values from upstream kernels (by reference from
        the tables, by value from ``popped``), and how many come before the first that
        failed upstream."""
        envs: list[dict[str, Any]] = [{} for _ in seqs]
        failed_at = len(seqs)
        refs: dict[str, list[Any]] = {}
        with self._cond:
            args = [self._args[seq][0] for seq in seqs]
            for name in k.in_names:
                table = self._tables[name]
                refs[name] = [table.pop(seq, None) for seq in seqs]
        for values in refs.values():
            if _FAILED in values:
                failed_at = min(failed_at, values.index(_FAILED))
        for name, values in refs.items():
            layout = self.layouts[name]
            if layout.plain:
                for env, value in zip(envs[:failed_at], values):
                    env.update(value)
            else:
                layout.unpack_into(self.backend, popped[name], values, args, self._params, envs[:failed_at])
        return args, envs, failed_at

    def _hand_on(
        self,
        k: _StageKernel,
        seqs: list[int],
        envs: list[Any],
        outputs: list[Any],
        args: list[Any],
        ran: int,
        error: BaseException | None,
    ) -> bool:
        """Announce the first ``ran`` of ``seqs``; the one after them, if any, failed (with
        ``error`` here, or upstream): the stream fails there, its marker goes on, and False
        says the kernel stops."""
        if error is not None:
            self._fail(k, k.handed + ran, error)  # (its position: ``k`` takes items in order)
        self._announce(k, seqs[:ran], envs, outputs, args)
        if ran < len(seqs):  # the item at ``ran`` failed: pass the marker on and stop
            self._announce(k, [seqs[ran]], [_FAILED], [_FAILED], [None])
            return False
        return True

    def _announce(
        self, k: _StageKernel, seqs: list[int], envs: list[Any], outputs: list[Any], args: list[Any]
    ) -> None:
        """Put the items' values by reference in ``k``'s output tables, then their elements
        (numbers, and values by value) on its streams."""
        if not seqs:
            return
        k.handed += len(seqs)
        elements: dict[str, Any] = {}
        kept: dict[str, list[Any]] = {}
        for name in k.out_names:
            layout = self.layouts[name]
            values = outputs if name in self._delivered else envs
            if layout.plain:
                elements[name], kept[name] = np.array(seqs, dtype=np.int64), values
            elif name in self._delivered:
                elements[name], kept[name] = layout.pack_outputs(seqs, values)
            else:
                elements[name], kept[name] = layout.pack(self.backend, seqs, values, args, self._params)
        with self._cond:
            for seq in seqs:
                entry = self._args[seq]
                entry[1] -= 1
                if entry[1] == 0:
                    del self._args[seq]
            for name in k.out_names:
                table = self._tables[name]
                for seq, value in zip(seqs, kept[name]):
                    if value is not None:  # (nothing by reference: the element is the item)
                        table[seq] = value
        for name, s in zip(k.out_names, k.outs):
            svm.stream_push_many(s, elements[name])
            if name in self._delivered:
                with self._cond:
                    self._delivered[name] += len(seqs)
                    self._cond.notify_all()

    def _execute(self, nodes: list[Node], args: list[Any], upstream: list[dict[str, Any]]) -> StageBatch:
        """One ``run_stage_batch`` of the delegate back end (as ``Stream._execute``), its
        loops spread over the cores the kernels leave it."""
        batch, caught = self._call(nodes, args, upstream, len(self.kernels))
        self._keep_warnings(caught)
        return batch

    def _keep_warnings(self, caught: list[tuple[str, type[Warning]]]) -> None:
        if caught:
            with self._cond:
                self._warnings.extend(caught)

    def _call(
        self, nodes: list[Node], args: list[Any], upstream: list[dict[str, Any]], sharing: int
    ) -> tuple[StageBatch, list[tuple[str, type[Warning]]]]:
        """One ``run_stage_batch``, with the warnings it reported; ``sharing``: how many
        calls share the cores now (the back end gives each call's loops its part of them)."""
        with collecting_warnings() as caught:
            ctx = RunContext(self.tracker, stages=sharing, checked=True)
            tracker = self.tracker
            tokens = (
                [tracker.prepare_for(self.backend, self.root, a, ctx.transfers) for a in args]
                if self._arrays
                else []
            )
            try:
                batch = self.backend.run_stage_batch(self.root, args, nodes, upstream, ctx)
            except BaseException as exc:  # a back end that raises instead of reporting
                batch = StageBatch([], [], exc)
            finally:
                for token in tokens:
                    tracker.finished(token)
        return batch, caught

    def _fail(self, k: _StageKernel, position: int, error: BaseException) -> None:
        """The stream fails at the item at ``position`` (in stream order): pop raises
        ``error`` there, push and wait raise it from now on."""
        if not isinstance(error, HPVMError):
            names = ", ".join(n.name for nodes in k.stage_nodes for n in nodes)
            wrapped = NodeExecutionError(
                f"SVM kernel running node(s) {names} raised {type(error).__name__}: {error}"
            )
            wrapped.__cause__ = error
            error = wrapped
        with self._cond:
            if self.fail_at is None or position < self.fail_at:  # the earliest item's failure wins
                self.error, self.fail_at = error, position
            self.failed = True
            self._cond.notify_all()

    # -- host side ------------------------------------------------------------------------

    def push(self, args: Sequence[Any]) -> None:
        """Number the item, keep its arguments, and push its number onto every input stream
        from the host at once (one multicast). Items are in the order of those multicasts:
        with several pushing threads that may differ from the order of their numbers,
        which is why nothing downstream compares numbers with positions."""
        with self._cond:
            self.producers.add_current()
            if self.closed:
                raise StreamError("push(): the stream was ended by hpvm.wait(); launch it again to push more")
            if self.failed:
                self._raise_error("push")
            seq = self.pushed
            self._args[seq] = [args, len(self.kernels)]
            self.pushed += 1
        try:
            svm.stream_push_multicast(np.int64(seq), *self.inputs)  # stalls while a stream is full
        except svm.SVMError:
            if self.failed:
                self._raise_error("push")
            raise

    def pop(self, timeout: float | None = None) -> tuple[Any, ...]:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self.failed and self.fail_at is not None and self.popped >= self.fail_at:
                    self._raise_error("pop")
                if all(n > self.popped for n in self._delivered.values()):
                    break
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise StreamError("pop(): timed out waiting for a result")
                if self.popped < self.pushed:
                    self._cond.wait(remaining)
                else:
                    self._check_can_arrive()
                    self._cond.wait(_POLL if remaining is None else min(_POLL, remaining))
            self.popped += 1
            # Every result stream holds this item now (so these pops do not wait), and at
            # its front: every stream carries the items in the order of the host's pushes.
            outputs: dict[int, Any] = {}
            seqs = set()
            for name in self.results:
                drained = self._drained
                element = (
                    drained[name].popleft() if drained is not None else svm.stream_pop(self.streams[name])
                )
                layout = self.layouts[name]
                seq = int(element if layout.plain else element[SEQ])
                seqs.add(seq)
                value = self._tables[name].pop(seq, None)
                if value is _FAILED:
                    self._raise_error("pop")
                outputs.update(value if layout.plain else layout.unpack_outputs(element, value or {}))
            assert len(seqs) <= 1, f"result streams disagree on the next item: {sorted(seqs)}"
        return tuple(outputs[i] for i in range(len(self.root.out_types)))

    def _check_can_arrive(self) -> None:
        """Raise instead of waiting for ever: nothing is in flight (the condition held)."""
        check_can_arrive(self.closed, self.pushed, self.producers)

    def _raise_error(self, api: str) -> None:
        raise_stream_failure(self.error, api)

    def wait(self) -> None:
        with self._cond:
            first = not self.closed
            self.closed = True
            failed = self.failed
        if self._ended:
            if failed:
                self._raise_error("wait")
            return
        try:
            if first and not failed:
                svm.stream_push_multicast_with_eos(np.int64(_END), *self.inputs)
            if not failed:
                svm.kernel_wait_multiple(*self.kernels)
        except svm.SVMError:
            if not self.failed:
                raise
        finally:
            self._end()
        if self.failed:
            self._raise_error("wait")

    def _end(self) -> None:
        """End every kernel (after a failure, at its next SVM operation), keep the results
        not popped yet for later pops, and end the SVM."""
        if self._ended:
            return
        try:
            if self.failed:
                self._await_items_before_failure()
                for k in self.kernels:
                    svm.kernel_end(k)
                try:
                    svm.kernel_wait_multiple(*self.kernels)
                except svm.SVMError:
                    pass  # a kernel's own failure: already the stream's, or its echo
            drained: dict[str, deque[Any]] = {}
            for name in self.results:
                s = self.streams[name]
                left = svm.stream_pop_many(s, len(s))
                drained[name] = deque(v for v, n in zip(left, self._seqs(name, left)) if int(n) != _END)
        finally:
            svm.cleanup()
            self._stop_helpers()
        with self._cond:
            self._drained = drained
            for name, left in drained.items():  # (a kernel may have counted one it could not push)
                self._delivered[name] = self.popped + len(left)
            self._ended = True

    def _await_items_before_failure(self) -> None:
        """After a failure, kernels downstream of it still carry the items before it: let them
        deliver those while they make progress (ending them now would lose items ``pop`` must
        still return), then stop waiting — a kernel stuck on a full stream makes none."""
        quiet = 0.5  # seconds without a delivery that count as "no more progress"
        with self._cond:
            last, since = dict(self._delivered), time.monotonic()
            while self.fail_at is not None and any(n < self.fail_at for n in self._delivered.values()):
                self._cond.wait(quiet / 5)
                if self._delivered != last:
                    last, since = dict(self._delivered), time.monotonic()
                elif time.monotonic() - since >= quiet:
                    return

    def finished(self) -> bool:
        return self._ended

    def stop(self) -> None:
        """Abandon the stream (``hpvm.cleanup``): end every kernel and the SVM."""
        with self._cond:
            self.closed = True
            if self.error is None:
                self.error = StreamError("the runtime was cleaned up while the stream ran")
            self.failed = True
            self._cond.notify_all()
        if not self._ended:
            self._ended = True
            svm.cleanup()
            self._stop_helpers()

    def _stop_helpers(self) -> None:
        """End the threads that ran items side by side (once the kernel has stopped: none
        is running one then, or it ends with its item)."""
        helpers, self._helpers = self._helpers, None
        if helpers is not None:
            helpers.shutdown(wait=True)  # (idle by now, or ending the item they run)

    def take_warnings(self) -> list[tuple[str, type[Warning]]]:
        if not self._warnings:
            return []
        with self._cond:
            caught, self._warnings = self._warnings, []
        return caught


class SVMTarget:
    """What a ``target="svm"`` handle shows as its back end: the SVM, and the back end its
    kernels run the leaves with."""

    def __init__(self, delegate: Backend) -> None:
        self.delegate = delegate
        self.name = f"svm (leaves on {delegate.name})"


def delegate_backend(root: InternalFunction) -> Backend:
    """The back end the stage kernels run leaves with: ``HPVM_SVM_LEAVES`` if set, else
    ``cpu`` if available, else ``interp``."""
    name = os.environ.get(LEAVES_VARIABLE, "").strip() or backend_for_hint(None)
    if name not in ("cpu", "interp"):
        raise LaunchError(
            f"{LEAVES_VARIABLE}={name!r}: the SVM's stream processors run leaves on the host, "
            "with 'cpu' or 'interp'; set it to one of those (or unset it)"
        )
    backend = get_backend(name)
    check_bodies(backend, root, "launch(target='svm'): ")
    return backend


def launch_stream(
    root: InternalFunction, capacity: int, tracker: MemoryTracker
) -> tuple[SVMTarget, SVMStream]:
    """A streaming launch of ``root`` on the machine of ``HPVM_SVM_MACHINE``; nested
    pipelines are inlined up to the root's stages (``streaming_root``), so they become
    kernels of their own."""
    root = streaming_root(root)
    backend = delegate_backend(root)
    return SVMTarget(backend), SVMStream(root, backend, capacity, tracker)
