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
(running the steps).

What a back end implements: a ``GPUDevice`` (``device.py``) — memory (``to_device``,
``empty``, ``copy_to_host``, ``copy_to_device``, optionally ``view``) and kernels
(``compile(spec)``, ``launch(kernel, spec, geometry, table, sizes, args)``) — and a
``GPUBackend`` subclass (``backend.py``) that creates it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ...errors import CompileError, DeviceLimitError, HPVMError, LaunchError, NodeExecutionError
from ...ir import instance_context as ictx
from ...ir.graph import ALL_TO_ALL, ONE_TO_ONE, InternalFunction, LeafFunction, Node
from ...ir.purity import parent_independent
from ...ir.types import ArrayType, ScalarType
from ...passes.place_allocations import SHARED
from ..base import RunContext
from ..bounds import Bound, array_shape, bound_accesses, check
from .device import GPUDevice
from .reuse import RunCache, frozen, size_key
from .schedule import GraphSchedule, Step, schedule
from .spec import ArgRef, Geometry, KernelSpec, LeafCall
from .specbuilder import SpecBuilder
from .values import Column, InstanceSet, NodeResult, Storage, sizes_equal

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
        except _Unknown:
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
    (``Plan.compile``) runs on ``_Rehearsal``: kernels are built, not launched."""

    def __init__(self, plan: Plan, ctx: RunContext, rehearsal: bool = False):
        self.plan = plan
        self.dev: GPUDevice = _Rehearsal(plan.device) if rehearsal else plan.device
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
                self.kernel_step(sched, step, level, inputs, results)
            elif step.kind == "host":
                self.host_step(sched, step.nodes[0], level, inputs, results)
            else:
                self.graph_step(sched, step.nodes[0], level, inputs, results)
        outputs: dict[int, Column] = {}
        for b in fn.graph.out_binds:
            if only is not None and id(b.src) not in only:
                continue
            outputs[b.op] = results[b.src.name].last(b.oc, b.describe())
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

    # -- allocation leaves: on the host -------------------------------------------------

    def host_step(
        self,
        sched: GraphSchedule,
        node: Node,
        level: InstanceSet,
        inputs: list[Column],
        results: dict[str, NodeResult],
    ) -> None:
        from ..interp.executor import InstanceHandle

        fn = node.function
        assert isinstance(fn, LeafFunction)
        res = self.sizes(node, level, sched.fn, inputs)
        self.check_grids(sched, node, res, results)
        cols = [self.input_column(sched, node, p, inputs, results) for p in range(len(fn.params))]
        values: list[tuple[Any, ...]] = []
        # Every parent instance would compute the same thing: run the leaf once and copy
        # (a block reduction has one allocation per block: 16,384 interpreter runs were 96 %
        # of its time on PoCL).
        same_everywhere = _same_for_every_parent(fn, [col for col, _ in cols], res.sizes)
        for r in range(1 if same_everywhere else level.count):
            parent = None
            for lvl in range(len(level.names) - 1, -1, -1):
                dims = int(level.ctx[r, ictx.index(lvl, ictx.DIMS)])
                ids, extents = ictx.index(lvl, ictx.ID), ictx.index(lvl, ictx.EXTENT)
                parent = InstanceHandle(
                    level.names[lvl],
                    tuple(int(v) for v in level.ctx[r, ids : ids + dims]),
                    tuple(int(v) for v in level.ctx[r, extents : extents + dims]),
                    parent,
                )
            offset = int(res.offsets[r])

            def gather(flat: int, r: int = r, offset: int = offset) -> list[Any]:
                return [
                    col.row(r if where == "parent" else offset + flat, self.dev, self.ctx)
                    for col, where in cols
                ]

            sizes = tuple(int(s) for s in res.sizes[r])
            out = self.plan.interpreter().run_leaf(node, sizes, gather, parent)
            values.extend(out.values)
        # With one run for every parent, its row stands for all of them: the pools below
        # broadcast it rather than loop over ``level.count`` references (65,536 blocks of a
        # 2^24 reduction spent most of their host time there).
        repeat = level.count if same_everywhere else 1
        total = len(values) * repeat
        pools: dict[tuple[int, ...], Storage] = {}
        for port, t in enumerate(fn.out_types):
            if isinstance(t, ScalarType):
                host = np.array([v[port] for v in values], dtype=t.dtype).repeat(repeat).reshape(total)
                res.each[port] = Column(storage=Storage(host=host))
                continue
            arrays = [v[port] for v in values]
            key = (*(a.__array_interface__["data"][0] for a in arrays), -repeat)
            storage = pools.get(key)
            if storage is None:
                shapes = {(a.shape, a.dtype.str) for a in arrays}
                if len(shapes) > 1:
                    raise LaunchError(
                        f"node '{node.name}' ({node.location}): the instances of allocation leaf "
                        f"'{fn.name}' return arrays of different shapes from output {port} "
                        f"({', '.join(str(s[0]) for s in sorted(shapes))}); the {self.dev.backend} back "
                        "end keeps them in one pool and needs one shape"
                    )
                shape = arrays[0].shape if arrays else (0,)
                if repeat != 1:
                    pool = np.broadcast_to(arrays[0], (total, *shape))
                else:
                    pool = np.stack(arrays) if arrays else np.zeros((0, *shape), t.dtype)
                storage = pools[key] = Storage(host=np.ascontiguousarray(pool), pool=True)
                storage.shared_step = self.shared_candidate(sched, node, port, fn)
            elif storage.shared_step != self.shared_candidate(sched, node, port, fn):
                storage.shared_step = None
            res.each[port] = Column(storage=storage)
        results[node.name] = res

    def shared_candidate(self, sched: GraphSchedule, node: Node, port: int, fn: LeafFunction) -> int | None:
        """The kernel step that may hold this malloc buffer in shared memory, if any: the one
        step of its user, when PlaceAllocations found the port may be shared (``shared``)."""
        if str(port) not in node.attrs.get(SHARED, "").split(","):
            return None
        user = next(e.dst for e in sched.fn.graph.edges if e.src is node and e.sp == port)
        step = sched.step_of.get(id(user))
        return None if step is None else id(step)

    # -- kernels ----------------------------------------------------------------------

    def kernel_step(
        self,
        sched: GraphSchedule,
        step: Step,
        level: InstanceSet,
        inputs: list[Column],
        results: dict[str, NodeResult],
    ) -> None:
        dev = self.dev
        nodes = step.nodes
        head = self.sizes(nodes[0], level, sched.fn, inputs)
        members: list[NodeResult] = []
        for node in nodes:
            res = head if node is nodes[0] else self.sizes(node, level, sched.fn, inputs)
            self.check_grids(sched, node, res, results)
            if res is not head and not sizes_equal(res, head):
                raise LaunchError(
                    f"node '{node.name}' ({node.location}): one-to-one edge between grids of different extents"
                )
            results[node.name] = res
            members.append(res)
        if not isinstance(dev, _Rehearsal):  # (a rehearsal launches nothing)
            for node, res in zip(nodes, members):
                self.check_bounds(sched, node, res, inputs)
        groups = self.launch_groups(head)
        total = sum(len(g.rows) * g.count for g in groups)
        builder = SpecBuilder(self, step, level.count)
        position = {id(n): i for i, n in enumerate(nodes)}
        calls = []
        arg_cols: list[list[tuple[Column, str] | None]] = []
        for node in nodes:
            fn = node.function
            assert isinstance(fn, LeafFunction)
            args = []
            cols: list[tuple[Column, str] | None] = []
            for port, p in enumerate(fn.params):
                feed = sched.feeds[id(node)][port]
                edge = feed[1] if feed is not None and feed[0] == "edge" else None
                if edge is not None and edge.repl == ONE_TO_ONE and id(edge.src) in position:
                    args.append(ArgRef("result", call=position[id(edge.src)], port=edge.sp))
                    cols.append(None)
                    continue
                col, where = self.input_column(sched, node, port, inputs, results)
                cols.append((col, where))
                args.append(builder.arg(col, where, p.type, writes=p.name in fn.outs, node=node))
            calls.append(LeafCall(fn, node.name, tuple(args)))
            arg_cols.append(cols)
        # Outputs: stored when later steps need them; arrays are resolved on the host.
        for ci, (node, res) in enumerate(zip(nodes, members)):
            fn = node.function
            for port, t in enumerate(fn.out_types):
                want = sched.needs.get((id(node), port), set())
                if not want:
                    continue
                if isinstance(t, ArrayType):
                    source = sched.passthrough[(id(node), port)]
                    assert source is not None
                    fed = arg_cols[ci][source]
                    if fed is None:  # returns what a fused call returned: not resolvable here
                        raise CompileError(
                            f"node '{node.name}' ({node.location}): output {port} passes on an array "
                            f"received from a fused leaf; the {dev.backend} back end cannot send it further"
                        )
                    col, where = fed
                    if where == "parent":
                        res.each[port] = col.remap(res.parent_of())
                        res.last_cols[port] = col
                    else:
                        res.each[port] = col
                    continue
                if "each" in want:
                    storage = Storage(device=dev.empty((total,), t.dtype))
                    builder.output(ci, port, storage, "each")
                    res.each[port] = Column(storage=storage)
                if "last" in want:
                    storage = Storage(device=dev.empty((level.count,), t.dtype))
                    builder.output(ci, port, storage, "last")
                    res.last_cols[port] = Column(storage=storage)
        use_shared = builder.shared_possible and all(g.count <= dev.max_group_size for g in groups)
        spec, values = builder.build(calls, nodes[0].dims, len(level.names) + 1, use_shared)
        if not groups:
            return
        kernel = self.plan.kernel(spec)
        self.mark_written(builder)
        for g, (count, rows, sizes) in enumerate(groups):
            exact = step.barrier or bool(spec.shared)
            if exact and count > dev.max_group_size:
                raise self.too_wide(step, count, sizes, dev.max_group_size, "the device allows")
            group_size = count if exact else min(count, dev.preferred_group_size)
            bpp = 1 if exact else math.ceil(count / group_size)
            geometry = Geometry(len(rows) * bpp, group_size, bpp)
            try:
                handle = self.instance_table(level, head, g, rows, spec.table_width)
                if exact:  # the compiled kernel's own limit may be lower than the device's
                    limit = dev.prepare(kernel, spec, geometry, handle, sizes, values)
                    if count > limit:
                        note = f" (the device allows {dev.max_group_size}; the kernel's registers lower it)"
                        raise self.too_wide(step, count, sizes, limit, "its compiled kernel allows", note)
                dev.launch(kernel, spec, geometry, handle, sizes, values)
            except HPVMError:
                raise
            except Exception as e:
                names = ", ".join(f"'{n.name}'" for n in nodes)
                raise NodeExecutionError(
                    f"node(s) {names} ({nodes[0].location}) on the {dev.backend} back end raised "
                    f"{type(e).__name__}: {e} (run it with target='interp' for a precise location)"
                ) from e

    def check_bounds(self, sched: GraphSchedule, node: Node, res: NodeResult, inputs: list[Column]) -> None:
        """``OutOfBoundsError`` before the kernel runs when its instances would index an
        array its graph passes in past the end (``backends/bounds.py``): the largest grid of
        the parent instances that have instances, against the host array of a uniform
        column, or a pool's row shape."""
        bounds = self.plan.bounds(sched, node)
        if not bounds:
            return
        if len(res.counts) == 1:  # (check skips a grid without instances)
            sizes = res.sizes[0].tolist()
        else:
            live = res.counts > 0
            if not live.any():
                return
            sizes = res.sizes[live].max(axis=0).tolist()
        check(node, sched.fn, bounds, sizes, inputs, _column_shape)

    def too_wide(
        self, step: Step, count: int, sizes: tuple[int, ...], limit: int, whose: str, note: str = ""
    ) -> DeviceLimitError:
        """A kernel whose parent instances must each run in one block, but ``count``
        instances exceed ``limit`` threads per block (what ``whose`` allows)."""
        node = step.nodes[0]
        why = "calls hpvm.barrier()" if step.barrier else "uses a shared-memory buffer"
        return DeviceLimitError(
            f"node '{node.name}' ({node.location}): leaf '{node.function.name}' {why}, so all "
            f"{count} instances of one parent instance (grid {list(sizes[: node.dims])}) must "
            f"run in one {self.dev.backend} block, but {whose} at most {limit} threads per block{note}; "
            f"make the leaf's grid at most {limit} instances, e.g. by adding a level of hierarchy"
        )

    def launch_groups(self, head: NodeResult) -> list[LaunchGroup]:
        """Parent instances with instances, grouped by grid (one launch per distinct grid)."""
        if head.key is not None:
            return self.plan.cache.get(("groups", head.key), lambda: _launch_groups(head))
        return _launch_groups(head)

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


