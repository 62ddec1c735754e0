"""What a launch costs in messages (backends/dask/moves.py, docs/backends/dask.md §8): one
graph per launch, the graph pickled once, the worker count asked at most once a second,
the results straight from workers on this machine. Counts, not times: timings live in
``benchmarks/dask_bench.py``."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.backends.dask import moves, tasks
from markers import needs_backend

pytestmark = needs_backend("dask")


@hpvm.leaf(ins=("x", "y"), outs=("y",))
def add_one(x: hpvm.f64[:], y: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    y[i] = x[i] + 1.0


@hpvm.internal
def add_root(x: hpvm.f64[:], y: hpvm.f64[:]):
    k = hpvm.create_node_1d(add_one, x.shape[0])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


class _Counting:
    """Counts calls of some of a client's methods (wrapping the bound ones)."""

    def __init__(self, client, names):
        self.calls = dict.fromkeys(names, 0)
        self._client, self._saved = client, {}
        for name in names:
            bound = getattr(client, name)
            self._saved[name] = bound

            def counted(*args, _name=name, _bound=bound, **kwargs):
                self.calls[_name] += 1
                return _bound(*args, **kwargs)

            setattr(client, name, counted)

    def restore(self):
        for name in self._saved:
            delattr(self._client, name)


def test_launches_send_one_graph_each_and_ask_for_workers_once_a_second(dask_runtime, monkeypatch):
    monkeypatch.setattr(moves, "WORKERS_TTL", 3600.0)
    shipped = []
    real_ship = tasks.ship
    monkeypatch.setattr(tasks, "ship", lambda root: shipped.append(root.name) or real_ship(root))
    x, y = np.arange(8.0), np.zeros(8)
    for a in (x, y):
        hpvm.track_memory(a)
    counting = _Counting(dask_runtime, ("get", "submit", "nthreads"))
    try:
        for _ in range(5):
            handle = hpvm.launch(add_root, (x, y), target="dask")
            hpvm.wait(handle)
    finally:
        counting.restore()
        for a in (x, y):
            hpvm.untrack_memory(a)
    np.testing.assert_array_equal(y, x + 1.0)
    assert "split into 2 chunk(s)" in handle.notes[0], handle.notes
    assert counting.calls["get"] == 5 and counting.calls["submit"] == 0, counting.calls
    assert counting.calls["nthreads"] <= 1, counting.calls  # (the first launch may ask)
    assert shipped == ["add_root__chunk"], shipped  # pickled once, sent as bytes since


def test_the_worker_count_is_asked_again_after_its_time(dask_client, monkeypatch):
    counting = _Counting(dask_client, ("nthreads",))
    try:
        monkeypatch.setattr(moves, "WORKERS_TTL", 3600.0)
        assert moves.worker_count(dask_client, fresh=True) == 2
        assert moves.worker_count(dask_client) == 2
        assert counting.calls["nthreads"] == 1
        monkeypatch.setattr(moves, "WORKERS_TTL", 0.0)
        assert moves.worker_count(dask_client) == 2
        assert counting.calls["nthreads"] == 2
    finally:
        counting.restore()


@pytest.mark.parametrize(
    ("address", "host"),
    [
        ("tcp://127.0.0.1:4000", "127.0.0.1"),
        ("tcp://[::1]:4000", "[::1]"),
        ("inproc://192.0.2.2/4423/173", "inproc"),
        ("tls://node7.example:8786", "node7.example"),
    ],
)
def test_the_host_of_a_worker_address(address, host):
    assert moves._host(address) == host


def test_a_batch_holds_the_futures_its_tasks_take_until_it_is_sent(dask_client):
    # The kept piece a patch depends on may lose its last reference before the graph
    # goes: the batch holds it, so the scheduler sees the graph before the release.
    batch = moves.Batch(dask_client)
    first = dask_client.scatter(np.arange(4.0), hash=False)
    patched = batch.add(tasks.patch, first, [(1, np.array([9.0]))])
    del first
    import gc

    gc.collect()
    batch.send()
    np.testing.assert_array_equal(patched.result(timeout=30), [0.0, 9.0, 2.0, 3.0])


def test_without_dasks_graph_api_a_launch_submits_its_tasks_one_by_one(dask_runtime, monkeypatch):
    # Batch builds its graph with Dask's private task spec (2025 and later); a Dask
    # without it still runs every launch, through Client.submit.
    monkeypatch.setattr(moves, "_GRAPH_API", [None])
    x, y = np.arange(8.0), np.zeros(8)
    for a in (x, y):
        hpvm.track_memory(a)
    counting = _Counting(dask_runtime, ("get", "submit"))
    try:
        for _ in range(2):
            hpvm.wait(hpvm.launch(add_root, (x, y), target="dask"))
    finally:
        counting.restore()
        for a in (x, y):
            hpvm.untrack_memory(a)
    np.testing.assert_array_equal(y, x + 1.0)
    assert counting.calls["get"] == 0 and counting.calls["submit"] >= 2, counting.calls
