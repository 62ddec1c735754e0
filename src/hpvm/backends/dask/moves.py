"""Moving data between the host and the workers: the helpers every part of the back end
shares (running whole, by chunks, by layouts, or as stream stages)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import ClusterError, HPVMError
from ...ir.graph import InternalFunction
from .cluster import connect_timeout


def with_workers(client: Any, root: InternalFunction) -> Any:
    """``client``, once its cluster has a worker: a scheduler without any would hold the
    tasks forever, so waiting is bounded (``$HPVM_DASK_TIMEOUT``) and ends in an error."""
    if client.nthreads():
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


def gather(client: Any, futures: list[Any], root: InternalFunction) -> list[Any]:
    try:
        return client.gather(futures)
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
