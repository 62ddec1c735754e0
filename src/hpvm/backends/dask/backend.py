"""The ``dask`` back end: a root graph run on a Dask cluster, on the ``cpu`` back end there.

How a launch is split: the root's children in groups that share nothing written
(``parts.py``) run as concurrent tasks. A group that is one replicated node with layouts
declared on its array ports (a leaf, or a hierarchy) is split by them
(``declared.py``, ``offsets.py``): contiguous ranges of instances along x keeping their
ids, each sent only the elements it owns, each checked by two guarded runs, falling back
to one worker when a range touched other elements. A lone leaf whose indexing proves
which rows each chunk owns (``ownership.py``) is split along its outermost dimension —
the same leaf over ``hi - lo`` instances on row slices (with a halo where it reads later
rows, private copies for arrays it updates with commutative atomics) — and only the rows
it owns come back. Any other group runs whole, as one task on one worker, and the reason
is recorded in ``RunContext.notes`` (``hpvm run --timings`` prints it).

What moves: the arrays a task gets stay on the workers across launches (``resident.py``);
the next launch sends only blocks of rows the host changed since. Streams run each stage's
items as tasks on a worker per stage (``streams.py``). The ``cpu`` back end runs inside the
workers (``tasks.py``), so every semantic rule — binds, edges, the last instance — is the
one ``cpu`` implements; this back end only decides where things run and moves data.

The client comes from the run context's ``cluster`` hook (the runtime's, see
``hpvm.init(dask=...)``); this back end never imports the runtime.
"""

from __future__ import annotations

import os
import threading
import uuid
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import ClusterError, HPVMError, LaunchError
from ...ir import expr as size_expr
from ...ir.graph import (
    ChildGraph,
    InputBind,
    InternalFunction,
    LeafFunction,
    Node,
    OutputBind,
    Param,
)
from ...ir.types import ArrayType, i64
from ..base import Backend, RunContext
from ..bounds import check_graph
from . import tasks
from .declared import LayoutPlan, has_layouts, pack, piece, plan_layouts, put_back
from .direct import DirectLost, installed, small
from .moves import copy_back, gather, nbytes, with_workers, worker_addresses, worker_count
from .ownership import analyse
from .parts import Part, independent_parts, written_params
from .resident import Resident, Sender, Source, block_starts, digests, rows_digest
from .streams import Stage, StageRunner
from .tiny import ChunkTimes, Tiny

#: Whether arrays stay on the workers across launches (``resident.py``); $HPVM_DASK_KEEP=0
#: sends every launch's data inside its tasks, as the first version did (to compare).
KEEP = os.environ.get("HPVM_DASK_KEEP", "1") != "0"
CHUNK_PARAM = "__hpvm_chunk_n"  # the chunk root's extra input: its number of instances along x


@dataclass
class Job:
    """One part's submitted tasks, and what turns their results into the part's outputs."""

    futures: list[Any]
    finish: Callable[[list[Any]], tuple[Any, ...]]


@dataclass
class Plan:
    """How one root runs: ``node`` set when it is split by rows, else ``reason`` says why not."""

    key: str
    written: list[int]  # root params whose arrays come back
    node: Node | None = None
    reason: str = ""
    chunks: dict[tuple[int, ...], tuple[str, InternalFunction]] = field(default_factory=dict)
    #: root inputs updated by commutative atomics only: their ``ownership.COMBINE`` family
    combined: dict[int, str] = field(default_factory=dict)
    #: root inputs -> (lowest, highest) row offset from the instance id x the leaf indexes
    #: (``ownership.Ownership.rows``): a chunk [lo, hi) gets rows [lo, hi + highest)
    rows: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: root inputs every chunk gets whole (``ownership.Ownership.broadcast``)
    broadcast: set[int] = field(default_factory=set)
    #: set when the node splits by its declared layouts (``declared.py``) instead
    layout: LayoutPlan | None = None
    #: launch sizes whose chunks touched elements they do not own -> why (they run whole)
    outside: dict[tuple[int, ...], str] = field(default_factory=dict)
    #: graph key -> that graph pickled once (``tasks.ship``): a launch sends these bytes,
    #: not the graph pickled anew (cloudpickle of a leaf's Python function cost more than
    #: the rest of a tiny launch on the host)
    shipped: dict[str, bytes] = field(default_factory=dict)
    #: its direct launches' chunk run times: whether one of these sizes runs whole (``tiny.py``)
    times: ChunkTimes = field(default_factory=ChunkTimes)


