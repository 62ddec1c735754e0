"""The circular buffer under every stream: ``capacity`` elements in a byte buffer.

This is the seed's data-layout guarantee made literal: element ``i`` of the ring lives at
byte ``(i % capacity) * itemsize`` of the buffer it was given — for a RAM stream, a view
of the memory's bytes at the stream's address, so control code and aliased streams see the
same bytes. EOS tags travel beside the data, as hardware side-band bits would: kept
sparsely, as the sequence numbers of the tagged elements (tags are few; a dense flag per
slot would cost a quarter of the data's bandwidth for 4-byte elements). The ring does no
locking and never blocks: ``streams.py`` does both.

Why the counters live in a small int64 NumPy array (``state``) rather than Python ints:
compiled kernels (``jit_ops.py``) run the same ring from Numba code without the GIL, on the
same arrays. The ring is single-producer single-consumer: the writer alone stores
``PUSHED`` and ``TAGS_PUSHED`` (one cache line), the reader alone stores ``POPPED`` and
``TAGS_POPPED`` (another), and each side publishes its data (and tags) before its counter.
The tags are a second ring of ``capacity`` sequence numbers (``tags``): an element carries
at most one tag, so at most ``capacity`` are ever outstanding.
"""

from __future__ import annotations

import numpy as np

# Indices into Ring.state. Writer-owned line, reader-owned line, shared line (8 int64 each).
PUSHED, TAGS_PUSHED, W_POPPED = 0, 1, 2  # W_POPPED: the compiled writer's cached POPPED
POPPED, TAGS_POPPED, R_PUSHED, R_TAGS_PUSHED = 8, 9, 10, 11  # R_*: the compiled reader's caches
WAITERS = 16  # threads waiting in Python for this ring to change (compiled writers notify them)
NOTIFIED = 18  # a compiled side has woken this ring's waiters since they last went to sleep
MASK = 17  # capacity - 1 when the capacity is a power of two (slots by a mask, not a division), else -1
STATE_SIZE = 24


