"""The circular buffer under every stream: ``capacity`` elements in a byte buffer.

This is the seed's data-layout guarantee made literal: element ``i`` of the ring lives at
byte ``(i % capacity) * itemsize`` of the buffer it was given — for a RAM stream, a view
of the memory's bytes at the stream's address, so control code and aliased streams see the
same bytes. EOS tags travel beside the data, as hardware side-band bits would: kept
sparsely, as the sequence numbers of the tagged elements (tags are few; a dense flag per
slot would cost a quarter of the data's bandwidth for 4-byte elements). The ring does no
locking and never blocks: ``streams.py`` does both.
"""

from __future__ import annotations

from collections import deque

import numpy as np


class Ring:
    """A FIFO of fixed-size elements over ``buffer`` (1-D uint8, ``capacity * itemsize``
    bytes). ``head`` is the slot of the front element; ``count`` how many are stored;
    ``pushed`` / ``popped`` count elements since initialisation (an element's sequence
    number is its position in that count)."""

    __slots__ = ("bytes", "capacity", "count", "data", "dtype", "head", "popped", "pushed", "tags", "tagset")

    def __init__(self, buffer: np.ndarray, capacity: int, dtype: np.dtype):
        self.dtype = dtype
        self.capacity = capacity
        self.bytes = buffer[: capacity * dtype.itemsize]
        # A fixed-length array type (a subarray dtype) is stored as rows of its base type.
        self.data = self.bytes.view(dtype.base).reshape((capacity, *dtype.shape))
        self.head = 0
        self.count = 0
        self.pushed = 0
        self.popped = 0
        self.tags: deque[int] = deque()  # sequence numbers of EOS-tagged elements, ascending
        self.tagset: set[int] = set()

    @property
    def space(self) -> int:
        return self.capacity - self.count

    def has_eos(self) -> bool:
        return bool(self.tags)

    def _tag(self, seq: int) -> None:
        self.tags.append(seq)
        self.tagset.add(seq)

    def _drop_tags(self, n: int) -> list[int]:
        """Forget the tags of the first ``n`` elements; their positions among them."""
        end = self.popped + n
        dropped = []
        while self.tags and self.tags[0] < end:
            seq = self.tags.popleft()
            self.tagset.discard(seq)
            dropped.append(seq - self.popped)
        return dropped

    def _segments(self, start: int, n: int) -> list[tuple[int, int]]:
        """Slot ranges [(a, b), ...] covering ``n`` slots from logical position ``start``."""
        first = (self.head + start) % self.capacity
        end = first + n
        if end <= self.capacity:
            return [(first, end)]
        return [(first, self.capacity), (0, end - self.capacity)]

    def fill(self, n: int, eos_last: bool) -> None:
        """Take the first ``n`` slots as already holding elements (``streamInitWithDataRAM``)."""
        self.count = n
        self.pushed = n
        if n and eos_last:
            self._tag(n - 1)

    def push(self, values: np.ndarray, eos_last: bool = False) -> None:
        """Append ``values`` (an array of ``dtype``, at most ``space`` long)."""
        n = len(values)
        assert n <= self.space, "caller checks space"
        done = 0
        for a, b in self._segments(self.count, n):
            self.data[a:b] = values[done : done + b - a]
            done += b - a
        self.count += n
        self.pushed += n
        if n and eos_last:
            self._tag(self.pushed - 1)

    def peek(self, start: int, n: int) -> np.ndarray:
        """A copy of ``n`` elements from logical position ``start`` (0 is the front)."""
        parts = [self.data[a:b] for a, b in self._segments(start, n)]
        return parts[0].copy() if len(parts) == 1 else np.concatenate(parts)

    def peek_eos(self, index: int) -> bool:
        return self.popped + index in self.tagset

    def first_eos(self, limit: int) -> int:
        """Position of the first EOS-tagged element among the first ``limit``, or -1."""
        if self.tags and self.tags[0] < self.popped + limit:
            return self.tags[0] - self.popped
        return -1

    def _advance(self, n: int) -> None:
        self.head = (self.head + n) % self.capacity
        self.count -= n
        self.popped += n

    def get(self, index: int) -> object:
        """A copy of the element at logical position ``index`` (the one-element fast path of
        ``peek``: a NumPy scalar, a record or a row)."""
        item = self.data[(self.head + index) % self.capacity]
        return item.copy() if isinstance(item, np.ndarray | np.void) else item

    def discard(self, n: int) -> None:
        """Remove ``n`` elements from the front, values unread."""
        if self.tags:
            self._drop_tags(n)
        self._advance(n)

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
        src_parts = self._segments(0, n)
        dst_parts = dst._segments(dst.count, n)
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
        dst.count += n
        dst.pushed += n
        if eos_last:
            dst._tag(dst.pushed - 1)
