"""A kernel step of a GPU run (``plan.py``): fused leaves launched as one kernel.

For each parent instance with instances, grouped by grid (``LaunchGroup``: one launch per
distinct grid), the step sizes and checks the leaves' grids, checks array bounds before
anything runs, builds the kernel's ``KernelSpec`` (``specbuilder.py``), allocates the
outputs later steps read, and launches — each parent instance in one block when the
leaves synchronize or share memory (a ``DeviceLimitError`` when it cannot fit). Apart from
``plan.py`` because it is the one step that talks to the device's kernels; ``plan.py``
walks the graphs and keeps the run's values.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ...errors import CompileError, DeviceLimitError, HPVMError, LaunchError, NodeExecutionError
from ...ir.graph import ONE_TO_ONE, LeafFunction, Node
from ...ir.types import ArrayType
from ..bounds import array_shape, check
from .rehearsal import Rehearsal
from .schedule import GraphSchedule, Step
from .spec import ArgRef, Geometry, LeafCall
from .specbuilder import SpecBuilder
from .values import Column, InstanceSet, NodeResult, Storage, sizes_equal

if TYPE_CHECKING:
    from .plan import _Execution


def kernel_step(
    ex: _Execution,
    sched: GraphSchedule,
    step: Step,
    level: InstanceSet,
    inputs: list[Column],
    results: dict[str, NodeResult],
) -> None:
    dev = ex.dev
    nodes = step.nodes
    head = ex.sizes(nodes[0], level, sched.fn, inputs)
    members: list[NodeResult] = []
    for node in nodes:
        res = head if node is nodes[0] else ex.sizes(node, level, sched.fn, inputs)
        ex.check_grids(sched, node, res, results)
        if res is not head and not sizes_equal(res, head):
            raise LaunchError(
                f"node '{node.name}' ({node.location}): one-to-one edge between grids of different extents"
            )
        results[node.name] = res
        members.append(res)
    if not isinstance(dev, Rehearsal):  # (a rehearsal launches nothing)
        for node, res in zip(nodes, members):
            _check_bounds(ex, sched, node, res, inputs)
    groups = _launch_groups_of(ex, head)
    total = sum(len(g.rows) * g.count for g in groups)
    builder = SpecBuilder(ex, step, level.count)
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
            col, where = ex.input_column(sched, node, port, inputs, results)
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
    kernel = ex.plan.kernel(spec)
    ex.mark_written(builder)
    for g, (count, rows, sizes) in enumerate(groups):
        exact = step.barrier or bool(spec.shared)
        if exact and count > dev.max_group_size:
            raise _too_wide(dev.backend, step, count, sizes, dev.max_group_size, "the device allows")
        group_size = count if exact else min(count, dev.preferred_group_size)
        bpp = 1 if exact else math.ceil(count / group_size)
        geometry = Geometry(len(rows) * bpp, group_size, bpp)
        try:
            handle = ex.instance_table(level, head, g, rows, spec.table_width)
            if exact:  # the compiled kernel's own limit may be lower than the device's
                limit = dev.prepare(kernel, spec, geometry, handle, sizes, values)
                if count > limit:
                    note = f" (the device allows {dev.max_group_size}; the kernel's registers lower it)"
                    raise _too_wide(
                        dev.backend, step, count, sizes, limit, "its compiled kernel allows", note
                    )
            dev.launch(kernel, spec, geometry, handle, sizes, values)
        except HPVMError:
            raise
        except Exception as e:
            names = ", ".join(f"'{n.name}'" for n in nodes)
            raise NodeExecutionError(
                f"node(s) {names} ({nodes[0].location}) on the {dev.backend} back end raised "
                f"{type(e).__name__}: {e} (run it with target='interp' for a precise location)"
            ) from e


def _check_bounds(
    ex: _Execution, sched: GraphSchedule, node: Node, res: NodeResult, inputs: list[Column]
) -> None:
    """``OutOfBoundsError`` before the kernel runs when its instances would index an
    array its graph passes in past the end (``backends/bounds.py``): the largest grid of
    the parent instances that have instances, against the host array of a uniform
    column, or a pool's row shape."""
    bounds = ex.plan.bounds(sched, node)
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


def _too_wide(
    backend: str, step: Step, count: int, sizes: tuple[int, ...], limit: int, whose: str, note: str = ""
) -> DeviceLimitError:
    """A kernel whose parent instances must each run in one block, but ``count``
    instances exceed ``limit`` threads per block (what ``whose`` allows)."""
    node = step.nodes[0]
    why = "calls hpvm.barrier()" if step.barrier else "uses a shared-memory buffer"
    return DeviceLimitError(
        f"node '{node.name}' ({node.location}): leaf '{node.function.name}' {why}, so all "
        f"{count} instances of one parent instance (grid {list(sizes[: node.dims])}) must "
        f"run in one {backend} block, but {whose} at most {limit} threads per block{note}; "
        f"make the leaf's grid at most {limit} instances, e.g. by adding a level of hierarchy"
    )


def _launch_groups_of(ex: _Execution, head: NodeResult) -> list[LaunchGroup]:
    """Parent instances with instances, grouped by grid (one launch per distinct grid)."""
    if head.key is not None:
        return ex.plan.cache.get(("groups", head.key), lambda: _launch_groups(head))
    return _launch_groups(head)


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


def _column_shape(col: Column) -> tuple[tuple[int, ...], int] | None:
    """The shape and item size of the arrays a column holds, when the host knows them
    without a copy: a uniform host array, or a pool's rows."""
    if col.storage is None:  # (uniform)
        return array_shape(col.uniform)
    if col.storage.pool:
        return col.storage.shape[1:], col.storage.dtype.itemsize
    return None
