"""The Dask cluster a runtime's ``target="dask"`` launches run on.

Why a class of its own: the runtime owns the cluster's lifetime (``init`` names it,
``cleanup`` closes what hpvm opened), while the back end only needs a client. ``Cluster``
resolves what ``hpvm.init(dask=...)`` was given — a ``distributed.Client`` (used as is, and
never closed by hpvm), a scheduler address, or nothing: then ``$HPVM_DASK_SCHEDULER``, else
a ``LocalCluster`` of worker processes on 127.0.0.1 — and connects on first use, with a
short timeout, so an unreachable scheduler is a ``ClusterError`` and never a hang.
``distributed`` is imported only here, and only when a cluster is used.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import weakref
from typing import Any

from ...errors import ClusterError

ENV_VAR = "HPVM_DASK_SCHEDULER"
#: Seconds to wait for a scheduler to answer (override: $HPVM_DASK_TIMEOUT).
CONNECT_TIMEOUT = 5.0

#: The default local cluster: its worker processes, and how long they may take to start
#: (each is a new Python process importing distributed, NumPy and hpvm).
LOCAL_WORKERS = 2
LOCAL_START_TIMEOUT = 60.0

_announced: set[str] = set()  # dashboard links already printed (once per process)


def connect_timeout() -> float:
    try:
        return float(os.environ.get("HPVM_DASK_TIMEOUT", CONNECT_TIMEOUT))
    except ValueError:
        return CONNECT_TIMEOUT


class Cluster:
    """One runtime's way to its Dask cluster (see the module doc)."""

    def __init__(self, spec: Any) -> None:
        if spec is not None and not isinstance(spec, str) and not _is_client(spec):
            raise ClusterError(
                f"hpvm.init(dask=...) takes a scheduler address such as 'tcp://127.0.0.1:8786' "
                f"or a distributed.Client, not {type(spec).__name__} {spec!r}"
            )
        if isinstance(spec, str) and not spec.strip():
            raise ClusterError(
                "hpvm.init(dask=''): the scheduler address is empty; pass e.g. 'tcp://host:8786'"
            )
        self.spec = spec
        self._client: Any = None
        self._local: Any = None  # the LocalCluster hpvm started, if any
        self._owned = False  # whether cleanup closes the client
        self._lock = threading.Lock()

    def describe(self) -> str:
        if self._client is not None:
            return f"scheduler {self._client.scheduler.address}"
        return repr(self.spec) if self.spec is not None else "not connected yet"

    def client(self) -> Any:
        """The client, connecting (or starting the local cluster) on the first call."""
        with self._lock:
            if self._client is None:
                self._client = self._connect()
            return self._client

    def _connect(self) -> Any:
        try:
            from distributed import Client
        except ImportError:  # pragma: no cover — the back end's probe checks first
            raise ClusterError("target='dask' needs distributed: pip install 'hpvm[dist]'") from None
        if _is_client(self.spec):
            return self.spec
        address = self.spec if isinstance(self.spec, str) else os.environ.get(ENV_VAR) or None
        timeout = connect_timeout()
        if address is not None:
            where = "hpvm.init(dask=...)" if isinstance(self.spec, str) else f"${ENV_VAR}"
            try:
                client = Client(address, timeout=f"{timeout}s", set_as_default=False)
            except Exception as e:  # OSError, TimeoutError, a malformed address (ValueError)
                raise ClusterError(
                    f"cannot reach the Dask scheduler {address!r} (from {where}) within {timeout:g} s: "
                    f"{type(e).__name__}: {e}; start one (dask scheduler) or fix the address"
                ) from None
        else:
            try:
                self._local = start_local_cluster()
                _close_at_exit(self)
                client = Client(self._local, timeout=f"{timeout}s", set_as_default=False)
                client.wait_for_workers(LOCAL_WORKERS, timeout=LOCAL_START_TIMEOUT)
            except Exception as e:
                local, self._local = self._local, None
                if local is not None:
                    local.close()
                raise ClusterError(f"could not start a local Dask cluster: {type(e).__name__}: {e}") from None
        self._owned = True
        _announce(client)
        return client

    def close(self) -> None:
        """Close what hpvm opened (a client it connected, the local cluster it started)."""
        with self._lock:
            client, self._client = self._client, None
            local, self._local = self._local, None
        if client is not None and self._owned:
            client.close()
        if local is not None:
            local.close()


#: Clusters that started a local cluster, to close at interpreter exit.
_OPEN: weakref.WeakSet[Cluster] = weakref.WeakSet()
_exit_hook: list[bool] = []


def _close_at_exit(cluster: Cluster) -> None:
    """Close ``cluster`` at interpreter exit, client first, so that a script that never calls
    ``hpvm.cleanup()`` ends quietly (a scheduler closed under a live client that still holds
    data on the workers logs "lose scattered data" errors). The hook is registered after
    distributed is imported, so it runs before distributed's own exit hooks."""
    _OPEN.add(cluster)
    if not _exit_hook:
        _exit_hook.append(True)
        atexit.register(_close_open_clusters)


def _close_open_clusters() -> None:
    for cluster in list(_OPEN):
        try:
            cluster.close()
        except Exception:  # noqa: BLE001 - exiting anyway; never a traceback at exit
            pass


def start_local_cluster() -> Any:
    """Two single-threaded worker processes and a scheduler on 127.0.0.1, each started as a
    program of its own (``python -m dask spec``: distributed's ``SubprocessCluster``), so no
    worker re-imports the user's script. ``LocalCluster``'s workers are started by
    multiprocessing's *spawn*, which runs the main module again in every worker: a plain
    script without ``if __name__ == "__main__":`` would launch itself recursively (Dask
    refuses: "Nanny failed to start")."""
    from distributed.deploy.subprocess import SubprocessCluster

    return SubprocessCluster(
        host="127.0.0.1",
        n_workers=LOCAL_WORKERS,
        threads_per_worker=1,
        dashboard_address="127.0.0.1:0",
        worker_kwargs={"dashboard_address": "127.0.0.1:0"},
        silence_logs=logging.CRITICAL,
    )


def _is_client(value: Any) -> bool:
    if "distributed" not in sys.modules:  # no Client exists unless distributed was imported
        return False
    from distributed import Client

    return isinstance(value, Client)


def _announce(client: Any) -> None:
    """Print the dashboard link, once per link: it is how Dask users watch the work."""
    link = getattr(client, "dashboard_link", None)
    if link and link not in _announced:
        _announced.add(link)
        print(f"hpvm: Dask dashboard at {link}", file=sys.stderr)
