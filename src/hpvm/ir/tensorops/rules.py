"""The tensor intrinsics' rules: operand ranks, shapes, dtypes and scalar arguments.

Seed 001's ``llvm.hpvm.tensor.*`` intrinsics are intrinsics like the others (``ir/intrinsics``),
with richer operand rules: each operation's ``infer`` validates its operands, given as
``Meta`` (shape and dtype), and returns the result's ``Meta``, raising ``TensorShapeError``
naming the operation, the operand and the bad shape. Working on ``Meta`` lets the ``tensor``
back end check a whole graph from its input shapes once, without running anything.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import TensorShapeError
from ..execution import current_context

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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


def fail(op: str, message: str) -> TensorShapeError:
    return TensorShapeError(f"{_where()}hpvm.tensor.{op}: {message}")


def _where() -> str:
    """The running leaf and line (on ``interp``), as a prefix; empty outside a graph."""
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
    raise fail(
        op,
        f"operand '{operand}' must be a tensor (a NumPy array, or a torch tensor on the tensor "
        f"back end), not {type(value).__name__}; pass an array port of the leaf",
    )


def _rank(op: str, name: str, m: Meta, ranks: Sequence[int], what: str) -> None:
    if m.rank not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise fail(op, f"operand '{name}' has shape {m.shape} ({m.rank}-D); it must be {want} {what}")


def describe(value: Any) -> str:
    if isinstance(value, Meta):
        return f"a tensor of shape {value.shape}"
    return f"{type(value).__name__} {value!r}"


def _int(op: str, name: str, value: Any, minimum: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise fail(op, f"argument '{name}' must be an integer, not {describe(value)}")
    if value < minimum:
        raise fail(op, f"argument '{name}' is {value}; it must be >= {minimum}")
    return int(value)


def _float(op: str, name: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise fail(op, f"argument '{name}' must be a number, not {describe(value)}")
    return float(value)


def _same_dtype(op: str, operands: Sequence[tuple[str, Meta]]) -> str:
    dtype = operands[0][1].dtype
    for name, m in operands:
        if not (m.dtype.startswith("float") or m.dtype == "bfloat16"):
            raise fail(op, f"operand '{name}' has dtype {m.dtype}; tensors are floating point (float32)")
        if m.dtype != dtype:
            raise fail(
                op,
                f"operand '{name}' has dtype {m.dtype} but '{operands[0][0]}' has {dtype}; "
                "convert both to float32",
            )
    return dtype


def _window_out(op: str, axis: str, size: int, window: int, pad: int, stride: int, what: str) -> int:
    if size + 2 * pad < window:
        raise fail(
            op,
            f"the {axis} {what} {window} is larger than the padded input ({size} + 2*{pad}); "
            "use a smaller window or more padding",
        )
    return (size + 2 * pad - window) // stride + 1


# ---------------------------------------------------------------------------------------
# Validation: one function per operation, on Meta


def infer_conv(
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
        raise fail(op, f"x has {c} channels (shape {x.shape}), not divisible by groups={g}")
    if k % g:
        raise fail(op, f"w has {k} output channels (shape {w.shape}), not divisible by groups={g}")
    if cg != c // g:
        fix = f"w must be (K, {c // g}, R, S)" + (f" for groups={g}" if g > 1 else "")
        raise fail(op, f"w has shape {w.shape} but x has {c} channels (shape {x.shape}); {fix}")
    ho = _window_out(op, "filter height", h, r, vp, vs, "(R)")
    wo = _window_out(op, "filter width", wd, s, hp, hs, "(S)")
    return Meta((n, k, ho, wo), dtype)


def infer_group_conv(x: Meta, w: Meta, vpad: Any, hpad: Any, vstride: Any, hstride: Any, groups: Any) -> Meta:
    return infer_conv(x, w, vpad, hpad, vstride, hstride, groups, op="group_convolution")


def infer_add(x: Meta, b: Meta) -> Meta:
    dtype = _same_dtype("add", [("x", x), ("b", b)])
    if b.rank == 1 and x.rank in (2, 4):
        if b.shape[0] != x.shape[1]:
            unit = "channel (dim 1 of NCHW x)" if x.rank == 4 else "column (dim 1 of (N, M) x)"
            raise fail(
                "add",
                f"bias 'b' has shape {b.shape} but x has shape {x.shape}; a 1-D bias has one "
                f"value per {unit}, so b must be ({x.shape[1]},)",
            )
        return Meta(x.shape, dtype)
    try:
        shape = np.broadcast_shapes(x.shape, b.shape)
    except ValueError:
        raise fail(
            "add",
            f"operands of shapes {x.shape} ('x') and {b.shape} ('b') do not broadcast; give 'b' "
            "the shape of x, (C,) for a per-channel bias, or a NumPy-broadcastable shape",
        ) from None
    return Meta(tuple(shape), dtype)


def infer_mul(x: Meta, w: Meta) -> Meta:
    if x.rank < 2:
        raise fail(
            "mul",
            f"operand 'x' has shape {x.shape} ({x.rank}-D); it must be at least 2-D, (N, K) or "
            "(N, ...) flattened to (N, K)",
        )
    _rank("mul", "w", w, (2,), "(K, M)")
    dtype = _same_dtype("mul", [("x", x), ("w", w)])
    k = int(np.prod(x.shape[1:], dtype=np.int64))
    if w.shape[0] != k:
        raise fail(
            "mul",
            f"x of shape {x.shape} flattens to ({x.shape[0]}, {k}) but w has shape {w.shape}; "
            f"w must be ({k}, M) (a torch Linear weight is (M, K): pass its transpose)",
        )
    return Meta((x.shape[0], w.shape[1]), dtype)


def infer_unary(op: str) -> Callable[[Meta], Meta]:
    def infer(x: Meta) -> Meta:
        if x.rank == 0:
            raise fail(op, "operand 'x' is a 0-D tensor; pass an array")
        return Meta(x.shape, _same_dtype(op, [("x", x)]))

    return infer


def infer_clipped_relu(x: Meta, lo: Any = 0.0, hi: Any = 6.0) -> Meta:
    low, high = _float("clipped_relu", "lo", lo), _float("clipped_relu", "hi", hi)
    if low > high:
        raise fail("clipped_relu", f"lo={low} is greater than hi={high}; clip to [lo, hi] with lo <= hi")
    return infer_unary("clipped_relu")(x)


def infer_softmax(x: Meta) -> Meta:
    _rank("softmax", "x", x, (2,), "(N, classes); softmax is taken over dim 1")
    return Meta(x.shape, _same_dtype("softmax", [("x", x)]))


def infer_batchnorm(x: Meta, gamma: Meta, beta: Meta, mean: Meta, variance: Meta, epsilon: Any) -> Meta:
    op = "batchnorm"
    _rank(op, "x", x, (4, 2), "(N, C, H, W) or (N, C)")
    operands = [("x", x), ("gamma", gamma), ("beta", beta), ("mean", mean), ("variance", variance)]
    dtype = _same_dtype(op, operands)
    c = x.shape[1]
    for name, m in operands[1:]:
        if m.shape != (c,):
            raise fail(op, f"operand '{name}' has shape {m.shape}; it must be ({c},), one value per channel")
    if _float(op, "epsilon", epsilon) < 0:
        raise fail(op, f"epsilon is {epsilon}; it must be >= 0 (typically 1e-5)")
    return Meta(x.shape, dtype)


def infer_pool(op: str) -> Callable[..., Meta]:
    def infer(x: Meta, wh: Any, ww: Any, vpad: Any, hpad: Any, vstride: Any, hstride: Any) -> Meta:
        _rank(op, "x", x, (4,), "(N, C, H, W)")
        dtype = _same_dtype(op, [("x", x)])
        h, w = _int(op, "wh", wh, 1), _int(op, "ww", ww, 1)
        vp, hp = _int(op, "vpad", vpad, 0), _int(op, "hpad", hpad, 0)
        vs, hs = _int(op, "vstride", vstride, 1), _int(op, "hstride", hstride, 1)
        for name, pad, window in (("vpad", vp, h), ("hpad", hp, w)):
            if 2 * pad > window:
                raise fail(
                    op,
                    f"{name}={pad} is more than half the window ({window}); padding must be at "
                    "most half the window (as in PyTorch)",
                )
        n, c, height, width = x.shape
        ho = _window_out(op, "window height", height, h, vp, vs, "(wh)")
        wo = _window_out(op, "window width", width, w, hp, hs, "(ww)")
        return Meta((n, c, ho, wo), dtype)

    return infer
