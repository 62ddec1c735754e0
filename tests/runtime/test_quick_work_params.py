"""Which scalars' values make a new run key (``quick.work_params``, ``bounded.fixed_work``).

A run key predicts a run's duration, so it must hold every value that can change how much
work a run does — a loop bound, a replication size — and nothing else: with a row index or
a time step in it, a host loop passing a new one to each launch found no run of its key
and sent every launch to a worker (Rodinia's path finder: 0.2–0.4 ms a launch for a
microsecond's work). The analysis must never leave out a value that sets a loop's length or
a node's size, through any number of levels; it may keep one that does not (it is
conservative: an edge into a looping leaf's scalar keeps every scalar of its graph).
"""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.ir.bounded import fixed_work
from hpvm.runtime import quick
from markers import needs_backend
from running import every_run_quick, full_path_launches

# -- leaves ---------------------------------------------------------------------------------


@hpvm.leaf(ins=("src",), outs=("dst",))
def shift(src: hpvm.f32[:], dst: hpvm.f32[:], row: hpvm.i64, weight: hpvm.f32, cols: hpvm.i64):
    """GPU style, no loop: one element each, whatever ``row`` and ``weight`` are."""
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if i < cols:
        dst[i] = src[i] * weight + np.float32(row)


@hpvm.leaf(ins=("src",), outs=("dst",))
def smooth(src: hpvm.f32[:], dst: hpvm.f32[:], steps: hpvm.i64):
    """Loops ``steps`` times: its value is work."""
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    s = np.float32(0.0)
    for _ in range(steps):
        s += src[i]
    dst[i] = s


@hpvm.leaf(ins=("src",), outs=("dst",))
def sliced(src: hpvm.f32[:], dst: hpvm.f32[:], n: hpvm.i64):
    dst[0] = src[:n].sum()


@hpvm.leaf(ins=("src",), outs=("dst",))
def allocates(src: hpvm.f32[:], dst: hpvm.f32[:], n: hpvm.i64):
    dst[0] = np.zeros(n, np.float32).sum() + src[0]


@hpvm.leaf(ins=("src",), outs=())
def counts(src: hpvm.f32[:], limit: hpvm.i64) -> hpvm.i64:
    """A scalar output computed at run time (what an edge then carries)."""
    return min(limit, src.shape[0])


# -- graphs -----------------------------------------------------------------------------------


@hpvm.internal
def row_root(
    src: hpvm.f32[:], dst: hpvm.f32[:], row: hpvm.i64, weight: hpvm.f32, cols: hpvm.i64, n: hpvm.i64
):
    """``n`` sizes the node; ``row``, ``weight`` and ``cols`` reach a leaf without loops."""
    node = hpvm.create_node_1d(shift, n)
    for i in range(5):
        hpvm.bind_in(node, i, i)


@hpvm.internal
def steps_root(src: hpvm.f32[:], dst: hpvm.f32[:], steps: hpvm.i64, n: hpvm.i64):
    node = hpvm.create_node_1d(smooth, n)
    for i in range(3):
        hpvm.bind_in(node, i, i)


@hpvm.internal
def two_level_root(
    src: hpvm.f32[:],
    dst: hpvm.f32[:],
    row: hpvm.i64,
    weight: hpvm.f32,
    cols: hpvm.i64,
    block: hpvm.i64,
    blocks: hpvm.i64,
):
    """``block`` sizes ``row_root``'s node one level down; ``blocks`` the outer one."""
    node = hpvm.create_node_1d(row_root, blocks)
    for i in range(6):
        hpvm.bind_in(node, i, i)


@hpvm.internal
def edge_root(src: hpvm.f32[:], dst: hpvm.f32[:], limit: hpvm.i64, row: hpvm.i64):
    """``counts``' output is ``smooth``'s loop bound: what it will be is known only at run
    time, so every scalar of the graph counts."""
    a = hpvm.create_node(counts)
    b = hpvm.create_node_1d(smooth, 4)
    hpvm.bind_in(a, 0, 0)
    hpvm.bind_in(a, 2, 1)
    hpvm.bind_in(b, 0, 0)
    hpvm.bind_in(b, 1, 1)
    hpvm.edge(a, b, hpvm.ALL_TO_ALL, 0, 2)


