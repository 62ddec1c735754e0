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
from typing import Any

import numpy as np

from .. import svm
from ..backends import backend_for_hint, get_backend
from ..backends.base import Backend, check_bodies
from ..backends.memory import MemoryTracker
from ..errors import HPVMError, LaunchError, NodeExecutionError, StreamError
from ..ir.graph import InternalFunction, Node
from ..svm.mapping import HOST, Mapping, map_pipeline
from .streaming import (
    Producers,
    check_can_arrive,
    one_stage,
    plan_stages,
    raise_stream_failure,
    streaming_root,
)
from .svm_kernels import END, FAILED, KernelWork
from .svm_values import SEQ, Layout, Layouts

MACHINE_VARIABLE = "HPVM_SVM_MACHINE"
LEAVES_VARIABLE = "HPVM_SVM_LEAVES"
CHECK_VARIABLE = "HPVM_SVM_CHECK"  # set (not "0"): run the mapped program in assertion mode
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
        self.work = KernelWork(self)  # (what the stage kernels run: svm_kernels.py)
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
                svm.kernel_init(k, place.processor, None, self.work.run, name=place.name)
                self.kernels.append(k)
            for k in self.kernels:
                svm.kernel_run(k)
        except BaseException:
            svm.cleanup()
            raise

    # -- state the stage kernels change (svm_kernels.py) -----------------------------------

    def _seqs(self, name: str, elements: np.ndarray) -> np.ndarray:
        """The item numbers of elements popped from stream ``name``."""
        return elements if self.layouts[name].plain else elements[SEQ]

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
                if value is FAILED:
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
                svm.stream_push_multicast_with_eos(np.int64(END), *self.inputs)
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
                drained[name] = deque(v for v, n in zip(left, self._seqs(name, left)) if int(n) != END)
        finally:
            svm.cleanup()
            self.work.stop()
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
            self.work.stop()

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
