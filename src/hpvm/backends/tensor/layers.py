"""WrapperAPI layer calls (seed 001's ``wrapper_ConvLayer`` / ``wrapper_FCLayer``) on PyTorch.

One runtime call for a matched pattern (``wrapper.lower``). The bias goes into the library
call where it can (conv2d's bias, addmm), the activation runs in place on the fresh result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

Tensor = torch.Tensor


def activate_(y: Tensor, activation: str | None, lo: float, hi: float) -> Tensor:
    """``activation`` applied in place to the fresh result ``y`` (``None``: none)."""
    if activation is None:
        return y
    if activation == "relu":
        return torch.relu_(y)
    if activation == "clipped_relu":
        return y.clamp_(lo, hi)
    if activation == "tanh":
        return y.tanh_()
    return y.sigmoid_()


def add_(y: Tensor, b: Tensor) -> Tensor:
    """y + b where y is a fresh result no one else reads: in place when b broadcasts into
    y's shape (operands of one dtype: the rules check it)."""
    if b.dim() == 1 and y.dim() == 4:
        return y.add_(b.view(1, -1, 1, 1))
    return y.add_(b) if torch.broadcast_shapes(y.shape, b.shape) == y.shape else torch.add(y, b)


def conv_layer(
    x: Tensor,
    w: Tensor,
    vpad: int,
    hpad: int,
    vstride: int,
    hstride: int,
    b: Tensor,
    activation: str | None,
    lo: float,
    hi: float,
    pool: str | None,
    wh: int,
    ww: int,
    pool_vpad: int,
    pool_hpad: int,
    pool_vstride: int,
    pool_hstride: int,
) -> Tensor:
    """convolution -> add -> [activation] -> [pooling] as one call."""
    if b.dim() == 1:
        y = F.conv2d(x, w, b, (vstride, hstride), (vpad, hpad))
    else:
        y = add_(F.conv2d(x, w, None, (vstride, hstride), (vpad, hpad)), b)
    y = activate_(y, activation, lo, hi)
    if pool is None:
        return y
    return pool_(y, pool, wh, ww, pool_vpad, pool_hpad, pool_vstride, pool_hstride)


def pool_(y: Tensor, op: str, wh: int, ww: int, vpad: int, hpad: int, vstride: int, hstride: int) -> Tensor:
    """Pooling ``op`` of the fresh result ``y`` (``pool_min`` negates ``y`` in place)."""
    window, stride, padding = (wh, ww), (vstride, hstride), (vpad, hpad)
    if op == "pool_max":
        return F.max_pool2d(y, window, stride, padding)
    if op == "pool_mean":
        return F.avg_pool2d(y, window, stride, padding, False, True)
    return torch.neg(F.max_pool2d(y.neg_(), window, stride, padding))


def fc_layer(x: Tensor, w: Tensor, b: Tensor, activation: str | None, lo: float, hi: float) -> Tensor:
    """mul -> add -> [activation] as one call (addmm when b is a per-column bias)."""
    if x.dim() != 2:
        x = x.reshape(x.shape[0], -1)
    if b.dim() == 1 and b.shape[0] == w.shape[1]:
        y = torch.addmm(b, x, w)
    else:
        y = add_(torch.mm(x, w), b)
    return activate_(y, activation, lo, hi)


LAYERS: dict[str, Callable[..., Any]] = {"conv_layer": conv_layer, "fc_layer": fc_layer}

#: In-place forms of operations, for a fresh value no other operation reads (``rewrite.in_place``).
IN_PLACE: dict[str, Callable[..., Any]] = {
    "relu_": torch.relu_,
    "tanh_": torch.tanh_,
    "sigmoid_": torch.sigmoid_,
    "clipped_relu_": lambda x, lo=0.0, hi=6.0: x.clamp_(lo, hi),
    "add_": add_,
}
