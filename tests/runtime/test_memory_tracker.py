"""The memory tracker finds an array by its memory: the array itself, or a view into it. It
remembers the byte range of arrays it found before (a launch finds the same arrays again and
again), never an array's that is gone."""

from __future__ import annotations

import weakref

import numpy as np
import pytest

from hpvm.backends.memory import MemoryTracker
from hpvm.errors import MemoryTrackingError


def test_found_again_after_untrack_and_track() -> None:
    tracker = MemoryTracker()
    a = np.zeros(16)
    tracker.track(a)
    first = tracker.find(a)
    assert first is not None and tracker.find(a) is first and tracker.find(a[4:]) is first
    tracker.untrack(a)
    assert tracker.find(a) is None and tracker.find(a[4:]) is None
    tracker.track(a)
    again = tracker.find(a)
    assert again is not None and again is not first


def test_a_remembered_range_is_used_for_its_own_array_only() -> None:
    tracker = MemoryTracker()
    a, b = np.zeros(16), np.zeros(16)
    tracker.track(a)
    view = a[2:]  # (a view's range is remembered; a tracked array itself is found by id)
    assert tracker.find(view) is not None
    # b's id now names the view's range, as if the view had died and b taken its id: not used for b
    tracker._extents[id(b)] = (weakref.ref(view), *tracker._extents[id(view)][1:])
    assert tracker.find(b) is None


def test_a_tracked_array_found_by_id_only_while_its_entry_is_current() -> None:
    """The look-up by id (``_direct``) follows every change of the entries: an entry
    replaced by a larger array at the same address, untracked, or cleared is not found."""
    tracker = MemoryTracker()
    base = np.zeros(32)
    small = base[:16]
    tracker.track(small)
    first = tracker.find(small)
    assert first is not None and first.array is small
    tracker.track(base)  # the same start, larger: replaces small's entry
    larger = tracker.find(base)
    assert larger is not None and larger is not first and larger.array is base
    assert tracker.find(small) is larger  # (a view of the larger one now)
    assert tracker.hold_arrays([small, base]) == [larger, larger]
    tracker.release([larger, larger])
    tracker.untrack(base)
    assert tracker.find(base) is None and tracker.find(small) is None
    assert tracker.hold_arrays([base]) is None
    tracker.track(small)
    tracker.clear()
    assert tracker.find(small) is None and len(tracker._direct) == 0


def test_hold_marks_found_entries_in_use_and_refuses_one_untracked_since() -> None:
    tracker = MemoryTracker()
    a, b = np.zeros(16), np.zeros(4)
    tracker.track(a)
    tracker.track(b)
    found = [tracker.find(a[2:]), tracker.find(b)]  # what launch's argument checks find
    held = tracker.hold(found)  # type: ignore[arg-type]
    with pytest.raises(MemoryTrackingError, match="in use by 1 running launch"):
        tracker.untrack(a)
    tracker.release(held)
    tracker.untrack(b)  # by another thread, between the checks and the start of the run
    with pytest.raises(MemoryTrackingError, match=r"\(4,\) float64 array.*untracked by another thread"):
        tracker.hold(found)  # type: ignore[arg-type]
    tracker.untrack(a)  # nothing was left in use by the refused hold


def test_hold_arrays_finds_and_holds_in_one_step_or_holds_nothing() -> None:
    tracker = MemoryTracker()
    a, b, c = np.zeros(16), np.zeros(4), np.zeros(4)
    tracker.track(a)
    tracker.track(b)
    held = tracker.hold_arrays([a[2:], b])  # (a view finds its array's entry)
    assert held == [tracker.find(a), tracker.find(b)]
    with pytest.raises(MemoryTrackingError, match="in use by 1 running launch"):
        tracker.untrack(b)
    tracker.release(held)
    assert tracker.hold_arrays([a, c]) is None  # c is not tracked: a is not left held
    tracker.untrack(a)
    tracker.untrack(b)


def test_cleared_tracker_is_host_only_again_after_versions_were_asked() -> None:
    """A back end asking for versions (the tensor back end's prepared weights) makes host
    runs record their writes; once every array is forgotten (cleanup) that ends — it had
    left every later launch of the process off the replayed path (``runtime/plan.py``)."""
    tracker = MemoryTracker()
    a = np.zeros(4)
    tracker.track(a)
    assert tracker.host_only()
    assert tracker.version(a) is not None
    assert not tracker.host_only()
    tracker.clear()
    assert tracker.host_only()
    tracker.track(a)
    first = tracker.version(a)
    assert not tracker.host_only() and first is not None
