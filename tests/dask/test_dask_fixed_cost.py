"""What a launch costs in messages (backends/dask/moves.py, direct.py, docs/backends/dask.md
§8): a small launch's tasks straight to the workers, past the scheduler; otherwise one graph
per launch; the graph pickled once, the worker count asked at most once a second, the
results straight from workers on this machine. Counts, not times: timings live in
``benchmarks/dask_bench.py``."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.backends.dask import direct, moves, tasks, tiny
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
    monkeypatch.setattr(direct, "DIRECT_BYTES", 0)  # (the scheduler's way, as for big arrays)
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
    monkeypatch.setattr(direct, "DIRECT_BYTES", 0)
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


def _launches(client, x, y, count, names=("get", "submit", "rpc"), root=add_root):  # type: ignore[no-untyped-def]
    """``count`` launches of ``root`` on (x, y); the calls of ``names`` they made (``rpc``:
    the direct calls, ``direct.HANDLER`` sent to a worker), the last handle."""
    import distributed.core

    real = distributed.core.send_recv
    direct_calls = []

    async def counted(comm, **kwargs):  # type: ignore[no-untyped-def]
        if kwargs.get("op") == direct.HANDLER:
            direct_calls.append(comm.peer_address)
        return await real(comm, **kwargs)

    for a in (x, y):
        hpvm.track_memory(a)
    counting = _Counting(client, [n for n in names if n != "rpc"])
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(distributed.core, "send_recv", counted)
            for _ in range(count):
                handle = hpvm.launch(root, (x, y), target="dask")
                hpvm.wait(handle)
    finally:
        counting.restore()
        for a in (x, y):
            hpvm.untrack_memory(a)
    calls = dict(counting.calls)
    if "rpc" in names:
        calls["rpc"] = len(direct_calls)
    return {n: calls[n] for n in names}, handle


def test_a_small_launch_goes_straight_to_the_workers(dask_runtime, monkeypatch):
    monkeypatch.setattr(moves, "WORKERS_TTL", 3600.0)
    monkeypatch.setattr(tiny, "TINY_CHUNK_S", 0.0)  # (every launch split: tested below)
    x, y = np.arange(8.0), np.zeros(8)
    calls, handle = _launches(dask_runtime, x, y, 5)
    np.testing.assert_array_equal(y, x + 1.0)
    assert "split into 2 chunk(s)" in handle.notes[0], handle.notes
    # one call per chunk to its worker; nothing through the scheduler
    assert calls == {"get": 0, "submit": 0, "rpc": 10}, calls


def _new_add_root():  # type: ignore[no-untyped-def]
    """A root of its own (the back end's plan, and its chunks' timings, start empty)."""

    @hpvm.internal
    def add_root(x: hpvm.f64[:], y: hpvm.f64[:]):
        k = hpvm.create_node_1d(add_one, x.shape[0])
        hpvm.bind_in(k, 0, 0)
        hpvm.bind_in(k, 1, 1)

    return add_root


def test_a_small_launch_whose_chunks_took_next_to_nothing_runs_whole_next(dask_runtime, monkeypatch):
    """The first launch compiles (not timed), the second splits and is timed: both chunks
    under ``TINY_CHUNK_S`` (here 10 s, so on any machine), so the third runs whole on one
    worker, one call, and so on while the whole run stays under 2 × ``TINY_CHUNK_S``."""
    monkeypatch.setattr(moves, "WORKERS_TTL", 3600.0)
    monkeypatch.setattr(tiny, "TINY_CHUNK_S", 10.0)
    root = _new_add_root()
    x, y = np.arange(8.0), np.zeros(8)
    calls, handle = _launches(dask_runtime, x, y, 2, root=root)
    assert "split into 2 chunk(s)" in handle.notes[0], handle.notes
    assert calls == {"get": 0, "submit": 0, "rpc": 4}, calls
    y[:] = 0.0
    calls, handle = _launches(dask_runtime, x, y, 3, root=root)
    np.testing.assert_array_equal(y, x + 1.0)
    assert handle.notes[0] == (
        "dask: 'add_root' ran whole on one worker: its 2 chunks each ran in under 10000000 µs last "
        "time (one call to one worker costs less than 2)"
    ), handle.notes
    assert calls == {"get": 0, "submit": 0, "rpc": 3}, calls
    # other sizes are measured apart
    x9, y9 = np.arange(9.0), np.zeros(9)
    calls, handle = _launches(dask_runtime, x9, y9, 1, root=root)
    assert "split into 2 chunk(s)" in handle.notes[0] and calls["rpc"] == 2, (calls, handle.notes)


def test_a_whole_run_past_the_bound_splits_the_next_launch_again(dask_runtime, monkeypatch):
    monkeypatch.setattr(moves, "WORKERS_TTL", 3600.0)
    monkeypatch.setattr(tiny, "TINY_CHUNK_S", 10.0)
    root = _new_add_root()
    x, y = np.arange(8.0), np.zeros(8)
    _launches(dask_runtime, x, y, 2, root=root)  # (compiled, then timed tiny)
    calls, handle = _launches(dask_runtime, x, y, 1, root=root)  # (whole: compiled, not timed)
    assert "ran whole on one worker" in handle.notes[0] and calls["rpc"] == 1, (calls, handle.notes)
    monkeypatch.setattr(tiny, "TINY_CHUNK_S", 1e-12)  # (now nothing is tiny)
    calls, handle = _launches(dask_runtime, x, y, 1, root=root)  # (whole, timed: too long)
    assert "ran whole on one worker" in handle.notes[0] and calls["rpc"] == 1, (calls, handle.notes)
    calls, handle = _launches(dask_runtime, x, y, 1, root=root)
    assert "split into 2 chunk(s)" in handle.notes[0] and calls["rpc"] == 2, (calls, handle.notes)
    np.testing.assert_array_equal(y, x + 1.0)


def test_launches_through_the_scheduler_are_never_merged(dask_runtime, monkeypatch):
    """Only direct launches: a big launch's chunks keep their pieces on their workers."""
    monkeypatch.setattr(direct, "DIRECT_BYTES", 0)
    monkeypatch.setattr(tiny, "TINY_CHUNK_S", 10.0)
    x, y = np.arange(8.0), np.zeros(8)
    calls, handle = _launches(dask_runtime, x, y, 4, ("get", "rpc"))
    assert "split into 2 chunk(s)" in handle.notes[0] and calls == {"get": 4, "rpc": 0}, (calls, handle.notes)


