"""Clusters for the dask tests: started here, stopped here, listening on 127.0.0.1 only.
(tests/dask/conftest.py hands them to tests/dask; a test module elsewhere that runs a
program on every back end imports the fixtures it needs from here.)

``dask_client``: one in-process cluster (2 single-threaded workers, no sockets) shared by a
module — fast, and what most tests need. ``dask_runtime``: hpvm's default runtime using it
for one test. Tests that need worker *processes* (pickling, a killed worker) start their
own ``process_cluster`` and are marked slow. Skipped, with the registry's reason, where
``distributed`` is not installed.
"""

from __future__ import annotations

import pytest


def _distributed():  # type: ignore[no-untyped-def]
    return pytest.importorskip(
        "distributed", reason="distributed is not installed (pip install 'hpvm[dist]')"
    )


def _local_cluster(**where):  # type: ignore[no-untyped-def]
    """Two single-threaded workers, dashboards on a free port of 127.0.0.1 only."""
    return _distributed().LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        dashboard_address="127.0.0.1:0",
        worker_dashboard_address="127.0.0.1:0",
        **where,
    )


@pytest.fixture(scope="module")
def dask_client():  # type: ignore[no-untyped-def]
    distributed = _distributed()
    cluster = _local_cluster(processes=False)
    client = distributed.Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


@pytest.fixture
def dask_runtime(dask_client):  # type: ignore[no-untyped-def]
    import hpvm

    hpvm.cleanup()
    hpvm.init(dask=dask_client)
    yield dask_client
    hpvm.cleanup()


@pytest.fixture
def through_scheduler(monkeypatch):  # type: ignore[no-untyped-def]
    """Every launch through the scheduler, its arrays kept on the workers: tests of what
    the kept path moves use arrays small enough to go straight to the workers instead,
    inline and kept nowhere (``backends/dask/direct.py``)."""
    from hpvm.backends.dask import direct

    monkeypatch.setattr(direct, "DIRECT_BYTES", 0)


@pytest.fixture
def process_cluster():  # type: ignore[no-untyped-def]
    """Two worker processes on 127.0.0.1 (they import hpvm from $PYTHONPATH, like the host)."""
    cluster = _local_cluster(processes=True, host="127.0.0.1")
    yield cluster
    cluster.close()


#: The back end that tests of many launches in a row compare the dask results with: ``cpu``,
#: which the shared program suite holds to ``interp`` exactly (tests/cpu/test_cpu_differential.py).
#: These tests are about what moves between the host and the workers launch after launch
#: (a stale piece shows as a wrong result); the interpreter's checked run of 20-30 launches
#: took 10-19 s each, the compiled run a few milliseconds.
REFERENCE = "cpu"
