"""Streaming on a cluster: each pipeline stage's items as tasks on a worker of its own.

Why a module of its own: the streaming scheduler is the runtime's (bounded buffers,
blocking ``push``/``pop``, items in order, one host thread per stage); what is the back
end's is where a stage's item runs and how its values, arrays included, get from one
stage's worker to the next stage's — through the host, in item order (``run_stage``).
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import HPVMError, LaunchError
from ...ir.graph import InternalFunction, Node
from ..base import RunContext, StageBatch
from . import tasks
from .moves import copy_back, gather, nbytes, with_workers
from .parts import stage_root, written_params


@dataclass
class Stage:
    """One pipeline stage of a streamed root: its key (one graph per worker), its nodes'
    names, the root's arrays it may write, and its index (which worker it prefers)."""

    key: str
    names: list[str]
    written: list[int]
    index: int
    #: root inputs the stage reads (bound to its nodes, or in their sizes): the other
    #: arrays of an item are not sent to it (an empty array of their type stands in)
    needs: set[int]

    def sent(self, args: Sequence[Any]) -> list[Any]:
        """An item's arguments as this stage's task gets them."""
        return [
            a if i in self.needs or not isinstance(a, np.ndarray) else np.empty((0,) * a.ndim, a.dtype)
            for i, a in enumerate(args)
        ]


class StageRunner:
    """The ``run_stage`` / ``run_stage_batch`` of ``DaskBackend`` (a mixin)."""

    _lock: threading.Lock
    _stages: weakref.WeakKeyDictionary[InternalFunction, dict[tuple[str, ...], Stage]]

    def run_stage(self, root, args, nodes, upstream, ctx=None):  # type: ignore[no-untyped-def]
        """One pipeline stage for one streamed item, as a task on a worker chosen per stage
        (``stage_worker``): its items run there one after the other, in order (the stage's
        thread waits for each), while other stages run on other workers. Values cross
        between stages through the host, as the ``cpu`` back end produces them — scalars
        and arrays alike: an array a stage hands on that is one of the item's pushed arrays
        comes back as the host's own (``tasks.ParamRef``, filled by the copy back), and an
        array received from upstream that a stage changes is copied into the host's."""
        ctx = ctx or RunContext()
        if ctx.cluster is None:
            raise LaunchError(
                f"target='dask' for '{root.name}': no Dask cluster is known to this run; launch it "
                "with hpvm.launch after hpvm.init(dask=...)"
            )
        stage = self._stage(root, nodes)
        client = with_workers(ctx.cluster(), root)
        args = list(args)
        future = client.submit(
            tasks.run_stage,
            stage.key,
            root,
            stage.sent(args),
            stage.names,
            upstream,
            stage.written,
            workers=_stage_worker(client, stage),
            allow_other_workers=True,
            pure=False,
        )
        ((produced, outputs, arrays, changed),) = gather(client, [future], root)
        return self._stage_back(ctx, stage, args, upstream, produced, outputs, arrays, changed)

    def _stage_back(
        self,
        ctx: RunContext,
        stage: Stage,
        args: list[Any],
        upstream: dict[str, Any],
        produced: dict[str, Any],
        outputs: dict[int, Any],
        arrays: Sequence[np.ndarray],
        changed: Sequence[tuple[str, Any, np.ndarray]],
    ) -> tuple[dict[str, Any], dict[int, Any]]:
        """One stage item's results into the host's arrays; its values with the host's arrays."""
        ctx.record(
            to_device=nbytes(stage.sent(args)) + nbytes([a for _, _, a in tasks.upstream_arrays(upstream)]),
            to_host=nbytes(arrays)
            + nbytes([a for _, _, a in changed])
            + nbytes(_values(produced))
            + nbytes(_values(outputs)),
        )
        copy_back(args, stage.written, [(slice(None), a) for a in arrays])
        for name, key, value in changed:
            host = upstream[name][key]
            if not np.may_share_memory(host, value):
                host[...] = value
        return _from_refs(produced, args), _from_refs(outputs, args)

    def run_stage_batch(self, root, args_list, nodes, upstream_list, ctx=None):  # type: ignore[no-untyped-def]
        """Several waiting items of a stage in one task (one round trip instead of one per
        item), run there in order, stopping at the first item that raises, whose error is
        the batch's."""
        if len(args_list) < 2:
            return super().run_stage_batch(  # type: ignore[misc]
                root, args_list, nodes, upstream_list, ctx
            )
        ctx = ctx or RunContext()
        try:
            if ctx.cluster is None:
                raise LaunchError(f"target='dask' for '{root.name}': no Dask cluster is known to this run")
            stage = self._stage(root, nodes)
            client = with_workers(ctx.cluster(), root)
            items = [list(a) for a in args_list]
            sent = [stage.sent(a) for a in items]
            future = client.submit(
                tasks.run_stage_batch,
                stage.key,
                root,
                sent,
                stage.names,
                list(upstream_list),
                stage.written,
                workers=_stage_worker(client, stage),
                allow_other_workers=True,
                pure=False,
            )
            ((produced, outputs, error, back),) = gather(client, [future], root)
        except HPVMError as e:
            return StageBatch([], [], e)
        done_p, done_o = [], []
        for args, upstream, p, o, (arrays, changed) in zip(items, upstream_list, produced, outputs, back):
            p, o = self._stage_back(ctx, stage, args, upstream, p, o, arrays, changed)
            done_p.append(p)
            done_o.append(o)
        return StageBatch(done_p, done_o, error)

    def _stage(self, root: InternalFunction, nodes: Sequence[Node]) -> Stage:
        with self._lock:
            stages = self._stages.setdefault(root, {})
            names = tuple(n.name for n in nodes)
            if names not in stages:
                sub = stage_root(root, list(nodes))
                index = {p.name: i for i, p in enumerate(root.params)}
                needs = {b.ip for b in root.graph.in_binds if b.dst.name in names} | {
                    index[name] for n in nodes for size in n.sizes for name in size.params() if name in index
                }
                # (an input not sent is not written here: arrays handed on from upstream
                # stages come back through ``changed``)
                written = sorted(i for i in written_params(sub) if i in needs)
                stages[names] = Stage(uuid.uuid4().hex, list(names), written, len(stages), needs)
            return stages[names]


def _stage_worker(client: Any, stage: Stage) -> list[str] | None:
    """The worker a stage prefers: stage k the k-th (modulo their number)."""
    workers = sorted(client.nthreads())
    return [workers[stage.index % len(workers)]] if workers else None


def _values(values: Any) -> list[Any]:
    """The leaves of nested dicts of values."""
    if isinstance(values, dict):
        return [leaf for v in values.values() for leaf in _values(v)]
    return [values]


def _from_refs(values: Any, args: list[Any]) -> Any:
    """``values`` with each ``tasks.ParamRef`` replaced by the host's pushed array."""
    if isinstance(values, dict):
        return {k: _from_refs(v, args) for k, v in values.items()}
    return args[values.index] if isinstance(values, tasks.ParamRef) else values
