"""The stage threads of a stream (``streaming.py``): each takes the items waiting for its
stage, runs them as one batch, and hands the results on.

Apart from ``Stream`` because it is the other side of every buffer: ``Stream`` is what the
host calls (push, pop, wait, the fused path), this loop is what runs in the stage threads;
they meet only under the stream's lock, on its signals and flags.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .stagebuffers import FAILED, Stage

if TYPE_CHECKING:
    from .streaming import Stream


class StageLoop:
    """Runs the stage threads of ``stream`` (``run``: a thread's target)."""

    def __init__(self, stream: Stream):
        self.stream = stream
        self.lock, self.room, self.host = stream.lock, stream.room, stream.host

    def run(self, st: Stage) -> None:
        """Stage ``st``'s thread: batch after batch until the stream ends or fails."""
        stream = self.stream
        try:
            while True:
                taken = self._take(st)
                if taken is None:
                    return
                args, upstream, failed_next = taken
                if args:
                    batch = stream.batches.run(st, args, upstream)
                    if not self._deliver(st, batch.produced, batch.outputs):
                        return
                    if batch.error is not None:
                        stream.fail(st, batch.error)
                        return
                if failed_next:  # pass the upstream failure on, in item order, and stop
                    stream.fail(st, None)
                    return
        except BaseException as e:  # reported to the host at pop/wait, never lost
            stream.fail(st, e)
        finally:
            with self.lock:
                st.stopped = True
                stream.wake_all()

    def _take(self, st: Stage) -> tuple[list[Any], list[dict[str, Any]], bool] | None:
        """The items ``st`` runs next, waiting until there is one: their root arguments,
        their upstream outputs, and whether the item after them failed upstream. ``None``:
        stop — the stream ended and every pushed item is done, or after a failure what the
        stage would wait for can no longer come."""
        stream = self.stream
        with self.lock:
            while True:
                if stream.abandoned:
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
                if count or failed_next:
                    break
                if not st.args and (stream.closed or stream.failed):
                    return None  # every item done; after a failure, push makes no more
                if stream.failed and any(not c.items and c.producer.stopped for c in st.inputs):
                    return None
                st.ready.wait()
            args = [st.args.popleft() for _ in range(count)]
            self.room.wake()
            if not st.inputs:
                upstream = [{} for _ in range(count)]
            elif len(st.inputs) == 1:
                items = st.inputs[0].items
                upstream = [items.popleft() for _ in range(count)]
            else:
                upstream = [{} for _ in range(count)]
                for channel in st.inputs:
                    items = channel.items
                    for merged in upstream:
                        merged.update(items.popleft())
            for channel in st.inputs:
                channel.producer.ready.wake()
            return args, upstream, failed_next

    def _deliver(self, st: Stage, produced: list[Any], outputs: list[dict[int, Any]]) -> bool:
        """Send what ``st`` produced for its items downstream and their root outputs to the
        host, waiting while a downstream buffer is full. False: the stage that would read
        them has stopped (after a failure), so ``st`` stops too."""
        stream = self.stream
        if not produced:
            return True
        with self.lock:
            if stream.abandoned:
                return False
            for channel in st.outputs:
                while len(channel.items) >= stream.capacity:
                    if channel.consumer.stopped or stream.abandoned:
                        return False
                    st.ready.wait()
                channel.items.extend(produced)
                channel.consumer.ready.wake()
            if st.results is not None:
                st.results.extend(outputs)
                self.host.wake()
        return True
