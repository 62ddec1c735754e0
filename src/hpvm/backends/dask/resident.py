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
worker computed of it (``tasks.trim``): where the host's rows differ next time (the rows
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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

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


@dataclass
class _Entry:
    ref: weakref.ref
    layout: tuple[Any, ...]
    client: str  # the client's id: a piece is a future of that client only
    slots: dict[tuple[Any, ...], _Slot]  # (r0, r1, broadcast) for rows; ("layout", ...) for a piece


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


def digests(piece: np.ndarray) -> list[bytes | None]:
    """One digest per block of rows of ``piece`` (SHA-1: twice BLAKE2's speed here, with
    hardware help; the digests only tell the host's contents from a copy of them, so an
    accidental match, not an attack, is what they must rule out)."""
    step = block_rows(piece)
    return [
        hashlib.sha1(np.ascontiguousarray(piece[s : s + step]), usedforsecurity=False).digest()
        for s in range(0, len(piece), step)
    ]


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
                weakref.ref(array), _layout(array), _client_id(client), {}
            )
            for key in [k for k, e in self._entries.items() if e.ref() is None]:
                del self._entries[key]
        return entry

    def piece(
        self,
        client: Any,
        array: np.ndarray,
        r0: int,
        r1: int,
        record: Callable[[int], None],
        broadcast: bool = False,
    ) -> Any:
        """A future holding ``array[r0:r1]`` as the host has it now; the bytes sent are
        passed to ``record`` (nothing when the workers' copy is current)."""
        return self.keep(client, array, (r0, r1, broadcast), array[r0:r1], record, broadcast)

    def keep(
        self,
        client: Any,
        array: np.ndarray,
        key: tuple[Any, ...],
        values: np.ndarray,
        record: Callable[[int], None],
        broadcast: bool = False,
    ) -> Any:
        """A future holding ``values`` — the part of ``array`` that ``key`` names, as the
        host has it now: a slice of rows, or the elements a declared layout gives a range
        of instances, packed (``declared.py``) — kept per (array, key). Blocks are rows of
        ``values``, so a packed piece is digested and patched like a slice."""
        from . import tasks

        now = digests(values)
        with self._lock:
            entry = self._entry(client, array)
            slot = entry.slots.get(key)
            stale = (
                list(range(len(now)))
                if slot is None
                else [j for j, d in enumerate(now) if slot.digests[j] != d]
            )
            if not stale and slot is not None:
                return slot.future
            step = block_rows(values)
            n = len(values)
            if slot is None or broadcast or len(stale) > PATCH_LIMIT * len(now):
                # (a copy: on an in-process cluster the kept piece would otherwise be a view
                # that keeps the host's array alive, and changes under the digests' feet)
                future = client.scatter(values.copy(), broadcast=broadcast, hash=False)
                copies = len(client.nthreads()) if broadcast else 1
                record(values.nbytes * copies)
            else:
                patches = [(j * step, values[j * step : min((j + 1) * step, n)].copy()) for j in stale]
                future = client.submit(tasks.patch, slot.future, patches, pure=False)
                record(sum(p.nbytes for _, p in patches))
            self._put(entry, key, _Slot(future, now))
            return future

    @staticmethod
    def _put(entry: _Entry, key: tuple[Any, ...], slot: _Slot) -> None:
        entry.slots.pop(key, None)
        entry.slots[key] = slot
        while len(entry.slots) > SLOTS:
            entry.slots.pop(next(iter(entry.slots)))

    def settle(
        self, client: Any, array: np.ndarray, key: tuple[Any, ...], future: Any, after: list[bytes]
    ) -> None:
        """After a launch: the workers' copy of the part of ``array`` that ``key`` names is
        ``future``, whose digests are ``after`` (the worker's, ``tasks.trim``, or the
        host's of what came back): blocks the host wrote since differ."""
        with self._lock:
            self._put(self._entry(client, array), key, _Slot(future, list(after)))


class Sender:
    """How one launch sends its arrays: as kept pieces (``resident`` given) or inside the
    tasks, as the first version did; ``sent`` counts the bytes that went."""

    def __init__(self, client: Any, resident: Resident | None) -> None:
        self.client, self.resident, self.sent = client, resident, 0

    def _count(self, nbytes: int) -> None:
        self.sent += nbytes

    def rows(self, array: np.ndarray, r0: int, r1: int) -> Any:
        """``array[r0:r1]`` for one task: a kept piece, or the slice itself."""
        if array.ndim:
            r1 = min(r1, array.shape[0])
        if self.resident is None or array.ndim == 0:
            part = array[r0:r1] if array.ndim else array
            self.sent += part.nbytes
            return part
        return self.resident.piece(self.client, array, r0, r1, self._count)

    def everywhere(self, array: np.ndarray) -> Any:
        """``array`` on every worker (read by every chunk)."""
        if self.resident is None or array.ndim == 0:
            self.sent += array.nbytes * len(self.client.nthreads())
            return self.client.scatter(array, broadcast=True, hash=False)
        return self.resident.piece(self.client, array, 0, len(array), self._count, broadcast=True)

    def settle(self, array: np.ndarray, r0: int, r1: int, future: Any, after: list[bytes]) -> None:
        if self.resident is not None and array.ndim:
            self.resident.settle(self.client, array, (r0, min(r1, array.shape[0]), False), future, after)

    def packed(self, array: np.ndarray, key: tuple[Any, ...], values: np.ndarray) -> Any:
        """``values``, the elements of ``array`` that ``key`` names (a declared layout's
        piece for one range of instances), for one task: kept on the workers like a row
        slice (only blocks the host changed go again), or the values themselves."""
        if self.resident is None or values.ndim == 0:
            self.sent += values.nbytes
            return values
        return self.resident.keep(self.client, array, key, values, self._count)

    def settle_packed(self, array: np.ndarray, key: tuple[Any, ...], future: Any, values: np.ndarray) -> None:
        """After a launch: the workers' copy of ``array``'s piece ``key`` is ``future``,
        which holds ``values`` (what came back, now in the host's array)."""
        if self.resident is not None and values.ndim:
            self.resident.settle(self.client, array, key, future, digests(values))
