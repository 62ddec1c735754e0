"""The memory tracker of seed 000: which arrays the runtime manages, and where they are valid.

Arrays passed to a launch must be tracked. Each tracked array records the address spaces
(``"host"``, and later a device per GPU back end) holding a valid copy; ``request_memory``
makes the host copy valid again. An array is identified by its memory: a view or slice of a
tracked array counts as tracked.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.lib.array_utils import byte_bounds

from ..errors import MemoryTrackingError


def _extent(array: np.ndarray) -> tuple[int, int]:
    """The byte range an array's elements occupy (views with any strides included)."""
    low, high = byte_bounds(array)
    return low, high


@dataclass
class TrackedArray:
    array: np.ndarray
    start: int
    end: int
    valid_on: set[str] = field(default_factory=lambda: {"host"})
    users: int = 0  # running launches that use it


class MemoryTracker:
    """Tracked arrays, keyed by their base memory."""

    def __init__(self) -> None:
        self._entries: dict[int, TrackedArray] = {}
        # Reentrant: untrack and acquire look entries up (find) and update them as one step,
        # so that a launch starting on another thread cannot slip in between.
        self._lock = threading.RLock()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def track(self, array: Any) -> None:
        self._require_array(array, "track_memory")
        start, end = _extent(array)
        with self._lock:
            entry = self._entries.get(start)
            if entry is not None and entry.end >= end:
                return  # already tracked: tracking twice is harmless
            self._entries[start] = TrackedArray(array, start, end)

    def untrack(self, array: Any) -> None:
        self._require_array(array, "untrack_memory")
        with self._lock:
            entry = self.find(array)
            if entry is None:
                raise MemoryTrackingError(
                    f"untrack_memory(): {_describe(array)} is not tracked; only arrays given to "
                    "hpvm.track_memory() can be untracked"
                )
            if entry.users:
                raise MemoryTrackingError(
                    f"untrack_memory(): {_describe(array)} is in use by {entry.users} running "
                    "launch(es); hpvm.wait() for them first"
                )
            self._entries.pop(entry.start, None)

    def request(self, array: Any) -> np.ndarray:
        self._require_array(array, "request_memory")
        entry = self.find(array)
        if entry is None:
            raise MemoryTrackingError(
                f"request_memory(): {_describe(array)} is not tracked; track it with "
                "hpvm.track_memory() before passing it to a graph"
            )
        entry.valid_on.add("host")  # host back ends compute in place: the host copy is current
        return array

    def find(self, array: np.ndarray) -> TrackedArray | None:
        start, end = _extent(array)
        with self._lock:
            for entry in self._entries.values():
                if entry.start <= start and end <= entry.end:
                    return entry
        return None

    def acquire(self, arrays: list[np.ndarray]) -> list[TrackedArray]:
        entries = []
        with self._lock:
            for a in arrays:
                entry = self.find(a)
                if entry is not None:
                    entry.users += 1
                    entries.append(entry)
        return entries

    def release(self, entries: list[TrackedArray]) -> None:
        with self._lock:
            for entry in entries:
                entry.users = max(0, entry.users - 1)

    @staticmethod
    def _require_array(array: Any, api: str) -> None:
        if not isinstance(array, np.ndarray):
            raise MemoryTrackingError(f"{api}() takes a NumPy array, not {type(array).__name__}")


def _describe(array: np.ndarray) -> str:
    return f"the {array.shape} {array.dtype} array at {hex(array.__array_interface__['data'][0])}"
