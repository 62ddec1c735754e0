"""The memory tracker's replay records (``runtime/plan.py``, ``Replay``): kept, found and
held for a replayed launch, and let go — a collaborator of ``MemoryTracker`` (``memory.py``)
with this one job, as a base class: the methods keep the tracker's names
(``tracker.hold_replay``, which a plan's generated replay calls) and use its state — its
lock, its entries by array id (``_direct``), whether anything is on a device
(``_device_entries``, ``_versioned``), and the table itself (``replays``, key -> record;
``replay_epoch``, counting the times the table was emptied; ``replays_version``, counting
every change of it). The table is changed only here.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .memory import TrackedArray


class ReplayRecords:
    """``MemoryTracker``'s replay methods (module doc)."""

    _lock: threading.RLock
    _direct: dict[int, TrackedArray]
    _device_entries: int
    _versioned: bool
    replays: dict[Any, Any]
    replay_epoch: int
    replays_version: int

    def keep_replay(self, key: Any, record: Any, limit: int) -> None:
        """Keep ``record`` (``runtime/plan.py``, ``Replay``) under ``key`` if each of its
        ``entries`` is still tracked (one untracked by another thread since its launch found
        it would otherwise be held by a record no one empties); all are dropped first when
        ``limit`` are kept. The record's ``epoch`` is set to the current one."""
        with self._lock:
            if any(self._direct.get(id(entry.array)) is not entry for entry in record.entries):
                return
            if len(self.replays) >= limit:
                self._drop_replays()
            record.epoch = self.replay_epoch
            self.replays[key] = record
            self.replays_version += 1

    def _drop_replays(self) -> None:
        """Forget every replay record (the caller holds the lock), in a new epoch."""
        self.replays.clear()
        self.replay_epoch += 1
        self.replays_version += 1

    def hold_replay(self, key: Any) -> Any:
        """The record kept for ``key`` (``keep_replay``), its ``entries`` held for a replayed
        run (``release_replay`` lets them go), or ``None``: none kept, or no longer (an entry
        replaced, untracked or cleared since), or something is on a device now (a replay
        skips residency: ``host_only``).

        Without the lock — two lock round trips were a fifth of a replayed launch's host
        cost after a step (docs/backends/cpu-performance.md) — and still never a run on an
        array ``untrack`` let go: each entry gets a token first (``holds``: one list append,
        a single step), then the record's epoch is checked. ``untrack`` starts a new epoch
        before it counts the tokens, so either it sees this run's token and refuses ("in
        use"), or this run sees the new epoch, lets its tokens go and takes the full path,
        which refuses the untracked array."""
        if self._device_entries or self._versioned:  # (``host_only``, without its call)
            return None
        record = self.replays.get(key)
        if record is None:
            return None
        entries = record.entries
        for entry in entries:
            entry.holds.append(None)
        if record.epoch != self.replay_epoch:
            self.release_replay(entries)
            return None
        return record

    def release_replay(self, entries: list[TrackedArray]) -> None:
        """Let go of what ``hold_replay`` held (one token of each entry)."""
        for entry in entries:
            entry.holds.pop()
