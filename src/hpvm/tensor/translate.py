"""Translating a traced PyTorch model (torch.fx) into HPVM tensor operations.

``Translator`` walks the fx graph in order. Each supported layer (module, function or
method call) becomes zero, one or two ``TensorOp``s — a Conv2d with a bias is a
``convolution`` and an ``add``, a Linear a ``mul`` by the transposed weight and an ``add``,
Dropout and Flatten none (HPVM's ``mul`` flattens its input, so a Flatten is absorbed
into the Linear after it). Weights become ``Weight``s (root parameters, one per module
tensor, shared when a module is called twice). Every operation's result shape is checked
against PyTorch's (``ShapeProp``) with the operations' own shape rules, so a layer whose
arguments the tensor path would get wrong is refused here, with ``UnsupportedLayerError``
naming the layer and the argument. ``importer.py`` builds the DFG from the result.

The walk is here; each layer's translation is in ``layers.py``, and the operations and
weights it produces in ``oplist.py``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ModelImportError, UnsupportedLayerError
from . import layers as L
from .oplist import OpList, TensorOp, Value, Weight, identifier, shape

__all__ = ["SUPPORTED_LAYERS", "TensorOp", "Translator", "Weight", "identifier"]

SUPPORTED_LAYERS = (
    "Conv2d (groups, bias), BatchNorm2d, ReLU, ReLU6, Hardtanh, Tanh, Sigmoid, MaxPool2d, AvgPool2d, "
    "AdaptiveAvgPool2d (divisible sizes), Linear, Flatten (before a Linear), Softmax, Dropout, Identity, "
    "residual add (+, torch.add), and the functional forms of these"
)


class Translator:
    """Walks the traced graph in order and dispatches each node to its layer's handler
    (``layers.py``), which writes to the translation's ``OpList`` (see the module docstring)."""

    def __init__(self, traced: Any, model: Any):
        self.traced = traced
        self.model_name = type(model).__name__
        self.out = OpList(dict(traced.named_modules()))
        self.input_param = "x"
        self.input_shape: tuple[int, ...] = ()

    @property
    def weights(self) -> list[Weight]:
        """The root parameters the kept operations use."""
        return self.out.weights

    # -- the walk --------------------------------------------------------------------------

    def run(self) -> list[TensorOp]:
        for node in self.traced.graph.nodes:
            handler = getattr(self, f"_{node.op}")
            handler(node)
        return self.out.ops

    def _placeholder(self, node: Any) -> None:
        self.input_param = self.out.param_names.take(identifier(node.name, "x"))
        self.input_shape = shape(node)
        self.out.values[node] = Value(None, self.input_shape)

    def _get_attr(self, node: Any) -> None:
        raise UnsupportedLayerError(
            f"fx node '{node.name}' reads the model's tensor '{node.target}' directly; the tensor path "
            f"imports tensors used by layers only (supported: {SUPPORTED_LAYERS})"
        )

    def _output(self, node: Any) -> None:
        result = node.args[0]
        if not hasattr(result, "op"):
            raise ModelImportError(
                f"from_torch(): {self.model_name} returns {type(result).__name__}; the tensor path "
                "imports models that return one tensor"
            )
        value = self.out.tensor(result, node, "output", allow_flat=True)
        if value.flat_by is not None:
            self.out.flatten_misuse(value, "the model's output")
        if value.producer is None:
            raise ModelImportError(
                f"from_torch(): {self.model_name} returns its input unchanged; there is nothing to compute"
            )
        self.out.prune(value.producer)

    def _call_module(self, node: Any) -> None:
        module = self.out.modules[node.target]
        where = f"layer '{node.target}' (fx node '{node.name}', {_type_name(module)})"
        for cls, handler in _module_handlers():
            if isinstance(module, cls):
                handler(self.out, node, module, where)
                return
        raise UnsupportedLayerError(
            f"{where} is not supported by the tensor path; supported layers: {SUPPORTED_LAYERS}"
        )

    def _call_function(self, node: Any) -> None:
        handler = _function_handlers().get(node.target)
        where = f"fx node '{node.name}' (function {_function_name(node.target)})"
        if handler is None:
            raise UnsupportedLayerError(
                f"{where} is not supported by the tensor path; supported: {SUPPORTED_LAYERS}"
            )
        handler(self.out, node, where)

    def _call_method(self, node: Any) -> None:
        handler = _method_handlers().get(node.target)
        where = f"fx node '{node.name}' (method Tensor.{node.target})"
        if handler is None:
            raise UnsupportedLayerError(
                f"{where} is not supported by the tensor path; supported: {SUPPORTED_LAYERS}"
            )
        handler(self.out, node, where)


