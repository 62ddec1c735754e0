"""The pieces of a declared-layout split stay on the workers across launches.

``declared.py`` gives each range of instances only the elements its layout owns;
``resident.py`` keeps those packed pieces on the workers, as it keeps row slices. Launch
after launch the results equal ``cpu``'s (``dask_clusters.REFERENCE``), only what the host
changed goes again (a written piece comes back every launch, and the worker keeps what it
wrote), and a host write between launches — with or without an API call — is seen.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import hpvm
from dask_clusters import REFERENCE
from hpvm import hbir
from markers import needs_backend

pytestmark = needs_backend("dask")


@hpvm.leaf(ins=("x", "y"), outs=("y",), layouts={"x": "strided", "y": "strided"})
def strided_step(x: hpvm.f64[:], y: hpvm.f64[:], a: hpvm.f64):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    g = hpvm.get_num_node_instances_x(node)
    for k in range(i, y.shape[0], g):
        y[k] = a * x[k] + 0.5 * y[k] + k * 1e-3


@hpvm.internal
def strided_step_root(x: hpvm.f64[:], y: hpvm.f64[:], a: hpvm.f64):
    k = hpvm.create_node_1d(strided_step, 4)
    for port in range(3):
        hpvm.bind_in(k, port, port)


def _launches(root, args, count, target, between=None):
    """``count`` launches of ``root`` on ``args`` (each waited for): the bytes each moved
    and the notes of the last."""
    arrays = list({id(a): a for a in args if isinstance(a, np.ndarray)}.values())
    for a in arrays:
        hpvm.track_memory(a)
    moved, notes = [], []
    try:
        for step in range(count):
            if between is not None:
                between(step)
            handle = hpvm.launch(root, args, target=target)
            hpvm.wait(handle)
            moved.append((handle.transfers.to_device, handle.transfers.to_host))
            notes = handle.notes
    finally:
        for a in arrays:
            hpvm.untrack_memory(a)
    return moved, notes


def test_25_launches_of_a_strided_split_send_each_piece_once(dask_runtime):
    rng = np.random.default_rng(7)
    x, y = rng.random(20_000), rng.random(20_000)
    x2, y2 = x.copy(), y.copy()
    moved, notes = _launches(strided_step_root, (x, y, 0.25), 25, "dask")
    _launches(strided_step_root, (x2, y2, 0.25), 25, REFERENCE)
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_array_equal(x, x2)
    assert "split by its declared layouts ('x' strided, 'y' strided) into 2 chunk(s)" in notes[0], notes
    assert moved[0][0] == x.nbytes + y.nbytes  # the first launch: each owned element once
    # later launches: x did not change, and the worker keeps the y it wrote (the host's y
    # equals it once the owned elements are copied back): nothing goes again
    assert all(to_device == 0 for to_device, _ in moved[1:]), moved[:4]
    assert all(to_host == y.nbytes for _, to_host in moved)  # the owned elements of y, each launch
    sent = sum(d for d, _ in moved)
    assert sent < 2 * (x.nbytes + y.nbytes), sent  # sending every launch: 25 x (x + y)


def test_a_host_write_between_layout_launches_is_seen(dask_runtime):
    rng = np.random.default_rng(8)
    x, y = rng.random(20_000), rng.random(20_000)
    x2, y2 = x.copy(), y.copy()

    def poke(xs, ys):
        def between(step):
            if step == 3:
                xs[12_345] = -7.0  # no API call at all
            if step == 5:
                hpvm.request_memory(ys)
                ys[:100] *= 3.0
            if step == 7:
                xs[:] = np.arange(xs.size)  # every element: the pieces go whole

        return between

    moved, _ = _launches(strided_step_root, (x, y, 0.25), 9, "dask", poke(x, y))
    _launches(strided_step_root, (x2, y2, 0.25), 9, REFERENCE, poke(x2, y2))
    np.testing.assert_array_equal(y, y2)
    piece = x.nbytes // 2  # what one range owns of one array (strided over 2 ranges)
    assert 0 < moved[3][0] < piece // 4, moved  # one stale block of one piece
    assert 0 < moved[5][0] < piece // 2, moved  # y's first blocks in both pieces
    assert moved[7][0] == x.nbytes, moved  # x changed everywhere: both pieces whole
    assert moved[4][0] == moved[6][0] == moved[8][0] == 0, moved


@hpvm.leaf(ins=("z",), outs=("z",))
def bump(z: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    z[i] = z[i] + 1.0


@hpvm.internal
def with_a_sibling(x: hpvm.f64[:], y: hpvm.f64[:], a: hpvm.f64, z: hpvm.f64[:]):
    k = hpvm.create_node_1d(strided_step, 4)
    for port in range(3):
        hpvm.bind_in(k, port, port)
    b = hpvm.create_node_1d(bump, z.shape[0])
    hpvm.bind_in(b, 3, 0)


def test_a_layout_node_beside_an_independent_sibling_splits_and_keeps(dask_runtime):
    """The root's children that share nothing written are separate groups (``parts.py``),
    each with a root of its one child: the layout node splits by its layouts there, and its
    pieces stay on the workers as when it is the root's only child."""
    rng = np.random.default_rng(10)
    x, y, z = rng.random(20_000), rng.random(20_000), np.zeros(10)
    x2, y2, z2 = x.copy(), y.copy(), z.copy()
    moved, notes = _launches(with_a_sibling, (x, y, 0.25, z), 20, "dask")
    _launches(with_a_sibling, (x2, y2, 0.25, z2), 20, REFERENCE)
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_array_equal(z, z2)
    assert any(
        "'strided_step' of 'with_a_sibling[strided_step]' split by its declared layouts" in n for n in notes
    )
    assert "ran as 2 concurrent groups" in notes[-1], notes
    assert moved[0][0] >= x.nbytes + y.nbytes
    # later launches: x and y's pieces stay; what goes is the sibling's few small rows of
    # z and y (each group's root takes every array of the root) that changed on the host
    assert all(to_device < x.nbytes // 50 for to_device, _ in moved[1:]), moved[:4]


_EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "hbir"


def test_hbir_matmul_launched_20_times_sends_a_and_b_once(dask_runtime, through_scheduler):
    root = hbir.load(_EXAMPLES / "matmul.hbir").to_hpvm()
    rng = np.random.default_rng(9)
    a, b = rng.random((12, 12), dtype=np.float32), rng.random((12, 12), dtype=np.float32)
    c = np.zeros((12, 12), np.float32)  # (the program fixes n = 12)
    moved, notes = _launches(root, (a, b, c), 20, "dask", lambda step: step == 10 and c.fill(-1.0))
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)
    assert any("split by its declared layouts ('A' block, 'C' block)" in n for n in notes), notes
    workers = len(dask_runtime.nthreads())
    first = moved[0][0]
    assert first == a.nbytes + b.nbytes * workers + c.nbytes  # B broadcast, A and C by blocks
    # A and B stay where they are, and so does the C each range wrote, until the host
    # overwrites C before launch 10: then C's pieces go again
    assert [d for d, _ in moved[1:]] == [0] * 9 + [c.nbytes] + [0] * 9, moved
    assert all(h == c.nbytes for _, h in moved)  # each range's block of C comes back
    sent = sum(d for d, _ in moved)
    assert sent == first + c.nbytes  # sending every launch: 20 x first


