"""The tensor intrinsics on PyTorch, unchecked: what they compute on torch tensors.

DFG2LLVM_CUDNN's table (seed 001): each HPVM tensor intrinsic maps to one library call —
``torch.nn.functional`` here, which runs oneDNN on the CPU and cuDNN on a GPU. No
validation: ``rules`` validates (the ``tensor`` back end checks a graph's shapes once per
input signature), so the calls here cost nothing beyond the library's own.

Importing this module imports torch; ``apply`` imports it only when a torch tensor reaches
an operation, and the ``tensor`` back end when it is first used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

Tensor = torch.Tensor


def convolution(x: Tensor, w: Tensor, vpad: int, hpad: int, vstride: int, hstride: int) -> Tensor:
    return F.conv2d(x, w, None, (vstride, hstride), (vpad, hpad))


def group_convolution(
    x: Tensor, w: Tensor, vpad: int, hpad: int, vstride: int, hstride: int, groups: int
) -> Tensor:
    return F.conv2d(x, w, None, (vstride, hstride), (vpad, hpad), 1, groups)


def add(x: Tensor, b: Tensor) -> Tensor:
    if b.dim() == 1 and x.dim() == 4:
        return torch.add(x, b.view(1, -1, 1, 1))
    return torch.add(x, b)


def mul(x: Tensor, w: Tensor) -> Tensor:
    if x.dim() != 2:
        x = x.reshape(x.shape[0], -1)
    return torch.mm(x, w)


def clipped_relu(x: Tensor, lo: float = 0.0, hi: float = 6.0) -> Tensor:
    return torch.clamp(x, lo, hi)


def softmax(x: Tensor) -> Tensor:
    return torch.softmax(x, 1)


def batchnorm(
    x: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor, variance: Tensor, epsilon: float
) -> Tensor:
    return F.batch_norm(x, mean, variance, gamma, beta, False, 0.0, epsilon)


def pool_max(x: Tensor, wh: int, ww: int, vpad: int, hpad: int, vstride: int, hstride: int) -> Tensor:
    return F.max_pool2d(x, (wh, ww), (vstride, hstride), (vpad, hpad))


def pool_min(x: Tensor, wh: int, ww: int, vpad: int, hpad: int, vstride: int, hstride: int) -> Tensor:
    return torch.neg(F.max_pool2d(torch.neg(x), (wh, ww), (vstride, hstride), (vpad, hpad)))


def pool_mean(x: Tensor, wh: int, ww: int, vpad: int, hpad: int, vstride: int, hstride: int) -> Tensor:
    return F.avg_pool2d(x, (wh, ww), (vstride, hstride), (vpad, hpad), False, True)


#: The unchecked torch implementation of each operation, by name.
TORCH: dict[str, Callable[..., Any]] = {
    "convolution": convolution,
    "group_convolution": group_convolution,
    "add": add,
    "mul": mul,
    "relu": torch.relu,
    "clipped_relu": clipped_relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "softmax": softmax,
    "batchnorm": batchnorm,
    "pool_max": pool_max,
    "pool_min": pool_min,
    "pool_mean": pool_mean,
}
