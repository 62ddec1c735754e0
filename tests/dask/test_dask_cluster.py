"""``hpvm.init(dask=...)``: which cluster a launch uses, its errors, and its lifetime."""

from __future__ import annotations

import sys
import time

import numpy as np
import pytest

import hpvm
from hpvm.backends import RunContext, get_backend
from markers import fails, needs_backend

pytestmark = needs_backend("dask")


@hpvm.leaf(ins=("x",), outs=("out",))
def double(x: hpvm.i64[:], out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = 2 * x[i]


@hpvm.internal
def double_root(x: hpvm.i64[:], out: hpvm.i64[:]):
    k = hpvm.create_node_1d(double, x.shape[0])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


def _double() -> np.ndarray:
    x = np.arange(10, dtype=np.int64)
    out = np.zeros_like(x)
    hpvm.track_memory(x)
    hpvm.track_memory(out)
    hpvm.wait(hpvm.launch(double_root, (x, out), target="dask"))
    hpvm.untrack_memory(x)
    hpvm.untrack_memory(out)
    return out


@pytest.fixture
def clean():
    hpvm.cleanup()
    yield
    hpvm.cleanup()


@pytest.mark.parametrize("value", [42, ["tcp://127.0.0.1:1"]], ids=["int", "list"])
def test_init_refuses_what_is_not_an_address_or_a_client(clean, value):
    with fails(hpvm.ClusterError, "hpvm.init(dask=...) takes a scheduler address", "distributed.Client"):
        hpvm.init(dask=value)


def test_init_refuses_an_empty_address(clean):
    with fails(hpvm.ClusterError, "the scheduler address is empty"):
        hpvm.init(dask="  ")


def test_an_unreachable_address_fails_init_quickly(clean, monkeypatch):
    monkeypatch.setenv("HPVM_DASK_TIMEOUT", "1")
    started = time.monotonic()
    with fails(hpvm.ClusterError, "cannot reach the Dask scheduler 'tcp://127.0.0.1:9'", "within 1 s"):
        hpvm.init(dask="tcp://127.0.0.1:9")
    assert time.monotonic() - started < 15
    with fails(hpvm.RuntimeStateError, "before hpvm.init()"):
        hpvm.launch(double_root, (np.zeros(1, dtype=np.int64),) * 2, target="dask")


def test_an_unreachable_scheduler_from_the_environment_fails_launch(clean, monkeypatch):
    monkeypatch.setenv("HPVM_DASK_TIMEOUT", "1")
    monkeypatch.setenv("HPVM_DASK_SCHEDULER", "tcp://127.0.0.1:9")
    hpvm.init()
    x = np.zeros(3, dtype=np.int64)
    hpvm.track_memory(x)
    with fails(hpvm.ClusterError, "'tcp://127.0.0.1:9' (from $HPVM_DASK_SCHEDULER)"):
        hpvm.launch(double_root, (x, x), target="dask")


def test_a_second_cluster_needs_cleanup_first(dask_runtime):
    with fails(hpvm.RuntimeStateError, "already uses a Dask cluster", "hpvm.cleanup() first"):
        hpvm.init(dask=dask_runtime)


def test_a_client_given_to_init_is_used_and_not_closed(dask_runtime):
    np.testing.assert_array_equal(_double(), 2 * np.arange(10))
    hpvm.cleanup()
    assert dask_runtime.status == "running"


def test_the_back_end_alone_has_no_cluster():
    x = np.arange(3, dtype=np.int64)
    with fails(hpvm.LaunchError, "no Dask cluster is known to this run", "hpvm.init(dask=...)"):
        get_backend("dask").run(double_root, (x, x.copy()), RunContext())


def test_cpu_launches_never_start_a_cluster(clean):
    hpvm.init()
    x = np.arange(3, dtype=np.int64)
    hpvm.track_memory(x)
    hpvm.wait(hpvm.launch(double_root, (x, x), target="cpu"))
    from hpvm.runtime import default_runtime

    assert default_runtime()._cluster is None


@pytest.mark.slow
def test_a_local_cluster_is_started_on_first_use_and_closed_at_cleanup(clean, monkeypatch, capfd):
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import tests
    monkeypatch.delenv("HPVM_DASK_SCHEDULER", raising=False)
    hpvm.init()
    np.testing.assert_array_equal(_double(), 2 * np.arange(10))
    np.testing.assert_array_equal(_double(), 2 * np.arange(10))
    from hpvm.runtime import default_runtime

    cluster = default_runtime()._cluster
    local = cluster._local
    assert local is not None and len(local.scheduler_info["workers"]) == 2
    assert capfd.readouterr().err.count("hpvm: Dask dashboard at http://127.0.0.1:") == 1
    hpvm.cleanup()
    assert local.status.name == "closed"


@pytest.mark.slow
def test_an_address_and_the_environment_reach_a_running_cluster(clean, monkeypatch, process_cluster):
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    hpvm.init(dask=process_cluster.scheduler_address)
    np.testing.assert_array_equal(_double(), 2 * np.arange(10))
    hpvm.cleanup()
    monkeypatch.setenv("HPVM_DASK_SCHEDULER", process_cluster.scheduler_address)
    hpvm.init()
    np.testing.assert_array_equal(_double(), 2 * np.arange(10))
    hpvm.cleanup()
    assert process_cluster.status.name == "running"  # hpvm closes its client, not their cluster


def test_a_scheduler_without_workers_is_an_error_not_a_hang(clean, monkeypatch):
    from distributed import Client, LocalCluster

    monkeypatch.setenv("HPVM_DASK_TIMEOUT", "1")
    with LocalCluster(n_workers=0, processes=False, dashboard_address="127.0.0.1:0") as empty:
        with Client(empty, set_as_default=False) as client:
            hpvm.init(dask=client)
            started = time.monotonic()
            with fails(hpvm.ClusterError, "has no workers to run 'double_root' (waited 1 s)", "dask worker"):
                _double()
            assert time.monotonic() - started < 15
            hpvm.cleanup()
