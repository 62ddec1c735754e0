"""The shared GPU lowering (seed 001, DFG2LLVM_OpenCL): a root graph becomes kernel launches.

Both GPU back ends (``cuda``, ``opencl``) run a graph through this module; only compiling
and launching one kernel, and moving memory, differ (``device.py`` is that seam, ``spec.py``
says what a kernel does). The mapping:

* **Schedule.** Each internal node's child graph runs on the host in topological order, one
  *step* per child: leaf nodes become kernels, internal nodes recurse, allocation leaves run
  on the host (below). A step runs for *every* instance of the internal node at once — a
  kernel covers all parent instances — which is a legal schedule: the instances of a
  replicated internal node are independent, and a child runs only after its sources in the
  same parent instance (a stronger ordering than the graph needs).
* **Fusion.** Leaves joined by one-to-one edges, with the same grid, no barrier and adjacent
  in the topological order, run in one kernel, one after the other in each thread, and pass
  values in registers (instance *i* of a one-to-one sink waits only for instance *i* of its
  source). Only there may an array that is not one of the leaf's own array parameters (a
  view such as ``m[i]``) travel on an edge.
* **Hierarchy → threads.** A leaf's instances within one instance of its parent are the
  threads of one or more blocks; the parent's instances (and all ancestors', flattened in
  row-major order) are the blocks. So a leaf whose parent is not replicated launches its
  1–3-D grid (flattened, last dimension fastest for coalescing, split into blocks of
  ``preferred_group_size``), and a leaf under a replicated internal node gets one block per
  parent instance. A leaf that calls ``hpvm.barrier()`` needs every instance of one parent
  instance in one block: more instances than the device's ``max_group_size`` is a
  ``DeviceLimitError`` naming the limit and the value. The query intrinsics read a context
  tuple built from the thread and block ids plus a per-parent-instance table of the
  ancestors' ids and extents (the same tuple the ``cpu`` back end passes).
* **Values on edges and binds** are *columns*: one value per instance of the current level,
  either uniform (a host value: a scalar, or a tracked array whose device copy the memory
  tracker provides) or a per-row storage on the device (a buffer of scalars indexed by
  instance, or a *pool* of equally shaped arrays, one row per instance) reached through an
  optional index map. Kernels store the outputs later steps need: per instance (``each``,
  for one-to-one edges) or the parent instance's last instance only (``last``, for
  all-to-all edges and output binds — the last-instance rule of DESIGN.md). An array output
  that is one of the leaf's array parameters returned unchanged is resolved on the host.
* **malloc.** A leaf that calls ``hpvm.malloc`` is an *allocation leaf* (seed 001's
  allocation node): it runs on the host, per instance, with the interpreter, and its
  buffers become a pool in global memory, one row per instance — so a buffer per parent
  instance. When a buffer's only user is one leaf node whose kernel keeps each parent
  instance in one block, and it fits in ``shared_memory_bytes``, it is placed in shared /
  local memory for that kernel instead (initialised from the pool at kernel start);
  otherwise it stays in global memory, where it may outlive its parent instance.
* **Read-only.** Array parameters no leaf of a kernel writes (not in ``outs``) are marked
  ``read_only`` in the spec (OpenCL makes them ``const restrict``), and the memory tracker
  keeps their host copy valid.

Modules: ``schedule.py`` (the static steps of a child graph), ``values.py`` (columns,
storages, instance sets), ``specbuilder.py`` (one kernel's ``KernelSpec``), this module
(running the steps: graphs, sizes, the values on edges, the run's device tables and array
copies), ``kernelstep.py`` (a kernel step: its launches), ``hoststep.py`` (an allocation
leaf's step, on the host), ``rehearsal.py`` (the device ``Plan.compile`` runs on).

What a back end implements: a ``GPUDevice`` (``device.py``) — memory (``to_device``,
``empty``, ``copy_to_host``, ``copy_to_device``, optionally ``view``) and kernels
(``compile(spec)``, ``launch(kernel, spec, geometry, table, sizes, args)``) — and a
``GPUBackend`` subclass (``backend.py``) that creates it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ...errors import LaunchError
from ...ir import instance_context as ictx
from ...ir.graph import ALL_TO_ALL, ONE_TO_ONE, InternalFunction, Node
from ...ir.types import ScalarType
from ..base import RunContext
from ..bounds import Bound, bound_accesses
from .device import GPUDevice
from .hoststep import host_step
from .kernelstep import LaunchGroup, kernel_step
from .rehearsal import Rehearsal, Unknown
from .reuse import RunCache, frozen, size_key
from .schedule import GraphSchedule, schedule
from .spec import KernelSpec
from .specbuilder import SpecBuilder
from .values import Column, InstanceSet, NodeResult, Storage, sizes_equal

__all__ = ["LaunchGroup", "Plan"]

# =======================================================================================
# Executing a root graph


class Plan:
    """One root graph lowered for one device: schedules and compiled kernels, kept across runs."""

    def __init__(self, root: InternalFunction, device: GPUDevice):
        self.root = root
        self.device = device
        self._schedules: dict[tuple[int, frozenset[int] | None], GraphSchedule] = {}
        self._kernels: dict[tuple[object, ...], Any] = {}
        self._interp: Any = None
        self.cache = RunCache()  # grids, levels, launch groups, tables: kept across runs
        (root_ctx,) = frozen(np.array([ictx.ROOT], dtype=np.int64))
        self.root_level = InstanceSet(1, root_ctx, [root.name], key=("root",))
        self._instance_levels: dict[tuple[int, ...], InstanceSet] = {}
        self._size_inputs: dict[tuple[int, int], list[int]] = {}
        self._bounds: dict[int, list[Bound]] = {}

    def instance_level(self, instance: tuple[int, ...]) -> InstanceSet:
        """The root's level as one instance of a node that mixes devices (``RunContext.instance``:
        its ids and extents, what its children's leaves read as their parent's), kept per
        instance like the root's own."""
        level = self._instance_levels.get(instance)
        if level is None:
            (ctx,) = frozen(np.array([instance], dtype=np.int64))
            level = InstanceSet(1, ctx, [self.root.name], key=("root", instance))
            self._instance_levels[instance] = level
        return level

    def size_inputs(self, node: Node, fn: InternalFunction) -> list[int]:
        """The inputs of ``fn`` that ``node``'s replication sizes read."""
        found = self._size_inputs.get((id(node), id(fn)))
        if found is None:
            names: set[str] = set()
            for expr in node.sizes:
                names |= expr.params()
            index = {p.name: i for i, p in enumerate(fn.params)}
            found = self._size_inputs[(id(node), id(fn))] = [index[n] for n in sorted(names) if n in index]
        return found

    def bounds(self, sched: GraphSchedule, node: Node) -> list[Bound]:
        """The bounds facts of leaf node ``node`` on arrays its graph passes in (``bounds.py``)."""
        found = self._bounds.get(id(node))
        if found is None:
            found = self._bounds[id(node)] = bound_accesses(node, sched.fn, sched.feeds[id(node)])
        return found

    def schedule(self, fn: InternalFunction, part: frozenset[int] | None = None) -> GraphSchedule:
        sched = self._schedules.get((id(fn), part))
        if sched is None or sched.fn is not fn:
            sched = self._schedules[(id(fn), part)] = schedule(fn, self.device.backend, part)
        return sched

    def prepare(self) -> None:
        """Build every schedule now (compile errors that need no argument types surface here)."""
        from ...ir.graph import functions

        for fn in functions(self.root):
            if isinstance(fn, InternalFunction):
                self.schedule(fn)

    def kernel(self, spec: KernelSpec) -> Any:
        key = spec.key()
        k = self._kernels.get(key)
        if k is None:
            k = self._kernels[key] = self.device.compile(spec)
        return k

    def interpreter(self) -> Any:
        if self._interp is None:
            from ..interp.executor import Interpreter

            self._interp = Interpreter()
        return self._interp

    # -- entry points -----------------------------------------------------------------

    def compile(self, args: Sequence[Any]) -> None:
        """Build the kernels a run with ``args`` launches, in the variants its launches pick
        (prologue forms, argument types and layouts), without running any: a rehearsal of
        ``run`` on a device that builds each kernel where it would launch it. Allocation
        leaves run, on the host, as in a run. It stops where a step needs a value a kernel
        would have computed (a size or an allocation leaf's input read from the device):
        the kernels after that are built at their first launch."""
        ex = _Execution(self, RunContext(), rehearsal=True)
        try:
            ex.graph(self.root, ex.root_set(), ex.root_inputs(args))
        except Unknown:
            pass

    def run(self, args: Sequence[Any], ctx: RunContext) -> tuple[Any, ...]:
        ex = _Execution(self, ctx)
        try:
            outputs = ex.graph(self.root, ex.root_set(), ex.root_inputs(args))
            return ex.outputs(self.root, outputs, range(len(self.root.out_types)))
        finally:
            ex.finish()

    def run_stage(
        self, args: Sequence[Any], nodes: Sequence[Node], upstream: dict[str, Any], ctx: RunContext
    ) -> tuple[dict[str, Any], dict[int, Any]]:
        ex = _Execution(self, ctx)
        try:
            graph = self.root.graph  # nodes come from the graph the plan's was lowered from
            only = {id(graph.node(n.name)) for n in nodes}
            results: dict[str, NodeResult] = dict(upstream)
            outputs = ex.graph(self.root, ex.root_set(), ex.root_inputs(args), only=only, results=results)
            host_outputs = ex.outputs(self.root, outputs, sorted(outputs))
            return {n.name: results[n.name] for n in nodes}, dict(zip(sorted(outputs), host_outputs))
        finally:
            ex.finish()


