"""Replayed launches (``runtime/plan.py``, ``Replay``): a quick cpu launch repeating a
recorded one — the same array objects with the same shapes, the same scalar types and
values — skips finding its arrays, the sizes' key and the run key. That must change nothing
a launch can observe: every check whose answer can change between launches (an acceptor,
an array's shape, tracking, a scalar's value) still gives the error it gave, and the run
sees the arguments given now.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from test_quick_launches import _arrays, _launch, _ran_in_launch, add_root

import hpvm
from hpvm.runtime import api
from markers import needs_backend
from running import every_run_quick

pytestmark = [pytest.mark.usefixtures("hpvm_runtime"), needs_backend("cpu")]


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


def test_views_are_never_replayed():
    base = np.arange(32, dtype=np.float32)
    hpvm.track_memory(base)
    for _ in range(3):
        hpvm.wait(_launch((base[:8], base[8:16], base[16:24], 8)))  # new view objects each time
    assert not _replays()  # (a view's id may be another view's once it dies)
    np.testing.assert_array_equal(base[16:24], base[:8] + base[8:16])


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