class Ring:
    """A FIFO of fixed-size elements over ``buffer`` (1-D uint8, ``capacity * itemsize``
    bytes). ``pushed`` / ``popped`` count elements since initialisation (an element's
    sequence number is its position in that count); ``head`` (the slot of the front
    element) and ``count`` (how many are stored) follow from them."""

    __slots__ = ("bytes", "capacity", "counters", "data", "dtype", "state", "tags")

    def __init__(self, buffer: np.ndarray, capacity: int, dtype: np.dtype):
        self.dtype = dtype
        self.capacity = capacity
        self.bytes = buffer[: capacity * dtype.itemsize]
        # A fixed-length array type (a subarray dtype) is stored as rows of its base type.
        self.data = self.bytes.view(dtype.base).reshape((capacity, *dtype.shape))
        self.state = np.zeros(STATE_SIZE, np.int64)
        self.state[MASK] = capacity - 1 if capacity & (capacity - 1) == 0 else -1
        # The same int64s through a memoryview: Python ints in and out, several times faster
        # than NumPy scalar indexing on the Python kernels' per-element path.
        self.counters = memoryview(self.state)
        self.tags = np.zeros(capacity, np.int64)  # sequence numbers of EOS-tagged elements, a ring

    @property
    def pushed(self) -> int:
        return self.counters[PUSHED]

    @property
    def popped(self) -> int:
        return self.counters[POPPED]

    @property
    def count(self) -> int:
        return self.counters[PUSHED] - self.counters[POPPED]

    @property
    def head(self) -> int:
        return self.counters[POPPED] % self.capacity

    @property
    def space(self) -> int:
        return self.capacity - self.count

    def _pending_tags(self) -> list[int]:
        """Sequence numbers of the tags not yet popped, ascending (reads only: the writer
        may call it too)."""
        popped = self.counters[POPPED]
        tp, end = self.counters[TAGS_POPPED], self.counters[TAGS_PUSHED]
        seqs = [int(self.tags[i % self.capacity]) for i in range(tp, end)]
        return [seq for seq in seqs if seq >= popped]

    def has_eos(self) -> bool:
        return bool(self._pending_tags())

    def _tag(self, seq: int) -> None:
        """Tag element ``seq`` (the writer, before it publishes ``PUSHED`` past ``seq``)."""
        tp = self.counters[TAGS_PUSHED]
        self.tags[tp % self.capacity] = seq
        self.counters[TAGS_PUSHED] = tp + 1

    def _drop_tags(self, n: int) -> list[int]:
        """Forget the tags of the first ``n`` elements; their positions among them."""
        popped = self.counters[POPPED]
        end = popped + n
        tp, last = self.counters[TAGS_POPPED], self.counters[TAGS_PUSHED]
        dropped = []
        while tp < last:
            seq = int(self.tags[tp % self.capacity])
            if seq >= end:
                break
            if seq >= popped:
                dropped.append(seq - popped)
            tp += 1
        self.counters[TAGS_POPPED] = tp
        return dropped

    def _segments(self, first: int, n: int) -> list[tuple[int, int]]:
        """Slot ranges [(a, b), ...] covering ``n`` slots from slot ``first``."""
        end = first + n
        if end <= self.capacity:
            return [(first, end)]
        return [(first, self.capacity), (0, end - self.capacity)]

    def fill(self, n: int, eos_last: bool) -> None:
        """Take the first ``n`` slots as already holding elements (``streamInitWithDataRAM``)."""
        if n and eos_last:
            self._tag(n - 1)
        self.counters[PUSHED] = n

    def push(self, values: np.ndarray, eos_last: bool = False) -> None:
        """Append ``values`` (an array of ``dtype``, at most ``space`` long)."""
        n = len(values)
        assert n <= self.space, "caller checks space"
        pushed = self.counters[PUSHED]
        done = 0
        for a, b in self._segments(pushed % self.capacity, n):
            self.data[a:b] = values[done : done + b - a]
            done += b - a
        if n and eos_last:
            self._tag(pushed + n - 1)
        self.counters[PUSHED] = pushed + n  # published last: a compiled reader may be watching

    def peek(self, start: int, n: int) -> np.ndarray:
        """A copy of ``n`` elements from logical position ``start`` (0 is the front)."""
        parts = [self.data[a:b] for a, b in self._segments((self.head + start) % self.capacity, n)]
        return parts[0].copy() if len(parts) == 1 else np.concatenate(parts)

    def peek_eos(self, index: int) -> bool:
        return self.popped + index in self._pending_tags()

    def first_eos(self, limit: int) -> int:
        """Position of the first EOS-tagged element among the first ``limit``, or -1."""
        popped = self.popped
        for seq in self._pending_tags():
            return seq - popped if seq < popped + limit else -1
        return -1

    def _advance(self, n: int) -> None:
        self.counters[POPPED] = self.counters[POPPED] + n

    def get(self, index: int) -> object:
        """A copy of the element at logical position ``index`` (the one-element fast path of
        ``peek``: a NumPy scalar, a record or a row)."""
        item = self.data[(self.counters[POPPED] + index) % self.capacity]
        return item.copy() if isinstance(item, np.ndarray | np.void) else item

    def discard(self, n: int) -> None:
        """Remove ``n`` elements from the front, values unread."""
        counters = self.counters
        if counters[TAGS_POPPED] != counters[TAGS_PUSHED]:
            self._drop_tags(n)
        counters[POPPED] += n

    def pop(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Remove ``n`` elements from the front: (values, their EOS tags)."""
        values = self.peek(0, n)
        tags = np.zeros(n, dtype=np.bool_)
        tags[self._drop_tags(n)] = True
        self._advance(n)
        return values, tags

    def move_to(self, dst: Ring, n: int, eos_last: bool = False) -> None:
        """Pop ``n`` elements straight into ``dst`` (elements of the same size): byte-range
        copies from one ring's memory to the other's, no intermediate array. Tags are not
        carried over; ``eos_last`` tags the last element pushed."""
        size = self.dtype.itemsize
        assert size == dst.dtype.itemsize and n <= self.count and n <= dst.space, "caller checks"
        if n == 0:
            return
        dst_pushed = dst.pushed
        src_parts = self._segments(self.head, n)
        dst_parts = dst._segments(dst_pushed % dst.capacity, n)
        i = j = 0
        a, b = src_parts[0]
        c, d = dst_parts[0]
        while True:
            k = min(b - a, d - c)
            dst.bytes[c * size : (c + k) * size] = self.bytes[a * size : (a + k) * size]
            a, c = a + k, c + k
            if a == b:
                i += 1
                if i == len(src_parts):
                    break
                a, b = src_parts[i]
            if c == d:
                j += 1
                c, d = dst_parts[j]
        self._drop_tags(n)
        self._advance(n)
        if eos_last:
            dst._tag(dst_pushed + n - 1)
        dst.counters[PUSHED] = dst_pushed + n
