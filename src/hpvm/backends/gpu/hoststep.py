"""Allocation leaves on the host, in a GPU run (``plan.py``; seed 001's allocation nodes).

A leaf that calls ``hpvm.malloc`` runs on the host, per parent instance, with the
interpreter; its buffers become a pool in global memory, one row per instance. Apart from
``plan.py`` because it is the one step that runs no kernel: it gathers its inputs back from
the device, and decides which buffers may live in shared memory instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import LaunchError
from ...ir import instance_context as ictx
from ...ir.graph import LeafFunction, Node
from ...ir.purity import parent_independent
from ...ir.types import ScalarType
from ...passes.place_allocations import SHARED
from .schedule import GraphSchedule
from .values import Column, InstanceSet, NodeResult, Storage

if TYPE_CHECKING:
    from .plan import _Execution


def host_step(
    ex: _Execution,
    sched: GraphSchedule,
    node: Node,
    level: InstanceSet,
    inputs: list[Column],
    results: dict[str, NodeResult],
) -> None:
    from ..interp.executor import InstanceHandle

    fn = node.function
    assert isinstance(fn, LeafFunction)
    res = ex.sizes(node, level, sched.fn, inputs)
    ex.check_grids(sched, node, res, results)
    cols = [ex.input_column(sched, node, p, inputs, results) for p in range(len(fn.params))]
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
            return [col.row(r if where == "parent" else offset + flat, ex.dev, ex.ctx) for col, where in cols]

        sizes = tuple(int(s) for s in res.sizes[r])
        out = ex.plan.interpreter().run_leaf(node, sizes, gather, parent)
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
                    f"({', '.join(str(s[0]) for s in sorted(shapes))}); the {ex.dev.backend} back "
                    "end keeps them in one pool and needs one shape"
                )
            shape = arrays[0].shape if arrays else (0,)
            if repeat != 1 and not arrays[0].any():
                # one zero-filled buffer for every block (malloc's buffers are zeros): the
                # device fills the pool, nothing is built on the host or copied over the bus
                storage = Storage(device=ex.dev.zeros((total, *shape), arrays[0].dtype), pool=True)
            elif repeat != 1:
                storage = Storage(
                    host=np.ascontiguousarray(np.broadcast_to(arrays[0], (total, *shape))), pool=True
                )
            else:
                pool = np.stack(arrays) if arrays else np.zeros((0, *shape), t.dtype)
                storage = Storage(host=pool, pool=True)
            pools[key] = storage
            storage.shared_step = _shared_candidate(sched, node, port, fn)
        elif storage.shared_step != _shared_candidate(sched, node, port, fn):
            storage.shared_step = None
        res.each[port] = Column(storage=storage)
    results[node.name] = res


def _shared_candidate(sched: GraphSchedule, node: Node, port: int, fn: LeafFunction) -> int | None:
    """The kernel step that may hold this malloc buffer in shared memory, if any: the one
    step of its user, when PlaceAllocations found the port may be shared (``shared``)."""
    if str(port) not in node.attrs.get(SHARED, "").split(","):
        return None
    user = next(e.dst for e in sched.fn.graph.edges if e.src is node and e.sp == port)
    step = sched.step_of.get(id(user))
    return None if step is None else id(step)


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