def test_leaves_without_loops_slices_or_sized_calls_do_fixed_work() -> None:
    assert fixed_work(shift)
    assert not fixed_work(smooth)
    assert not fixed_work(sliced)
    assert not fixed_work(allocates)


def test_only_scalars_that_size_a_node_or_bound_a_loop_make_the_key() -> None:
    assert quick.work_params(row_root) == {5}  # n: the node's size
    assert quick.work_params(steps_root) == {2, 3}  # steps: the loop; n: the size
    assert quick.work_params(two_level_root) == {5, 6}  # block, one level down; blocks
    assert quick.work_params(edge_root) == {2, 3}  # an edge into a loop bound: all of them


# -- the runtime: a new value of a scalar that is not work is not a new run key ------------


@pytest.fixture
def quick_roots(monkeypatch):  # type: ignore[no-untyped-def]
    every_run_quick(monkeypatch, row_root, steps_root)


@needs_backend("cpu")
@pytest.mark.usefixtures("hpvm_runtime", "quick_roots")
def test_a_host_loop_of_new_rows_runs_in_launch_and_a_new_loop_bound_does_not() -> None:
    n = 64
    src, dst = np.arange(n, dtype=np.float32), np.zeros(n, np.float32)
    for a in (src, dst):
        hpvm.track_memory(a)
    try:
        queued = []
        for row in range(12):  # a new row and weight each time: one run key
            handle = hpvm.launch(row_root, (src, dst, row, np.float32(row) / 2, n, n), target="cpu")
            queued.append(handle.slot is not None)
            hpvm.wait(handle)
            hpvm.request_memory(dst)
            np.testing.assert_array_equal(dst, src * np.float32(row / 2) + np.float32(row))
        assert queued[0] and not any(queued[1:]), queued  # (the first run compiles: a worker)
        first = []
        for steps in (3, 5, 3, 7):  # a loop bound is work: each new value is a new key
            handle = hpvm.launch(steps_root, (src, dst, steps, n), target="cpu")
            first.append(handle.slot is not None)
            hpvm.wait(handle)
            hpvm.request_memory(dst)
            np.testing.assert_array_equal(dst, src * steps)
        assert first == [True, True, False, True], first
    finally:
        for a in (src, dst):
            hpvm.untrack_memory(a)


@needs_backend("cpu")
@pytest.mark.usefixtures("hpvm_runtime", "quick_roots")
def test_new_rows_are_one_replay_each_run_with_its_own_row(monkeypatch, each_replay) -> None:  # type: ignore[no-untyped-def]
    """A replay's key leaves out the values of scalars that change no work (``row``,
    ``weight``, ``cols``): a host passing a new row and weight each time is recorded once
    and replayed from its second launch on, each replay computing with its own values —
    through the Python replay, the compiled one, and its native call once hot. A new ``n``
    (work) is a new key: the full path again, and the bounds its run checks are its own."""
    from hpvm.runtime import api, plan

    monkeypatch.setattr(plan, "HOT_REPLAYS", 3)
    n = 64
    src, dst = np.arange(n, dtype=np.float32), np.zeros(n, np.float32)
    for a in (src, dst):
        hpvm.track_memory(a)
    replays = api.default_runtime().tracker.replays
    try:
        full_path = full_path_launches(monkeypatch)
        for row in range(20):
            weight = np.float32(row) / 4 - 1
            hpvm.wait(hpvm.launch(row_root, (src, dst, row, weight, n - row, n), target="cpu"))
            hpvm.request_memory(dst)
            want = np.where(np.arange(n) < n - row, src * weight + np.float32(row), dst)
            np.testing.assert_array_equal(dst, want)
            dst[:] = -1
        # (the first runs on a worker, the second is recorded: 18 replays)
        assert full_path[0] == 2, full_path
        assert len(replays) == 1
        if each_replay == "compiled":  # (hot after 3 replays: the rest called natively)
            assert next(iter(replays.values())).native is not None
        hpvm.wait(hpvm.launch(row_root, (src, dst, 5, np.float32(2), n, n // 2), target="cpu"))
        assert full_path[0] == 3  # (a new size: a new key)
        hpvm.request_memory(dst)
        np.testing.assert_array_equal(dst[: n // 2], src[: n // 2] * 2 + 5)
        np.testing.assert_array_equal(dst[n // 2 :], -1)
    finally:
        for a in (src, dst):
            hpvm.untrack_memory(a)
