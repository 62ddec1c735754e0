"""NumPy reference implementations of the tensor intrinsics: their executable semantics.

What the ``interp`` back end computes (and ``hpvm.tensor.<op>`` on NumPy arrays): PyTorch's
semantics (``torch.nn.functional``), computed in float64 and returned in the operands'
dtype, checked against PyTorch to 1e-5 by the tests. No validation here (``rules``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def _windows(x: np.ndarray, r: int, s: int, vs: int, hs: int) -> np.ndarray:
    """(N, C, H', W', R, S) views of the (already padded) input: one window per output."""
    view = np.lib.stride_tricks.sliding_window_view(x, (r, s), axis=(2, 3))
    return view[:, :, ::vs, ::hs]


def np_conv(
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


def np_group_conv(
    x: np.ndarray, w: np.ndarray, vpad: int, hpad: int, vstride: int, hstride: int, groups: int
) -> np.ndarray:
    return np_conv(x, w, vpad, hpad, vstride, hstride, groups)


def np_add(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    if b.ndim == 1 and x.ndim == 4:
        b = b.reshape(1, -1, 1, 1)
    return (x.astype(np.float64) + b).astype(x.dtype)


def np_mul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    flat = x.reshape(x.shape[0], -1).astype(np.float64)
    return (flat @ w.astype(np.float64)).astype(x.dtype)


def np_relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0).astype(x.dtype)


def np_clipped_relu(x: np.ndarray, lo: float = 0.0, hi: float = 6.0) -> np.ndarray:
    return np.clip(x, lo, hi).astype(x.dtype)


def np_tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x.astype(np.float64)).astype(x.dtype)


def np_sigmoid(x: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(x.dtype)


def np_softmax(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype)


def np_batchnorm(
    x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray, variance: np.ndarray, epsilon: float
) -> np.ndarray:
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = gamma.astype(np.float64) / np.sqrt(variance.astype(np.float64) + float(epsilon))
    y = (x.astype(np.float64) - mean.reshape(shape)) * scale.reshape(shape) + beta.reshape(shape)
    return y.astype(x.dtype)


def np_pool(kind: str) -> Callable[..., np.ndarray]:
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
