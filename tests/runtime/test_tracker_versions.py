"""``MemoryTracker.version``: a tracked array's contents version, for data a back end derives
from an argument (the tensor back end's folded weights). It changes exactly when the contents
may have changed: a declared host write, a run that may write the array, tracking it anew."""

from __future__ import annotations

import numpy as np

import hpvm
from hpvm.backends.memory import MemoryTracker


class _HostBackend:
    device = "host"


class _ReadOnlyBackend:
    device = "host"
    writes_arguments = False


@hpvm.leaf(ins=("a",), outs=("a",))
def _scale(a: hpvm.f32[:]) -> None:
    a[0] = a[0] * 2.0


@hpvm.internal()
def _writer(a: hpvm.f32[:]):
    n = hpvm.create_node(_scale)
    hpvm.bind_in(n, 0, 0)


def test_untracked_arrays_have_no_version() -> None:
    assert MemoryTracker().version(np.zeros(4)) is None


def test_version_is_stable_until_the_host_declares_a_write() -> None:
    tracker = MemoryTracker()
    a = np.zeros(8, np.float32)
    tracker.track(a)
    v = tracker.version(a)
    assert v is not None and tracker.version(a) == v and tracker.version(a[2:]) == v  # a view: its base's
    tracker.track(a)  # tracking again what is tracked changes nothing
    assert tracker.version(a) == v
    tracker.host_modified(a)
    assert tracker.version(a) not in (None, v)


def test_a_new_entry_never_reuses_a_version() -> None:
    tracker, other = MemoryTracker(), MemoryTracker()
    a = np.zeros(8, np.float32)
    tracker.track(a)
    v = tracker.version(a)
    tracker.untrack(a)
    tracker.track(a)
    other.track(a)
    assert len({v, tracker.version(a), other.version(a)}) == 3


def test_a_host_run_that_may_write_the_array_changes_its_version_once_versions_are_asked_for() -> None:
    tracker = MemoryTracker()
    a = np.ones(4, np.float32)
    tracker.track(a)
    v = tracker.version(a)  # asking turns the book-keeping on even without device copies
    tracker.finished(tracker.prepare_for(_HostBackend(), _writer, (a,), None))
    assert tracker.version(a) != v


def test_a_back_end_that_only_reads_its_arguments_keeps_their_versions() -> None:
    tracker = MemoryTracker()
    a = np.ones(4, np.float32)
    tracker.track(a)
    v = tracker.version(a)
    tracker.finished(tracker.prepare_for(_ReadOnlyBackend(), _writer, (a,), None))
    assert tracker.version(a) == v


def test_a_launch_on_cpu_that_writes_the_array_changes_its_version() -> None:
    from hpvm.runtime.memory import runtime_tracker

    hpvm.init()
    try:
        a = np.ones(4, np.float32)
        hpvm.track_memory(a)
        v = runtime_tracker().version(a)
        hpvm.wait(hpvm.launch(_writer, (a,), target="interp"))
        assert a[0] == 2.0 and runtime_tracker().version(a) != v
    finally:
        hpvm.cleanup()
