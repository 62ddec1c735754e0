"""Replayed launches (``runtime/plan.py``, ``Replay``): a quick cpu launch repeating a
recorded one — the same array objects with the same shapes, the same scalar types and
values — skips finding its arrays, the sizes' key and the run key. That must change nothing
a launch can observe: every check whose answer can change between launches (an acceptor,
an array's shape, tracking, a scalar's value) still gives the error it gave, and the run
sees the arguments given now.
"""

from __future__ import annotations

import gc
import importlib
import time
import weakref

import numpy as np
import pytest
from test_quick_launches import _arrays, _launch, _ran_in_launch, add_root

import hpvm
from hpvm.runtime import api, plan, quick
from markers import needs_backend
from running import every_run_quick

pytestmark = [pytest.mark.usefixtures("hpvm_runtime", "each_replay"), needs_backend("cpu")]


@hpvm.leaf(ins=("a",), outs=("b",))
def double(a: hpvm.f32[:, :], b: hpvm.f32[:, :]):
    node = hpvm.get_node()
    i, j = hpvm.get_node_instance_id_x(node), hpvm.get_node_instance_id_y(node)
    b[i, j] = a[i, j] * 2.0


@hpvm.internal
def double_root(a: hpvm.f32[:, :], b: hpvm.f32[:, :]):
    node = hpvm.create_node_2d(double, a.shape[0], a.shape[1])
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


@hpvm.leaf
def same(x: hpvm.f64) -> hpvm.f64:
    return x * 1.0


@hpvm.internal
def same_root(x: hpvm.f64):
    node = hpvm.create_node(same)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


@pytest.fixture(autouse=True)
def generous_limit(monkeypatch):
    """Every run counts as quick here (a loaded machine must not decide where one runs)."""
    every_run_quick(monkeypatch, add_root, double_root, same_root)


def _replays() -> dict:
    return api.default_runtime().tracker.replays


def test_repeated_launches_over_swapped_arrays_replay_one_record_each():
    a, b, c = _arrays(8)
    for _ in range(4):
        hpvm.wait(_launch((a, b, c, 8)))
        hpvm.wait(_launch((b, a, c, 8)))
    assert len(_replays()) == 2
    records = set(map(id, _replays().values()))
    assert _ran_in_launch(handle := _launch((a, b, c, 8)))
    hpvm.wait(handle)
    assert set(map(id, _replays().values())) == records  # replayed, not recorded again
    np.testing.assert_array_equal(c, a + b)


def test_an_array_reshaped_in_place_is_checked_again():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    b = np.zeros((4, 6), np.float32)
    for x in (a, b):
        hpvm.track_memory(x)
    for _ in range(3):
        hpvm.wait(hpvm.launch(double_root, (a, b), target="cpu"))
    np.testing.assert_array_equal(b, a * 2)
    assert len(_replays()) == 1
    a.shape = (6, 4)  # the same object, other sizes: b is too small for them now
    with pytest.raises(hpvm.OutOfBoundsError, match="past its end"):
        hpvm.wait(hpvm.launch(double_root, (a, b), target="cpu"))
    a.shape = (4, 6)
    b[:] = 0
    hpvm.wait(hpvm.launch(double_root, (a, b), target="cpu"))
    np.testing.assert_array_equal(b, a * 2)


def test_untracking_drops_the_records_and_is_refused_as_before():
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    assert _replays()
    hpvm.untrack_memory(c)
    assert not _replays()
    with pytest.raises(hpvm.MemoryTrackingError, match="untracked"):
        _launch((a, b, c, 8))


def test_a_record_does_not_keep_an_untracked_array_alive():
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    gone = weakref.ref(c)
    hpvm.untrack_memory(c)
    del c
    gc.collect()
    assert gone() is None


def test_a_read_only_array_is_refused_by_a_replayed_launch():
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    c.flags.writeable = False
    with pytest.raises(hpvm.LaunchError, match="read-only"):
        _launch((a, b, c, 8))
    c.flags.writeable = True
    hpvm.wait(_launch((a, b, c, 8)))


def test_new_views_each_launch_give_the_right_results():
    base = np.arange(32, dtype=np.float32)
    hpvm.track_memory(base)
    for k in range(6):
        base[16:24] = 0
        base[:8] = np.arange(8) * (k + 1)
        hpvm.wait(_launch((base[:8], base[8:16], base[16:24], 8)))  # new view objects each time
        np.testing.assert_array_equal(base[16:24], base[:8] + base[8:16])
    assert len(_replays()) <= 1  # (one, when an id came again: a record holds its views)


def test_the_same_views_again_are_replayed_and_held_by_the_record():
    base = np.arange(32, dtype=np.float32)
    hpvm.track_memory(base)
    views = (base[:8], base[8:16], base[16:24])
    hpvm.wait(_launch((*views, 8)))  # (the first run: a worker's)
    hpvm.wait(_launch((*views, 8)))  # quick, the key kept
    assert not _replays()
    hpvm.wait(_launch((*views, 8)))  # the same key again: recorded
    (record,) = _replays().values()
    assert all(any(v is a for a in record.arrays) for v in views)
    base[16:24] = 0
    assert _ran_in_launch(handle := _launch((*views, 8)))
    hpvm.wait(handle)
    assert next(iter(_replays().values())) is record  # replayed, not recorded again
    np.testing.assert_array_equal(base[16:24], base[:8] + base[8:16])
    gone = weakref.ref(views[2])
    hpvm.untrack_memory(base)  # drops the record, and with it the views it held
    del views, handle, record
    gc.collect()
    assert gone() is None


