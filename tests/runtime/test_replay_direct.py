"""A replayed launch calls its back end's compiled entry itself (``Backend.direct``,
``plan.Replay``): no runner frame, no thread count or conversion tested per launch. That must
change nothing a launch can observe — the same results, the same errors at the same call,
its run timed for the quick-run rules — and an argument that needs converting, or an array
whose dtype was changed in place, still takes the path that converts or refuses it.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_quick_launches import _arrays, _launch, _ran_in_launch, add_root

import hpvm
from hpvm.runtime import api, quick
from markers import needs_backend
from running import every_run_quick

pytestmark = [pytest.mark.usefixtures("hpvm_runtime", "each_replay"), needs_backend("cpu")]


@hpvm.leaf(ins=("a",), outs=("b",))
def scale(a: hpvm.f32[:], b: hpvm.f32[:], s: hpvm.f32):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i] * s


@hpvm.internal
def scale_root(a: hpvm.f32[:], b: hpvm.f32[:], s: hpvm.f32):
    node = hpvm.create_node_1d(scale, a.shape[0])
    for i in range(3):
        hpvm.bind_in(node, i, i)


@pytest.fixture(autouse=True)
def all_threads(monkeypatch):
    """Every run quick, and on all threads (no one-thread probes: a tiny graph's runs would
    otherwise pick a thread count per launch, which the runner does, not the direct call)."""
    every_run_quick(monkeypatch, add_root, scale_root)
    monkeypatch.setattr(quick, "ONE_THREAD_PROBE_S", 0.0)


def _record():
    (record,) = api.default_runtime().tracker.replays.values()
    return record


class Counting:
    """A callable's calls counted (and each held up ``delay`` seconds first)."""

    def __init__(self, fn, delay: float = 0.0):
        self.fn, self.delay, self.calls = fn, delay, 0

    def __call__(self, *args):
        self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        return self.fn(*args)


def test_a_replay_calls_the_compiled_entry_and_not_the_runner(monkeypatch):
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    record = _record()
    assert record.entry is not None and record.runs.plain
    entry, runner = Counting(record.entry), Counting(record.runner)
    monkeypatch.setattr(record, "entry", entry)
    monkeypatch.setattr(record, "runner", runner)
    c[:] = 0
    assert _ran_in_launch(handle := _launch((a, b, c, 8)))
    assert hpvm.wait(handle) == ()
    assert (entry.calls, runner.calls) == (1, 0)
    np.testing.assert_array_equal(c, a + b)


def test_a_scalar_that_needs_converting_is_replayed_through_the_runner():
    a, b = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    for x in (a, b):
        hpvm.track_memory(x)
    for _ in range(3):
        hpvm.wait(hpvm.launch(scale_root, (a, b, 2.5), target="cpu"))  # a Python float for f32
    assert _record().entry is None
    np.testing.assert_array_equal(b, a * np.float32(2.5))
    hpvm.untrack_memory(b)  # (drops the record)
    hpvm.track_memory(b)
    for _ in range(3):
        hpvm.wait(hpvm.launch(scale_root, (a, b, np.float32(3.0)), target="cpu"))  # the port's own type
    assert _record().entry is not None
    np.testing.assert_array_equal(b, a * np.float32(3.0))


def test_an_error_in_a_direct_replay_is_the_runners_error(monkeypatch):
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    record = _record()
    a[3] = -5000.0
    errors = []
    for entry in (record.entry, None):  # the direct call, then the runner
        monkeypatch.setattr(record, "entry", entry)
        handle = _launch((a, b, c, 8))
        assert _ran_in_launch(handle)
        with pytest.raises(hpvm.NodeExecutionError, match="below -1000") as caught:
            hpvm.wait(handle)
        with pytest.raises(hpvm.NodeExecutionError):  # (raised by every wait of it)
            hpvm.wait(handle)
        errors.append((type(caught.value), str(caught.value)))
    assert errors[0] == errors[1]


def test_an_array_whose_dtype_was_changed_in_place_is_refused():
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    a.dtype = np.int32  # the same object and shape (NumPy allows it, for the same item size)
    with pytest.raises(hpvm.LaunchError, match="int32"):
        _launch((a, b, c, 8))
    a.dtype = np.float32
    hpvm.wait(_launch((a, b, c, 8)))
    np.testing.assert_array_equal(c, a + b)


def test_long_direct_runs_are_timed_and_go_to_a_worker(monkeypatch):
    monkeypatch.setattr(quick, "QUICK_RUN_S", 2e-3)  # the real limits, not the fixture's
    # (the run-time rule alone: a loaded machine's first launches may be queued and waited
    # for at once, and WAITED_AT_ONCE of those put longer runs inside launch by another rule)
    monkeypatch.setattr(quick, "WAITED_AT_ONCE", 1 << 30)
    a, b, c = _arrays(8)
    for _ in range(4):
        hpvm.wait(_launch((a, b, c, 8)))
    record = _record()
    monkeypatch.setattr(record, "entry", Counting(record.entry, delay=2 * quick.LOADED_RUN_S))
    for _ in range(2):  # one long run is let through, and so is the next...
        assert _ran_in_launch(handle := _launch((a, b, c, 8)))
        hpvm.wait(handle)
    assert record.runs.last >= 2 * quick.LOADED_RUN_S
    handle = _launch((a, b, c, 8))  # ...but two in a row are taken as more work: a worker's
    assert handle.slot is not None
    hpvm.wait(handle)


def test_a_replayed_handle_stores_nothing_beyond_its_slots():
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    handle = _launch((a, b, c, 8))
    hpvm.wait(handle)
    hpvm.wait(handle)
    assert vars(handle) == {}  # (its job, slot, stream, warnings: the class's defaults)
    assert handle.job is None and handle.stream is None and not handle.warnings


def _key_and_record():
    ((key, record),) = api.default_runtime().tracker.replays.items()
    return key, record


def test_an_array_held_by_a_replayed_run_is_not_untracked():
    """A replayed run holds its entries without the tracker's lock (a token each); untrack
    counts the tokens, as it counts a queued launch's hold."""
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    tracker = api.default_runtime().tracker
    key, record = _key_and_record()
    assert tracker.hold_replay(key) is record  # (what a replayed launch does before its run)
    with pytest.raises(hpvm.MemoryTrackingError, match="in use by 1 running"):
        hpvm.untrack_memory(c)
    tracker.release_replay(record.entries)  # (and after it)
    assert all(not entry.holds for entry in record.entries)
    hpvm.untrack_memory(c)
    with pytest.raises(hpvm.MemoryTrackingError, match="untracked"):
        _launch((a, b, c, 8))


def test_a_record_dropped_while_a_replay_held_it_is_let_go():
    """The other order: untrack's new epoch comes between a replay finding its record and
    holding it — the replay sees the epoch, lets its tokens go, and takes the full path."""
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    tracker = api.default_runtime().tracker
    key, record = _key_and_record()
    with tracker._lock:
        tracker._drop_replays()  # (what untrack does first)
    tracker.replays[key] = record  # as the replay's look-up found it just before
    assert tracker.hold_replay(key) is None
    assert all(not entry.holds for entry in record.entries)
    tracker.replays.clear()
    hpvm.wait(_launch((a, b, c, 8)))  # the full path, then recorded again
    assert _key_and_record()[1] is not record
