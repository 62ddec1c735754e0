"""HPVM's tensor operations as leaf code calls them: ``hpvm.tensor.convolution(x, w, ...)``.

Each function validates its operands (ranks, shapes, dtypes, scalar arguments) and raises
``TensorShapeError`` naming the operation, the operand and the bad shape; then it runs on
what it was given: NumPy arrays through the reference implementations (what the ``interp``
back end runs, leaf Python as is), torch tensors through PyTorch. Tensors are NCHW; argument
orders are HPVM-C's ``__hpvm__tensor_*``. The operations themselves — rules and semantics —
are intrinsics of the IR (``hpvm.ir.tensorops``); this module is the front end's spelling,
and each function is tagged ``__hpvm_tensor_op__`` so the IR recognises it in leaf code
without importing the front end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ir.tensorops import ACTIVATIONS, OPS, POOLINGS, Meta, OpDef, infer, meta_of
from ..ir.tensorops import apply as _apply


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


#: The public function of each operation (what leaf code calls), by name.
FUNCTIONS: dict[str, Callable[..., Any]] = {name: globals()[name] for name in OPS}
for _name, _function in FUNCTIONS.items():
    _function.__hpvm_tensor_op__ = _name  # type: ignore[attr-defined]
#: Operation name of each public function, by identity.
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
