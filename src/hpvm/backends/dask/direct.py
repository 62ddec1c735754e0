"""A small launch's tasks sent straight to the workers, past the scheduler.

Why. A Dask task goes from the client to the scheduler, which picks a worker and sends it
there; its result is gathered afterwards: the client's event loop, the scheduler's, the
worker's loop and its thread each wake in turn. On the 2-core machine of BENCHMARKS.md one
such round trip (``client.submit`` of a no-op, then ``gather``) took 9-26 ms at load 3-7,
and a launch of a tiny graph (two chunks) 16-31 ms: nearly all of it those wake-ups, none
of it data. A call straight to a worker over the client's connection to it (a comm handler
that hpvm installs on every worker with a worker plugin, once per client) took 1.7-3.1 ms
for both workers at once on the same cluster (docs/backends/dask.md, section 8).

So a launch whose arrays are small (``DIRECT_BYTES`` in all) sends its tasks with their
data inline, each to a worker the host picks (chunk ``k`` of a launch to the ``k``-th
worker, launches rotating over them), and takes the results from the calls' replies. It
keeps nothing on the workers (``resident.py``'s digests and patches would cost more than
sending such arrays again), and no task of it depends on another, so the scheduler has
nothing to order. The tasks are the same functions of ``tasks.py`` with the same
arguments; the worker runs them on its own thread pool, as it runs Dask's tasks.

Where the plugin cannot be installed (a scheduler that refuses it), launches go through
the scheduler as before. A worker lost during a direct call (the scheduler would have run
its task again elsewhere) makes the back end run the launch again through the scheduler:
nothing was copied back to the host yet.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import ClusterError, HPVMError
from ...ir.graph import InternalFunction
from .cluster import connect_timeout

#: Launches whose array arguments hold at most this many bytes in all go straight to the
#: workers (0: never). On local sockets a vector add of 64 KiB of arrays took 9.3 ms so,
#: against 23.8 ms kept on the workers through the scheduler (and of 1 MiB 11.3 against
#: 26.1 ms); 64 KiB take about half a millisecond over a 1 Gb/s network, still less than a
#: trip through the scheduler, while bigger arrays gain more from staying on the workers.
DIRECT_BYTES = 1 << 16

#: The name of the worker plugin, and of the comm handler it installs.
PLUGIN = "hpvm-direct"
HANDLER = "hpvm_direct_call"

#: Seconds small launches go through the scheduler after a worker was lost in a direct call.
PAUSE_S = 10.0

_installed: dict[str, bool] = {}  # client id -> whether the plugin is on its workers
_paused: dict[str, float] = {}  # client id -> no direct calls until then (time.monotonic)
_install_lock = threading.Lock()
_turns = itertools.count()  # which worker a launch's first task goes to


class DirectLost(ClusterError):
    """A worker was lost (or could not be reached) during a direct call: the launch runs
    again through the scheduler."""


def small(args: Sequence[Any]) -> bool:
    """Whether a launch's arrays are small enough to go straight to the workers."""
    total = sum(a.nbytes for a in args if isinstance(a, np.ndarray))
    return DIRECT_BYTES > 0 and total <= DIRECT_BYTES


def _client_id(client: Any) -> str:
    return str(getattr(client, "id", id(client)))


def _pause(client: Any) -> None:
    """No direct calls on ``client`` for ``PAUSE_S`` seconds (after a worker was lost: the
    scheduler may list it a while longer, and each call to it would wait for a timeout)."""
    with _install_lock:
        _paused[_client_id(client)] = time.monotonic() + PAUSE_S


def installed(client: Any) -> bool:
    """Whether ``client``'s workers have the direct-call handler: installed (one scheduler
    round trip) the first time a client asks; ``False`` for good where that fails, and
    for ``PAUSE_S`` seconds after a worker was lost during a direct call."""
    key = _client_id(client)
    with _install_lock:
        if time.monotonic() < _paused.get(key, 0.0):
            return False
        known = _installed.get(key)
        if known is None:
            try:
                client.register_plugin(_plugin(), name=PLUGIN)
                known = True
            except Exception:  # noqa: BLE001 - a scheduler that refuses plugins: the scheduler path
                known = False
            _installed[key] = known
        return known


