"""The stage threads of a stream (``streaming.py``): each takes the items waiting for its
stage, runs them as one batch, and hands the results on.

Apart from ``Stream`` because it is the other side of every buffer: ``Stream`` is what the
host calls (push, pop, wait, the fused path), this loop is what runs in the stage threads;
they meet only under the stream's lock, on its signals and flags.

A stage may have several threads (``replicas.py``): one takes a next batch while another
still runs one only when ``replicas.allowed`` and the batches' footprints say so. A batch is
handed on when every batch taken before it has been (``Stage.taken`` numbers them,
``Stage.delivered`` counts those handed on), so results, warnings and failures leave the
stage in item order: one that ends before an earlier one is parked (``Stage.parked``), its
thread goes on to the next items, and the thread that hands on the earlier batch hands it on.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from ..backends.base import StageBatch
from .replicas import allowed
from .stagebuffers import FAILED, Stage

if TYPE_CHECKING:
    from .streaming import Stream


class StageLoop:
    """Runs the stage threads of ``stream`` (``run``: a thread's target)."""

    def __init__(self, stream: Stream):
        self.stream = stream
        self.lock, self.room, self.host = stream.lock, stream.room, stream.host

    def run(self, st: Stage) -> None:
        """One of stage ``st``'s threads: batch after batch until the stream ends or fails."""
        stream = self.stream
        try:
            while True:
                taken = self._take(st)
                if taken is None:
                    return
                seq, args, upstream, failed_next = taken
                batch: StageBatch | None = None
                caught: list[Any] = []
                if args:
                    try:
                        batch, caught = stream.batches.run(st, args, upstream)
                    except Exception as e:  # the batch's failure: reported in item order too
                        batch = StageBatch([], [], e)
                if not self._deliver(st, seq, batch, caught, failed_next):
                    return
        except BaseException as e:  # reported to the host at pop/wait, never lost
            stream.fail(st, e)
        finally:
            with self.lock:
                st.live -= 1
                st.stopped = st.live == 0
                stream.wake_all()

    def _take(self, st: Stage) -> tuple[int, list[Any], list[dict[str, Any]], bool] | None:
        """The items ``st`` runs next, waiting until there is one it may start: their
        number among the stage's batches, their root arguments, their upstream outputs, and
        whether the item after them failed upstream. ``None``: stop — the stream ended and
        every pushed item is taken, or after a failure what the stage would wait for can no
        longer come."""
        stream = self.stream
        with self.lock:
            while True:
                if stream.abandoned or st.halted or st.marker:
                    return None
                count = min(len(st.args), st.batch)
                marked: list[int] = []  # items before the failure marker, of inputs that have one
                for channel in st.inputs:
                    items = channel.items
                    have = len(items)
                    if have and items[-1] is FAILED:
                        have -= 1
                        marked.append(have)
                    count = min(count, have)
                failed_next = count in marked
                if (count or failed_next) and (
                    not st.inflight or not count or self._replica_may_run(st, count)
                ):
                    break
                if not st.args and (stream.closed or stream.failed):
                    return None  # every item taken; after a failure, push makes no more
                if stream.failed and any(not c.items and c.producer.stopped for c in st.inputs):
                    return None
                st.ready.wait()
            args, upstream = self._peek(st, count)
            for _ in range(count):
                st.args.popleft()
                for channel in st.inputs:
                    channel.items.popleft()
            self.room.wake()
            for channel in st.inputs:
                channel.producer.room.wake()  # (if it waits for room: stagebuffers.Stage)
            seq = st.taken
            st.taken += 1
            st.inflight[seq] = (args, upstream)
            st.marker = failed_next
            if st.policy is not None and len(st.threads) < self._allowed(st):
                # one more item may start now: a replica to run it (started before the item
                # is pushed, when the stage's time is remembered from the root's last stream)
                stream.start_thread(st)
            return seq, args, upstream, failed_next

    def _peek(self, st: Stage, count: int) -> tuple[list[Any], list[dict[str, Any]]]:
        """The root arguments and upstream outputs of the next ``count`` items (not taken)."""
        args = list(itertools.islice(st.args, count))
        if not st.inputs:
            return args, [{} for _ in range(count)]
        if len(st.inputs) == 1:
            return args, list(itertools.islice(st.inputs[0].items, count))
        upstream: list[dict[str, Any]] = [{} for _ in range(count)]
        for channel in st.inputs:
            for merged, values in zip(upstream, itertools.islice(channel.items, count)):
                merged.update(values)
        return args, upstream

    def _allowed(self, st: Stage) -> int:
        """How many batches ``st`` may run at once now (``replicas.allowed``), of the stages'
        times, or until they have run an item, their times in the root's last stream."""
        return allowed(_time(st), [_time(s) for s in self.stream.stages], self.stream.replica_cores)

    def _replica_may_run(self, st: Stage, count: int) -> bool:
        """Whether the next ``count`` items may start while ``st`` runs others (the lock
        held): the stage may run one more batch now, and they share no array it writes with
        any item in flight, parked ones included (``replicas.py``); fewer than ``capacity``
        batches are parked (back-pressure: no more wait to be handed on than may wait
        downstream)."""
        policy = st.policy
        if policy is None or len(st.parked) >= self.stream.capacity:
            return False
        if len(st.inflight) - len(st.parked) >= self._allowed(st):
            return False
        mine = policy.footprint(*self._peek(st, count))
        return not any(mine.overlaps(policy.footprint(a, u)) for a, u in st.inflight.values())

    def _deliver(
        self, st: Stage, seq: int, batch: StageBatch | None, caught: list[Any], failed_next: bool
    ) -> bool:
        """Hand on batch ``seq`` of ``st`` when every batch taken before it has been; when
        one still runs, leave it ``parked`` for the thread that hands that one on, and go
        take the next items (a replica that waited here idled a core while an earlier item
        of the stage still ran: 12 of 64 smoothings of the edge detection's stream, issue
        24). False: the stage stops — it failed here, an earlier batch failed (this one is
        dropped), or the stage that would read it has stopped."""
        with self.lock:
            if st.delivered != seq and not (st.halted or self.stream.abandoned):
                st.parked[seq] = (batch, caught, failed_next)
                st.ready.wake()  # one batch fewer runs: another thread may take one
                return True
            while True:
                if not self._hand_on(st, seq, batch, caught, failed_next):
                    for later in st.parked:  # (the stage halted: dropped, as replicas' are)
                        del st.inflight[later]
                    st.parked.clear()
                    return False
                if st.delivered not in st.parked:
                    return True
                seq = st.delivered
                batch, caught, failed_next = st.parked.pop(seq)

    def _hand_on(
        self, st: Stage, seq: int, batch: StageBatch | None, caught: list[Any], failed_next: bool
    ) -> bool:
        """``_deliver``'s work for the batch next in order (the lock held): what it produced
        downstream, its root outputs and warnings to the host, then its failure or the
        upstream one that follows it (waiting while a downstream buffer is full). False:
        the stage stops."""
        stream = self.stream
        try:
            if st.halted or stream.abandoned:
                return False
            produced = batch.produced if batch is not None else []
            if produced:
                for channel in st.outputs:
                    while len(channel.items) >= stream.capacity:
                        if channel.consumer.stopped or stream.abandoned:
                            st.halted = True
                            return False
                        st.room.wait()
                    channel.items.extend(produced)
                    if channel.consumer.fed():
                        channel.consumer.ready.wake()
                if st.results is not None:
                    st.results.extend(batch.outputs)  # type: ignore[union-attr]
                    self.host.wake()
            if caught:
                stream.caught.extend(caught)
            error = batch.error if batch is not None else None
            if error is not None or failed_next:  # in item order: after what came before
                stream.mark_failed(st, stream.named(st, error) if error is not None else None)
                return False
            return True
        finally:
            del st.inflight[seq]
            if st.delivered == seq:
                st.delivered += 1
            st.ready.wake()


def _time(st: Stage) -> float | None:
    """``st``'s time per item, or until it has run one, its time in the root's last stream."""
    return st.seconds if st.seconds is not None else st.prior