class LaunchGroup(NamedTuple):
    """Parent instances launched together: all have ``count`` instances, over ``sizes``."""

    count: int
    rows: np.ndarray  # the parent instances (rows of their level)
    sizes: tuple[int, ...]  # the grid, padded with 1s to three dimensions


def _launch_groups(head: NodeResult) -> list[LaunchGroup]:
    """The parents with instances, one ``LaunchGroup`` per distinct grid."""
    live = np.nonzero(head.counts > 0)[0]
    if not len(live):
        return []
    pad = (1,) * (3 - head.node.dims)
    sizes = head.sizes[live]
    if not sizes.size or (sizes == sizes[0]).all():
        grid = tuple(int(v) for v in head.sizes[live[0]]) + pad
        return [LaunchGroup(int(head.counts[live[0]]), live.astype(np.int64), grid)]
    groups: dict[tuple[int, ...], list[int]] = {}
    for r in live:
        groups.setdefault(tuple(int(v) for v in head.sizes[r]), []).append(int(r))
    return [
        LaunchGroup(int(head.counts[g[0]]), np.array(g, dtype=np.int64), grid + pad)
        for grid, g in groups.items()
    ]


def _grid(node: Node, level: InstanceSet, rows: list[tuple[int, ...]]) -> tuple[np.ndarray, ...]:
    """(sizes, counts, offsets) of ``node`` over ``level`` from its sizes per parent instance
    (one row: the same in every parent instance)."""
    one = np.array(rows, dtype=np.int64).reshape(len(rows), node.dims)
    sizes = np.tile(one, (level.count, 1)) if len(rows) == 1 and level.count != 1 else one
    counts = np.prod(sizes, axis=1, dtype=np.int64) if node.dims else np.ones(level.count, np.int64)
    offsets = np.cumsum(counts) - counts
    return sizes, counts, offsets