@hpvm.leaf(ins=("x", "y"), outs=("y",), layouts={"x": "block", "y": "block"})
def block_slow(x: hpvm.f64[:], y: hpvm.f64[:], reps: hpvm.i64):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    g = hpvm.get_num_node_instances_x(node)
    b = (y.shape[0] + g - 1) // g
    for k in range(i * b, min((i + 1) * b, y.shape[0])):
        acc = 0.0
        for _ in range(reps):
            acc += x[k] * 0.5
        y[k] = acc


@hpvm.internal
def block_slow_root(x: hpvm.f64[:], y: hpvm.f64[:], reps: hpvm.i64):
    k = hpvm.create_node_1d(block_slow, 4)
    for port in range(3):
        hpvm.bind_in(k, port, port)


@pytest.mark.slow
def test_a_worker_killed_holding_kept_layout_pieces_is_survived(process_cluster, through_scheduler):
    import cloudpickle
    from distributed import Client

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import tests
    client = Client(process_cluster, set_as_default=False)
    hpvm.cleanup()
    hpvm.init(dask=client)
    try:
        x = np.arange(4096, dtype=np.float64)
        y = np.zeros_like(x)
        moved, notes = _launches(block_slow_root, (x, y, 3), 2, "dask")
        assert moved[1][0] == 0, moved  # the pieces are kept on the workers
        pids = client.run(os.getpid)
        held = client.has_what()  # the worker holding the most kept pieces goes
        victim = max(sorted(pids), key=lambda addr: len(held.get(addr, ())))
        assert held[victim], held
        os.kill(pids[victim], signal.SIGKILL)  # between launches: its kept pieces are gone
        deadline = time.monotonic() + 60
        while victim in client.nthreads():
            assert time.monotonic() < deadline, "the scheduler did not notice the killed worker"
            time.sleep(0.05)
        client.wait_for_workers(2, timeout=60)  # (the nanny starts a fresh one)
        x *= 2.0
        _, notes = _launches(block_slow_root, (x, y, 3), 1, "dask")
        np.testing.assert_allclose(y, x * 0.5 * 3)
        # the launch needed a lost piece (the scheduler cannot recompute scattered data):
        # it ran again with its data inside the tasks, still split by the layouts
        assert any("ran again with its data sent anew" in n for n in notes), notes
        assert any("split by its declared layouts" in n for n in notes), notes
        moved, _ = _launches(block_slow_root, (x, y, 3), 2, "dask")  # kept afresh
        np.testing.assert_allclose(y, x * 0.5 * 3)
        assert moved[1][0] == 0, moved
    finally:
        hpvm.cleanup()
        client.close()
