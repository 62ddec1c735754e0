"""HPVM's tensor operations (seed 001's ``llvm.hpvm.tensor.*`` intrinsics) for tensor leaves.

Each operation validates its operands (ranks, shapes, dtypes, scalar arguments) and raises
``TensorShapeError`` naming the operation, the operand and the bad shape; then it runs on
what it was given: NumPy arrays through the reference implementations below (what the
``interp`` back end runs, leaf Python as is), torch tensors through ``torch_ops`` (what the
``tensor`` back end runs). Tensors are NCHW; argument orders are HPVM-C's
``__hpvm__tensor_*``. The semantics are PyTorch's (``torch.nn.functional``), which the tests
check to 1e-5.

Validation works on ``Meta`` (shape and dtype) so that the ``tensor`` back end can check a
whole graph from its input shapes once, without running anything (``infer``).
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import TensorShapeError

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Meta:
    """What validation sees of a tensor operand: its shape and dtype name ("float32")."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class OpDef:
    """One tensor operation: its parameters, which of them are tensors, and its rules."""

    name: str
    params: tuple[str, ...]
    tensors: tuple[int, ...]  # positions of the tensor operands
    infer: Callable[..., Meta]  # validates (tensor operands as Meta) and gives the result's Meta
    numpy: Callable[..., np.ndarray]  # the reference implementation
    defaults: tuple[Any, ...] = ()  # defaults of the last parameters


OPS: dict[str, OpDef] = {}

ACTIVATIONS = ("relu", "clipped_relu", "tanh", "sigmoid")
POOLINGS = ("pool_max", "pool_min", "pool_mean")


# ---------------------------------------------------------------------------------------
# Errors and metadata


def _fail(op: str, message: str) -> TensorShapeError:
    return TensorShapeError(f"{_where()}hpvm.tensor.{op}: {message}")


def _where() -> str:
    """The running leaf and line (on ``interp``), as a prefix; empty outside a graph."""
    from ..ir.execution import current_context

    ctx = current_context()
    where = getattr(ctx, "where", None)
    if where is None:
        return ""
    for frame in traceback.extract_stack()[::-1]:
        if not os.path.abspath(frame.filename).startswith(_PACKAGE_DIR + os.sep):
            return f"{where(frame.lineno or 0, frame.filename)}: "
    return ""


def meta_of(value: Any, op: str, operand: str) -> Meta:
    """The Meta of a NumPy array or torch tensor; ``TensorShapeError`` for anything else."""
    if isinstance(value, np.ndarray):
        return Meta(value.shape, value.dtype.name)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return Meta(tuple(value.shape), str(value.dtype).removeprefix("torch."))
    raise _fail(
        op,
        f"operand '{operand}' must be a tensor (a NumPy array, or a torch tensor on the tensor "
        f"back end), not {type(value).__name__}; pass an array port of the leaf",
    )


def _rank(op: str, name: str, m: Meta, ranks: Sequence[int], what: str) -> None:
    if m.rank not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise _fail(op, f"operand '{name}' has shape {m.shape} ({m.rank}-D); it must be {want} {what}")


def _what(value: Any) -> str:
    if isinstance(value, Meta):
        return f"a tensor of shape {value.shape}"
    return f"{type(value).__name__} {value!r}"