class _Execution:
    """One run of a plan: columns, buffers, temporary device copies. A *rehearsal*
    (``Plan.compile``) runs on ``Rehearsal``: kernels are built, not launched."""

    def __init__(self, plan: Plan, ctx: RunContext, rehearsal: bool = False):
        self.plan = plan
        self.dev: GPUDevice = Rehearsal(plan.device) if rehearsal else plan.device
        self.ctx = ctx
        self.tracker = ctx.tracker
        self.temps: dict[int, tuple[np.ndarray, Any, bool]] = {}  # untracked arrays: copies for this run

    # -- levels and inputs ------------------------------------------------------------

    def root_set(self) -> InstanceSet:
        instance = self.ctx.instance
        return self.plan.root_level if not instance else self.plan.instance_level(tuple(instance))

    def root_inputs(self, args: Sequence[Any]) -> list[Column]:
        cols = []
        for p, a in zip(self.plan.root.params, args):
            if isinstance(p.type, ScalarType) and not isinstance(a, np.ndarray):
                a = p.type.dtype.type(a)
            cols.append(Column(uniform=a))
        return cols

    def outputs(self, fn: InternalFunction, outputs: dict[int, Column], ops: Any) -> tuple[Any, ...]:
        values = []
        for op in ops:
            value = outputs[op].row(0, self.dev, self.ctx)
            t = fn.out_types[op]
            if isinstance(t, ScalarType):
                value = t.dtype.type(value)
            values.append(value)
        return tuple(values)

    def finish(self) -> None:
        self.dev.synchronize()
        for array, handle, written in self.temps.values():
            if written:
                self.dev.copy_to_host(handle, array)
                self.ctx.record(to_host=array.nbytes, copies=1)

    # -- graphs -----------------------------------------------------------------------

    def graph(
        self,
        fn: InternalFunction,
        level: InstanceSet,
        inputs: list[Column],
        only: set[int] | None = None,
        results: dict[str, NodeResult] | None = None,
    ) -> dict[int, Column]:
        sched = self.plan.schedule(fn, None if only is None else frozenset(only))
        results = {} if results is None else results
        for step in sched.steps:
            if only is not None and not any(id(n) in only for n in step.nodes):
                continue
            if step.kind == "kernel":
                kernel_step(self, sched, step, level, inputs, results)
            elif step.kind == "host":
                host_step(self, sched, step.nodes[0], level, inputs, results)
            else:
                self.graph_step(sched, step.nodes[0], level, inputs, results)
        outputs: dict[int, Column] = {}
        for b in fn.graph.out_binds:
            if only is not None and id(b.src) not in only:
                continue
            outputs[b.op] = results[b.src.name].last(b.oc, b.describe(fn))
        return outputs

    def sizes(self, node: Node, level: InstanceSet, fn: InternalFunction, inputs: list[Column]) -> NodeResult:
        used = self.plan.size_inputs(node, fn)
        if all(inputs[i].is_uniform for i in used):
            env = {fn.params[i].name: inputs[i].uniform for i in used}
            values = size_key(env)
            if level.key is not None and values is not None:  # the same sizes as last time?
                key = (id(node), level.key, values)
                grid = self.plan.cache.get(
                    key, lambda: frozen(*_grid(node, level, [self.one_size(node, level, env)]))
                )
                return NodeResult(node, *grid, key=key)
            rows = [self.one_size(node, level, env)]
        else:
            rows = []
            for r in range(level.count):
                env = {fn.params[i].name: inputs[i].row(r, self.dev, self.ctx) for i in used}
                rows.append(node.evaluate_sizes(env, f"in {level.path(r)}, "))
        return NodeResult(node, *_grid(node, level, rows))

    @staticmethod
    def one_size(node: Node, level: InstanceSet, env: dict[str, Any]) -> tuple[int, ...]:
        """``node``'s sizes from inputs that are the same in every instance of ``level``."""
        return node.evaluate_sizes(env, f"in {level.path(0)}, " if level.count == 1 else "")

    def input_column(
        self,
        sched: GraphSchedule,
        node: Node,
        port: int,
        inputs: list[Column],
        results: dict[str, NodeResult],
    ) -> tuple[Column, str]:
        """The column feeding ``node``'s input ``port`` and its level: "parent" or "flat"."""
        feed = sched.feeds[id(node)][port]
        if feed is None:
            raise LaunchError(f"node '{node.name}' ({node.location}): input {port} has no feed")
        kind, item = feed
        if kind == "bind":
            return inputs[item], "parent"
        source = results[item.src.name]
        if item.repl == ALL_TO_ALL:
            return source.last(item.sp, item.describe()), "parent"
        return source.each[item.sp], "flat"

    def check_grids(
        self, sched: GraphSchedule, node: Node, mine: NodeResult, results: dict[str, NodeResult]
    ) -> None:
        for feed in sched.feeds[id(node)]:
            if feed is not None and feed[0] == "edge" and feed[1].repl == ONE_TO_ONE:
                item = feed[1]
                source = results[item.src.name]
                if not sizes_equal(source, mine):
                    bad = int(np.argmax((source.sizes != mine.sizes).any(axis=1))) if source.sizes.size else 0
                    raise LaunchError(
                        f"{item.describe()}: one-to-one edges need identical grids, but "
                        f"'{item.src.name}' has {source.sizes[bad].tolist()} instances and "
                        f"'{node.name}' {mine.sizes[bad].tolist()} in this execution"
                    )

    # -- internal nodes ---------------------------------------------------------------

    def graph_step(
        self,
        sched: GraphSchedule,
        node: Node,
        level: InstanceSet,
        inputs: list[Column],
        results: dict[str, NodeResult],
    ) -> None:
        fn = node.function
        assert isinstance(fn, InternalFunction)
        res = self.sizes(node, level, sched.fn, inputs)
        self.check_grids(sched, node, res, results)
        parent_of = res.parent_of()
        child_inputs = []
        for port in range(len(fn.params)):
            col, where = self.input_column(sched, node, port, inputs, results)
            child_inputs.append(col.remap(parent_of) if where == "parent" else col)
        child = self.child_set(node, level, res)
        if child.count:
            outs = self.graph(fn, child, child_inputs)
        else:
            outs = {}
        for op in range(len(fn.out_types)):
            res.each[op] = outs.get(op) or Column(storage=Storage(host=np.zeros(0)))
        results[node.name] = res

    def child_set(self, node: Node, level: InstanceSet, res: NodeResult) -> InstanceSet:
        if res.key is None:
            return self.make_child_set(node, level, res)
        key = ("level", res.key)  # (res.key names the node and the parent level)
        return self.plan.cache.get(key, lambda: self.make_child_set(node, level, res, key))

    @staticmethod
    def make_child_set(
        node: Node, level: InstanceSet, res: NodeResult, key: Hashable | None = None
    ) -> InstanceSet:
        total = int(res.counts.sum())
        width = ictx.STRIDE * (len(level.names) + 1)
        ctx = np.zeros((total, width), dtype=np.int64)
        for r in range(level.count):
            n = int(res.counts[r])
            if n == 0:
                continue
            start = int(res.offsets[r])
            block = ctx[start : start + n]
            block[:, : ictx.STRIDE] = ictx.level_rows([int(s) for s in res.sizes[r]])
            block[:, ictx.STRIDE :] = level.ctx[r]
        if key is not None:
            frozen(ctx)
        return InstanceSet(total, ctx, [node.name, *level.names], key)

    # -- device tables and arrays of this run (also for SpecBuilder) ---------------------

    def instance_table(
        self, level: InstanceSet, head: NodeResult, group: int, rows: np.ndarray, width: int
    ) -> Any:
        """The device table of launch group ``group`` (``spec.py``): per launched parent
        instance its index, its first instance's flat index and the ancestors' context."""

        def make() -> np.ndarray:
            table = np.empty((len(rows), width), dtype=np.int64)
            table[:, 0] = rows
            table[:, 1] = head.offsets[rows]
            table[:, 2:] = level.ctx[rows]
            return table

        if head.key is not None:  # (its key names the level, which fixes the width)
            return self.plan.cache.table(("table", head.key, group), make, self.upload)
        return self.table(make())

    def table(self, table: np.ndarray) -> Any:
        """The device copy of an int64 table or index map, by its contents."""
        key = ("content", table.tobytes(), table.shape)
        return self.plan.cache.table(key, lambda: table, self.upload)

    def upload(self, table: np.ndarray) -> Any:
        self.ctx.record(to_device=table.nbytes, internal=True)
        return self.plan.device.to_device(table)  # (a rehearsal's too: the cache outlives it)

    def mark_written(self, builder: SpecBuilder) -> None:
        for obj, writes in builder.array_objects:
            if not writes:
                continue
            if isinstance(obj, Storage):
                obj.host = None
            elif isinstance(obj, np.ndarray):
                if id(obj) in self.temps:
                    a, h, _ = self.temps[id(obj)]
                    self.temps[id(obj)] = (a, h, True)
                else:
                    self.tracker.device_wrote(obj, self.dev)

    def array_handle(self, array: np.ndarray) -> Any:
        handle = self.tracker.device_copy(array, self.dev, self.ctx.transfers)
        if handle is not None:
            return handle
        temp = self.temps.get(id(array))
        if temp is None:
            temp = self.temps[id(array)] = (array, self.dev.to_device(array), False)
            self.ctx.record(to_device=array.nbytes, copies=1)
        return temp[1]


def _grid(node: Node, level: InstanceSet, rows: list[tuple[int, ...]]) -> tuple[np.ndarray, ...]:
    """(sizes, counts, offsets) of ``node`` over ``level`` from its sizes per parent instance
    (one row: the same in every parent instance)."""
    one = np.array(rows, dtype=np.int64).reshape(len(rows), node.dims)
    sizes = np.tile(one, (level.count, 1)) if len(rows) == 1 and level.count != 1 else one
    counts = np.prod(sizes, axis=1, dtype=np.int64) if node.dims else np.ones(level.count, np.int64)
    offsets = np.cumsum(counts) - counts
    return sizes, counts, offsets
