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


def _activate_(y: Tensor, activation: str | None, lo: float, hi: float) -> Tensor:
    if activation is None:
        return y
    if activation == "relu":
        return torch.relu_(y)
    if activation == "clipped_relu":
        return y.clamp_(lo, hi)
    if activation == "tanh":
        return y.tanh_()
    return y.sigmoid_()


def _add_(y: Tensor, b: Tensor) -> Tensor:
    """y + b where y is a fresh result: in place when b broadcasts into y's shape."""
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
        y = _add_(F.conv2d(x, w, None, (vstride, hstride), (vpad, hpad)), b)
    y = _activate_(y, activation, lo, hi)
    if pool is None:
        return y
    window, stride, padding = (wh, ww), (pool_vstride, pool_hstride), (pool_vpad, pool_hpad)
    if pool == "pool_max":
        return F.max_pool2d(y, window, stride, padding)
    if pool == "pool_mean":
        return F.avg_pool2d(y, window, stride, padding, False, True)
    return torch.neg(F.max_pool2d(y.neg_(), window, stride, padding))


def fc_layer(x: Tensor, w: Tensor, b: Tensor, activation: str | None, lo: float, hi: float) -> Tensor:
    """mul -> add -> [activation] as one call (addmm when b is a per-column bias)."""
    if x.dim() != 2:
        x = x.reshape(x.shape[0], -1)
    if b.dim() == 1 and b.shape[0] == w.shape[1]:
        y = torch.addmm(b, x, w)
    else:
        y = _add_(torch.mm(x, w), b)
    return _activate_(y, activation, lo, hi)


LAYERS: dict[str, Callable[..., Any]] = {"conv_layer": conv_layer, "fc_layer": fc_layer}