# -- dispatch tables ----------------------------------------------------------------------


def _module_handlers() -> list[tuple[type, Callable[[OpList, Any, Any, str], None]]]:
    from torch import nn

    return [
        (nn.Conv2d, L.conv2d),
        (nn.BatchNorm2d, L.batchnorm2d),
        (nn.ReLU, lambda o, n, m, w: L.unary(o, n, w, "relu", (), m.inplace)),
        (nn.ReLU6, lambda o, n, m, w: L.unary(o, n, w, "clipped_relu", (0.0, 6.0), m.inplace)),
        (
            nn.Hardtanh,
            lambda o, n, m, w: L.unary(o, n, w, "clipped_relu", (m.min_val, m.max_val), m.inplace),
        ),
        (nn.Tanh, lambda o, n, m, w: L.unary(o, n, w, "tanh", ())),
        (nn.Sigmoid, lambda o, n, m, w: L.unary(o, n, w, "sigmoid", ())),
        (nn.MaxPool2d, L.maxpool_module),
        (nn.AvgPool2d, L.avgpool_module),
        (nn.AdaptiveAvgPool2d, lambda o, n, m, w: L.adaptive_avgpool(o, n, w, m.output_size)),
        (nn.Linear, L.linear),
        (
            nn.Flatten,
            lambda o, n, m, w: L.flatten(o, n, w, {"start_dim": m.start_dim, "end_dim": m.end_dim}),
        ),
        (nn.Softmax, lambda o, n, m, w: L.softmax(o, n, w, m.dim)),
        (nn.modules.dropout._DropoutNd, lambda o, n, m, w: L.identity(o, n, w)),
        (nn.Identity, lambda o, n, m, w: L.identity(o, n, w)),
    ]


def _function_handlers() -> dict[Any, Callable[[OpList, Any, str], None]]:
    import torch
    import torch.nn.functional as F

    def unary(
        op: str, params: Sequence[tuple[str, Any]] = (), constants: Callable[..., tuple] = lambda a: ()
    ):
        def handle(ops: OpList, node: Any, where: str) -> None:
            a = L.bind(node, where, [("input", L.REQUIRED), *params, ("inplace", False)])
            L.unary(ops, node, where, op, constants(a), a["inplace"], a["input"])

        return handle

    return {
        operator.add: L.add,
        torch.add: L.add,
        torch.relu: unary("relu"),
        F.relu: unary("relu"),
        F.relu6: unary("clipped_relu", constants=lambda a: (0.0, 6.0)),
        F.hardtanh: unary(
            "clipped_relu", [("min_val", -1.0), ("max_val", 1.0)], lambda a: (a["min_val"], a["max_val"])
        ),
        torch.tanh: unary("tanh"),
        torch.sigmoid: unary("sigmoid"),
        F.max_pool2d: L.maxpool_function,
        F.avg_pool2d: L.avgpool_function,
        F.adaptive_avg_pool2d: L.adaptive_avgpool_function,
        torch.flatten: L.flatten_function,
        F.softmax: L.softmax_function,
        torch.softmax: L.softmax_function,
        F.dropout: L.dropout_function,
        getattr: L.shape_query,
        operator.getitem: L.shape_query,
    }


def _method_handlers() -> dict[str, Callable[[OpList, Any, str], None]]:
    def unary(op: str) -> Callable[[OpList, Any, str], None]:
        def handle(ops: OpList, node: Any, where: str) -> None:
            L.bind(node, where, [("self", L.REQUIRED)])
            L.unary(ops, node, where, op, ())

        return handle

    return {
        "relu": unary("relu"),
        "tanh": unary("tanh"),
        "sigmoid": unary("sigmoid"),
        "add": L.add,
        "softmax": L.softmax_function,
        "flatten": L.flatten_function,
        "view": L.view,
        "reshape": L.view,
        "contiguous": lambda o, n, w: L.identity(o, n, w),
        "size": L.size,
    }


def _type_name(module: Any) -> str:
    import torch

    cls = type(module)
    if getattr(torch.nn, cls.__name__, None) is cls:
        return f"torch.nn.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def _function_name(target: Any) -> str:
    name = getattr(target, "__name__", repr(target))
    module = getattr(target, "__module__", None) or ""
    if module.startswith("torch._C") or module == "torch":
        module = "torch"
    if module == "_operator":
        module = "operator"
    return f"{module}.{name}" if module else name