def test_two_buffers_views_swapped_are_replayed():
    """A sweep over two buffers' views made once, swapped every launch (HPVM-C's byte views
    in a Jacobi loop): the two keys alternate, and each is recorded when it comes again
    (``plan._VIEWED`` keys remembered, not only the last), then replayed."""
    base = np.arange(32, dtype=np.float32)
    hpvm.track_memory(base)
    x, y, out = base[:8], base[8:16], base[16:24]
    for k in range(8):
        args = (x, y, out, 8) if k % 2 == 0 else (y, x, out, 8)
        out[:] = 0
        handle = _launch(args)
        if k >= 6:
            assert _ran_in_launch(handle) and len(_replays()) == 2  # (both orders recorded)
        hpvm.wait(handle)
        np.testing.assert_array_equal(out, x + y)


def test_a_replayed_run_sees_the_scalars_given_now():
    for x in (0.0, 0.0, 0.0, -0.0):  # -0.0 == 0.0: the same record, not the same value
        (result,) = hpvm.wait(hpvm.launch(same_root, (x,), target="cpu"))
        assert result == x and np.signbit(result) == np.signbit(x)
    assert len(_replays()) == 1


def test_cleanup_drops_the_records():
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    assert _replays()
    hpvm.cleanup()
    assert not _replays()
    hpvm.init()


def _before_each_run(monkeypatch, record, before) -> None:
    """Call ``before()`` ahead of each of ``record``'s runs, through its runner or a
    compiled entry called directly (``Replay.entry``, or ``Replay.single`` on one thread):
    which one a replay takes depends on the run key's timings (``Runs.plain``,
    ``Runs.threads``), so all are wrapped."""
    runner = record.runner

    def run(args, threads):
        before()
        return runner(args, threads)

    monkeypatch.setattr(record, "runner", run)
    for name in ("entry", "single"):
        entry = getattr(record, name)
        if entry is not None:

            def call(*args, entry=entry):
                before()
                return entry(*args)

            monkeypatch.setattr(record, name, call)


def _slowed(monkeypatch, record, seconds: float, times: int | None = None) -> None:
    """``record``'s runs (or the next ``times`` of them) held up ``seconds`` first — as a
    run preempted by the scheduler, or one with more work, reads on the wall clock."""
    left = [times]

    def hold_up() -> None:
        if left[0] is None or left[0] > 0:
            left[0] = None if left[0] is None else left[0] - 1
            time.sleep(seconds)

    _before_each_run(monkeypatch, record, hold_up)


def test_one_preempted_replayed_run_keeps_the_replay_and_two_long_ones_go_to_a_worker(monkeypatch):
    monkeypatch.setattr(quick, "QUICK_RUN_S", 2e-3)  # the real limits, not the fixture's
    # The rule of run times alone: on a loaded machine the first launches (recorded, or
    # slowed past QUICK_RUN_S) may be queued and waited for at once, and a host that waits
    # at once WAITED_AT_ONCE times has its longer runs inside launch — another rule, with
    # tests of its own (test_quick_launches.py). (A fresh clone's `make test` failed here.)
    monkeypatch.setattr(quick, "WAITED_AT_ONCE", 1 << 30)
    a, b, c = _arrays(8)
    for _ in range(4):
        hpvm.wait(_launch((a, b, c, 8)))
    (record,) = _replays().values()
    held_up = 2 * quick.LOADED_RUN_S  # past LOADED_RUN_S, under PREEMPTED_RUN_S
    _slowed(monkeypatch, record, held_up, times=1)
    assert _ran_in_launch(handle := _launch((a, b, c, 8)))  # replayed, held up once
    hpvm.wait(handle)
    assert record.runs.last >= held_up
    for _ in range(3):
        assert _ran_in_launch(handle := _launch((a, b, c, 8)))  # still replayed
        hpvm.wait(handle)
    assert record.runs.last < quick.LOADED_RUN_S
    _slowed(monkeypatch, record, held_up)  # every run long now (around the spent first one)
    for _ in range(2):
        assert _ran_in_launch(handle := _launch((a, b, c, 8)))  # one long run is let through...
        hpvm.wait(handle)
    handle = _launch((a, b, c, 8))  # ...two in a row are taken as more work: a worker's
    assert handle.slot is not None
    hpvm.wait(handle)
    c[:] = 0
    hpvm.wait(_launch((a, b, c, 8)))
    np.testing.assert_array_equal(c, a + b)


def test_a_replaced_table_of_hint_choices_makes_a_new_plan_and_no_replay(monkeypatch):
    """A plan without a target holds while its root's hint choice (``launch._CHOICES``) is
    the one it was made under: a replaced table (tests do, with other hint preferences) is
    a new plan, and a recorded launch of the old plan is not replayed by it."""
    launch_module = importlib.import_module("hpvm.runtime.launch")
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(hpvm.launch(add_root, (a, b, c, 8)))
    first = plan.plan_for(add_root, None)
    assert plan.plan_for(add_root, None) is first
    (record,) = (r for key, r in _replays().items() if key[0] is first)
    replayed: list[bool] = []
    _before_each_run(monkeypatch, record, lambda: replayed.append(True))
    monkeypatch.setattr(launch_module, "_CHOICES", {})
    c[:] = 0
    hpvm.wait(hpvm.launch(add_root, (a, b, c, 8)))
    assert not replayed and plan.plan_for(add_root, None) is not first
    np.testing.assert_array_equal(c, a + b)