def _int(op: str, name: str, value: Any, minimum: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise _fail(op, f"argument '{name}' must be an integer, not {_what(value)}")
    if value < minimum:
        raise _fail(op, f"argument '{name}' is {value}; it must be >= {minimum}")
    return int(value)


def _float(op: str, name: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise _fail(op, f"argument '{name}' must be a number, not {_what(value)}")
    return float(value)


def _same_dtype(op: str, operands: Sequence[tuple[str, Meta]]) -> str:
    dtype = operands[0][1].dtype
    for name, m in operands:
        if not (m.dtype.startswith("float") or m.dtype == "bfloat16"):
            raise _fail(op, f"operand '{name}' has dtype {m.dtype}; tensors are floating point (float32)")
        if m.dtype != dtype:
            raise _fail(
                op,
                f"operand '{name}' has dtype {m.dtype} but '{operands[0][0]}' has {dtype}; "
                "convert both to float32",
            )
    return dtype


def _window_out(op: str, axis: str, size: int, window: int, pad: int, stride: int, what: str) -> int:
    if size + 2 * pad < window:
        raise _fail(
            op,
            f"the {axis} {what} {window} is larger than the padded input ({size} + 2*{pad}); "
            "use a smaller window or more padding",
        )
    return (size + 2 * pad - window) // stride + 1


# ---------------------------------------------------------------------------------------
# Validation: one function per operation, on Meta


def _infer_conv(
    x: Meta, w: Meta, vpad: Any, hpad: Any, vstride: Any, hstride: Any, groups: Any = 1, op: str = ""
) -> Meta:
    op = op or ("convolution" if groups == 1 else "group_convolution")
    _rank(op, "x", x, (4,), "(N, C, H, W)")
    _rank(op, "w", w, (4,), "(K, C/groups, R, S)")
    dtype = _same_dtype(op, [("x", x), ("w", w)])
    vp, hp = _int(op, "vpad", vpad, 0), _int(op, "hpad", hpad, 0)
    vs, hs = _int(op, "vstride", vstride, 1), _int(op, "hstride", hstride, 1)
    g = _int(op, "groups", groups, 1)
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    if c % g:
        raise _fail(op, f"x has {c} channels (shape {x.shape}), not divisible by groups={g}")
    if k % g:
        raise _fail(op, f"w has {k} output channels (shape {w.shape}), not divisible by groups={g}")
    if cg != c // g:
        fix = f"w must be (K, {c // g}, R, S)" + (f" for groups={g}" if g > 1 else "")
        raise _fail(op, f"w has shape {w.shape} but x has {c} channels (shape {x.shape}); {fix}")
    ho = _window_out(op, "filter height", h, r, vp, vs, "(R)")
    wo = _window_out(op, "filter width", wd, s, hp, hs, "(S)")
    return Meta((n, k, ho, wo), dtype)


def _infer_group_conv(
    x: Meta, w: Meta, vpad: Any, hpad: Any, vstride: Any, hstride: Any, groups: Any
) -> Meta:
    return _infer_conv(x, w, vpad, hpad, vstride, hstride, groups, op="group_convolution")


def _infer_add(x: Meta, b: Meta) -> Meta:
    dtype = _same_dtype("add", [("x", x), ("b", b)])
    if b.rank == 1 and x.rank in (2, 4):
        if b.shape[0] != x.shape[1]:
            unit = "channel (dim 1 of NCHW x)" if x.rank == 4 else "column (dim 1 of (N, M) x)"
            raise _fail(
                "add",
                f"bias 'b' has shape {b.shape} but x has shape {x.shape}; a 1-D bias has one "
                f"value per {unit}, so b must be ({x.shape[1]},)",
            )
        return Meta(x.shape, dtype)
    try:
        shape = np.broadcast_shapes(x.shape, b.shape)
    except ValueError:
        raise _fail(
            "add",
            f"operands of shapes {x.shape} ('x') and {b.shape} ('b') do not broadcast; give 'b' "
            "the shape of x, (C,) for a per-channel bias, or a NumPy-broadcastable shape",
        ) from None
    return Meta(tuple(shape), dtype)


def _infer_mul(x: Meta, w: Meta) -> Meta:
    if x.rank < 2:
        raise _fail(
            "mul",
            f"operand 'x' has shape {x.shape} ({x.rank}-D); it must be at least 2-D, (N, K) or "
            "(N, ...) flattened to (N, K)",
        )
    _rank("mul", "w", w, (2,), "(K, M)")
    dtype = _same_dtype("mul", [("x", x), ("w", w)])
    k = int(np.prod(x.shape[1:], dtype=np.int64))
    if w.shape[0] != k:
        raise _fail(
            "mul",
            f"x of shape {x.shape} flattens to ({x.shape[0]}, {k}) but w has shape {w.shape}; "
            f"w must be ({k}, M) (a torch Linear weight is (M, K): pass its transpose)",
        )
    return Meta((x.shape[0], w.shape[1]), dtype)


def _infer_unary(op: str) -> Callable[[Meta], Meta]:
    def infer(x: Meta) -> Meta:
        if x.rank == 0:
            raise _fail(op, "operand 'x' is a 0-D tensor; pass an array")
        return Meta(x.shape, _same_dtype(op, [("x", x)]))

    return infer


def _infer_clipped_relu(x: Meta, lo: Any = 0.0, hi: Any = 6.0) -> Meta:
    low, high = _float("clipped_relu", "lo", lo), _float("clipped_relu", "hi", hi)
    if low > high:
        raise _fail("clipped_relu", f"lo={low} is greater than hi={high}; clip to [lo, hi] with lo <= hi")
    return _infer_unary("clipped_relu")(x)


def _infer_softmax(x: Meta) -> Meta:
    _rank("softmax", "x", x, (2,), "(N, classes); softmax is taken over dim 1")
    return Meta(x.shape, _same_dtype("softmax", [("x", x)]))


def _infer_batchnorm(x: Meta, gamma: Meta, beta: Meta, mean: Meta, variance: Meta, epsilon: Any) -> Meta:
    op = "batchnorm"
    _rank(op, "x", x, (4, 2), "(N, C, H, W) or (N, C)")
    operands = [("x", x), ("gamma", gamma), ("beta", beta), ("mean", mean), ("variance", variance)]
    dtype = _same_dtype(op, operands)
    c = x.shape[1]
    for name, m in operands[1:]:
        if m.shape != (c,):
            raise _fail(op, f"operand '{name}' has shape {m.shape}; it must be ({c},), one value per channel")
    if _float(op, "epsilon", epsilon) < 0:
        raise _fail(op, f"epsilon is {epsilon}; it must be >= 0 (typically 1e-5)")
    return Meta(x.shape, dtype)


def _infer_pool(op: str) -> Callable[..., Meta]:
    def infer(x: Meta, wh: Any, ww: Any, vpad: Any, hpad: Any, vstride: Any, hstride: Any) -> Meta:
        _rank(op, "x", x, (4,), "(N, C, H, W)")
        dtype = _same_dtype(op, [("x", x)])
        h, w = _int(op, "wh", wh, 1), _int(op, "ww", ww, 1)
        vp, hp = _int(op, "vpad", vpad, 0), _int(op, "hpad", hpad, 0)
        vs, hs = _int(op, "vstride", vstride, 1), _int(op, "hstride", hstride, 1)
        for name, pad, window in (("vpad", vp, h), ("hpad", hp, w)):
            if 2 * pad > window:
                raise _fail(
                    op,
                    f"{name}={pad} is more than half the window ({window}); padding must be at "
                    "most half the window (as in PyTorch)",
                )
        n, c, height, width = x.shape
        ho = _window_out(op, "window height", height, h, vp, vs, "(wh)")
        wo = _window_out(op, "window width", width, w, hp, hs, "(ww)")
        return Meta((n, c, ho, wo), dtype)

    return infer


# ---------------------------------------------------------------------------------------
# NumPy reference implementations (computed in float64, returned in the operands' dtype)


def _windows(x: np.ndarray, r: int, s: int, vs: int, hs: int) -> np.ndarray:
    """(N, C, H', W', R, S) views of the (already padded) input: one window per output."""
    view = np.lib.stride_tricks.sliding_window_view(x, (r, s), axis=(2, 3))
    return view[:, :, ::vs, ::hs]


def _np_conv(
    x: np.ndarray, w: np.ndarray, vpad: int, hpad: int, vstride: int, hstride: int, groups: int = 1
) -> np.ndarray:
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (vpad, vpad), (hpad, hpad)))
    k, cg, r, s = w.shape
    win = _windows(xp, r, s, vstride, hstride)
    kg = k // groups
    parts = []
    for g in range(groups):
        wg = w[g * kg : (g + 1) * kg].astype(np.float64)
        part = np.tensordot(win[:, g * cg : (g + 1) * cg], wg, axes=([1, 4, 5], [1, 2, 3]))
        parts.append(part.transpose(0, 3, 1, 2))  # (N, H', W', Kg) -> (N, Kg, H', W')
    return np.concatenate(parts, axis=1).astype(x.dtype)


