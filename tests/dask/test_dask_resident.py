"""Arrays stay on the workers across launches (backends/dask/resident.py).

Launch after launch, only what changed on the host since the workers got it moves: the
results equal ``cpu``'s (``dask_clusters.REFERENCE``), a host write between launches
(declared or not) is seen, and the bytes counted in ``handle.transfers`` /
``hpvm.memory_stats()`` show how little moves.
"""

from __future__ import annotations

import numpy as np

import hpvm
from dask_clusters import REFERENCE
from markers import needs_backend

pytestmark = needs_backend("dask")


@hpvm.leaf(ins=("a",), outs=("out",))
def window(a: hpvm.f64[:, :], out: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    acc = 0.0
    for j in range(a.shape[1]):
        acc += a[i, j] + 2.0 * a[i + 1, j] + a[i + 2, j]
    out[i] = acc + out[i] * 0.5


@hpvm.internal
def window_root(a: hpvm.f64[:, :], out: hpvm.f64[:]):
    k = hpvm.create_node_1d(window, out.shape[0])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


@hpvm.leaf(ins=("src",), outs=("dst",))
def smooth(src: hpvm.f64[:, :], dst: hpvm.f64[:, :]):
    k = hpvm.get_node_instance_id_x(hpvm.get_node()) + 1
    for j in range(dst.shape[1]):
        dst[k, j] = (src[k - 1, j] + src[k, j] + src[k + 1, j]) / 3.0


@hpvm.internal
def smooth_root(src: hpvm.f64[:, :], dst: hpvm.f64[:, :]):
    k = hpvm.create_node_1d(smooth, src.shape[0] - 2)
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


def _launches(root, arrays, count, target, between=None):
    """``count`` launches (each waited for); returns the bytes each moved."""
    moved = []
    for step in range(count):
        if between is not None:
            between(step)
        handle = hpvm.launch(root, arrays(step), target=target)
        hpvm.wait(handle)
        moved.append((handle.transfers.to_device, handle.transfers.to_host))
    return moved


def test_30_launches_move_far_less_than_30_arrays(dask_runtime):
    rng = np.random.default_rng(3)
    a = rng.random((202, 64))
    out, want = np.zeros(200), np.zeros(200)
    for x in (a, out, want):
        hpvm.track_memory(x)
    try:
        moved = _launches(window_root, lambda _: (a, out), 30, "dask")
        _launches(window_root, lambda _: (a, want), 30, REFERENCE)
    finally:
        for x in (a, out, want):
            hpvm.untrack_memory(x)
    np.testing.assert_allclose(out, want, rtol=1e-12)
    first_in = moved[0][0]
    assert first_in >= a.nbytes + out.nbytes  # every row once (the halo rows twice)
    # a did not change on the host: nothing of it goes again; of out, only the block of
    # rows at the chunks' edge, which the other chunk wrote
    assert all(to_device <= out.nbytes for to_device, _ in moved[1:]), moved[:5]
    # the written rows each launch, with the 2 rows past its own that the first chunk read
    # (its piece comes back whole: one task per chunk, docs/backends/dask.md section 8)
    assert all(to_host == out.nbytes + 2 * out.itemsize for _, to_host in moved), moved[:3]
    total = sum(d + h for d, h in moved)
    assert total < 5 * a.nbytes, total  # the first version moved > 30 x a.nbytes (a and out each launch)


def test_a_host_write_between_launches_is_seen_undeclared(dask_runtime):
    a = np.arange(202 * 64, dtype=np.float64).reshape(202, 64) % 13
    out, want = np.zeros(200), np.zeros(200)
    b = a.copy()
    for x in (a, b, out, want):
        hpvm.track_memory(x)

    def poke(x):
        def between(step):
            if step == 3:
                x[150, 7] = -100.0  # no API call at all
            if step == 5:
                hpvm.request_memory(x)
                x[:10] *= 2.0

        return between

    try:
        moved = _launches(window_root, lambda _: (a, out), 8, "dask", poke(a))
        _launches(window_root, lambda _: (b, want), 8, REFERENCE, poke(b))
    finally:
        for x in (a, b, out, want):
            hpvm.untrack_memory(x)
    np.testing.assert_allclose(out, want, rtol=1e-12)
    assert 0 < moved[3][0] < a.nbytes // 4, moved  # only the stale block of rows went again
    assert 0 < moved[5][0] < a.nbytes // 2, moved
    assert moved[4][0] <= out.nbytes and moved[6][0] <= out.nbytes, moved  # (out's edge block)


def test_a_stencil_swapping_its_buffers_sends_only_halo_blocks(dask_runtime):
    rng = np.random.default_rng(5)
    src = rng.random((66, 512))
    dst = src.copy()
    s2, d2 = src.copy(), dst.copy()
    for x in (src, dst, s2, d2):
        hpvm.track_memory(x)
    try:
        pair = [src, dst]
        moved = _launches(smooth_root, lambda step: (pair[step % 2], pair[1 - step % 2]), 12, "dask")
        other = [s2, d2]
        _launches(smooth_root, lambda step: (other[step % 2], other[1 - step % 2]), 12, REFERENCE)
    finally:
        for x in (src, dst, s2, d2):
            hpvm.untrack_memory(x)
    np.testing.assert_allclose(src, s2, rtol=1e-12)
    np.testing.assert_allclose(dst, d2, rtol=1e-12)
    later = [d for d, _ in moved[2:]]
    assert max(later) < src.nbytes // 8, later  # blocks at the chunk's edges, not the arrays
    assert sum(d + h for d, h in moved) < 12 * src.nbytes * 1.5


def test_keeping_can_be_turned_off_for_comparison(dask_runtime, monkeypatch):
    from hpvm.backends.dask import backend

    monkeypatch.setattr(backend, "KEEP", False)
    a = np.ones((12, 4))
    out = np.zeros(10)
    for x in (a, out):
        hpvm.track_memory(x)
    try:
        moved = _launches(window_root, lambda _: (a, out), 3, "dask")
    finally:
        for x in (a, out):
            hpvm.untrack_memory(x)
    assert all(d >= a.nbytes for d, _ in moved), moved
