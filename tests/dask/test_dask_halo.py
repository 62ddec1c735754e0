"""Leaves indexing rows at a constant offset from their instance id x: chunks get the rows
they read past their own (a halo), and own the one row offset they write.

In-process chunks share the host's memory, so the copy back of the owned rows is checked
on worker processes too (slow).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import hpvm
from hpvm.backends.dask.ownership import analyse
from markers import needs_backend

pytestmark = needs_backend("dask")


@hpvm.leaf(ins=("src",), outs=("dst",))
def smooth(src: hpvm.f64[:, :], dst: hpvm.f64[:, :]):
    node = hpvm.get_node()
    k = hpvm.get_node_instance_id_x(node) + 1  # the grid covers the interior rows
    j = hpvm.get_node_instance_id_y(node)
    dst[k, j] = src[k - 1, j] + 2.0 * src[k, j] + src[k + 1, j]


@hpvm.internal
def smooth_root(src: hpvm.f64[:, :], dst: hpvm.f64[:, :]):
    step = hpvm.create_node_2d(smooth, src.shape[0] - 2, src.shape[1])
    hpvm.bind_in(step, 0, 0)
    hpvm.bind_in(step, 1, 1)


@hpvm.leaf(ins=("y",), outs=("y",))
def shifts(y: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    y[i + 1] = y[i]


def test_the_rows_each_array_is_indexed_at():
    found = analyse(smooth)
    assert found.problem is None and found.rows == {"src": (0, 2), "dst": (1, 1)}


def test_a_written_array_at_several_rows_is_refused():
    assert "reads or writes 'y', which it writes, at several rows around its instance (x + 0, x + 1)" in (
        analyse(shifts).problem or ""
    )


def _run(root, args, target):
    for a in args:
        hpvm.track_memory(a)
    try:
        handle = hpvm.launch(root, args, target=target)
        hpvm.wait(handle)
    finally:
        for a in args:
            hpvm.untrack_memory(a)
    return handle


def _check(rows: int) -> hpvm.runtime.api.LaunchHandle:
    src = np.random.default_rng(rows).random((rows, 5))
    dst, want = np.full_like(src, -1.0), np.full_like(src, -1.0)
    handle = _run(smooth_root, (src, dst), "dask")
    _run(smooth_root, (src.copy(), want), "interp")
    np.testing.assert_array_equal(dst, want)  # the first and last rows stay -1
    return handle


@pytest.mark.parametrize("rows", [3, 4, 9, 50])
def test_halo_chunks_match_interp(dask_runtime, rows):
    handle = _check(rows)
    if rows - 2 >= 2:
        assert "split into 2 chunk(s)" in handle.notes[0], handle.notes


def test_a_grid_reading_past_the_array_runs_whole(dask_runtime):
    src, dst = np.zeros((6, 2)), np.zeros((6, 2))

    @hpvm.internal
    def too_far(src: hpvm.f64[:, :], dst: hpvm.f64[:, :]):
        step = hpvm.create_node_2d(smooth, src.shape[0] - 1, src.shape[1])  # one row too many
        hpvm.bind_in(step, 0, 0)
        hpvm.bind_in(step, 1, 1)

    with pytest.raises(hpvm.OutOfBoundsError):
        _run(too_far, (src, dst), "dask")


@pytest.mark.slow
def test_owned_rows_come_back_from_worker_processes(process_cluster):
    import cloudpickle
    from distributed import Client

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    client = Client(process_cluster, set_as_default=False)
    hpvm.cleanup()
    hpvm.init(dask=client)
    try:
        handle = _check(41)
        assert "split into 2 chunk(s) of rows [0, 19), [19, 39)" in handle.notes[0]
    finally:
        hpvm.cleanup()
        client.close()


@hpvm.internal
def smooth_swap(src: hpvm.f64[:, :], dst: hpvm.f64[:, :]):
    step = hpvm.create_node_2d(smooth, src.shape[0] - 2, src.shape[1])
    hpvm.bind_in(step, 0, 0)
    hpvm.bind_in(step, 1, 1)


def _iterate(target: str, grid: np.ndarray, launches: int) -> tuple[np.ndarray, list[int], list[str]]:
    """``launches`` of the smoothing stencil, swapping its two buffers (as a solver's
    iterations do); the bytes each launch sent to the workers, and the last notes."""
    a, b = grid.copy(), grid.copy()
    for x in (a, b):
        hpvm.track_memory(x)
    sent, notes = [], []
    try:
        for _ in range(launches):
            handle = hpvm.launch(smooth_swap, (a, b), target=target)
            hpvm.wait(handle)
            sent.append(handle.transfers.to_device)
            notes = handle.notes
            a, b = b, a
    finally:
        for x in (a, b):
            hpvm.untrack_memory(x)
    return a, sent, notes


@pytest.mark.parametrize("rows", [5, 40])
def test_iterated_halos_go_between_workers_not_through_the_host(dask_runtime, rows, through_scheduler):
    # After the first launches sent both buffers, each launch's halo rows (written by the
    # neighbour chunk the launch before) reach a chunk from the neighbour's worker: the
    # host sends nothing (it still receives every chunk's owned rows, as dask's results
    # land in the host's arrays).
    grid = np.random.default_rng(rows).random((rows, 3)) * (1 << 20)  # exact sums in f64
    got, sent, notes = _iterate("dask", grid, 7)
    want, _, _ = _iterate("interp", grid, 7)
    np.testing.assert_array_equal(got, want)
    assert "split into 2 chunk(s)" in notes[0], notes
    assert sent[0] > 0 and sent[2:] == [0] * 5, sent


def test_a_host_write_to_a_halo_row_is_sent_from_the_host(dask_runtime, through_scheduler):
    # The halo's digest no longer matches the rows the neighbour left: the host's go.
    grid = np.random.default_rng(3).random((12, 4))
    a, b = grid.copy(), grid.copy()
    want_a, want_b = grid.copy(), grid.copy()
    for x in (a, b, want_a, want_b):
        hpvm.track_memory(x)
    try:
        for step in range(4):
            if step == 2:
                hpvm.request_memory(a)
                a[6] = 99.0  # chunk 0 reads row 6 (rows [0, 7)); chunk 1 wrote it last
                want_a[6] = 99.0
            handle = hpvm.launch(smooth_swap, (a, b), target="dask")
            hpvm.wait(handle)
            hpvm.wait(hpvm.launch(smooth_swap, (want_a, want_b), target="interp"))
            if step == 2:
                # row 6 for chunk 0, the block of chunk 1's own rows holding it: not everything
                assert 0 < handle.transfers.to_device < a.nbytes, handle.transfers
            a, b, want_a, want_b = b, a, want_b, want_a
    finally:
        for x in (a, b, want_a, want_b):
            hpvm.untrack_memory(x)
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(b, want_b)


@pytest.mark.slow
def test_iterated_halos_between_worker_processes(process_cluster, through_scheduler):
    # The same across processes: the edge rows travel between the workers' sockets.
    import cloudpickle
    from distributed import Client

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    client = Client(process_cluster, set_as_default=False)
    hpvm.cleanup()
    hpvm.init(dask=client)
    try:
        grid = np.random.default_rng(9).random((30, 4)) * (1 << 20)
        got, sent, notes = _iterate("dask", grid, 6)
        want, _, _ = _iterate("interp", grid, 6)
    finally:
        hpvm.cleanup()
        client.close()
    np.testing.assert_array_equal(got, want)
    assert "split into 2 chunk(s)" in notes[0], notes
    assert sent[0] > 0 and sent[2:] == [0] * 4, sent
