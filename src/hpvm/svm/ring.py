"""The circular buffer under every stream: ``capacity`` elements in a byte buffer.

This is the seed's data-layout guarantee made literal: element ``i`` of the ring lives at
byte ``(i % capacity) * itemsize`` of the buffer it was given — for a RAM stream, a view
of the memory's bytes at the stream's address, so control code and aliased streams see the
same bytes. EOS tags travel beside the data (one flag per slot), as hardware side-band
bits would. The ring does no locking and never blocks: ``streams.py`` does both.
"""

from __future__ import annotations

import numpy as np


class Ring:
    """A FIFO of fixed-size elements over ``buffer`` (1-D uint8, ``capacity * itemsize``
    bytes). ``head`` is the slot of the front element; ``count`` how many are stored."""

    __slots__ = ("bytes", "capacity", "count", "data", "dtype", "eos", "head", "pushed")

    def __init__(self, buffer: np.ndarray, capacity: int, dtype: np.dtype):
        self.dtype = dtype
        self.capacity = capacity
        # A fixed-length array type (a subarray dtype) is stored as rows of its base type.
        self.bytes = buffer[: capacity * dtype.itemsize]
        self.data = self.bytes.view(dtype.base).reshape((capacity, *dtype.shape))
        self.eos = np.zeros(capacity, dtype=np.bool_)
        self.head = 0
        self.count = 0
        self.pushed = 0  # elements pushed since initialisation (STREAM_NEVER_WRAPS checks)

    @property
    def space(self) -> int:
        return self.capacity - self.count

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
            self.eos[n - 1] = True

    def push(self, values: np.ndarray, eos_last: bool = False) -> None:
        """Append ``values`` (an array of ``dtype``, at most ``space`` long)."""
        n = len(values)
        assert n <= self.space, "caller checks space"
        done = 0
        for a, b in self._segments(self.count, n):
            self.data[a:b] = values[done : done + b - a]
            self.eos[a:b] = False
            done += b - a
        self.count += n
        self.pushed += n
        if n and eos_last:
            self.eos[(self.head + self.count - 1) % self.capacity] = True

    def peek(self, start: int, n: int) -> np.ndarray:
        """A copy of ``n`` elements from logical position ``start`` (0 is the front)."""
        parts = [self.data[a:b] for a, b in self._segments(start, n)]
        return parts[0].copy() if len(parts) == 1 else np.concatenate(parts)

    def peek_eos(self, index: int) -> bool:
        return bool(self.eos[(self.head + index) % self.capacity])

    def first_eos(self, limit: int) -> int:
        """Position of the first EOS-tagged element among the first ``limit``, or -1."""
        offset = 0
        for a, b in self._segments(0, limit):
            hits = np.flatnonzero(self.eos[a:b])
            if len(hits):
                return offset + int(hits[0])
            offset += b - a
        return -1

    def pop(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Remove ``n`` elements from the front: (values, their EOS tags)."""
        values = self.peek(0, n)
        tags = np.concatenate([self.eos[a:b] for a, b in self._segments(0, n)])
        for a, b in self._segments(0, n):
            self.eos[a:b] = False
        self.head = (self.head + n) % self.capacity
        self.count -= n
        return values, tags

    def move_to(self, dst: Ring, n: int, eos_last: bool = False) -> None:
        """Pop ``n`` elements straight into ``dst`` (elements of the same size): byte-range
        copies from one ring's memory to the other's, no intermediate array."""
        size = self.dtype.itemsize
        assert size == dst.dtype.itemsize and n <= self.count and n <= dst.space, "caller checks"
        src_parts = self._segments(0, n)
        dst_parts = dst._segments(dst.count, n)
        i = j = 0
        a, b = src_parts[0]
        c, d = dst_parts[0]
        while True:
            k = min(b - a, d - c)
            if k:
                dst.bytes[c * size : (c + k) * size] = self.bytes[a * size : (a + k) * size]
                dst.eos[c : c + k] = False
                self.eos[a : a + k] = False
            a, c = a + k, c + k
            if a == b:
                i += 1
                if i == len(src_parts):
                    break
                a, b = src_parts[i]
            if c == d:
                j += 1
                c, d = dst_parts[j]
        self.head = (self.head + n) % self.capacity
        self.count -= n
        dst.count += n
        dst.pushed += n
        if n and eos_last:
            dst.eos[(dst.head + dst.count - 1) % dst.capacity] = True