def test_arrays_past_the_limit_go_through_the_scheduler(dask_runtime, monkeypatch):
    monkeypatch.setattr(tiny, "TINY_CHUNK_S", 0.0)
    x, y = np.arange(8.0), np.zeros(8)
    monkeypatch.setattr(direct, "DIRECT_BYTES", x.nbytes + y.nbytes - 1)
    calls, _ = _launches(dask_runtime, x, y, 2, ("get", "rpc"))
    np.testing.assert_array_equal(y, x + 1.0)
    assert calls == {"get": 2, "rpc": 0}, calls
    monkeypatch.setattr(direct, "DIRECT_BYTES", x.nbytes + y.nbytes)
    calls, _ = _launches(dask_runtime, x, np.zeros(8), 2, ("get", "rpc"))
    assert calls == {"get": 0, "rpc": 4}, calls


def test_a_worker_lost_during_a_direct_call_runs_the_launch_through_the_scheduler(dask_runtime, monkeypatch):
    monkeypatch.setattr(moves, "WORKERS_TTL", 3600.0)
    monkeypatch.setattr(direct, "_paused", {})  # (the pause it causes ends with the test)
    monkeypatch.setattr(tiny, "TINY_CHUNK_S", 0.0)
    x, y = np.arange(8.0), np.zeros(8)
    _launches(dask_runtime, x, y, 1)  # (the handler is installed)
    worker = next(iter(dask_runtime.cluster.workers.values()))  # (in-process workers)
    installed = worker.handlers[direct.HANDLER]

    async def gone(call):  # type: ignore[no-untyped-def]
        raise OSError("the worker went away")

    worker.handlers[direct.HANDLER] = gone
    try:
        y[:] = 0.0
        calls, handle = _launches(dask_runtime, x, y, 1, ("get", "rpc"))
    finally:
        worker.handlers[direct.HANDLER] = installed
    np.testing.assert_array_equal(y, x + 1.0)
    assert calls == {"get": 1, "rpc": 2}, calls  # the direct calls, then one graph
    assert any("ran again through the scheduler" in n for n in handle.notes), handle.notes
    assert sum("split into 2 chunk(s)" in n for n in handle.notes) == 1, handle.notes
    # for a while, small launches go through the scheduler (it may still list the worker)
    calls, _ = _launches(dask_runtime, x, y, 1, ("get", "rpc"))
    assert calls == {"get": 1, "rpc": 0}, calls
    monkeypatch.setattr(direct, "PAUSE_S", 0.0)
    direct._pause(dask_runtime)
    calls, _ = _launches(dask_runtime, x, y, 1, ("get", "rpc"))
    assert calls == {"get": 0, "rpc": 2}, calls


def test_a_worker_that_does_not_answer_is_a_lost_one(dask_client, monkeypatch):
    # a worker gone from the list only since it was read: the connection gives up after
    # $HPVM_DASK_TIMEOUT seconds (not distributed's 30), and the launch goes another way
    monkeypatch.setenv("HPVM_DASK_TIMEOUT", "0.5")
    monkeypatch.setattr(direct, "_paused", {})
    batch = direct.DirectBatch(dask_client, ["tcp://127.0.0.1:9"])
    token = batch.add(tasks.edge, np.arange(4.0), 0, 2)
    with pytest.raises(direct.DirectLost, match="lost a worker running 'add_root'.*connect"):
        batch.gather([token], add_root)
    assert not direct.installed(dask_client)  # paused


def test_a_direct_call_runs_only_the_back_ends_tasks(dask_client):
    from distributed.protocol.serialize import ToPickle

    assert direct.installed(dask_client)
    worker = next(iter(dask_client.nthreads()))
    call = getattr(dask_client.rpc(worker), direct.HANDLER)(call=ToPickle((print, ("hello",))))
    with pytest.raises(hpvm.ClusterError, match="only the functions of hpvm.backends.dask.tasks"):
        dask_client.sync(lambda: call)