def _np_group_conv(
    x: np.ndarray, w: np.ndarray, vpad: int, hpad: int, vstride: int, hstride: int, groups: int
) -> np.ndarray:
    return _np_conv(x, w, vpad, hpad, vstride, hstride, groups)


def _np_add(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    if b.ndim == 1 and x.ndim == 4:
        b = b.reshape(1, -1, 1, 1)
    return (x.astype(np.float64) + b).astype(x.dtype)


def _np_mul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    flat = x.reshape(x.shape[0], -1).astype(np.float64)
    return (flat @ w.astype(np.float64)).astype(x.dtype)


def _np_relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0).astype(x.dtype)


def _np_clipped_relu(x: np.ndarray, lo: float = 0.0, hi: float = 6.0) -> np.ndarray:
    return np.clip(x, lo, hi).astype(x.dtype)


def _np_tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x.astype(np.float64)).astype(x.dtype)


def _np_sigmoid(x: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def _np_softmax(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype)


def _np_batchnorm(
    x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray, variance: np.ndarray, epsilon: float
) -> np.ndarray:
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = gamma.astype(np.float64) / np.sqrt(variance.astype(np.float64) + float(epsilon))
    y = (x.astype(np.float64) - mean.reshape(shape)) * scale.reshape(shape) + beta.reshape(shape)
    return y.astype(x.dtype)


def _np_pool(kind: str) -> Callable[..., np.ndarray]:
    def pool(x: np.ndarray, wh: int, ww: int, vpad: int, hpad: int, vstride: int, hstride: int) -> np.ndarray:
        fill = {"pool_max": -np.inf, "pool_min": np.inf, "pool_mean": 0.0}[kind]
        pads = ((0, 0), (0, 0), (vpad, vpad), (hpad, hpad))
        xp = np.pad(x.astype(np.float64), pads, constant_values=fill)
        win = _windows(xp, wh, ww, vstride, hstride)
        if kind == "pool_max":
            out = win.max(axis=(4, 5))
        elif kind == "pool_min":
            out = win.min(axis=(4, 5))
        else:  # padding counts as zeros (PyTorch's count_include_pad=True)
            out = win.sum(axis=(4, 5)) / (wh * ww)
        return out.astype(x.dtype)

    return pool


# ---------------------------------------------------------------------------------------
# Dispatch


def _apply(name: str, args: tuple[Any, ...]) -> Any:
    """Validate ``args`` for operation ``name``, then run it on NumPy or on torch."""
    op = OPS[name]
    values = list(args)
    metas = list(args)
    kinds = set()
    for i in op.tensors:
        metas[i] = meta_of(values[i], name, op.params[i])
        kinds.add(isinstance(values[i], np.ndarray))
    op.infer(*metas)
    if kinds == {True}:
        for i in op.tensors:
            if type(values[i]) is not np.ndarray:  # interp's checked views: compute on plain arrays
                values[i] = values[i].view(np.ndarray)
        return op.numpy(*values)
    if kinds == {False}:
        from . import torch_ops

        return torch_ops.TORCH[name](*values)
    raise _fail(
        name,
        "operands mix NumPy arrays and torch tensors; pass all of them as one kind "
        "(leaves receive NumPy arrays on interp and torch tensors on the tensor back end)",
    )


def infer(name: str, args: Sequence[Any]) -> Meta:
    """The result Meta of operation ``name`` on ``args`` (tensor operands given as Meta):
    the validation of ``_apply`` without running anything."""
    op = OPS[name]
    for i in op.tensors:
        if not isinstance(args[i], Meta):
            raise _fail(
                name, f"operand '{op.params[i]}' must be a tensor, not {_what(args[i])}; pass an array port"
            )
    return op.infer(*args)


def _register(
    name: str,
    params: tuple[str, ...],
    tensors: tuple[int, ...],
    infer_fn: Callable[..., Meta],
    numpy_fn: Callable[..., np.ndarray],
    defaults: tuple[Any, ...] = (),
) -> None:
    OPS[name] = OpDef(name, params, tensors, infer_fn, numpy_fn, defaults)


# ---------------------------------------------------------------------------------------
# The public operations (leaf code calls these; argument orders are HPVM-C's)


def convolution(x: Any, w: Any, vpad: int, hpad: int, vstride: int, hstride: int) -> Any:
    """2-D convolution (cross-correlation, as PyTorch's conv2d): x (N, C, H, W), w (K, C, R, S)
    → (N, K, H', W') with H' = (H + 2*vpad - R) // vstride + 1 (W' likewise)."""
    return _apply("convolution", (x, w, vpad, hpad, vstride, hstride))


def group_convolution(x: Any, w: Any, vpad: int, hpad: int, vstride: int, hstride: int, groups: int) -> Any:
    """Grouped convolution: w (K, C/groups, R, S); depthwise when groups == C."""
    return _apply("group_convolution", (x, w, vpad, hpad, vstride, hstride, groups))


def add(x: Any, b: Any) -> Any:
    """x + b: b of x's shape (a residual add), (C,) per channel of NCHW x or per column of a
    2-D (N, M) x (a bias), or any NumPy-broadcastable shape."""
    return _apply("add", (x, b))


def mul(x: Any, w: Any) -> Any:
    """Matrix multiply: x flattened to (N, K) (Flatten → Linear), w (K, M) → (N, M)."""
    return _apply("mul", (x, w))


def relu(x: Any) -> Any:
    """max(x, 0), elementwise."""
    return _apply("relu", (x,))


def clipped_relu(x: Any, lo: float = 0.0, hi: float = 6.0) -> Any:
    """min(max(x, lo), hi), elementwise (ReLU6 with the defaults)."""
    return _apply("clipped_relu", (x, lo, hi))


def tanh(x: Any) -> Any:
    """tanh(x), elementwise."""
    return _apply("tanh", (x,))


def sigmoid(x: Any) -> Any:
    """1 / (1 + exp(-x)), elementwise."""
    return _apply("sigmoid", (x,))


def softmax(x: Any) -> Any:
    """Softmax over dim 1 of a 2-D (N, classes) tensor."""
    return _apply("softmax", (x,))


def batchnorm(x: Any, gamma: Any, beta: Any, mean: Any, variance: Any, epsilon: float) -> Any:
    """Inference-mode batch normalization per channel (dim 1) of NCHW (or (N, C)) x:
    (x - mean) / sqrt(variance + epsilon) * gamma + beta."""
    return _apply("batchnorm", (x, gamma, beta, mean, variance, epsilon))


def pool_max(x: Any, wh: int, ww: int, vpad: int, hpad: int, vstride: int, hstride: int) -> Any:
    """Max pooling over wh x ww windows of NCHW x (padding never wins: it is -inf)."""
    return _apply("pool_max", (x, wh, ww, vpad, hpad, vstride, hstride))


def pool_min(x: Any, wh: int, ww: int, vpad: int, hpad: int, vstride: int, hstride: int) -> Any:
    """Min pooling over wh x ww windows of NCHW x (padding never wins: it is +inf)."""
    return _apply("pool_min", (x, wh, ww, vpad, hpad, vstride, hstride))


def pool_mean(x: Any, wh: int, ww: int, vpad: int, hpad: int, vstride: int, hstride: int) -> Any:
    """Mean pooling: each window's sum / (wh*ww), padding counted as zeros (PyTorch's
    AvgPool2d with count_include_pad=True)."""
    return _apply("pool_mean", (x, wh, ww, vpad, hpad, vstride, hstride))


_CONV = ("x", "w", "vpad", "hpad", "vstride", "hstride")
_POOL = ("x", "wh", "ww", "vpad", "hpad", "vstride", "hstride")
_register("convolution", _CONV, (0, 1), _infer_conv, _np_conv)
_register("group_convolution", (*_CONV, "groups"), (0, 1), _infer_group_conv, _np_group_conv)
_register("add", ("x", "b"), (0, 1), _infer_add, _np_add)
_register("mul", ("x", "w"), (0, 1), _infer_mul, _np_mul)
_register("relu", ("x",), (0,), _infer_unary("relu"), _np_relu)
_register("clipped_relu", ("x", "lo", "hi"), (0,), _infer_clipped_relu, _np_clipped_relu, (0.0, 6.0))
_register("tanh", ("x",), (0,), _infer_unary("tanh"), _np_tanh)
_register("sigmoid", ("x",), (0,), _infer_unary("sigmoid"), _np_sigmoid)
_register("softmax", ("x",), (0,), _infer_softmax, _np_softmax)
_register(
    "batchnorm",
    ("x", "gamma", "beta", "mean", "variance", "epsilon"),
    (0, 1, 2, 3, 4),
    _infer_batchnorm,
    _np_batchnorm,
)
for _kind in POOLINGS:
    _register(_kind, _POOL, (0,), _infer_pool(_kind), _np_pool(_kind))

#: The public function of each operation (what leaf code calls), by name.
FUNCTIONS: dict[str, Callable[..., Any]] = {name: globals()[name] for name in OPS}
#: Operation name of each public function, by identity (how leaf code is recognised).
NAME_OF: dict[int, str] = {id(f): name for name, f in FUNCTIONS.items()}

__all__ = [
    "ACTIVATIONS",
    "FUNCTIONS",
    "OPS",
    "POOLINGS",
    "Meta",
    "OpDef",
    "add",
    "batchnorm",
    "clipped_relu",
    "convolution",
    "group_convolution",
    "infer",
    "meta_of",
    "mul",
    "pool_max",
    "pool_mean",
    "pool_min",
    "relu",
    "sigmoid",
    "softmax",
    "tanh",
]
