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
"""

from __future__ import annotations

import keyword
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import HPVMError, ModelImportError, UnsupportedLayerError

SUPPORTED_LAYERS = (
    "Conv2d (groups, bias), BatchNorm2d, ReLU, ReLU6, Hardtanh, Tanh, Sigmoid, MaxPool2d, AvgPool2d, "
    "AdaptiveAvgPool2d (divisible sizes), Linear, Flatten (before a Linear), Softmax, Dropout, Identity, "
    "residual add (+, torch.add), and the functional forms of these"
)


@dataclass
class _Value:
    """A tensor of the imported graph: the graph input (producer None) or an op's result.

    ``flat`` is set on the result of a Flatten: the same tensor as ``producer``'s result,
    seen as (N, K); only a Linear may use it (``mul`` flattens its input itself).
    """

    producer: str | None
    shape: tuple[int, ...]
    flat_by: str | None = None  # the fx node that flattened it


@dataclass
class Weight:
    """A root array parameter: a weight tensor bound into the nodes that use it."""

    param: str
    array: np.ndarray


@dataclass
class TensorOp:
    """One tensor operation: a leaf node ``name`` calling ``hpvm.tensor.<op>``.

    The call's arguments are the tensor ``inputs`` (values), then the ``weights`` (root
    parameters, by leaf parameter name), then the literal ``constants``.
    """

    name: str
    op: str
    inputs: list[_Value]
    weights: list[tuple[str, Weight]]
    constants: tuple[Any, ...]
    shape: tuple[int, ...]
    origin: str  # the layer, for messages
    input_names: list[str] = field(default_factory=list)


class Translator:
    """Walks the traced graph in order and emits ``TensorOp``s (see the module docstring)."""

    def __init__(self, traced: Any, model: Any):
        self.traced = traced
        self.modules = dict(traced.named_modules())
        self.model_name = type(model).__name__
        self.values: dict[Any, _Value | None] = {}  # fx node -> tensor (None: not a tensor, e.g. size())
        self.ops: list[TensorOp] = []
        self.weights: list[Weight] = []
        self._weight_keys: dict[tuple[str, str], Weight] = {}
        self.names = _Names({"hpvm"})
        self.param_names = _Names(set())
        self.input_param = "x"
        self.input_shape: tuple[int, ...] = ()

    # -- the walk --------------------------------------------------------------------------

    def run(self) -> list[TensorOp]:
        for node in self.traced.graph.nodes:
            handler = getattr(self, f"_{node.op}")
            handler(node)
        return self.ops

    def _placeholder(self, node: Any) -> None:
        self.input_param = self.param_names.take(identifier(node.name, "x"))
        self.input_shape = _shape(node)
        self.values[node] = _Value(None, self.input_shape)

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
        value = self._tensor(result, node, "output", allow_flat=True)
        if value.flat_by is not None:
            self._flatten_misuse(value, "the model's output")
        if value.producer is None:
            raise ModelImportError(
                f"from_torch(): {self.model_name} returns its input unchanged; there is nothing to compute"
            )
        self._prune(value.producer)

    def _prune(self, output: str) -> None:
        """Keep the operations the output depends on (a layer whose result nobody uses is
        dead code), and the weights they use; the output's operation is then the last."""
        needed = {output}
        for op in reversed(self.ops):
            if op.name in needed:
                needed.update(v.producer for v in op.inputs if v.producer is not None)
        self.ops = [op for op in self.ops if op.name in needed]
        used = {id(w) for op in self.ops for _, w in op.weights}
        self.weights = [w for w in self.weights if id(w) in used]

    def _call_module(self, node: Any) -> None:
        module = self.modules[node.target]
        where = f"layer '{node.target}' (fx node '{node.name}', {_type_name(module)})"
        for cls, handler in self._module_handlers():
            if isinstance(module, cls):
                handler(node, module, where)
                return
        raise UnsupportedLayerError(
            f"{where} is not supported by the tensor path; supported layers: {SUPPORTED_LAYERS}"
        )

    def _call_function(self, node: Any) -> None:
        handler = self._function_handlers().get(node.target)
        where = f"fx node '{node.name}' (function {_function_name(node.target)})"
        if handler is None:
            raise UnsupportedLayerError(
                f"{where} is not supported by the tensor path; supported: {SUPPORTED_LAYERS}"
            )
        handler(node, where)

    def _call_method(self, node: Any) -> None:
        handler = self._method_handlers().get(node.target)
        where = f"fx node '{node.name}' (method Tensor.{node.target})"
        if handler is None:
            raise UnsupportedLayerError(
                f"{where} is not supported by the tensor path; supported: {SUPPORTED_LAYERS}"
            )
        handler(node, where)

    # -- dispatch tables -------------------------------------------------------------------

    def _module_handlers(self) -> list[tuple[type, Callable[[Any, Any, str], None]]]:
        from torch import nn

        return [
            (nn.Conv2d, self._conv2d),
            (nn.BatchNorm2d, self._batchnorm2d),
            (nn.ReLU, lambda n, m, w: self._unary(n, w, "relu", (), m.inplace)),
            (nn.ReLU6, lambda n, m, w: self._unary(n, w, "clipped_relu", (0.0, 6.0), m.inplace)),
            (
                nn.Hardtanh,
                lambda n, m, w: self._unary(n, w, "clipped_relu", (m.min_val, m.max_val), m.inplace),
            ),
            (nn.Tanh, lambda n, m, w: self._unary(n, w, "tanh", ())),
            (nn.Sigmoid, lambda n, m, w: self._unary(n, w, "sigmoid", ())),
            (nn.MaxPool2d, self._maxpool_module),
            (nn.AvgPool2d, self._avgpool_module),
            (nn.AdaptiveAvgPool2d, lambda n, m, w: self._adaptive_avgpool(n, w, m.output_size)),
            (nn.Linear, self._linear),
            (
                nn.Flatten,
                lambda n, m, w: self._flatten(n, w, {"start_dim": m.start_dim, "end_dim": m.end_dim}),
            ),
            (nn.Softmax, lambda n, m, w: self._softmax(n, w, m.dim)),
            (nn.modules.dropout._DropoutNd, lambda n, m, w: self._identity(n, w)),
            (nn.Identity, lambda n, m, w: self._identity(n, w)),
        ]

    def _function_handlers(self) -> dict[Any, Callable[[Any, str], None]]:
        import torch
        import torch.nn.functional as F

        def unary(
            op: str, params: Sequence[tuple[str, Any]] = (), constants: Callable[..., tuple] = lambda a: ()
        ):
            def handle(node: Any, where: str) -> None:
                a = _bind(node, where, [("input", _REQUIRED), *params, ("inplace", False)])
                self._unary(node, where, op, constants(a), a["inplace"], a["input"])

            return handle

        return {
            operator.add: self._add,
            torch.add: self._add,
            torch.relu: unary("relu"),
            F.relu: unary("relu"),
            F.relu6: unary("clipped_relu", constants=lambda a: (0.0, 6.0)),
            F.hardtanh: unary(
                "clipped_relu", [("min_val", -1.0), ("max_val", 1.0)], lambda a: (a["min_val"], a["max_val"])
            ),
            torch.tanh: unary("tanh"),
            torch.sigmoid: unary("sigmoid"),
            F.max_pool2d: self._maxpool_function,
            F.avg_pool2d: self._avgpool_function,
            F.adaptive_avg_pool2d: self._adaptive_avgpool_function,
            torch.flatten: self._flatten_function,
            F.softmax: self._softmax_function,
            torch.softmax: self._softmax_function,
            F.dropout: self._dropout_function,
            getattr: self._shape_query,
            operator.getitem: self._shape_query,
        }

    def _method_handlers(self) -> dict[str, Callable[[Any, str], None]]:
        def unary(op: str) -> Callable[[Any, str], None]:
            def handle(node: Any, where: str) -> None:
                _bind(node, where, [("self", _REQUIRED)])
                self._unary(node, where, op, ())

            return handle

        return {
            "relu": unary("relu"),
            "tanh": unary("tanh"),
            "sigmoid": unary("sigmoid"),
            "add": self._add,
            "softmax": self._softmax_function,
            "flatten": self._flatten_function,
            "view": self._view,
            "reshape": self._view,
            "contiguous": lambda n, w: self._identity(n, w),
            "size": self._size,
        }

    # -- layers ----------------------------------------------------------------------------

    def _conv2d(self, node: Any, m: Any, where: str) -> None:
        if m.padding_mode != "zeros":
            raise UnsupportedLayerError(
                f"{where}: argument padding_mode={m.padding_mode!r} is not supported; the tensor path "
                "pads convolutions with zeros only (padding_mode='zeros')"
            )
        if tuple(m.dilation) != (1, 1):
            raise UnsupportedLayerError(
                f"{where}: argument dilation={tuple(m.dilation)} is not supported; HPVM's convolution "
                "has no dilation (use dilation=1)"
            )
        if isinstance(m.padding, str):
            pads = _same_padding(m, where) if m.padding == "same" else (0, 0)
        else:
            pads = tuple(int(p) for p in m.padding)
        x = self._input(node, where)
        self._require_rank(x, 4, where, "input")
        w = self._weight(m, "weight", "w", m.weight)
        constants = (pads[0], pads[1], int(m.stride[0]), int(m.stride[1]))
        op, consts = (
            ("convolution", constants) if m.groups == 1 else ("group_convolution", (*constants, m.groups))
        )
        conv = self._emit(node, op, [x], [("w", w)], consts, where)
        if m.bias is not None:
            bias = self._weight(m, "bias", "b", m.bias)
            conv = self._emit(node, "add", [conv], [("b", bias)], (), where)
        self.values[node] = conv

    def _batchnorm2d(self, node: Any, m: Any, where: str) -> None:
        import torch

        if m.running_mean is None or m.running_var is None:
            raise UnsupportedLayerError(
                f"{where}: argument track_running_stats=False is not supported; in eval mode the "
                "tensor path normalizes with running statistics (track_running_stats=True)"
            )
        x = self._input(node, where)
        self._require_rank(x, 4, where, "input")
        channels = m.num_features
        gamma = m.weight if m.weight is not None else torch.ones(channels)
        beta = m.bias if m.bias is not None else torch.zeros(channels)
        weights = [
            ("gamma", self._weight(m, "weight", "gamma", gamma)),
            ("beta", self._weight(m, "bias", "beta", beta)),
            ("mean", self._weight(m, "running_mean", "mean", m.running_mean)),
            ("variance", self._weight(m, "running_var", "variance", m.running_var)),
        ]
        self.values[node] = self._emit(node, "batchnorm", [x], weights, (float(m.eps),), where)

    def _linear(self, node: Any, m: Any, where: str) -> None:
        x = self._tensor(node.args[0], node, "input", allow_flat=True)
        if x.flat_by is None and len(x.shape) != 2:
            raise UnsupportedLayerError(
                f"{where}: its input has shape {x.shape}; the tensor path's Linear (HPVM's mul) takes a "
                "2-D (N, features) input, or a Flatten of an NCHW tensor right before it"
            )
        w = self._weight(m, "weight", "w", m.weight, transpose=True)
        out = self._emit(node, "mul", [x], [("w", w)], (), where)
        if m.bias is not None:
            bias = self._weight(m, "bias", "b", m.bias)
            out = self._emit(node, "add", [out], [("b", bias)], (), where)
        self.values[node] = out

    def _unary(
        self, node: Any, where: str, op: str, constants: tuple, inplace: bool = False, arg: Any = None
    ) -> None:
        source = node.args[0] if arg is None else arg
        if inplace and hasattr(source, "users") and len(source.users) > 1:
            raise UnsupportedLayerError(
                f"{where}: argument inplace=True overwrites '{source.name}', which other layers also use; "
                "the tensor DFG passes values, not storage — use inplace=False"
            )
        x = self._tensor(source, node, "input")
        consts = tuple(float(c) for c in constants)
        self.values[node] = self._emit(node, op, [x], [], consts, where)

    def _identity(self, node: Any, where: str) -> None:
        self.values[node] = self._tensor(node.args[0], node, "input", allow_flat=True)

    def _add(self, node: Any, where: str) -> None:
        first = "self" if node.op == "call_method" else "input"
        alpha = [] if node.target is operator.add else [("alpha", 1)]
        a = _bind(node, where, [(first, _REQUIRED), ("other", _REQUIRED), *alpha])
        if a.get("alpha", 1) != 1:
            raise UnsupportedLayerError(
                f"{where}: argument alpha={a['alpha']!r} is not supported; HPVM's add computes x + y (alpha=1)"
            )
        operands = []
        for role in (first, "other"):
            if not hasattr(a[role], "op"):
                raise UnsupportedLayerError(
                    f"{where}: argument {role} is the constant {a[role]!r}; the tensor path adds two "
                    "tensors (a residual add) or a layer's bias, not constants"
                )
            operands.append(self._tensor(a[role], node, role))
        x, y = operands
        if x.shape != y.shape:
            raise UnsupportedLayerError(
                f"{where}: adds tensors of shapes {x.shape} and {y.shape}; the tensor path's residual "
                "add takes two tensors of the same shape"
            )
        self.values[node] = self._emit(node, "add", [x, y], [], (), where)

    # -- pooling ---------------------------------------------------------------------------

    def _maxpool_module(self, node: Any, m: Any, where: str) -> None:
        args = {
            k: getattr(m, k)
            for k in ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")
        }
        self._pool(node, where, "pool_max", node.args[0], args)

    def _avgpool_module(self, node: Any, m: Any, where: str) -> None:
        args = {
            k: getattr(m, k)
            for k in (
                "kernel_size",
                "stride",
                "padding",
                "ceil_mode",
                "count_include_pad",
                "divisor_override",
            )
        }
        self._pool(node, where, "pool_mean", node.args[0], args)

    def _maxpool_function(self, node: Any, where: str) -> None:
        a = _bind(
            node,
            where,
            [("input", _REQUIRED), ("kernel_size", _REQUIRED), ("stride", None), ("padding", 0), ("dilation", 1),
             ("ceil_mode", False), ("return_indices", False)],
        )  # fmt: skip
        self._pool(node, where, "pool_max", a.pop("input"), a)

    def _avgpool_function(self, node: Any, where: str) -> None:
        a = _bind(
            node,
            where,
            [("input", _REQUIRED), ("kernel_size", _REQUIRED), ("stride", None), ("padding", 0),
             ("ceil_mode", False), ("count_include_pad", True), ("divisor_override", None)],
        )  # fmt: skip
        self._pool(node, where, "pool_mean", a.pop("input"), a)

    def _pool(self, node: Any, where: str, op: str, source: Any, args: dict[str, Any]) -> None:
        kernel = _pair(args["kernel_size"])
        stride = kernel if args["stride"] in (None, [], ()) else _pair(args["stride"])
        padding = _pair(args["padding"])
        for name, ok in (
            ("dilation", _pair(args.get("dilation", 1)) == (1, 1)),
            ("ceil_mode", not args["ceil_mode"]),
            ("return_indices", not args.get("return_indices", False)),
            ("count_include_pad", args.get("count_include_pad", True) or padding == (0, 0)),
            ("divisor_override", args.get("divisor_override") is None),
        ):
            if not ok:
                raise UnsupportedLayerError(
                    f"{where}: argument {name}={args[name]!r} is not supported; HPVM's {op} has "
                    f"windows, pads and strides only ({_POOL_DEFAULTS[name]})"
                )
        x = self._tensor(source, node, "input")
        self._require_rank(x, 4, where, "input")
        constants = (*kernel, *padding, *stride)
        self.values[node] = self._emit(node, op, [x], [], constants, where)

    def _adaptive_avgpool_function(self, node: Any, where: str) -> None:
        a = _bind(node, where, [("input", _REQUIRED), ("output_size", _REQUIRED)])
        self._adaptive_avgpool(node, where, a["output_size"], a["input"])

    def _adaptive_avgpool(self, node: Any, where: str, output_size: Any, source: Any = None) -> None:
        x = self._tensor(node.args[0] if source is None else source, node, "input")
        self._require_rank(x, 4, where, "input")
        sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size, output_size)
        height, width = x.shape[2], x.shape[3]
        out = tuple(size if o is None else int(o) for o, size in zip(sizes, (height, width)))
        if out[0] <= 0 or out[1] <= 0 or height % out[0] or width % out[1]:
            raise UnsupportedLayerError(
                f"{where}: argument output_size={output_size!r} does not divide the input's "
                f"{height} × {width} pixels; the tensor path expresses AdaptiveAvgPool2d as a mean pool "
                "with equal windows only"
            )
        kernel = (height // out[0], width // out[1])
        self.values[node] = self._emit(node, "pool_mean", [x], [], (*kernel, 0, 0, *kernel), where)

    # -- shapes: flatten, view, softmax ----------------------------------------------------

    def _flatten_function(self, node: Any, where: str) -> None:
        first = "self" if node.op == "call_method" else "input"
        a = _bind(node, where, [(first, _REQUIRED), ("start_dim", 0), ("end_dim", -1)])
        self._flatten(node, where, a, a[first])

    def _flatten(self, node: Any, where: str, args: dict[str, Any], source: Any = None) -> None:
        x = self._tensor(node.args[0] if source is None else source, node, "input")
        out = _shape(node)
        if len(x.shape) <= 2 and out == x.shape:
            self.values[node] = x  # flattening (N, K) changes nothing
            return
        if len(out) != 2 or out[0] != x.shape[0]:
            raise UnsupportedLayerError(
                f"{where}: arguments start_dim={args.get('start_dim')!r}, end_dim={args.get('end_dim')!r} "
                f"flatten {x.shape} to {out}; the tensor path flattens to (N, features) only (start_dim=1)"
            )
        self.values[node] = _Value(x.producer, x.shape, flat_by=node.name)

    def _view(self, node: Any, where: str) -> None:
        x = self._tensor(node.args[0], node, "input")
        out = _shape(node)
        if out == x.shape:
            self.values[node] = x
        elif len(out) == 2 and out[0] == x.shape[0] and len(x.shape) > 2:
            self.values[node] = _Value(x.producer, x.shape, flat_by=node.name)
        else:
            raise UnsupportedLayerError(
                f"{where} reshapes {x.shape} to {out}; the tensor path supports only flattening an "
                "NCHW tensor to (N, features) before a Linear"
            )

    def _shape_query(self, node: Any, where: str) -> None:
        """``x.shape`` and ``x.shape[0]`` (for a view's sizes): ints, not tensors."""
        source = node.args[0]
        is_shape = node.target is getattr and node.args[1] == "shape"
        if not is_shape and not (
            hasattr(source, "op") and source in self.values and self.values[source] is None
        ):
            what = f"reads attribute '{node.args[1]}' of" if node.target is getattr else "indexes"
            raise UnsupportedLayerError(
                f"{where} {what} a tensor; the tensor path supports no slicing or tensor attributes "
                "(only x.shape / x.size() for a flattening view)"
            )
        self.values[node] = None

    def _size(self, node: Any, where: str) -> None:
        self.values[node] = None  # an int for view(x.size(0), -1); not a tensor

    def _softmax_function(self, node: Any, where: str) -> None:
        first = "self" if node.op == "call_method" else "input"
        a = _bind(node, where, [(first, _REQUIRED), ("dim", None), ("_stacklevel", 3), ("dtype", None)])
        if a["dtype"] is not None:
            raise UnsupportedLayerError(
                f"{where}: argument dtype={a['dtype']!r} is not supported (float32 only)"
            )
        self._softmax(node, where, a["dim"], a[first])

    def _softmax(self, node: Any, where: str, dim: Any, source: Any = None) -> None:
        x = self._tensor(node.args[0] if source is None else source, node, "input")
        if len(x.shape) != 2 or dim not in (1, -1, None):
            raise UnsupportedLayerError(
                f"{where}: argument dim={dim!r} on an input of shape {x.shape} is not supported; HPVM's "
                "softmax normalizes dim 1 of a 2-D (N, classes) tensor"
            )
        self.values[node] = self._emit(node, "softmax", [x], [], (), where)

    def _dropout_function(self, node: Any, where: str) -> None:
        a = _bind(node, where, [("input", _REQUIRED), ("p", 0.5), ("training", True), ("inplace", False)])
        if a["training"]:
            raise UnsupportedLayerError(
                f"{where}: argument training=True makes dropout random; write "
                "F.dropout(x, p, self.training) so that it is the identity in eval mode"
            )
        self.values[node] = self._tensor(a["input"], node, "input", allow_flat=True)

    # -- helpers ---------------------------------------------------------------------------

    def _input(self, node: Any, where: str) -> _Value:
        if len(node.args) != 1 or node.kwargs:
            raise UnsupportedLayerError(
                f"{where} is called with {len(node.args)} arguments; layers take one tensor"
            )
        return self._tensor(node.args[0], node, "input")

    def _tensor(self, arg: Any, user: Any, role: str, allow_flat: bool = False) -> _Value:
        value = self.values.get(arg) if hasattr(arg, "op") else None
        if value is None:
            raise UnsupportedLayerError(
                f"fx node '{user.name}': its {role} is {_describe_arg(arg)}, not a tensor computed by the model"
            )
        if value.flat_by is not None and not allow_flat:
            self._flatten_misuse(value, f"fx node '{user.name}'")
        return value

    def _flatten_misuse(self, value: _Value, user: str) -> None:
        raise UnsupportedLayerError(
            f"the Flatten at fx node '{value.flat_by}' feeds {user}; the tensor path expresses Flatten "
            "only as the input of a Linear layer (HPVM's mul flattens its input) — put a Linear right after it"
        )

    def _require_rank(self, x: _Value, rank: int, where: str, role: str) -> None:
        if len(x.shape) != rank:
            raise UnsupportedLayerError(
                f"{where}: its {role} has shape {x.shape}; it takes a {rank}-D NCHW tensor"
            )

    def _weight(self, module: Any, attr: str, role: str, tensor: Any, transpose: bool = False) -> Weight:
        """The root parameter holding ``module.<attr>`` (one per module and tensor, shared by reuses)."""
        target = next(name for name, m in self.modules.items() if m is module)
        key = (target or "model", attr)
        found = self._weight_keys.get(key)
        if found is None:
            array = tensor.detach().cpu().numpy().astype(np.float32, copy=True)
            if transpose:
                array = np.ascontiguousarray(array.T)
            param = self.param_names.take(identifier(f"{target}_{role}".replace(".", "_"), "w"))
            found = self._weight_keys[key] = Weight(param, array)
            self.weights.append(found)
        return found

    def _emit(
        self,
        node: Any,
        op: str,
        inputs: list[_Value],
        weights: list[tuple[str, Weight]],
        constants: tuple[Any, ...],
        where: str,
    ) -> _Value:
        """Add one operation; check its result shape with the operation's own rules."""
        from .ops import Meta, infer

        name = self.names.take(identifier(f"{node.name}_{_SHORT.get(op, op)}", "op"))
        metas: list[Any] = [Meta(v.shape, "float32") for v in inputs]
        metas += [Meta(w.array.shape, "float32") for _, w in weights]
        try:
            result = infer(op, [*metas, *constants]).shape
        except HPVMError as e:
            raise UnsupportedLayerError(f"{where}: the tensor path cannot express it: {e}") from None
        expected = _shape(node)
        if tuple(result) != expected:  # every operation of a layer keeps the layer's result shape
            raise UnsupportedLayerError(
                f"{where}: as HPVM's {op} it would give shape {tuple(result)}, but PyTorch gives "
                f"{expected}; an argument of this layer is not supported by the tensor path"
            )
        input_names = ["x", "y"][: len(inputs)]
        self.ops.append(TensorOp(name, op, inputs, weights, constants, tuple(result), where, input_names))
        return _Value(name, tuple(result))


_REQUIRED = object()
_SHORT = {"convolution": "conv", "group_convolution": "group_conv"}  # in leaf names
_POOL_DEFAULTS = {
    "dilation": "use dilation=1",
    "ceil_mode": "use ceil_mode=False",
    "return_indices": "use return_indices=False",
    "count_include_pad": "use count_include_pad=True, or no padding",
    "divisor_override": "use divisor_override=None",
}


def _bind(node: Any, where: str, params: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """The call's arguments by name (positional, then keyword, then defaults)."""
    names = [p for p, _ in params]
    if len(node.args) > len(names):
        raise UnsupportedLayerError(
            f"{where} is called with {len(node.args)} positional arguments; expected at most {len(names)}"
        )
    bound = dict(zip(names, node.args))
    for key, value in node.kwargs.items():
        if key not in names:
            raise UnsupportedLayerError(
                f"{where}: argument {key}={value!r} is not supported by the tensor path"
            )
        bound[key] = value
    for pname, default in params:
        if pname not in bound:
            if default is _REQUIRED:
                raise UnsupportedLayerError(f"{where}: argument {pname} is missing")
            bound[pname] = default
    return bound


def _pair(value: Any) -> tuple[int, int]:
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            return int(value[0]), int(value[0])
        return int(value[0]), int(value[1])
    return int(value), int(value)


def _same_padding(m: Any, where: str) -> tuple[int, int]:
    kernel = tuple(int(k) for k in m.kernel_size)
    if any(k % 2 == 0 for k in kernel):
        raise UnsupportedLayerError(
            f"{where}: argument padding='same' with the even kernel {kernel} pads unevenly; HPVM's "
            "convolution pads both sides equally — give padding as numbers"
        )
    return kernel[0] // 2, kernel[1] // 2


def _shape(node: Any) -> tuple[int, ...]:
    meta = node.meta.get("tensor_meta")
    shape = getattr(meta, "shape", None)
    if shape is None:
        raise UnsupportedLayerError(
            f"fx node '{node.name}' does not produce one tensor (it gives {type(meta).__name__}); "
            "the tensor path imports layers with one tensor result"
        )
    return tuple(int(s) for s in shape)


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


def _describe_arg(arg: Any) -> str:
    if hasattr(arg, "op"):
        return f"fx node '{arg.name}' ({arg.op} {arg.target})"
    return f"the constant {arg!r}"


def identifier(text: str, fallback: str) -> str:
    name = re.sub(r"\W", "_", text)
    if not name or name[0].isdigit():
        name = f"{fallback}_{name}"
    if keyword.iskeyword(name):
        name += "_"
    return name


class _Names:
    """Unique identifiers: a name already taken gets ``_1``, ``_2``…"""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)

    def take(self, base: str) -> str:
        name, i = base, 1
        while name in self.taken:
            name, i = f"{base}_{i}", i + 1
        self.taken.add(name)
        return name