def _plugin() -> Any:
    """The worker plugin (a class made here: ``distributed`` is imported only when a
    cluster is used)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class DirectCalls(WorkerPlugin):  # type: ignore[misc]
        """Installs ``HANDLER`` on a worker (and on every worker that joins later)."""

        name = PLUGIN

        def setup(self, worker: Any) -> None:
            worker.handlers[HANDLER] = _handler(worker)

    return DirectCalls()


def _handler(worker: Any) -> Callable[..., Any]:
    async def hpvm_direct_call(call: Any) -> Any:
        """Run one task of ``tasks.py`` on the worker's thread pool; reply its result."""
        from distributed.protocol.serialize import ToPickle

        from . import tasks

        func, args = _unwrapped(call)
        if getattr(func, "__module__", None) != tasks.__name__:
            raise ClusterError(f"hpvm's direct calls run only the functions of {tasks.__name__}")
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(worker.executors["default"], lambda: func(*args))
        return ToPickle(result)

    return hpvm_direct_call


def _unwrapped(value: Any) -> Any:
    """What a ``ToPickle`` carries: over TCP it arrives unpickled, but an in-process
    cluster's comms hand objects over as they are, wrapper included."""
    from distributed.protocol.serialize import ToPickle

    return value.data if isinstance(value, ToPickle) else value


class DirectBatch:
    """A launch's tasks, called straight on the workers at ``gather`` (``moves.Batch``'s
    interface: ``add`` hands back a token standing for the task's result)."""

    def __init__(self, client: Any, workers: Sequence[str]) -> None:
        self.client = client
        self._workers = list(workers)
        self._calls: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []

    def add(self, func: Callable[..., Any], *args: Any) -> int:
        self._calls.append((func, args))
        return len(self._calls) - 1

    def send(self) -> None:
        """Nothing: the calls go at ``gather`` (no task waits on another)."""

    def gather(self, tokens: list[int], root: InternalFunction) -> list[Any]:
        """The results of the tasks ``tokens`` stand for, in order: each called on a
        worker, all at once; a leaf's error as the worker raised it."""
        from distributed.protocol.serialize import ToPickle

        calls = [self._calls[t] for t in tokens]
        start = next(_turns)
        where = [self._workers[(start + k) % len(self._workers)] for k in range(len(calls))]

        from distributed.core import send_recv

        pool, timeout = self.client.rpc, connect_timeout()

        async def call(worker: str, task: Any) -> Any:
            # (``pool(worker).<handler>(...)`` without its unbounded connect: a worker gone
            # from the list only since it was read would hold the launch for
            # distributed's connect timeout, 30 s; here $HPVM_DASK_TIMEOUT, 5 s)
            comm = await pool.connect(worker, timeout=timeout)
            try:
                return await send_recv(comm=comm, op=HANDLER, call=ToPickle(task))
            finally:
                pool.reuse(worker, comm)

        async def run_all() -> list[Any]:
            return await asyncio.gather(*(call(w, c) for w, c in zip(where, calls)))

        try:
            return [_unwrapped(r) for r in self.client.sync(run_all)]
        except HPVMError:
            raise  # a leaf's error, as the cpu back end raised it on the worker (names the node)
        except OSError as e:  # CommClosedError, or no connection: the worker died, or went away
            _pause(self.client)
            raise DirectLost(
                f"the Dask cluster lost a worker running '{root.name}': {type(e).__name__}: {e}"
            ) from e
        except Exception as e:
            raise ClusterError(
                f"the Dask cluster failed running '{root.name}': {type(e).__name__}: {e}"
            ) from e
