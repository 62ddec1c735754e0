"""Pieces of host arrays kept on the workers across launches, sent again only where stale.

Why. A program that launches the same graph again and again (a stencil's iterations, a
solver's steps) hands the same arrays to every launch; sending each chunk its rows every
time moves the arrays over the network once per launch. Instead the back end keeps, for
each host array and row range a chunk needs, the Dask future of the worker's copy and a
digest per block of rows of what that copy holds. At the next launch it digests the host's
rows again: blocks that match are not sent, blocks that differ are patched into the
worker's copy (a small task on that worker), and a piece mostly stale is sent whole.

Why digests and not the memory tracker's residency: the dask back end writes results back
into the host's arrays before ``wait`` returns (its ``device`` is ``"host"``), so the host
may read and write them at once, with or without ``request_memory`` /
``mark_host_modified``. Comparing contents catches every host write — declared or not — so
a worker never computes on stale data; digesting is a pass over host memory, far cheaper
than the network.

After a launch, the copy a chunk wrote becomes the piece (``settle``), with digests the
worker computed of it (``tasks.run_chunk``): where the host's rows differ next time (the rows
another chunk wrote in a halo, say), those blocks go again.

The same goes for the pieces of a declared-layout split (``declared.py``): the elements a
range of instances owns, packed along the partitioned axis, are kept per (array, layout,
launch sizes, range) and digested and patched by blocks of the packed piece's rows.

Not kept: arrays two inputs share (aliasing must be seen as one array on the worker), the
private copies of atomics. ``clear`` forgets
everything (a new client, a lost worker: the launch is then retried with its data inline).
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .direct import DirectBatch
from .moves import Batch, worker_count

#: Rows are digested in blocks of about this many bytes (at least one row).
BLOCK_BYTES = 1 << 12
#: Pieces kept per host array (the oldest go first: launches of other sizes leave others).
SLOTS = 16
#: A piece with more than this fraction of its blocks stale is sent whole, not patched.
PATCH_LIMIT = 0.5


@dataclass
class _Slot:
    future: Any
    digests: list[bytes | None]
    starts: list[int]  # the first row of each digested block (``block_starts``)


@dataclass
class Source:
    """Rows ``[a, b)`` of a host array as a worker holds them (a split launch's ``edge``
    task: the rows one chunk wrote that a neighbour's piece reads as its halo), and the
    digest of the host's rows when they were the same: while the host's rows still have
    that digest, a piece needing them is patched from this future, worker to worker."""

    a: int
    b: int
    future: Any
    digest: bytes


@dataclass
class _Entry:
    ref: weakref.ref
    layout: tuple[Any, ...]
    client: str  # the client's id: a piece is a future of that client only
    slots: dict[tuple[Any, ...], _Slot]  # (r0, r1, broadcast) for rows; ("layout", ...) for a piece
    sources: list[Source]  # rows the last split launch that wrote the array left on workers


def _client_id(client: Any) -> str:
    """A client's unique id (``Client.id``; a new client after ``cleanup`` has another)."""
    return str(getattr(client, "id", id(client)))


def _layout(array: np.ndarray) -> tuple[Any, ...]:
    return (array.__array_interface__["data"][0], array.shape, array.strides, array.dtype.str)


def block_rows(piece: np.ndarray) -> int:
    """Rows per digested block of ``piece``: about ``BLOCK_BYTES``, or a 256th of the
    piece when that is more (a big array in few blocks: fewer calls, coarser patches)."""
    row = piece[0].nbytes if piece.ndim > 1 and piece.shape[0] else piece.itemsize
    return max(1, max(BLOCK_BYTES, piece.nbytes // 256) // max(1, row))


def block_starts(piece: np.ndarray, cuts: Sequence[int] = ()) -> list[int]:
    """The first row of each digested block of ``piece``: every ``block_rows``, and at each
    of ``cuts`` (rows of the piece where one chunk's rows end and another's begin: then the
    rows a neighbour wrote are blocks of their own, patched from that neighbour)."""
    n = len(piece)
    return sorted(set(range(0, n, block_rows(piece))) | {c for c in cuts if 0 < c < n})


def rows_digest(rows: np.ndarray) -> bytes:
    """One digest of some rows (one block's, a ``Source``'s)."""
    return hashlib.sha1(np.ascontiguousarray(rows), usedforsecurity=False).digest()


def digests(piece: np.ndarray, starts: Sequence[int] | None = None) -> list[bytes | None]:
    """One digest per block of rows of ``piece`` (blocks from ``starts``, by default
    ``block_starts``) (SHA-1: twice BLAKE2's speed here, with hardware help; the digests
    only tell the host's contents from a copy of them, so an accidental match, not an
    attack, is what they must rule out)."""
    starts = block_starts(piece) if starts is None else starts
    ends = [*starts[1:], len(piece)]
    return [rows_digest(piece[s:e]) for s, e in zip(starts, ends)]


class Resident:
    """The worker-side pieces of host arrays (module doc); one per back end."""

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _entry(self, client: Any, array: np.ndarray) -> _Entry:
        entry = self._entries.get(id(array))
        if (
            entry is None
            or entry.ref() is not array
            or entry.layout != _layout(array)
            or entry.client != _client_id(client)
        ):
            entry = self._entries[id(array)] = _Entry(
                weakref.ref(array), _layout(array), _client_id(client), {}, []
            )
            for key in [k for k, e in self._entries.items() if e.ref() is None]:
                del self._entries[key]
        return entry

    def piece(
        self,
        batch: Batch,
        array: np.ndarray,
        r0: int,
        r1: int,
        record: Callable[[int], None],
        broadcast: bool = False,
        cuts: Sequence[int] = (),
    ) -> Any:
        """A future holding ``array[r0:r1]`` as the host has it now; the bytes sent are
        passed to ``record`` (nothing when the workers' copy is current). ``cuts``: rows
        (of the array) where blocks must begin (``block_starts``)."""
        return self.keep(
            batch, array, (r0, r1, broadcast), array[r0:r1], record, broadcast, [c - r0 for c in cuts]
        )

    def keep(
        self,
        batch: Batch,
        array: np.ndarray,
        key: tuple[Any, ...],
        values: np.ndarray,
        record: Callable[[int], None],
        broadcast: bool = False,
        cuts: Sequence[int] = (),
    ) -> Any:
        """A future holding ``values`` — the part of ``array`` that ``key`` names, as the
        host has it now: a slice of rows, or the elements a declared layout gives a range
        of instances, packed (``declared.py``) — kept per (array, key). Blocks are rows of
        ``values``, so a packed piece is digested and patched like a slice."""
        from . import tasks

        client = batch.client
        with self._lock:
            entry = self._entry(client, array)
            slot = entry.slots.get(key)
            starts = slot.starts if slot is not None else block_starts(values, cuts)
            now = digests(values, starts)
            stale = (
                list(range(len(now)))
                if slot is None
                else [j for j, d in enumerate(now) if slot.digests[j] != d]
            )
            if not stale and slot is not None:
                return slot.future
            ends = [*starts[1:], len(values)]
            moved = {} if slot is None or broadcast else _from_sources(entry, key, array, starts, ends, stale)
            from_host = [j for j in stale if j not in moved]
            if slot is None or broadcast or len(from_host) > PATCH_LIMIT * len(now):
                # (a copy: on an in-process cluster the kept piece would otherwise be a view
                # that keeps the host's array alive, and changes under the digests' feet)
                future = client.scatter(values.copy(), broadcast=broadcast, hash=False)
                copies = worker_count(client) if broadcast else 1
                record(values.nbytes * copies)
            else:
                patches = [(starts[j], values[starts[j] : ends[j]].copy()) for j in from_host]
                future = batch.add(tasks.patch, slot.future, patches, list(moved.values()))
                record(sum(p.nbytes for _, p in patches))
            self._put(entry, key, _Slot(future, now, starts))
            return future

    def sources(self, client: Any, array: np.ndarray, found: list[Source]) -> None:
        """After a split launch that wrote ``array``: the rows of it its chunks left on
        their workers for their neighbours (``Source``), in place of the last launch's."""
        with self._lock:
            self._entry(client, array).sources = found

    @staticmethod
    def _put(entry: _Entry, key: tuple[Any, ...], slot: _Slot) -> None:
        entry.slots.pop(key, None)
        entry.slots[key] = slot
        while len(entry.slots) > SLOTS:
            entry.slots.pop(next(iter(entry.slots)))

    def settle(
        self,
        client: Any,
        array: np.ndarray,
        key: tuple[Any, ...],
        future: Any,
        after: list[bytes],
        starts: list[int],
    ) -> None:
        """After a launch: the workers' copy of the part of ``array`` that ``key`` names is
        ``future``, whose digests are ``after`` (the worker's, ``tasks.run_chunk``, or the
        host's of what came back) of the blocks at ``starts``: blocks the host wrote since
        differ."""
        with self._lock:
            self._put(self._entry(client, array), key, _Slot(future, list(after), list(starts)))


def _from_sources(
    entry: _Entry,
    key: tuple[Any, ...],
    array: np.ndarray,
    starts: list[int],
    ends: list[int],
    stale: list[int],
) -> dict[int, tuple[int, Any, int, int]]:
    """The stale blocks of a row piece (``key`` = (r0, r1, False)) that rows a worker
    holds cover (``Source`` whose digest still matches the host's rows): block -> (its
    first row in the piece, the source's future, the first row in the source, rows)."""
    if not entry.sources or not isinstance(key[0], int):
        return {}
    r0 = key[0]
    valid: dict[int, bool] = {}
    out: dict[int, tuple[int, Any, int, int]] = {}
    for j in stale:
        s, e = r0 + starts[j], r0 + ends[j]
        for k, src in enumerate(entry.sources):
            if src.a <= s and e <= src.b:
                if k not in valid:
                    valid[k] = rows_digest(array[src.a : src.b]) == src.digest
                if valid[k]:
                    out[j] = (starts[j], src.future, s - src.a, e - s)
                break
    return out


class Sender:
    """How one launch sends its arrays: as kept pieces (``resident`` given) or inside the
    tasks, as the first version did; ``sent`` counts the bytes that went. ``direct``: the
    workers' addresses when the tasks go straight to them (``direct.py``; nothing kept)."""

    def __init__(self, client: Any, resident: Resident | None, direct: Sequence[str] = ()) -> None:
        self.client, self.resident, self.sent = client, resident, 0
        self.direct = bool(direct)
        # this launch's tasks: sent as one graph through the scheduler, or straight to workers
        self.batch: Batch | DirectBatch = DirectBatch(client, direct) if direct else Batch(client)

    def _count(self, nbytes: int) -> None:
        self.sent += nbytes

    def rows(self, array: np.ndarray, r0: int, r1: int, cuts: Sequence[int] = ()) -> Any:
        """``array[r0:r1]`` for one task: a kept piece (its blocks also begin at ``cuts``,
        rows of the array), or the slice itself."""
        if array.ndim:
            r1 = min(r1, array.shape[0])
        if self.resident is None or array.ndim == 0:
            part = array[r0:r1] if array.ndim else array
            self.sent += part.nbytes
            return part
        return self.resident.piece(self.batch, array, r0, r1, self._count, cuts=cuts)

    def everywhere(self, array: np.ndarray) -> Any:
        """``array`` on every worker (read by every chunk)."""
        if self.resident is None or array.ndim == 0:
            self.sent += array.nbytes * worker_count(self.client)
            return array if self.direct else self.client.scatter(array, broadcast=True, hash=False)
        return self.resident.piece(self.batch, array, 0, len(array), self._count, broadcast=True)

    def settle(
        self, array: np.ndarray, r0: int, r1: int, future: Any, after: list[bytes], starts: list[int]
    ) -> None:
        if self.resident is not None and array.ndim:
            key = (r0, min(r1, array.shape[0]), False)
            self.resident.settle(self.client, array, key, future, after, starts)

    def sources(self, array: np.ndarray, found: list[Source]) -> None:
        """Rows of ``array`` its chunks left on the workers (``Resident.sources``)."""
        if self.resident is not None and array.ndim:
            self.resident.sources(self.client, array, found)

    def packed(self, array: np.ndarray, key: tuple[Any, ...], values: np.ndarray) -> Any:
        """``values``, the elements of ``array`` that ``key`` names (a declared layout's
        piece for one range of instances), for one task: kept on the workers like a row
        slice (only blocks the host changed go again), or the values themselves."""
        if self.resident is None or values.ndim == 0:
            self.sent += values.nbytes
            return values
        return self.resident.keep(self.batch, array, key, values, self._count)

    def settle_packed(self, array: np.ndarray, key: tuple[Any, ...], future: Any, values: np.ndarray) -> None:
        """After a launch: the workers' copy of ``array``'s piece ``key`` is ``future``,
        which holds ``values`` (what came back, now in the host's array)."""
        if self.resident is not None and values.ndim:
            starts = block_starts(values)
            self.resident.settle(self.client, array, key, future, digests(values, starts), starts)
