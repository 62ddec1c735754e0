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

import os
import sys
import threading
from typing import Any

from ...errors import ClusterError

ENV_VAR = "HPVM_DASK_SCHEDULER"
#: Seconds to wait for a scheduler to answer (override: $HPVM_DASK_TIMEOUT).
CONNECT_TIMEOUT = 5.0

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
            from distributed import Client, LocalCluster
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
                self._local = LocalCluster(
                    host="127.0.0.1",
                    n_workers=2,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address="127.0.0.1:0",
                    worker_dashboard_address="127.0.0.1:0",
                )
                client = Client(self._local, timeout=f"{timeout}s", set_as_default=False)
            except Exception as e:
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