class DaskBackend(StageRunner, Backend):
    """Runs graphs on the runtime's Dask cluster (see the module doc)."""

    name = "dask"
    device = "host"  # results land in the host's own arrays before run() returns
    #: The runtime connects to the cluster at ``launch`` (so an unreachable scheduler is a
    #: ``ClusterError`` there, not at ``wait``).
    needs_cluster = True

    def __init__(self) -> None:
        self._plans: weakref.WeakKeyDictionary[InternalFunction, Plan] = weakref.WeakKeyDictionary()
        self._groups: weakref.WeakKeyDictionary[InternalFunction, list[Part]] = weakref.WeakKeyDictionary()
        self._stages: weakref.WeakKeyDictionary[InternalFunction, dict[tuple[str, ...], Stage]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self._resident = Resident()  # pieces of host arrays kept on the workers

    def run(
        self, root: InternalFunction, args: Sequence[Any], ctx: RunContext | None = None
    ) -> tuple[Any, ...]:
        ctx = self.checked_context(root, args, ctx)
        if ctx.cluster is None:
            raise LaunchError(
                f"target='dask' for '{root.name}': no Dask cluster is known to this run; launch it "
                "with hpvm.launch after hpvm.init(dask=...) (an address, a distributed.Client, or "
                "nothing for a local cluster)"
            )
        client = with_workers(ctx.cluster(), root)
        args = list(args)
        if small(args) and installed(client):
            notes = len(ctx.notes)
            try:
                return _cluster_errors(root, lambda: self._run(root, args, client, ctx, False, direct=True))
            except DirectLost:
                # (the scheduler runs a lost worker's tasks again elsewhere; a direct call
                # cannot: nothing was copied back yet, so the launch goes again its way)
                del ctx.notes[notes:]
                worker_count(client, fresh=True)
                ctx.notes.append(f"dask: '{root.name}' ran again through the scheduler (a worker was lost)")
        keep = KEEP and not _overlapping(args)
        try:
            return _cluster_errors(root, lambda: self._run(root, args, client, ctx, keep))
        except ClusterError:
            if not keep:
                raise
        # A worker holding kept pieces may be gone (they cannot be recomputed), or one went
        # while pieces were being sent: forget them all and run this launch again with its
        # data inside the tasks. Nothing was copied back yet (that happens after every task
        # finished).
        self._resident.clear()
        ctx.notes.append(f"dask: '{root.name}' ran again with its data sent anew (the cluster lost some)")
        return _cluster_errors(root, lambda: self._run(root, args, client, ctx, False))

    def _run(
        self,
        root: InternalFunction,
        args: list[Any],
        client: Any,
        ctx: RunContext,
        keep: bool,
        direct: bool = False,
    ) -> tuple[Any, ...]:
        # The bounds pre-check (backends/bounds.py), on the host with the whole arrays, before
        # anything is sent: on the workers a split node's chunks see slices or guard-filled
        # pieces and run a leaf whose ids are offset, which the cpu back end there cannot
        # check (a chunk past the end wrote past it and crashed the worker).
        check_graph(root, args)
        send = Sender(client, self._resident if keep else None, worker_addresses(client) if direct else ())
        parts = self._parts(root)
        if len(parts) > 1 and _aliased(parts, args):
            ctx.notes.append(
                f"dask: '{root.name}': an array is passed to several inputs, so its children run together"
            )
            parts = [Part(root, list(range(len(root.out_types))), set(), written_params(root))]
        jobs = [self._submit(part.root, args, send, ctx) for part in parts]
        send.batch.send()  # every part's tasks in one graph: one message to the scheduler
        results = send.batch.gather([f for job in jobs for f in job.futures], root)
        outputs: list[Any] = [None] * len(root.out_types)
        done = 0
        for part, job in zip(parts, jobs):
            mine = results[done : done + len(job.futures)]
            done += len(job.futures)
            for op, value in zip(part.ops, job.finish(mine)):
                outputs[op] = value
        if len(parts) > 1:
            ctx.notes.append(
                f"dask: '{root.name}' ran as {len(parts)} concurrent groups of children: "
                + "; ".join(p.root.name for p in parts)
            )
        return tuple(outputs)

    def _submit(self, root: InternalFunction, args: list[Any], send: Sender, ctx: RunContext) -> Job:
        """Submit ``root``'s tasks (whole, or one per chunk); the job copies their results back."""
        plan = self._plan(root)
        client = send.client
        if plan.layout is not None:
            return self._submit_layout(plan, root, args, send, ctx)
        split = self._split(plan, root, args, client, send.direct)
        if isinstance(split, (str, Tiny)):
            return self._whole(plan, root, args, send, ctx, split)
        assert plan.node is not None
        node = plan.node
        ranges, key, chunk, sizes = split
        futures, picks = [], []
        combined = plan.combined
        sliced = [i for i in _sliced(root) if i not in combined and i not in plan.broadcast]
        rows_back = [i for i in plan.written if i not in combined]
        back_list = rows_back + sorted(combined)
        # Broadcast arrays go to the workers once (kept there while the host's copy does not
        # change), not inside every chunk's task (replicated on every worker).
        shared = {
            i: send.everywhere(args[i]) for i in sorted(plan.broadcast) if isinstance(args[i], np.ndarray)
        }
        private = 0
        # Every array's slice spans the same rows (the most any array reads past the chunk's
        # own): an array read in one launch and written in the next (a stencil's two
        # buffers) is then the same piece on the worker both times.
        reach = max([plan.rows.get(i, (0, 0))[1] for i in sliced], default=0)
        # Where one chunk's written rows end and the next one's begin: a piece's digested
        # blocks begin there too, so the rows a neighbour wrote (its halo) are blocks of
        # their own, patched next launch from the neighbour's worker (``edges``).
        owns = {plan.rows.get(i, (0, 0))[0] for i in rows_back}
        cuts = sorted({b + own for lo, hi in ranges for b in (lo, hi) for own in owns})
        edges: dict[int, list[tuple[int, int, Any]]] = {i: [] for i in rows_back}
        for lo, hi in ranges:
            part = [
                _private(a, combined[i])
                if i in combined
                else send.rows(a, lo, hi + reach, cuts)
                if i in sliced
                else shared.get(i, a)
                for i, a in enumerate(args)
            ]
            private += nbytes([part[i] for i in combined])
            part.append(hi - lo)
            starts = [block_starts(args[i][lo : hi + reach], [c - lo for c in cuts]) for i in rows_back]
            # One task per chunk: what comes back is its written pieces whole (the rows it
            # owns and the few past them it read: cutting those off in a second task cost a
            # second scheduler round trip per launch) and their digests as the worker keeps
            # them (``resident.py``).
            future = send.batch.add(
                tasks.run_chunk,
                key,
                self._shipped(plan, key, chunk),
                part,
                back_list,
                send.resident is not None,
                [*starts, *[None] * len(combined)],
            )
            futures.append(future)
            picks.append([tasks.kept_ref(future, j) for j in range(len(rows_back))] if send.resident else [])
            if send.resident is not None and reach:
                for j, i in enumerate(rows_back):
                    edges[i] += _halo_edges(
                        plan, i, (lo, hi), ranges, reach, len(args[i]), picks[-1][j], send
                    )

        def chunked(results: list[Any]) -> tuple[Any, ...]:
            if send.direct:
                plan.times.split_ran(sizes, [seconds for *_, seconds in results])
            back = 0
            for (lo, hi), (_, arrays, after, _), kept in zip(ranges, results, picks):
                back += nbytes(arrays)
                rows = arrays[: len(rows_back)]
                for j, (i, local) in enumerate(zip(rows_back, rows)):
                    own, end = _span(plan, i, hi - lo)  # the rows it writes (one offset: see _make_plan)
                    copy_back(args, [i], [(slice(lo + own, lo + end), local[own:end])])
                    if kept and after[j] is not None:
                        piece = args[i][lo : hi + reach]
                        send.settle(
                            args[i],
                            lo,
                            hi + reach,
                            kept[j],
                            after[j],
                            block_starts(piece, [c - lo for c in cuts]),
                        )
                for i, partial in zip(sorted(combined), arrays[len(rows_back) :]):
                    _combine(args[i], partial, combined[i])
            for i, found in edges.items():  # (the host's rows are what the workers hold now)
                send.sources(args[i], [Source(a, b, f, rows_digest(args[i][a:b])) for a, b, f in found])
            ctx.record(to_device=send.sent + private, to_host=back)
            atomics = (
                f"; atomics on {', '.join(repr(root.params[i].name) for i in sorted(combined))} combined "
                f"from {len(ranges)} partial copies"
                if combined
                else ""
            )
            ctx.notes.append(
                f"dask: node '{node.name}' of '{root.name}' split into {len(ranges)} chunk(s) of rows "
                f"{', '.join(f'[{lo}, {hi})' for lo, hi in ranges)}{atomics}"
            )
            marked = results[-1][0]  # the last instance is in the last chunk: its outputs are the node's
            return _unmark(marked, args)

        return Job(futures, chunked)

    def _whole(
        self,
        plan: Plan,
        root: InternalFunction,
        args: list[Any],
        send: Sender,
        ctx: RunContext,
        why: str | Tiny,
    ) -> Job:
        """``root`` as one task on one worker; the note says ``why`` (a ``Tiny`` split: its
        run time decides the next launch's, ``tiny.py``)."""
        ctx.notes.append(
            f"dask: '{root.name}' ran whole on one worker: {why.reason if isinstance(why, Tiny) else why}"
        )
        before = send.sent
        part = [
            send.rows(a, 0, a.shape[0] if a.ndim else 0) if isinstance(a, np.ndarray) else a for a in args
        ]
        sent = send.sent - before
        kept = send.resident is not None
        future = send.batch.add(
            tasks.run_whole, plan.key, self._shipped(plan, plan.key, root), part, plan.written, kept
        )
        picks = [tasks.kept_ref(future, j) for j in range(len(plan.written))] if kept else []

        def whole(results: list[Any]) -> tuple[Any, ...]:
            ((marked, arrays, seconds),) = results
            if isinstance(why, Tiny):
                plan.times.whole_ran(why, seconds)
            ctx.record(to_device=sent, to_host=nbytes(arrays))
            copy_back(args, plan.written, [(slice(None), a) for a in arrays])
            for i, pick in zip(plan.written, picks):
                if args[i].ndim:  # (the host's array now holds exactly what the worker keeps)
                    starts = block_starts(args[i])
                    send.settle(args[i], 0, len(args[i]), pick, digests(args[i], starts), starts)
            return _unmark(marked, args)

        return Job([future], whole)

    def _submit_layout(
        self, plan: Plan, root: InternalFunction, args: list[Any], send: Sender, ctx: RunContext
    ) -> Job:
        """Chunks of the node by its declared layouts (``declared.py``); the node runs whole
        when a chunk touched elements it does not own (this launch's sizes are remembered)."""
        node, layout = plan.node, plan.layout
        assert node is not None and layout is not None
        env = {p.name: a for p, a in zip(root.params, args)}
        sizes = tuple(node.evaluate_sizes(env, "launch(target='dask'): "))
        client = send.client
        if sizes in plan.outside:
            return self._whole(plan, root, args, send, ctx, plan.outside[sizes])
        workers = max(1, worker_count(client))
        count = min(workers, sizes[0])
        if count < 2:
            why = f"'{node.name}' has {sizes[0]} instance(s) along x and the cluster {workers} worker(s)"
            return self._whole(plan, root, args, send, ctx, why)
        for i in layout.parts:
            for j in range(len(args)):
                if i != j and isinstance(args[j], np.ndarray) and np.may_share_memory(args[i], args[j]):
                    why = f"'{root.params[i].name}' shares memory with '{root.params[j].name}'"
                    return self._whole(plan, root, args, send, ctx, why)
        bounds = [sizes[0] * k // count for k in range(count + 1)]
        ranges = [(bounds[k], bounds[k + 1]) for k in range(count)]
        try:
            pieces = [
                {i: piece(args[i], lay, sizes, lo, hi) for i, lay in layout.parts.items()}
                for lo, hi in ranges
            ]
            for mine in pieces:
                for p in mine.values():
                    p.index  # noqa: B018 (computed now: a layout that does not fit raises here)
        except ValueError as e:  # the layout does not fit this array (a rank the verifier allowed)
            return self._whole(plan, root, args, send, ctx, f"a declared layout does not fit: {e}")
        before = send.sent
        shared = {
            i: send.everywhere(a)
            for i, a in enumerate(args)
            if isinstance(a, np.ndarray) and i not in layout.parts
        }
        written = [i for i in plan.written if i in layout.parts]
        key = f"{plan.key}/layout/{sizes[1:]}"  # one rewritten chunk root per launch shape
        futures, picks = [], []
        for (lo, hi), mine in zip(ranges, pieces):
            # Each range's owned elements stay on the workers across launches (resident.py):
            # later launches send only the blocks the host changed.
            values = {i: send.packed(args[i], p.key, pack(args[i], p)) for i, p in mine.items()}
            part = [mine.get(i, shared.get(i, a)) for i, a in enumerate(args)]
            part = [*part, hi - lo, lo, sizes[0]]
            future = send.batch.add(
                tasks.run_layout_chunk,
                key,
                self._shipped(plan, key, root),
                node.name,
                sizes[1:],
                part,
                written,
                values,
            )
            futures.append(future)
            picks.append([tasks.kept_ref(future, j, field=2) for j in range(len(written))])
        sent = send.sent - before

        def chunked(results: list[Any]) -> tuple[Any, ...]:
            ctx.record(to_device=sent)
            for (lo, hi), result in zip(ranges, results):
                if result[0] == "outside":
                    _, i, what = result
                    port = layout.origin.get(i, "?") if i is not None else "?"
                    why = (
                        f"instances [{lo}, {hi}) of '{node.name}' {what.format(port=port)} under the "
                        "declared layouts, so a split run would be wrong; make each instance touch only "
                        "the elements its layout gives it, or drop the layouts"
                    )
                    with self._lock:
                        plan.outside[sizes] = why
                    again = Sender(client, None)
                    job = self._whole(plan, root, args, again, ctx, why)
                    again.batch.send()
                    return job.finish(gather(client, job.futures, root))
            back = 0
            for mine, (_, _, values), kept in zip(pieces, results, picks):
                for i, v, pick in zip(written, values, kept):
                    back += v.nbytes
                    put_back(args[i], mine[i], v)
                    send.settle_packed(args[i], mine[i].key, pick, v)
            ctx.record(to_host=back)
            kinds = ", ".join(f"'{root.params[i].name}' {layout.parts[i]}" for i in sorted(layout.parts))
            ctx.notes.append(
                f"dask: node '{node.name}' of '{root.name}' split by its declared layouts ({kinds}) into "
                f"{len(ranges)} chunk(s) of instances x in {', '.join(f'[{lo}, {hi})' for lo, hi in ranges)}"
            )
            return _unmark(results[-1][1], args)

        return Job(futures, chunked)

    def _shipped(self, plan: Plan, key: str, root: InternalFunction) -> bytes:
        """``root`` pickled, once per ``key`` of ``plan`` (what the tasks take in its place)."""
        blob = plan.shipped.get(key)
        if blob is None:
            blob = tasks.ship(root)
            with self._lock:
                plan.shipped[key] = blob
        return blob

    # -- planning ----------------------------------------------------------------------

    def _parts(self, root: InternalFunction) -> list[Part]:
        with self._lock:  # (launches run on several runtime threads at once)
            parts = self._groups.get(root)
            if parts is None:
                parts = self._groups[root] = independent_parts(root)
            return parts

    def _plan(self, root: InternalFunction) -> Plan:
        with self._lock:
            plan = self._plans.get(root)
            if plan is None:
                plan = self._plans[root] = _make_plan(root)
            return plan

    def _split(
        self, plan: Plan, root: InternalFunction, args: list[Any], client: Any, direct: bool
    ) -> tuple[list[tuple[int, int]], str, InternalFunction, tuple[int, ...]] | str | Tiny:
        """The chunks of this launch (row ranges, the chunk root and its key, the node's
        sizes), or why it runs whole (``direct``: sent straight to the workers, where chunks
        that ran in next to no time last time run whole: ``tiny.py``)."""
        node = plan.node
        if node is None:
            return plan.reason
        env = {p.name: a for p, a in zip(root.params, args)}
        sizes = node.evaluate_sizes(env, "launch(target='dask'): ")
        n = sizes[0]
        unsliceable = _unsliceable(plan, root, node, args, n)
        if unsliceable is not None:
            return unsliceable
        workers = max(1, worker_count(client))
        count = min(workers, n)
        if count < 2:
            return f"'{node.name}' has {n} instance(s) along x and the cluster {workers} worker(s)"
        tiny = plan.times.whole(tuple(sizes), count) if direct else None
        if tiny is not None:
            return tiny
        rest = sizes[1:]
        with self._lock:
            if rest not in plan.chunks:
                plan.chunks[rest] = (uuid.uuid4().hex, _chunk_root(root, node, rest))
            key, chunk = plan.chunks[rest]
        bounds = [n * k // count for k in range(count + 1)]
        return [(bounds[k], bounds[k + 1]) for k in range(count)], key, chunk, tuple(sizes)


def _halo_edges(
    plan: Plan,
    i: int,
    chunk: tuple[int, int],
    ranges: list[tuple[int, int]],
    reach: int,
    rows: int,
    kept: Any,
    send: Sender,
) -> list[tuple[int, int, Any]]:
    """Tasks cutting out, on the worker of ``chunk``, the rows of written root input
    ``i`` it owns that another chunk's piece reads (its halo), for the next launch that
    reads the array with the same chunks: (first row, end row, the task's future)."""
    own = plan.rows.get(i, (0, 0))[0]
    lo, hi = chunk
    out = []
    for other_lo, other_hi in ranges:
        if (other_lo, other_hi) == chunk:
            continue
        a, b = max(other_lo, lo + own), min(other_hi + reach, hi + own, rows)
        if a < b:
            out.append((a, b, send.batch.add(tasks.edge, kept, a - lo, b - lo)))
    return out


def _unsliceable(plan: Plan, root: InternalFunction, node: Node, args: list[Any], n: int) -> str | None:
    """Why this launch's arrays cannot be cut into row slices for ``n`` instances along x
    (too few rows for a chunk's halo, or written arrays sharing memory), or ``None``."""
    sliced = [i for i in _sliced(root) if i not in plan.combined and i not in plan.broadcast]
    for i in sliced:
        halo = plan.rows.get(i, (0, 0))[1]
        if args[i].shape[0] < n + halo:
            return (
                f"'{root.params[i].name}' has {args[i].shape[0]} rows for {n} instances of "
                f"'{node.name}' reading {halo} row(s) past their own (the cpu back end on the worker "
                "reports it)"
            )
    written = set(plan.written)
    for i in _sliced(root):
        for j in _sliced(root):
            if i < j and (i in written or j in written) and np.may_share_memory(args[i], args[j]):
                return (
                    f"'{root.params[i].name}' and '{root.params[j].name}' share memory and one "
                    "is written (chunks would see their rows as separate arrays)"
                )
    return None


def _make_plan(root: InternalFunction) -> Plan:
    key = uuid.uuid4().hex
    written = sorted(written_params(root))
    graph = root.graph
    if len(graph.nodes) != 1:
        return Plan(
            key,
            written,
            reason=f"'{root.name}' has {len(graph.nodes)} children joined by edges or by arrays they share "
            "(only a lone leaf is split yet)",
        )
    node = graph.nodes[0]
    leaf = node.function
    if node.dims == 0:
        return Plan(key, written, reason=f"node '{node.name}' has one instance")
    if not isinstance(leaf, LeafFunction):
        if not has_layouts(root, node):
            return Plan(
                key,
                written,
                reason=f"node '{node.name}' is an internal node without declared layouts (a hierarchy is "
                "split only by layouts on its ports)",
            )
        declared = plan_layouts(root, node, written)
        if isinstance(declared, str):
            return Plan(key, written, reason=f"its declared layouts cannot split it: {declared}")
        return Plan(key, written, node=node, layout=declared)
    if any(isinstance(t, ArrayType) for t in leaf.out_types):
        return Plan(key, written, reason=f"leaf '{leaf.name}' returns an array")
    if has_layouts(root, node):
        declared = plan_layouts(root, node, written)
        if isinstance(declared, str):
            return Plan(key, written, reason=f"its declared layouts cannot split it: {declared}")
        return Plan(key, written, node=node, layout=declared)
    found = analyse(leaf)
    if found.problem is not None:
        return Plan(key, written, reason=found.problem)
    combined: dict[int, str] = {}
    for name, family in found.combined.items():
        port = next(k for k, p in enumerate(leaf.params) if p.name == name)
        (ip,) = [b.ip for b in graph.in_binds if b.ic == port]
        if sum(1 for b in graph.in_binds if b.ip == ip) > 1:
            return Plan(
                key,
                written,
                reason=f"'{root.params[ip].name}' reaches leaf '{leaf.name}' through several inputs, one of "
                "them updated with atomics",
            )
        combined[ip] = family
    broadcast = {b.ip for b in graph.in_binds if leaf.params[b.ic].name in found.broadcast}
    for ip in sorted(broadcast):
        names = [leaf.params[b.ic].name for b in graph.in_binds if b.ip == ip]
        if any(name not in found.broadcast for name in names):
            return Plan(
                key,
                written,
                reason=f"'{root.params[ip].name}' reaches leaf '{leaf.name}' as several inputs, one "
                "indexed by rows and one not",
            )
    rows: dict[int, tuple[int, int]] = {}
    for b in graph.in_binds:
        low, high = found.rows.get(leaf.params[b.ic].name, (0, 0))
        if b.ip in rows:
            low, high = min(low, rows[b.ip][0]), max(high, rows[b.ip][1])
        rows[b.ip] = (low, high)
    for ip in written:
        if ip not in combined and rows.get(ip, (0, 0))[0] != rows.get(ip, (0, 0))[1]:
            return Plan(
                key,
                written,
                reason=f"'{root.params[ip].name}' is written and reaches leaf '{leaf.name}' at several "
                "rows around each instance",
            )
    return Plan(key, written, node=node, combined=combined, rows=rows, broadcast=broadcast)


def _sliced(root: InternalFunction) -> list[int]:
    """The root params whose arrays travel as row slices (every array: all reach the leaf)."""
    return [i for i, p in enumerate(root.params) if isinstance(p.type, ArrayType)]


def _chunk_root(root: InternalFunction, node: Node, rest: tuple[int, ...]) -> InternalFunction:
    """``root`` with its one child replicated over ``CHUNK_PARAM`` instances along x (the
    other dimensions fixed to this launch's ``rest``)."""
    sizes = (size_expr.Param(CHUNK_PARAM), *(size_expr.Const(s) for s in rest))
    child = Node(node.name, node.function, sizes, node.location)
    graph = ChildGraph(
        nodes=[child],
        in_binds=[InputBind(b.ip, child, b.ic) for b in root.graph.in_binds],
        out_binds=[OutputBind(child, b.oc, b.op) for b in root.graph.out_binds],
    )
    params = [Param(p.name, p.type) for p in root.params] + [Param(CHUNK_PARAM, i64)]
    return InternalFunction(f"{root.name}__chunk", params, graph=graph, location=root.location)


# -- moving results --------------------------------------------------------------------


def _aliased(parts: list[Part], args: list[Any]) -> bool:
    """Whether an array one part writes overlaps an array another part touches (the same
    host array passed to two inputs): then the parts are not independent after all."""
    for a in parts:
        for b in parts:
            if a is b:
                continue
            for i in a.writes:
                for j in b.reads | b.writes:
                    if i != j and np.may_share_memory(args[i], args[j]):
                        return True
    return False


def _cluster_errors(root: InternalFunction, run: Callable[[], tuple[Any, ...]]) -> tuple[Any, ...]:
    """``run()``, a connection that broke while sending (``client.scatter`` to a worker that
    died: ``CommClosedError`` is an ``OSError``) or a cancelled future turned into the
    ``ClusterError`` a failed gather is."""
    try:
        return run()
    except HPVMError:
        raise
    except (OSError, TimeoutError, CancelledError) as e:
        raise ClusterError(f"the Dask cluster failed running '{root.name}': {type(e).__name__}: {e}") from e


def _span(plan: Plan, i: int, count: int) -> tuple[int, int]:
    """The rows of written root input ``i`` a chunk of ``count`` instances owns, within its
    slice (the one row offset the leaf writes it at: see ``_make_plan``)."""
    own = plan.rows.get(i, (0, 0))[0]
    return own, own + count


def _overlapping(args: list[Any]) -> bool:
    """Whether two array arguments share memory (then nothing is kept for the launch: the
    workers must see them as one array, which only the first version's way of sending does)."""
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    return any(np.may_share_memory(a, b) for k, a in enumerate(arrays) for b in arrays[k + 1 :])


def _private(array: np.ndarray, family: str) -> np.ndarray:
    """A chunk's own copy of an array it updates with atomics of ``family``: zeros for the
    families whose partial results add up (add/sub, xor), the array's values for the
    idempotent ones (min, max, and, or)."""
    return np.zeros_like(array) if family in ("add", "xor") else array.copy()


_COMBINERS = {
    "add": np.add,
    "xor": np.bitwise_xor,
    "min": np.minimum,
    "max": np.maximum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
}


def _combine(host: np.ndarray, partial: np.ndarray, family: str) -> None:
    """Fold one chunk's partial copy into the host's array (integers wrap as the atomics do)."""
    _COMBINERS[family](host, partial, out=host, casting="unsafe")


def _unmark(marked: Sequence[tuple[str, Any]], args: list[Any]) -> tuple[Any, ...]:
    return tuple(args[v] if kind == "param" else v for kind, v in marked)
