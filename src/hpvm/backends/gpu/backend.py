"""``GPUBackend``: the ``Backend`` interface on top of the shared lowering (``plan.py``).

A GPU back end is this class plus a ``GPUDevice``: subclasses set ``name`` and ``device``
(the address-space name) and implement ``make_device``. Plans (schedules and compiled
kernels) are kept per root graph. Runs on one back end are serialized: one device, one
in-order stream, and numba-cuda's simulator runs one kernel at a time.
"""

from __future__ import annotations

import threading
import weakref
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...ir.graph import InternalFunction, Node
from ...ir.types import ScalarType
from ...passes import lower
from ...passes.fuse_one_to_one import FuseOneToOne
from ...passes.place_allocations import PlaceAllocations
from ..base import Backend, PortKey, RunContext
from .device import GPUDevice
from .plan import Plan
from .values import Column, NodeResult, Storage


class GPUBackend(Backend):
    """A back end that runs graphs as kernels on one GPU device."""

    outer_instance = True  # run_stage: RunContext.instance as the root level's context
    # A launch whose last runs were short may run on the launching thread (runtime/quick.py):
    # its kernels are compiled, and cannot wait for what the host does after ``launch``.
    # Handed to a worker, a one-kernel launch paid two thread wake-ups: 118-137 µs of host
    # path against 46–70 µs on the launching thread (benchmarks/gpu.py's device doing nothing).
    runs_quick_on_launch = True

    def __init__(self) -> None:
        self._device: GPUDevice | None = None
        self._plans: weakref.WeakKeyDictionary[InternalFunction, Plan] = weakref.WeakKeyDictionary()
        self._lock = threading.RLock()

    @abstractmethod
    def make_device(self) -> GPUDevice:
        """Open the device (raise ``BackendUnavailableError`` listing what exists if none)."""

    @property
    def gpu(self) -> GPUDevice:
        if self._device is None:
            self._device = self.make_device()
        return self._device

    #: The passes a graph goes through before this lowering reads it (``schedule.py``).
    lowering = (FuseOneToOne("kernel"), PlaceAllocations())

    def plan(self, root: InternalFunction) -> Plan:
        """The plan of ``root``, lowered by ``lowering`` (once per root)."""
        plan = self._plans.get(root)
        if plan is None:
            plan = self._plans[root] = Plan(lower(root, self.lowering), self.gpu)
        return plan

    def compile(self, root: InternalFunction, args: Sequence[Any]) -> None:
        """Lower the graph and build the kernels a run with ``args`` launches, for their types
        and layouts, without running them (``Plan.compile``), so that ``hpvm run --timings``
        counts compiling as compiling."""
        with self._lock:
            plan = self.plan(root)
            plan.prepare()
            plan.compile(args)

    def run(
        self, root: InternalFunction, args: Sequence[Any], ctx: RunContext | None = None
    ) -> tuple[Any, ...]:
        ctx = self.checked_context(root, args, ctx)
        with self._lock:
            return self.plan(root).run(args, ctx)

    def run_stage(
        self,
        root: InternalFunction,
        args: Sequence[Any],
        nodes: Sequence[Node],
        upstream: dict[str, Any],
        ctx: RunContext | None = None,
    ) -> tuple[dict[str, Any], dict[int, Any]]:
        """One pipeline stage (or one back end's part of a graph that mixes devices). What it
        produces stays in this back end's own form (device-resident columns);
        ``export_outputs`` hands it to another back end."""
        with self._lock:
            return self.plan(root).run_stage(args, nodes, upstream, ctx or RunContext())

    def export_outputs(
        self, node: Node, sizes: tuple[int, ...], produced: NodeResult, ctx: RunContext | None = None
    ) -> dict[PortKey, Any]:
        ctx = ctx or RunContext()
        values: dict[PortKey, Any] = {}
        count = int(produced.counts.sum())
        for port, ptype in enumerate(node.function.out_types):
            if port not in produced.each and port not in produced.last_cols:
                continue  # no other node reads it
            if count:
                values[(port, "last")] = produced.last(port, node.name).row(0, self.gpu, ctx)
            if isinstance(ptype, ScalarType) and node.dims > 0 and port in produced.each:
                col = produced.each[port]
                if col.is_uniform:
                    each = np.full(count, col.uniform, dtype=ptype.dtype)
                else:
                    assert col.storage is not None
                    rows = col.storage.on_host(self.gpu, ctx)
                    each = rows[col.map] if col.map is not None else rows[:count]
                values[(port, "each")] = np.asarray(each, dtype=ptype.dtype).reshape(sizes)
        return values

    def import_outputs(self, node: Node, sizes: tuple[int, ...], values: dict[PortKey, Any]) -> NodeResult:
        count = int(np.prod(sizes, dtype=np.int64)) if sizes else 1
        grid = np.array([list(sizes)], dtype=np.int64).reshape(1, len(sizes))
        result = NodeResult(node, grid, np.array([count], np.int64), np.zeros(1, np.int64))
        for port in range(len(node.function.out_types)):
            each = values.get((port, "each"))
            if each is not None:
                result.each[port] = Column(storage=Storage(host=np.ascontiguousarray(each).reshape(-1)))
            elif (port, "last") in values:
                result.each[port] = result.last_cols[port] = Column(uniform=values[(port, "last")])
        return result
