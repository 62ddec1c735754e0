"""The supported PyTorch layers, each as the tensor operations it becomes.

One function per layer form (a module, a ``torch``/``F`` function or a ``Tensor`` method,
dispatched by ``translate.Translator``): it checks the layer's arguments against what
HPVM's operation can express — refusing anything else with ``UnsupportedLayerError``
naming the layer and the argument — and writes zero, one or two ``TensorOp``s to the
translation's ``OpList`` (a Conv2d with a bias is a ``convolution`` and an ``add``, a Linear
a ``mul`` by the transposed weight and an ``add``, Dropout and Flatten none).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from ..errors import UnsupportedLayerError
from .oplist import OpList, Value
from .oplist import shape as _shape

REQUIRED = object()
_POOL_DEFAULTS = {
    "dilation": "use dilation=1",
    "ceil_mode": "use ceil_mode=False",
    "return_indices": "use return_indices=False",
    "count_include_pad": "use count_include_pad=True, or no padding",
    "divisor_override": "use divisor_override=None",
}


def bind(node: Any, where: str, params: Sequence[tuple[str, Any]]) -> dict[str, Any]:
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
            if default is REQUIRED:
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


# layers


def conv2d(ops: OpList, node: Any, m: Any, where: str) -> None:
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
    x = ops.input(node, where)
    ops.require_rank(x, 4, where, "input")
    w = ops.weight(m, "weight", "w", m.weight)
    constants = (pads[0], pads[1], int(m.stride[0]), int(m.stride[1]))
    op, consts = (
        ("convolution", constants) if m.groups == 1 else ("group_convolution", (*constants, m.groups))
    )
    conv = ops.emit(node, op, [x], [("w", w)], consts, where)
    if m.bias is not None:
        bias = ops.weight(m, "bias", "b", m.bias)
        conv = ops.emit(node, "add", [conv], [("b", bias)], (), where)
    ops.values[node] = conv


def batchnorm2d(ops: OpList, node: Any, m: Any, where: str) -> None:
    import torch

    if m.running_mean is None or m.running_var is None:
        raise UnsupportedLayerError(
            f"{where}: argument track_running_stats=False is not supported; in eval mode the "
            "tensor path normalizes with running statistics (track_running_stats=True)"
        )
    x = ops.input(node, where)
    ops.require_rank(x, 4, where, "input")
    channels = m.num_features
    gamma = m.weight if m.weight is not None else torch.ones(channels)
    beta = m.bias if m.bias is not None else torch.zeros(channels)
    weights = [
        ("gamma", ops.weight(m, "weight", "gamma", gamma)),
        ("beta", ops.weight(m, "bias", "beta", beta)),
        ("mean", ops.weight(m, "running_mean", "mean", m.running_mean)),
        ("variance", ops.weight(m, "running_var", "variance", m.running_var)),
    ]
    ops.values[node] = ops.emit(node, "batchnorm", [x], weights, (float(m.eps),), where)


def linear(ops: OpList, node: Any, m: Any, where: str) -> None:
    x = ops.tensor(node.args[0], node, "input", allow_flat=True)
    if x.flat_by is None and len(x.shape) != 2:
        raise UnsupportedLayerError(
            f"{where}: its input has shape {x.shape}; the tensor path's Linear (HPVM's mul) takes a "
            "2-D (N, features) input, or a Flatten of an NCHW tensor right before it"
        )
    w = ops.weight(m, "weight", "w", m.weight, transpose=True)
    out = ops.emit(node, "mul", [x], [("w", w)], (), where)
    if m.bias is not None:
        bias = ops.weight(m, "bias", "b", m.bias)
        out = ops.emit(node, "add", [out], [("b", bias)], (), where)
    ops.values[node] = out


def unary(
    ops: OpList, node: Any, where: str, op: str, constants: tuple, inplace: bool = False, arg: Any = None
) -> None:
    source = node.args[0] if arg is None else arg
    if inplace and hasattr(source, "users") and len(source.users) > 1:
        raise UnsupportedLayerError(
            f"{where}: argument inplace=True overwrites '{source.name}', which other layers also use; "
            "the tensor DFG passes values, not storage — use inplace=False"
        )
    x = ops.tensor(source, node, "input")
    consts = tuple(float(c) for c in constants)
    ops.values[node] = ops.emit(node, op, [x], [], consts, where)


def identity(ops: OpList, node: Any, where: str) -> None:
    ops.values[node] = ops.tensor(node.args[0], node, "input", allow_flat=True)


def add(ops: OpList, node: Any, where: str) -> None:
    first = "self" if node.op == "call_method" else "input"
    alpha = [] if node.target is operator.add else [("alpha", 1)]
    a = bind(node, where, [(first, REQUIRED), ("other", REQUIRED), *alpha])
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
        operands.append(ops.tensor(a[role], node, role))
    x, y = operands
    if x.shape != y.shape:
        raise UnsupportedLayerError(
            f"{where}: adds tensors of shapes {x.shape} and {y.shape}; the tensor path's residual "
            "add takes two tensors of the same shape"
        )
    ops.values[node] = ops.emit(node, "add", [x, y], [], (), where)


# pooling


def maxpool_module(ops: OpList, node: Any, m: Any, where: str) -> None:
    args = {
        k: getattr(m, k)
        for k in ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")
    }
    pool(ops, node, where, "pool_max", node.args[0], args)


def avgpool_module(ops: OpList, node: Any, m: Any, where: str) -> None:
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
    pool(ops, node, where, "pool_mean", node.args[0], args)


def maxpool_function(ops: OpList, node: Any, where: str) -> None:
    a = bind(
        node,
        where,
        [("input", REQUIRED), ("kernel_size", REQUIRED), ("stride", None), ("padding", 0), ("dilation", 1),
         ("ceil_mode", False), ("return_indices", False)],
    )  # fmt: skip
    pool(ops, node, where, "pool_max", a.pop("input"), a)


def avgpool_function(ops: OpList, node: Any, where: str) -> None:
    a = bind(
        node,
        where,
        [("input", REQUIRED), ("kernel_size", REQUIRED), ("stride", None), ("padding", 0),
         ("ceil_mode", False), ("count_include_pad", True), ("divisor_override", None)],
    )  # fmt: skip
    pool(ops, node, where, "pool_mean", a.pop("input"), a)


def pool(ops: OpList, node: Any, where: str, op: str, source: Any, args: dict[str, Any]) -> None:
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
    x = ops.tensor(source, node, "input")
    ops.require_rank(x, 4, where, "input")
    constants = (*kernel, *padding, *stride)
    ops.values[node] = ops.emit(node, op, [x], [], constants, where)


def adaptive_avgpool_function(ops: OpList, node: Any, where: str) -> None:
    a = bind(node, where, [("input", REQUIRED), ("output_size", REQUIRED)])
    adaptive_avgpool(ops, node, where, a["output_size"], a["input"])


def adaptive_avgpool(ops: OpList, node: Any, where: str, output_size: Any, source: Any = None) -> None:
    x = ops.tensor(node.args[0] if source is None else source, node, "input")
    ops.require_rank(x, 4, where, "input")
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
    ops.values[node] = ops.emit(node, "pool_mean", [x], [], (*kernel, 0, 0, *kernel), where)


# shapes: flatten, view, softmax


def flatten_function(ops: OpList, node: Any, where: str) -> None:
    first = "self" if node.op == "call_method" else "input"
    a = bind(node, where, [(first, REQUIRED), ("start_dim", 0), ("end_dim", -1)])
    flatten(ops, node, where, a, a[first])


def flatten(ops: OpList, node: Any, where: str, args: dict[str, Any], source: Any = None) -> None:
    x = ops.tensor(node.args[0] if source is None else source, node, "input")
    out = _shape(node)
    if len(x.shape) <= 2 and out == x.shape:
        ops.values[node] = x  # flattening (N, K) changes nothing
        return
    if len(out) != 2 or out[0] != x.shape[0]:
        raise UnsupportedLayerError(
            f"{where}: arguments start_dim={args.get('start_dim')!r}, end_dim={args.get('end_dim')!r} "
            f"flatten {x.shape} to {out}; the tensor path flattens to (N, features) only (start_dim=1)"
        )
    ops.values[node] = Value(x.producer, x.shape, flat_by=node.name)


def view(ops: OpList, node: Any, where: str) -> None:
    x = ops.tensor(node.args[0], node, "input")
    out = _shape(node)
    if out == x.shape:
        ops.values[node] = x
    elif len(out) == 2 and out[0] == x.shape[0] and len(x.shape) > 2:
        ops.values[node] = Value(x.producer, x.shape, flat_by=node.name)
    else:
        raise UnsupportedLayerError(
            f"{where} reshapes {x.shape} to {out}; the tensor path supports only flattening an "
            "NCHW tensor to (N, features) before a Linear"
        )


def shape_query(ops: OpList, node: Any, where: str) -> None:
    """``x.shape`` and ``x.shape[0]`` (for a view's sizes): ints, not tensors."""
    source = node.args[0]
    is_shape = node.target is getattr and node.args[1] == "shape"
    if not is_shape and not (hasattr(source, "op") and source in ops.values and ops.values[source] is None):
        what = f"reads attribute '{node.args[1]}' of" if node.target is getattr else "indexes"
        raise UnsupportedLayerError(
            f"{where} {what} a tensor; the tensor path supports no slicing or tensor attributes "
            "(only x.shape / x.size() for a flattening view)"
        )
    ops.values[node] = None


def size(ops: OpList, node: Any, where: str) -> None:
    ops.values[node] = None  # an int for view(x.size(0), -1); not a tensor


def softmax_function(ops: OpList, node: Any, where: str) -> None:
    first = "self" if node.op == "call_method" else "input"
    a = bind(node, where, [(first, REQUIRED), ("dim", None), ("_stacklevel", 3), ("dtype", None)])
    if a["dtype"] is not None:
        raise UnsupportedLayerError(f"{where}: argument dtype={a['dtype']!r} is not supported (float32 only)")
    softmax(ops, node, where, a["dim"], a[first])


def softmax(ops: OpList, node: Any, where: str, dim: Any, source: Any = None) -> None:
    x = ops.tensor(node.args[0] if source is None else source, node, "input")
    if len(x.shape) != 2 or dim not in (1, -1, None):
        raise UnsupportedLayerError(
            f"{where}: argument dim={dim!r} on an input of shape {x.shape} is not supported; HPVM's "
            "softmax normalizes dim 1 of a 2-D (N, classes) tensor"
        )
    ops.values[node] = ops.emit(node, "softmax", [x], [], (), where)


def dropout_function(ops: OpList, node: Any, where: str) -> None:
    a = bind(node, where, [("input", REQUIRED), ("p", 0.5), ("training", True), ("inplace", False)])
    if a["training"]:
        raise UnsupportedLayerError(
            f"{where}: argument training=True makes dropout random; write "
            "F.dropout(x, p, self.training) so that it is the identity in eval mode"
        )
    ops.values[node] = ops.tensor(a["input"], node, "input", allow_flat=True)
