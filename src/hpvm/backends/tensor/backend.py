"""The ``tensor`` back end (seed 001's DFG2LLVM_CUDNN): tensor leaves run on PyTorch.

PyTorch runs oneDNN on the CPU and cuDNN on a GPU (used when ``torch.cuda.is_available()``).
A root is compiled once (``plan.compile_graph``: generated straight-line code over torch
calls, pattern-matched operations as one layer call each) and its shapes are checked once per
input signature. Root array arguments become torch tensors once (``torch.from_numpy`` shares
the host memory; on a GPU they are copied to the device), values between nodes stay torch
tensors on the device, and root outputs come back as NumPy arrays.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ...errors import HPVMError, NodeExecutionError
from ...ir import tensorops as ops
from ...ir.analysis import FeedTable, feed_table
from ...ir.bodies import GENERATED, PYTHON, TENSOR
from ...ir.graph import InternalFunction, Node
from ...ir.tensorops import torch_impl
from ...ir.types import ArrayType, ScalarType, f32
from ...ir.verify import topological_order
from ..base import Backend, PortKey, RunContext
from . import layers
from .plan import GraphPlan, check, check_node, compile_graph, compile_node, node_function

_MAX_SIGNATURES = 256


def _runtime() -> dict[str, Callable[..., Any]]:
    return {**torch_impl.TORCH, **layers.LAYERS, **layers.IN_PLACE}


@dataclass
class RootPlan:
    """A compiled root: its graph plan, the device, and the input signatures already checked."""

    root: InternalFunction
    graph: GraphPlan
    device: torch.device
    convert_in: list[Callable[[Any], Any]]
    convert_out: list[Callable[[Any], Any]]
    checked: set[tuple[Any, ...]] = field(default_factory=set)

    def steps(self) -> list[tuple[str, Any]]:
        """Every runtime call, as (node path, ``wrapper.Step``) — for introspection and tests."""
        return self.graph.steps()

    @property
    def source(self) -> str:
        """The generated code of the root graph."""
        return self.graph.source


class TensorBackend(Backend):
    """Runs graphs of tensor leaves on PyTorch (oneDNN / cuDNN)."""

    name = "tensor"
    accepts = frozenset({PYTHON, GENERATED, TENSOR})  # tensor bodies run on its tensor operations
    # Root arrays are only read (tensor operations make new tensors), and results come back
    # as new host arrays, so the memory tracker's host copies stay valid.
    device = "host"
    writes_arguments = False  # so the weights keep their tracker versions (prepared.py)
    # A run is generated Python calling one torch operation per layer: Ctrl-C stops it
    # between layers, so ``wait`` runs it on the host's thread. There it shares the host's
    # OpenMP team with the host's own torch calls; on a worker thread, a second team
    # competed with the first for the cores (ResNet-18 0.77x eager on the calling thread,
    # 0.83-0.91x on a worker, interleaved).
    interruptible_on_host = True

    def __init__(self) -> None:
        self.torch_device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self._plans: weakref.WeakKeyDictionary[InternalFunction, RootPlan] = weakref.WeakKeyDictionary()
        self._stages: weakref.WeakKeyDictionary[InternalFunction, StagePlan] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    # -- compiling -----------------------------------------------------------------------

    def plan(self, root: InternalFunction) -> RootPlan:
        """The compiled plan of ``root`` (made once per root function)."""
        plan = self._plans.get(root)
        if plan is None:
            with self._lock:
                plan = self._plans.get(root)
                if plan is None:
                    graph = compile_graph(root, _runtime(), prepare=True)
                    plan = RootPlan(
                        root,
                        graph,
                        self.torch_device,
                        [self._input_converter(p.type) for p in root.params],
                        [self._output_converter(t) for t in root.out_types],
                    )
                    self._plans[root] = plan
        return plan

    def compile(self, root: InternalFunction, args: Sequence[Any]) -> None:
        self._checked_plan(root, args)

    def _checked_plan(self, root: InternalFunction, args: Sequence[Any]) -> RootPlan:
        plan = self.plan(root)
        key = tuple((a.shape, a.dtype.char) if isinstance(a, np.ndarray) else a for a in args)
        if key not in plan.checked:
            metas = [ops.Meta(a.shape, a.dtype.name) if isinstance(a, np.ndarray) else a for a in args]
            check(plan.graph, metas, root.name)
            if len(plan.checked) >= _MAX_SIGNATURES:
                plan.checked.clear()
            plan.checked.add(key)
        return plan

    def _input_converter(self, ptype: Any) -> Callable[[Any], Any]:
        if isinstance(ptype, ArrayType):
            device = self.torch_device
            if device.type == "cpu":
                return _from_numpy
            return lambda a: _from_numpy(a).to(device)
        if isinstance(ptype, ScalarType):
            return bool if ptype.dtype.kind == "b" else (int if ptype.is_integer else float)
        return lambda v: v

    @staticmethod
    def _output_converter(ptype: Any) -> Callable[[Any], Any]:
        if isinstance(ptype, ScalarType):
            return ptype.dtype.type
        return _to_numpy

    # -- running -------------------------------------------------------------------------

    def run(
        self, root: InternalFunction, args: Sequence[Any], ctx: RunContext | None = None
    ) -> tuple[Any, ...]:
        ctx = self.checked_context(root, args, ctx)
        plan = self._checked_plan(root, args)
        extra = (_versions(plan.graph.weights, args, ctx),) if plan.graph.weights else ()
        try:
            with torch.inference_mode():  # inputs made inside it are cheaper to compute on
                results = plan.graph.run(*[c(a) for c, a in zip(plan.convert_in, args)], *extra)
        except HPVMError:
            raise
        except Exception as e:
            raise _failed(root, e) from e
        return tuple(c(r) for c, r in zip(plan.convert_out, results))

    def run_stage(
        self,
        root: InternalFunction,
        args: Sequence[Any],
        nodes: Sequence[Node],
        upstream: dict[str, Any],
        ctx: RunContext | None = None,
    ) -> tuple[dict[str, Any], dict[int, Any]]:
        """Run ``nodes`` one by one (each compiled on its own, so the rest of the root may
        hold leaves of other back ends); values between them stay torch tensors."""
        stage = self._stage_plan(root)
        selected = {id(n) for n in nodes}
        produced: dict[str, tuple[Any, ...]] = {}
        available = dict(upstream)
        try:
            with torch.inference_mode():
                values = [c(a) for c, a in zip(stage.convert_in, args)]
                for node in stage.order:  # topological: a stage's nodes in dependency order
                    if id(node) not in selected:
                        continue
                    inputs = [
                        values[payload] if kind == "bind" else available[payload.src.name][payload.sp]
                        for kind, payload in stage.feeds[id(node)]
                    ]
                    call = stage.node_call(node, inputs)
                    produced[node.name] = available[node.name] = call(*inputs)
        except HPVMError:
            raise
        except Exception as e:
            raise _failed(root, e) from e
        types = root.out_types
        outputs = {
            b.op: self._output_converter(types[b.op])(produced[b.src.name][b.oc])
            for b in root.graph.out_binds
            if id(b.src) in selected
        }
        return produced, outputs

    def _stage_plan(self, root: InternalFunction) -> StagePlan:
        stage = self._stages.get(root)
        if stage is None:
            with self._lock:
                stage = self._stages.get(root)
                if stage is None:
                    stage = StagePlan(
                        root,
                        topological_order(root.graph),
                        feed_table(root.graph),
                        [self._input_converter(p.type) for p in root.params],
                    )
                    self._stages[root] = stage
        return stage

    # -- values crossing to and from other back ends (graphs that mix devices) ------------

    def export_outputs(
        self, node: Node, sizes: tuple[int, ...], produced: Any, ctx: RunContext | None = None
    ) -> dict[PortKey, Any]:
        return {(port, "last"): _to_numpy(v) for port, v in enumerate(produced)}

    def import_outputs(self, node: Node, sizes: tuple[int, ...], values: dict[PortKey, Any]) -> Any:
        convert = self._input_converter(ArrayType(f32, 1))  # any array type: to a torch tensor
        return tuple(
            convert(v) if isinstance(v, np.ndarray) else v
            for v in (values.get((port, "last")) for port in range(len(node.function.out_types)))
        )


@dataclass
class StagePlan:
    """A root run node by node (pipeline stages, mixed graphs): each child compiled and its
    shapes checked on first use, per input signature."""

    root: InternalFunction
    order: list[Node]
    feeds: FeedTable
    convert_in: list[Callable[[Any], Any]]
    calls: dict[int, tuple[Any, Callable[..., tuple[Any, ...]]]] = field(default_factory=dict)
    checked: set[tuple[Any, ...]] = field(default_factory=set)

    def node_call(self, node: Node, inputs: Sequence[Any]) -> Callable[..., tuple[Any, ...]]:
        entry = self.calls.get(id(node))
        if entry is None:
            runtime = _runtime()
            child = compile_node(node, self.root, runtime)
            entry = self.calls[id(node)] = (child, node_function(child, runtime))
        key = (id(node), *((tuple(v.shape), v.dtype) if isinstance(v, torch.Tensor) else v for v in inputs))
        if key not in self.checked:
            metas = [ops.meta_of(v, "input", "?") if isinstance(v, torch.Tensor) else v for v in inputs]
            check_node(entry[0], metas, f"{self.root.name}/{node.name}")
            if len(self.checked) >= _MAX_SIGNATURES:
                self.checked.clear()
            self.checked.add(key)
        return entry[1]


def _versions(weights: Sequence[int], args: Sequence[Any], ctx: RunContext | None) -> tuple[int, ...] | None:
    """The memory tracker's versions of the weight arrays the prepared calls derive from
    (``prepared``: they keep what they derived while these stay the same), or ``None`` —
    derive again — when a version is unknown (no runtime, an untracked array)."""
    if ctx is None:
        return None
    versions = tuple(ctx.tracker.version(args[i]) for i in weights)
    return None if None in versions else versions  # type: ignore[return-value]


def _from_numpy(a: np.ndarray) -> torch.Tensor:
    """A torch tensor sharing ``a``'s memory (a copy when torch cannot share it: read-only
    arrays, negative strides)."""
    if not a.flags.writeable or any(s < 0 for s in a.strides):
        a = np.array(a)
    return torch.from_numpy(a)


def _to_numpy(t: Any) -> Any:
    """A host NumPy array of ``t``, C-contiguous: a prepared convolution's result is in
    ``channels_last`` layout, which the caller should not have to know about."""
    if isinstance(t, torch.Tensor):
        t = t.contiguous()
        return t.numpy() if t.device.type == "cpu" else t.cpu().numpy()
    return t


def _failed(root: InternalFunction, e: Exception) -> NodeExecutionError:
    return NodeExecutionError(
        f"graph '{root.name}' on the tensor back end raised {type(e).__name__}: {e} (run it with "
        "target='interp' to find the node)"
    )
