"""A worker killed in the middle of a launch or a stream: the results are right.

Real worker processes (the tasks are pure functions of the graph and the arrays, so a rerun
computes the same rows); marked slow.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np
import pytest

import hpvm
from markers import needs_backend

pytestmark = [needs_backend("dask"), pytest.mark.slow]


@hpvm.leaf(ins=("x",), outs=("out",))
def slow_scale(x: hpvm.f64[:], out: hpvm.f64[:], reps: hpvm.i64):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    acc = 0.0
    for _ in range(reps):
        acc += x[i] * 0.5
    out[i] = acc


@hpvm.internal
def slow_root(x: hpvm.f64[:], out: hpvm.f64[:], reps: hpvm.i64):
    k = hpvm.create_node_1d(slow_scale, x.shape[0])
    for port in range(3):
        hpvm.bind_in(k, port, port)


def _busy_worker(client) -> str:  # type: ignore[no-untyped-def]
    """The address of a worker with a task in hand (waiting for one, at most a minute)."""
    deadline = time.monotonic() + 60
    while True:
        busy = next((addr for addr, keys in client.processing().items() if keys), None)
        if busy is not None:
            return busy
        assert time.monotonic() < deadline, "no task in flight to kill a worker under"
        time.sleep(0.005)


def test_a_worker_killed_mid_launch_is_survived(process_cluster, through_scheduler):
    import cloudpickle
    from distributed import Client

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import tests
    client = Client(process_cluster, set_as_default=False)
    hpvm.cleanup()
    hpvm.init(dask=client)
    try:
        x = np.arange(64, dtype=np.float64)
        out = np.zeros_like(x)
        hpvm.track_memory(x)
        hpvm.track_memory(out)
        pids = client.run(os.getpid)
        handle = hpvm.launch(slow_root, (x, out, 600_000_000), target="dask")
        time.sleep(0.2)  # the chunks are running (each takes seconds, jammed too: backends/cpu/jam.py)
        busy = _busy_worker(client)
        os.kill(pids[busy], signal.SIGKILL)
        hpvm.wait(handle)
        np.testing.assert_allclose(hpvm.request_memory(out), x * 0.5 * 600_000_000, rtol=1e-6)
        # the rows it had been sent (kept on the workers, resident.py) died with it: the
        # launch ran again with its data inside the tasks, on the workers left
        assert "ran again with its data sent anew" in handle.notes[0], handle.notes
        assert pids[busy] not in client.run(os.getpid).values()  # it did die (and was replaced)
    finally:
        hpvm.cleanup()
        client.close()


@hpvm.leaf
def slow_square(x: hpvm.i64, reps: hpvm.i64) -> hpvm.i64:
    acc = 0
    for _ in range(reps):
        acc = (acc + x) % 1_000_003
    return x * x + acc - acc


@hpvm.leaf
def plus_seven(x: hpvm.i64) -> hpvm.i64:
    return x + 7


@hpvm.internal
def slow_pipeline(x: hpvm.i64, reps: hpvm.i64):
    first = hpvm.create_node(slow_square)
    second = hpvm.create_node(plus_seven)
    hpvm.bind_in(first, 0, 0, stream=True)
    hpvm.bind_in(first, 1, 1, stream=True)
    hpvm.edge(first, second, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(second, 0, 0, stream=True)


def test_a_worker_killed_mid_stream_loses_and_doubles_nothing(process_cluster):
    import cloudpickle
    from distributed import Client

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    client = Client(process_cluster, set_as_default=False)
    hpvm.cleanup()
    hpvm.init(dask=client)
    try:
        pids = client.run(os.getpid)
        handle = hpvm.launch(slow_pipeline, None, stream=True, target="dask")
        count = 12
        for x in range(count):
            # (long enough that the items after the first are still in flight when the
            # poll below looks, even on a loaded machine: 20M left none once, at load 6)
            hpvm.push(handle, (x, 50_000_000))
        first = hpvm.pop(handle, timeout=120)
        busy = _busy_worker(client)
        os.kill(pids[busy], signal.SIGKILL)
        rest = [hpvm.pop(handle, timeout=120) for _ in range(count - 1)]
        hpvm.wait(handle)
        assert [first, *rest] == [(x * x + 7,) for x in range(count)]
        assert pids[busy] not in client.run(os.getpid).values()
    finally:
        hpvm.cleanup()
        client.close()


def test_a_worker_killed_during_a_direct_call_is_survived(process_cluster):
    # A small launch's chunks go straight to the workers (backends/dask/direct.py), which
    # the scheduler cannot run again elsewhere: the launch goes again through the scheduler.
    import cloudpickle
    from distributed import Client

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    client = Client(process_cluster, set_as_default=False)
    hpvm.cleanup()
    hpvm.init(dask=client)
    try:
        x = np.arange(64, dtype=np.float64)  # 1 KiB of arrays: a direct launch
        out = np.zeros_like(x)
        hpvm.track_memory(x)
        hpvm.track_memory(out)
        hpvm.wait(hpvm.launch(slow_root, (x, out, 1), target="dask"))  # (compiled on both)
        pids = client.run(os.getpid)
        # (each chunk takes seconds: 600M dependent adds per instance, 8 instances at a time
        # in the cpu back end's jammed loop, backends/cpu/jam.py)
        handle = hpvm.launch(slow_root, (x, out, 600_000_000), target="dask")
        time.sleep(1.0)  # both chunks are running
        victim = sorted(pids)[0]
        os.kill(pids[victim], signal.SIGKILL)
        hpvm.wait(handle)
        np.testing.assert_allclose(hpvm.request_memory(out), x * 0.5 * 600_000_000, rtol=1e-6)
        assert any("ran again through the scheduler" in n for n in handle.notes), handle.notes
        assert pids[victim] not in client.run(os.getpid).values()
    finally:
        hpvm.cleanup()
        client.close()