class _Unknown(Exception):
    """A rehearsal needs a value no kernel computed (see ``Plan.compile``)."""


class _Rehearsal(GPUDevice):
    """The device as ``Plan.compile`` sees it: launching a kernel builds it (``prepare``)
    instead, no data moves (arrays are allocated, not copied), and reading a device value
    back raises ``_Unknown``: no kernel computed it."""

    def __init__(self, device: GPUDevice):
        self.device = device
        self.name, self.backend = device.name, device.backend
        self.max_group_size = device.max_group_size
        self.preferred_group_size = device.preferred_group_size
        self.shared_memory_bytes = device.shared_memory_bytes

    def to_device(self, host: np.ndarray) -> Any:
        return self.device.empty(host.shape, host.dtype)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self.device.empty(shape, dtype)

    def copy_to_host(self, handle: Any, host: np.ndarray) -> None:
        raise _Unknown

    def copy_to_device(self, host: np.ndarray, handle: Any) -> None:
        pass

    def compile(self, spec: KernelSpec) -> Any:
        return self.device.compile(spec)

    def prepare(
        self,
        kernel: Any,
        spec: KernelSpec,
        geometry: Geometry,
        table: Any,
        sizes: tuple[int, int, int],
        args: list[Any],
    ) -> int:
        return self.device.prepare(kernel, spec, geometry, table, sizes, args)

    def launch(
        self,
        kernel: Any,
        spec: KernelSpec,
        geometry: Geometry,
        table: Any,
        sizes: tuple[int, int, int],
        args: list[Any],
    ) -> None:
        self.device.prepare(kernel, spec, geometry, table, sizes, args)


def _column_shape(col: Column) -> tuple[tuple[int, ...], int] | None:
    """The shape and item size of the arrays a column holds, when the host knows them
    without a copy: a uniform host array, or a pool's rows."""
    if col.storage is None:  # (uniform)
        return array_shape(col.uniform)
    if col.storage.pool:
        return col.storage.shape[1:], col.storage.dtype.itemsize
    return None


def _same_for_every_parent(fn: LeafFunction, inputs: list[Column], sizes: np.ndarray) -> bool:
    """Whether an allocation leaf computes the same outputs in every parent instance: its
    inputs are the same for every parent, its grid is the same everywhere, and its code (with
    every function it calls) reads nothing else — no parent ids, no state, no random numbers
    (``ir/purity.py``, which answers no when in doubt)."""
    return (
        all(col.is_uniform for col in inputs)
        and (len(sizes) == 0 or bool((sizes == sizes[0]).all()))
        and parent_independent(fn)
    )
