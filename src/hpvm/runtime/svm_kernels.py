"""The stage kernels of a ``target="svm"`` stream: what each kernel's work function does on
its stream processor's thread (``svm_target``'s module docstring says what travels where).

A kernel takes the items its input streams announce (a batch of those waiting, sized as
``runtime.streaming`` sizes a stage's), gets their values (by reference from the stream's
tables, by value from the elements), runs its stages through the leaves' back end
(``Backend.run_stage_batch``), and announces the items downstream: their values by
reference in its output tables, their elements on its output streams. The one kernel of a
stream whose items may run whole runs them side by side (``_loop_side_by_side``).
``SVMStream`` (``svm_target.py``) holds the tables, counters and failure, and serves the host.
"""

from __future__ import annotations

import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import svm
from ..backends.base import RunContext, StageBatch, collecting_warnings
from ..ir.graph import Node
from . import replicas
from .streaming import BATCH_SECONDS, machine_cores, whole_items
from .svm_values import SEQ

if TYPE_CHECKING:
    from .svm_target import SVMStream, _StageKernel

END = -1  # the element pushed (tagged EOS) after the last item: the stream has ended
FAILED = object()  # in a table, in place of the values of an item that failed


class KernelWork:
    """The work function of ``stream``'s stage kernels (``run``), and the helper threads its
    one kernel runs items side by side on."""

    def __init__(self, stream: SVMStream) -> None:
        self.stream = stream
        #: one kernel running every stage, whose items may run whole side by side
        #: (``_loop_side_by_side``): the policy that says when two of them may
        self.whole = (
            replicas.policy(stream.root, [n for nodes in stream.stages for n in nodes])
            if len(stream.mapping.kernels) == 1 and whole_items(stream.backend, stream.root, stream.stages)
            else None
        )
        self.cores = machine_cores()
        self._helpers: ThreadPoolExecutor | None = None  # (made when items first run side by side)

    def run(self, k: _StageKernel) -> None:
        """The work function of a stage kernel: take the items its input streams announce
        (a batch of those waiting), run its stages, announce them downstream."""
        try:
            self._loop(k)
        except BaseException as exc:  # after a failure elsewhere, an SVM error here is its echo
            if not self.stream.failed:  # the items ``k`` handed on went on; the next one cannot
                self.stream._fail(k, k.handed, exc)
            raise

    def _loop(self, k: _StageKernel) -> None:
        batch, capacity = 1, self.stream.capacity
        first = k.ins[0]
        while True:
            svm.stream_peek(first, 0)  # wait for an item (or the end)
            todo, popped, ending = self._take(k, max(1, min(batch, len(first))))
            if todo:
                start = time.perf_counter()
                if not self.run_items(k, todo, popped):
                    return
                per_item = (time.perf_counter() - start) / len(todo)
                batch = max(1, min(capacity, int(BATCH_SECONDS / per_item) if per_item > 0 else capacity))
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
        seqs = self.stream._seqs(k.all_in[0], popped[k.all_in[0]])
        ending = int(seqs[-1]) == END
        return [int(s) for s in (seqs[:-1] if ending else seqs)], popped, ending

    def _push_end(self, k: _StageKernel) -> None:
        for name, s in zip(k.out_names, k.outs):
            svm.stream_push_with_eos(s, self._end_element(name))

    def _loop_side_by_side(self, k: _StageKernel) -> None:
        """The rest of the stream, for a kernel that runs every stage and whose items may run
        whole side by side (``self.whole``: ``streaming.whole_items``' rule), items that take
        at least ``replicas.REPLICA_SECONDS`` each: each item is one back-end call on a
        helper thread, as many running at once as there are cores, each call's loops on its
        share of them (all of them for an item that starts alone) — as ``runtime.streaming``
        runs such a stream's replicas. The kernel keeps up to twice that many items in
        flight (a helper that ends an item starts the next at once), hands them on in item
        order, and takes an item that shares an array it writes with one in flight
        (``replicas.py``) only once those are handed on.

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
                # (its loops get the cores the items in flight leave: all of them when it
                # runs alone — a host that pops each item before it pushes the next)
                sharing = min(self.cores, len(flight) + 1)
                future = self._helpers.submit(self.call, nodes, args, envs, sharing)
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

    def _end_element(self, name: str) -> Any:
        """The element that ends stream ``name`` (pushed tagged EOS): item number -1."""
        layout = self.stream.layouts[name]
        if layout.plain:
            return np.int64(END)
        record = np.zeros(1, layout.dtype)
        record[SEQ] = END
        return record[0]

    def run_items(self, k: _StageKernel, seqs: list[int], popped: dict[str, np.ndarray]) -> bool:
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
        with self.stream._cond:
            args = [self.stream._args[seq][0] for seq in seqs]
            for name in k.in_names:
                table = self.stream._tables[name]
                refs[name] = [table.pop(seq, None) for seq in seqs]
        for values in refs.values():
            if FAILED in values:
                failed_at = min(failed_at, values.index(FAILED))
        for name, values in refs.items():
            layout = self.stream.layouts[name]
            if layout.plain:
                for env, value in zip(envs[:failed_at], values):
                    env.update(value)
            else:
                layout.unpack_into(
                    self.stream.backend, popped[name], values, args, self.stream._params, envs[:failed_at]
                )
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
            self.stream._fail(k, k.handed + ran, error)  # (its position: ``k`` takes items in order)
        self._announce(k, seqs[:ran], envs, outputs, args)
        if ran < len(seqs):  # the item at ``ran`` failed: pass the marker on and stop
            self._announce(k, [seqs[ran]], [FAILED], [FAILED], [None])
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
            layout = self.stream.layouts[name]
            values = outputs if name in self.stream._delivered else envs
            if layout.plain:
                elements[name], kept[name] = np.array(seqs, dtype=np.int64), values
            elif name in self.stream._delivered:
                elements[name], kept[name] = layout.pack_outputs(seqs, values)
            else:
                elements[name], kept[name] = layout.pack(
                    self.stream.backend, seqs, values, args, self.stream._params
                )
        with self.stream._cond:
            for seq in seqs:
                entry = self.stream._args[seq]
                entry[1] -= 1
                if entry[1] == 0:
                    del self.stream._args[seq]
            for name in k.out_names:
                table = self.stream._tables[name]
                for seq, value in zip(seqs, kept[name]):
                    if value is not None:  # (nothing by reference: the element is the item)
                        table[seq] = value
        for name, s in zip(k.out_names, k.outs):
            svm.stream_push_many(s, elements[name])
            if name in self.stream._delivered:
                with self.stream._cond:
                    self.stream._delivered[name] += len(seqs)
                    self.stream._cond.notify_all()

    def _execute(self, nodes: list[Node], args: list[Any], upstream: list[dict[str, Any]]) -> StageBatch:
        """One ``run_stage_batch`` of the delegate back end (as ``Stream._execute``), its
        loops spread over the cores the kernels leave it."""
        batch, caught = self.call(nodes, args, upstream, len(self.stream.kernels))
        self._keep_warnings(caught)
        return batch

    def _keep_warnings(self, caught: list[tuple[str, type[Warning]]]) -> None:
        if caught:
            with self.stream._cond:
                self.stream._warnings.extend(caught)

    def call(
        self, nodes: list[Node], args: list[Any], upstream: list[dict[str, Any]], sharing: int
    ) -> tuple[StageBatch, list[tuple[str, type[Warning]]]]:
        """One ``run_stage_batch``, with the warnings it reported; ``sharing``: how many
        calls share the cores now (the back end gives each call's loops its part of them)."""
        with collecting_warnings() as caught:
            ctx = RunContext(self.stream.tracker, stages=sharing, checked=True)
            tracker = self.stream.tracker
            tokens = (
                [tracker.prepare_for(self.stream.backend, self.stream.root, a, ctx.transfers) for a in args]
                if self.stream._arrays
                else []
            )
            try:
                batch = self.stream.backend.run_stage_batch(self.stream.root, args, nodes, upstream, ctx)
            except BaseException as exc:  # a back end that raises instead of reporting
                batch = StageBatch([], [], exc)
            finally:
                for token in tokens:
                    tracker.finished(token)
        return batch, caught

    def stop(self) -> None:
        """End the threads that ran items side by side (once the kernel has stopped: none
        is running one then, or it ends with its item)."""
        helpers, self._helpers = self._helpers, None
        if helpers is not None:
            helpers.shutdown(wait=True)  # (idle by now, or ending the item they run)
