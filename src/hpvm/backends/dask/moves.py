"""Moving data between the host and the workers: the helpers every part of the back end
shares (running whole, by chunks, by layouts, or as stream stages)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import ClusterError, HPVMError
from ...ir.graph import InternalFunction
from .cluster import connect_timeout

#: Seconds a client's count of workers is reused before asking the scheduler again
#: (each ask is a round trip: two per launch cost more than the rest of a tiny launch).
WORKERS_TTL = 1.0
#: client id -> (when asked, workers, local, their addresses)
_counts: dict[str, tuple[float, int, bool, tuple[str, ...]]] = {}
_counts_lock = threading.Lock()


def worker_count(client: Any, fresh: bool = False) -> int:
    """How many workers the cluster has (what a launch splits over), asked of the
    scheduler at most every ``WORKERS_TTL`` seconds per client (or now when ``fresh``): a
    worker that joins is used from the next ask on; one that leaves fails its tasks, which
    the back end already retries."""
    return _workers(client, fresh)[1]


def worker_addresses(client: Any, fresh: bool = False) -> tuple[str, ...]:
    """The workers' addresses, sorted (asked as ``worker_count`` is)."""
    return _workers(client, fresh)[3]


def _workers(client: Any, fresh: bool = False) -> tuple[float, int, bool, tuple[str, ...]]:
    key = str(getattr(client, "id", id(client)))
    now = time.monotonic()
    with _counts_lock:
        known = _counts.get(key)
    if known is not None and not fresh and now - known[0] < WORKERS_TTL:
        return known
    threads = client.nthreads()
    local = bool(threads) and all(_host(w) in _LOOPBACK for w in threads)
    known = _counts[key] = (now, len(threads), local, tuple(sorted(threads)))
    return known


_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]", "inproc"}


def _host(address: str) -> str:
    """The host of a worker address (``tcp://127.0.0.1:4000``, ``inproc://…/1/2``)."""
    protocol, _, rest = address.partition("://")
    return "inproc" if protocol == "inproc" else rest.rsplit(":", 1)[0]


def with_workers(client: Any, root: InternalFunction) -> Any:
    """``client``, once its cluster has a worker: a scheduler without any would hold the
    tasks forever, so waiting is bounded (``$HPVM_DASK_TIMEOUT``) and ends in an error."""
    if worker_count(client) or worker_count(client, fresh=True):
        return client
    timeout = connect_timeout()
    try:
        client.wait_for_workers(1, timeout=timeout)
    except Exception:  # TimeoutError (asyncio's or the builtin one), a closed client
        raise ClusterError(
            f"the Dask scheduler {client.scheduler.address} has no workers to run '{root.name}' "
            f"(waited {timeout:g} s); start some (dask worker {client.scheduler.address}) or point "
            "hpvm.init(dask=...) at another cluster"
        ) from None
    return client


_GRAPH_API: list[Any] = []  # found once: (parse_input, Task, Future, LLGExpr), or None


def graph_api() -> tuple[Any, Any, Any, Any] | None:
    """What ``Client.submit`` itself builds a task with, to send many in one graph: Dask's
    task spec (``dask._task_spec.parse_input``, ``Task``), ``distributed.Future`` and the
    low-level graph expression (``dask._expr.LLGExpr``). Two of them are private modules of
    Dask (2025 and later, the versions ``make install`` takes): where they are missing, or
    moved, ``Batch`` submits its tasks one by one — the same results, one scheduler message
    per task instead of one per launch."""
    if not _GRAPH_API:
        try:
            from dask._expr import LLGExpr
            from dask._task_spec import Task, parse_input
            from distributed import Future

            _GRAPH_API.append((parse_input, Task, Future, LLGExpr))
        except ImportError:
            _GRAPH_API.append(None)
    return _GRAPH_API[0]  # type: ignore[no-any-return]


class Batch:
    """The tasks of one launch, sent to the scheduler as one graph (one message) by
    ``send``. ``add`` hands back the task's future at once — a ``distributed.Future`` made
    before its graph goes, as ``Client.submit`` itself does — so a later task of the batch
    may take it as an argument (a dependency inside the graph) and the back end may keep it
    (``resident.py``) across launches."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._tasks: dict[str, Any] = {}
        #: the tasks' arguments until they are sent: a future among them may be the last
        #: reference to a kept piece the back end just replaced (``resident.py``), and its
        #: release must reach the scheduler after the graph that depends on it
        self._held: list[Any] = []

    def add(self, func: Callable[..., Any], *args: Any) -> Any:
        key = f"hpvm-{func.__name__}-{uuid.uuid4().hex}"
        api = graph_api()
        if api is None:  # a Dask without the task-spec graph API: one submit per task
            return self.client.submit(func, *args, key=key, pure=False)
        parse_input, Task, Future, _ = api
        self._tasks[key] = Task(key, func, *(parse_input(a) for a in args))
        self._held.append(args)
        return Future(key, self.client)

    def send(self) -> None:
        """Send the tasks added since the last ``send`` (nothing when there are none)."""
        if self._tasks:
            LLGExpr = graph_api()[3]  # type: ignore[index]  # (tasks are only added when it exists)
            tasks, self._tasks = self._tasks, {}
            held, self._held = self._held, []
            # A graph of fresh keys named by its own token, as Client.submit makes one: a
            # plain dict would be tokenized (every argument hashed) on each launch.
            graph = LLGExpr(tasks, _determ_token=uuid.uuid4().hex)
            self.client.get(graph, list(tasks), sync=False)
            del held  # (now their releases follow the graph on the scheduler's stream)

    def gather(self, futures: list[Any], root: InternalFunction) -> list[Any]:
        """The tasks' results (``gather``), after ``send``."""
        return gather(self.client, futures, root)


def gather(client: Any, futures: list[Any], root: InternalFunction) -> list[Any]:
    try:
        # Straight from the workers when they all run on this machine (one hop less than
        # through the scheduler); a remote cluster's workers may not be reachable from here.
        return client.gather(futures, direct=True if _workers(client)[2] else None)
    except HPVMError:
        raise  # a leaf's error, as the cpu back end raised it on the worker (names the node)
    except Exception as e:
        raise ClusterError(f"the Dask cluster failed running '{root.name}': {type(e).__name__}: {e}") from e


def copy_back(args: list[Any], written: list[int], parts: list[tuple[slice, np.ndarray]]) -> None:
    for i, (where, value) in zip(written, parts):
        host = args[i][where]
        if not np.may_share_memory(host, value):
            host[...] = value


def nbytes(values: Sequence[Any]) -> int:
    return sum(v.nbytes for v in values if isinstance(v, np.ndarray))
