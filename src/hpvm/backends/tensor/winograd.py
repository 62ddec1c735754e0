"""3×3 convolutions by Winograd's minimal filtering F(4×4, 3×3): 4× fewer multiplies.

A direct 3×3 convolution makes 144 multiply-adds per 4×4 block of output pixels and input
channel; Winograd's algorithm (Lavin and Gray, "Fast Algorithms for Convolutional Neural
Networks", 2016 — what cuDNN runs, and oneDNN once did) makes 36. oneDNN's direct kernels
already run ResNet-18's and VGG-16's convolutions at about the cores' FMA peak (docs/
tensor.md §6), so fewer multiplies is what is left to win. Three steps:

1. **input tiles** (``_input_tiles``, Numba, parallel): each overlapping 6×6 tile ``d`` of
   the padded input (stride 4) becomes ``Bᵀ d B``, written as 36 matrices ``V[ab]`` of
   (tiles × input channels), each tile's 36 rows side by side (``v[tile, ab, c]``);
2. **36 matrix products** ``M[ab] = V[ab] · U[ab]``, where ``U[ab]`` (input × output
   channels) is ``G w Gᵀ`` of the weight (``transform_weight``). On oneDNN they are one
   grouped 1×1 convolution of 36 groups (``prepare_weight``: ``U`` packed and reordered
   once per weight and input shape, kept by the prepared call like any derived weight),
   whose image is ``V`` as it lies in memory; elsewhere ``torch.bmm``. oneDNN's kernels
   choose their code by the CPU's vector units, MKL's ``bmm`` by its vendor too: on a
   Zen 5 core pair the convolution ran the products 1.6–2.4× as fast;
3. **output tiles** (``_output_tiles``, Numba, parallel): each tile's 36 values become the
   4×4 output block ``Aᵀ m A``, plus the bias, plus a residual operand, then relu, written
   straight into a ``channels_last`` result.

Rounding: the transforms multiply by up to 8 (``Aᵀ``) and 5 (``Bᵀ``), so the result
differs from the direct convolution's by about 1e-5 of the output's largest value (a direct
kernel: about 1e-6) — the price of the method, measured per layer and over whole models
(docs/tensor.md §6, "Winograd"). ``hpvm.backends.tensor.winograd.ENABLED = False`` (or
``HPVM_TENSOR_WINOGRAD=0`` in the environment) turns it off.

When it runs (``wins``): a 3×3 kernel, stride 1, no groups, float32 on the CPU, at least
``MIN_CHANNELS`` channels in and out, and at least one tile per ``CHANNELS_PER_TILE``
output channels (with fewer, reading ``U`` — four times the weight — is the time) —
measured against oneDNN's direct kernels on a grid of shapes (docs/tensor.md §6,
"Winograd"). The two scratch matrices (``V``, ``M``) are kept per thread and reused.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numba
import numpy as np
import torch
from numba import prange

Tensor = torch.Tensor

#: Whether prepared convolutions may run by Winograd's algorithm at all.
ENABLED = os.environ.get("HPVM_TENSOR_WINOGRAD", "1") != "0"
#: Where Winograd beats oneDNN's direct kernels here (docs/tensor.md §6, "Winograd"): at
#: least this many input and output channels (the products' inner and outer dimension)…
MIN_CHANNELS = 64
#: …at least one 4×4 output tile per this many output channels (with fewer, reading ``U``,
#: four times the weight, is the time; 32 while the products ran in MKL's ``bmm``, 64 since
#: they run as oneDNN's grouped convolution: 512 channels at 4×4 and batch 8, 8 tiles, then
#: took 0.69× the blocked direct kernel's time, at batch 4 1.09×, docs/tensor.md §6)…
CHANNELS_PER_TILE = 64
#: …and an output at least this high and wide (a 2×2 output fills a quarter of a tile).
MIN_SIDE = 4

# F(4×4, 3×3)'s matrices (Lavin and Gray's, interpolation points 0, ±1, ±2, ∞): the weight
# transform G (6×3) here; the kernels write out the input transform Bᵀ (6×6) and the output
# transform Aᵀ (4×6), whose rows are
#   Bᵀ: (4, 0, −5, 0, 1, 0), (0, −4, −4, 1, 1, 0), (0, 4, −4, −1, 1, 0),
#       (0, −2, −1, 2, 1, 0), (0, 2, −1, −2, 1, 0), (0, 4, 0, −5, 0, 1);
#   Aᵀ: (1, 1, 1, 1, 1, 0), (0, 1, −1, 2, −2, 0), (0, 1, 1, 4, 4, 0), (0, 1, −1, 8, −8, 1).
_G = (
    (1 / 4, 0.0, 0.0),
    (-1 / 6, -1 / 6, -1 / 6),
    (-1 / 6, 1 / 6, -1 / 6),
    (1 / 24, 1 / 12, 1 / 6),
    (1 / 24, -1 / 12, 1 / 6),
    (0.0, 0.0, 1.0),
)


def wins(channels_in: int, channels_out: int, out_shape: tuple[int, ...]) -> bool:
    """Whether a 3×3, stride-1 convolution with this output shape (N, K, OH, OW) runs
    faster by Winograd than by oneDNN's direct kernel (``MIN_CHANNELS``,
    ``CHANNELS_PER_TILE``, ``MIN_SIDE``)."""
    n, _, oh, ow = out_shape
    tiles = n * _tiles_across(oh) * _tiles_across(ow)
    return (
        ENABLED
        and min(channels_in, channels_out) >= MIN_CHANNELS
        and tiles * CHANNELS_PER_TILE >= channels_out
        and min(oh, ow) >= MIN_SIDE
    )


def transform_weight(w: Tensor) -> Tensor:
    """``U`` (36, C, K) of a (K, C, 3, 3) weight: ``G w[k, c] Gᵀ``, its 6×6 entries as the
    36 leading matrices (entry (a, b) is matrix 6a + b), computed in float64."""
    g = torch.tensor(_G, dtype=torch.float64)
    k, c = w.shape[:2]
    u = torch.einsum("ai,kcij,bj->abck", g, w.to(torch.float64), g)
    return u.reshape(36, c, k).to(w.dtype).contiguous()


# The transforms' coefficients as float32: a Python float would make Numba compute each
# element in float64 (float32 · float64 is float64), at half the vector width.
_F2, _F4, _F5, _F8 = np.float32(2.0), np.float32(4.0), np.float32(5.0), np.float32(8.0)


@numba.njit(inline="always", cache=True)
def _bt(d0: float, d1: float, d2: float, d3: float, d4: float, d5: float) -> tuple:  # pragma: no cover
    """Bᵀ times the column (d0 … d5): its six rows, written out with the zeros skipped."""
    return (
        _F4 * d0 - _F5 * d2 + d4,
        d3 + d4 - _F4 * (d1 + d2),
        d4 - d3 + _F4 * (d1 - d2),
        d4 - d2 + _F2 * (d3 - d1),
        d4 - d2 + _F2 * (d1 - d3),
        _F4 * d1 - _F5 * d3 + d5,
    )


@numba.njit(inline="always", cache=True)
def _at(m0: float, m1: float, m2: float, m3: float, m4: float, m5: float) -> tuple:  # pragma: no cover
    """Aᵀ times the column (m0 … m5): its four rows, written out."""
    return (
        m0 + m1 + m2 + m3 + m4,
        m1 - m2 + _F2 * (m3 - m4),
        m1 + m2 + _F4 * (m3 + m4),
        m1 - m2 + _F8 * (m3 - m4) + m5,
    )


@numba.njit(parallel=True, nogil=True, cache=True)
def _input_tiles(
    x: np.ndarray, v: np.ndarray, vpad: int, hpad: int, th: int, tw: int
) -> None:  # pragma: no cover - compiled
    """``v[tile, 6a+b, c]`` = (Bᵀ d B)[a, b] of the 6×6 tile ``d`` at rows ``4i − vpad``,
    columns ``4j − hpad`` of ``x`` (N, H, W, C), zero outside it."""
    n_, h, w, c_ = x.shape
    for row in prange(n_ * th):
        n, i = row // th, row % th
        d = np.empty((6, 6, c_), np.float32)
        for j in range(tw):
            for a in range(6):
                r = 4 * i + a - vpad
                for b in range(6):
                    col = 4 * j + b - hpad
                    if 0 <= r < h and 0 <= col < w:
                        for c in range(c_):
                            d[a, b, c] = x[n, r, col, c]
                    else:
                        for c in range(c_):
                            d[a, b, c] = 0.0
            for b in range(6):  # Bᵀ d: along the rows, in place
                for c in range(c_):
                    e0, e1, e2, e3, e4, e5 = _bt(
                        d[0, b, c], d[1, b, c], d[2, b, c], d[3, b, c], d[4, b, c], d[5, b, c]
                    )
                    d[0, b, c], d[1, b, c], d[2, b, c] = e0, e1, e2
                    d[3, b, c], d[4, b, c], d[5, b, c] = e3, e4, e5
            t = row * tw + j
            for a in range(6):  # (Bᵀ d) B: along the columns, into v
                for c in range(c_):
                    e0, e1, e2, e3, e4, e5 = _bt(
                        d[a, 0, c], d[a, 1, c], d[a, 2, c], d[a, 3, c], d[a, 4, c], d[a, 5, c]
                    )
                    v[t, 6 * a, c], v[t, 6 * a + 1, c], v[t, 6 * a + 2, c] = e0, e1, e2
                    v[t, 6 * a + 3, c], v[t, 6 * a + 4, c], v[t, 6 * a + 5, c] = e3, e4, e5


@numba.njit(parallel=True, nogil=True, cache=True)
def _output_tiles(
    m: np.ndarray,
    bias: np.ndarray,
    other: np.ndarray,
    y: np.ndarray,
    th: int,
    tw: int,
    add_other: bool,
    relu: bool,
) -> None:  # pragma: no cover - compiled
    """The 4×4 block ``Aᵀ m A`` of each tile (``m[tile, 6a+b, k]``) into ``y`` (N, OH, OW,
    K) — the rows and
    columns past its edge left out — plus ``bias``, plus ``other`` (``y``'s shape) when
    ``add_other``, then relu when ``relu``."""
    n_, oh, ow, k_ = y.shape
    zero = np.float32(0.0)
    for row in prange(n_ * th):
        n, i = row // th, row % th
        s = np.empty((6, 4, k_), np.float32)
        for j in range(tw):
            t = row * tw + j
            for a in range(6):  # m A: along the columns
                for k in range(k_):
                    s0, s1, s2, s3 = _at(
                        m[t, 6 * a, k], m[t, 6 * a + 1, k], m[t, 6 * a + 2, k],
                        m[t, 6 * a + 3, k], m[t, 6 * a + 4, k], m[t, 6 * a + 5, k],
                    )  # fmt: skip
                    s[a, 0, k], s[a, 1, k], s[a, 2, k], s[a, 3, k] = s0, s1, s2, s3
            rows = min(4, oh - 4 * i)
            for q in range(4):  # Aᵀ (m A): along the rows, into y
                col = 4 * j + q
                if col >= ow:
                    continue
                for k in range(k_):
                    o0, o1, o2, o3 = _at(
                        s[0, q, k], s[1, q, k], s[2, q, k], s[3, q, k], s[4, q, k], s[5, q, k]
                    )
                    o0, o1, o2, o3 = o0 + bias[k], o1 + bias[k], o2 + bias[k], o3 + bias[k]
                    if add_other:
                        o0 += other[n, 4 * i, col, k]
                        if rows > 1:
                            o1 += other[n, 4 * i + 1, col, k]
                        if rows > 2:
                            o2 += other[n, 4 * i + 2, col, k]
                        if rows > 3:
                            o3 += other[n, 4 * i + 3, col, k]
                    if relu:
                        o0, o1, o2, o3 = max(o0, zero), max(o1, zero), max(o2, zero), max(o3, zero)
                    y[n, 4 * i, col, k] = o0
                    if rows > 1:
                        y[n, 4 * i + 1, col, k] = o1
                    if rows > 2:
                        y[n, 4 * i + 2, col, k] = o2
                    if rows > 3:
                        y[n, 4 * i + 3, col, k] = o3


class _Scratch(threading.local):
    """Each thread's two flat scratch buffers, grown to the largest size asked for."""

    def __init__(self) -> None:
        self.buffers: list[Tensor] = [torch.empty(0), torch.empty(0)]

    def take(self, which: int, shape: tuple[int, ...]) -> Tensor:
        size = int(np.prod(shape))
        if self.buffers[which].numel() < size:
            # a normal tensor, even when the call runs under ``torch.inference_mode``: an
            # inference tensor could not be written by a later call outside it
            with torch.inference_mode(False):
                self.buffers[which] = torch.empty(size)
        return self.buffers[which][:size].view(shape)


_SCRATCH = _Scratch()
#: Numba's ``workqueue`` threading layer (where neither OpenMP nor TBB is installed) must not
#: run two parallel kernels at once; launches on several host threads take turns here.
_KERNELS = threading.Lock()


def _nhwc(t: Tensor) -> np.ndarray:
    """The (N, H, W, C) NumPy view of a ``channels_last`` tensor's memory (copied into that
    layout first when it is in another one)."""
    return t.contiguous(memory_format=torch.channels_last).permute(0, 2, 3, 1).numpy()


def _tiles_across(side: int) -> int:
    """4×4 output tiles along an output side (the last one partly past it)."""
    return (side + 3) // 4


def _output_grid(x_shape: Sequence[int], vpad: int, hpad: int) -> tuple[int, int, int, int]:
    """(OH, OW, tile rows, tile columns) of a 3×3, stride-1 convolution of an (N, C, H, W)
    input."""
    _, _, h, w = x_shape
    oh, ow = h + 2 * vpad - 2, w + 2 * hpad - 2
    return oh, ow, _tiles_across(oh), _tiles_across(ow)


def tile_count(x_shape: Sequence[int], vpad: int, hpad: int) -> int:
    """The 4×4 output tiles of a 3×3, stride-1 convolution of an (N, C, H, W) input."""
    _, _, th, tw = _output_grid(x_shape, vpad, hpad)
    return x_shape[0] * th * tw


def prepare_weight(w: Tensor, x_shape: Sequence[int], vpad: int, hpad: int) -> Tensor:
    """The weight ``conv3x3`` runs with, made once per weight and input shape: on oneDNN,
    the 36 matrices ``U[ab]`` of ``transform_weight`` as one grouped 1×1 convolution's
    weight (36 groups, (36·K, C, 1, 1)) reordered for the tiles' matrix ``V`` of this
    input (``_grouped_input``); elsewhere ``U`` itself (36, C, K), multiplied by
    ``torch.bmm``. Why a convolution: oneDNN's kernels pick their code by the CPU's vector
    units, not its vendor, and ran the 36 products at 184–246 GFLOP/s on a Zen 5 core pair
    where MKL's ``bmm`` ran them at 91–152 (ResNet-18's and VGG-16's shapes, docs/
    tensor.md §6, "Winograd")."""
    u = transform_weight(w)
    if not torch.backends.mkldnn.is_available():
        return u
    k, c = u.shape[2], u.shape[1]
    grouped = u.permute(0, 2, 1).reshape(36 * k, c, 1, 1).contiguous()
    shape = [1, 36 * c, tile_count(x_shape, vpad, hpad), 1]
    return torch.ops.mkldnn._reorder_convolution_weight(grouped, [0, 0], [1, 1], [1, 1], 36, shape)


def _grouped_input(v: Tensor) -> Tensor:
    """``v`` (tiles, 36, C) as the (1, 36·C, tiles, 1) ``channels_last`` image of the
    grouped convolution: the same memory, channel block ``ab`` holding ``V[ab]``."""
    tiles, _, c = v.shape
    return v.view(1, tiles, 1, 36 * c).permute(0, 3, 1, 2)


def conv3x3(
    x: Tensor, weight: Tensor, bias: Tensor | None, vpad: int, hpad: int, other: Tensor | None, relu: bool
) -> Tensor:
    """relu?(conv(x, w, stride 1, padding (vpad, hpad)) + bias + other) for ``weight`` =
    ``prepare_weight(w, x.shape, vpad, hpad)`` (or ``transform_weight(w)``: the products
    then by ``torch.bmm``), float32 on the CPU: a new ``channels_last`` tensor. ``x`` and
    ``other`` may be in any layout (``channels_last`` is read without a copy)."""
    n, c = x.shape[:2]
    grouped = weight.dim() == 4
    k = weight.shape[0] // 36 if grouped else weight.shape[2]
    oh, ow, th, tw = _output_grid(x.shape, vpad, hpad)
    tiles = n * th * tw
    v = _SCRATCH.take(0, (tiles, 36, c))
    x_nhwc = _nhwc(x)
    with _KERNELS:
        _input_tiles(x_nhwc, v.numpy(), vpad, hpad, th, tw)
    if grouped:  # M = V·U as oneDNN's grouped 1×1 convolution: (1, 36·K, tiles, 1), channels_last
        product = torch.ops.mkldnn._convolution_pointwise(
            _grouped_input(v), weight, None, [0, 0], [1, 1], [1, 1], 36, "none", [], ""
        )
        m = product.permute(0, 2, 3, 1).reshape(tiles, 36, k)
    else:
        m = _SCRATCH.take(1, (tiles, 36, k))
        torch.bmm(v.transpose(0, 1), weight, out=m.transpose(0, 1))
    y = torch.empty((n, k, oh, ow), dtype=torch.float32, memory_format=torch.channels_last)
    y_nhwc = y.permute(0, 2, 3, 1).numpy()
    b = bias if bias is not None else torch.zeros(k)
    extra = _nhwc(other) if other is not None else y_nhwc
    with _KERNELS:
        _output_tiles(m.numpy(), b.numpy(), extra, y_nhwc, th, tw, other is not None, relu)
    return y


__all__ = ["ENABLED", "conv3x3", "prepare_weight", "tile_count", "transform_weight", "wins"]
