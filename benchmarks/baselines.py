"""What a user would write instead of an HPVM graph: hand-written Numba and NumPy versions.

The hand-written Numba functions are the bar the ``cpu`` back end must meet (≤ 1.10× their
time). They are written the way a performance-minded Numba user would write them:
``@numba.njit(parallel=True)``, ``prange`` over the outermost dimension, no temporaries in
the hot loops. Each computes *the same algorithm* as its HPVM graph — the same loops in
the same order, the same float32 operations — so results can be compared (exactly, for
most of them) and the ratio measures the cost of the HPVM abstraction, not of a better or
worse algorithm:

- ``sgemm_tiled``: the two-level tiled loop nest of ``examples/sgemm.py`` (tile rows in
  ``prange``, then tile columns, then the tile's elements, each a dot product). NumPy's
  ``a @ b`` is BLAS — a different (blocked, vectorised) algorithm, shown for scale only.
- ``stencil_step``: one Parboil 7-point step over the interior; the host swaps the arrays.
- ``blur_step``: one 5-point blur of a 2-D image, rows in parallel (``layout.py``).
- ``histogram_private``: the idiomatic parallel histogram on a CPU, one private histogram
  per thread and a final sum. Numba has no CPU atomics, so this is what a Numba user
  writes; the HPVM graph uses ``hpvm.atomic_add`` as the benchmark asks.
- ``block_tree_sum``: the block-wise tree reduction of ``examples/reduction.py``, one
  scratch buffer per thread reused across that thread's blocks.
- the edge-detection stages: the six stages of ``examples/edge_detection.py``, one parallel
  function each, called one after the other for every frame (not overlapped).

All functions are compiled with ``cache=True`` so that repeated benchmark runs do not pay
for compiling them again.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

_JIT = {"parallel": True, "cache": True, "nogil": True}

# ---------------------------------------------------------------------------------------
# Vector add


@numba.njit(**_JIT)
def vector_add(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """c = a + b, one parallel loop."""
    for i in prange(a.shape[0]):
        c[i] = a[i] + b[i]


@numba.njit(**_JIT)
def saxpy_fours(x: np.ndarray, y: np.ndarray, z: np.ndarray, a: np.float32, n: int) -> tuple:
    """``z[4i+j] = a x[4i+j] + y[4i+j]`` for j < 4, one parallel loop over i < n, returning
    the last element and z's byte size: GenHPVM's ``saxpy_two_level.ll`` (the launch row)."""
    for i in prange(n):
        for j in range(4):
            k = 4 * i + j
            z[k] = a * x[k] + y[k]
    return z[4 * n - 1], z.nbytes


def vector_add_numpy(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    np.add(a, b, out=c)


@numba.njit(**_JIT)
def saxpy(alpha: np.float32, x: np.ndarray, y: np.ndarray) -> None:
    """y = alpha x + y, one parallel loop."""
    for i in prange(x.shape[0]):
        y[i] = alpha * x[i] + y[i]


@numba.njit(**_JIT)
def triad(a: np.ndarray, b: np.ndarray, c: np.ndarray, s: np.float32) -> None:
    """STREAM's triad a = b + s c, one parallel loop."""
    for i in prange(a.shape[0]):
        a[i] = b[i] + s * c[i]


# ---------------------------------------------------------------------------------------
# sgemm: C = alpha * A @ B + beta * C


@numba.njit(**_JIT)
def sgemm_tiled(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, alpha: np.float32, beta: np.float32, tile: int
) -> None:
    """The HPVM graph's loops: tile grid (rows in prange) → elements of the tile → dot product."""
    k = a.shape[1]
    tile_rows = a.shape[0] // tile
    tile_cols = b.shape[1] // tile
    for tr in prange(tile_rows):
        for tc in range(tile_cols):
            for x in range(tile):
                row = tr * tile + x
                for y in range(tile):
                    col = tc * tile + y
                    acc = np.float32(0.0)
                    for p in range(k):
                        acc += a[row, p] * b[p, col]
                    c[row, col] = alpha * acc + beta * c[row, col]


def sgemm_numpy(a: np.ndarray, b: np.ndarray, c: np.ndarray, alpha: np.float32, beta: np.float32) -> None:
    """BLAS (a different algorithm: blocked and vectorised), in place like the others."""
    product = a @ b
    product *= alpha
    c *= beta
    c += product


# ---------------------------------------------------------------------------------------
# Parboil stencil: 7-point 3-D Jacobi, one step per call, arrays swapped by the host


@numba.njit(**_JIT)
def stencil_step(src: np.ndarray, dst: np.ndarray, c0: np.float32, c1: np.float32) -> None:
    """One step over the interior (the boundary is fixed: both arrays start with it)."""
    nz, ny, nx = src.shape
    for k in prange(1, nz - 1):
        for j in range(1, ny - 1):
            for i in range(1, nx - 1):
                dst[k, j, i] = (
                    src[k + 1, j, i]
                    + src[k - 1, j, i]
                    + src[k, j + 1, i]
                    + src[k, j - 1, i]
                    + src[k, j, i + 1]
                    + src[k, j, i - 1]
                ) * c1 - src[k, j, i] * c0


def stencil_step_numpy(src: np.ndarray, dst: np.ndarray, c0: np.float32, c1: np.float32) -> None:
    """The same step with array slices (same operations in the same order)."""
    s = src
    dst[1:-1, 1:-1, 1:-1] = (
        s[2:, 1:-1, 1:-1]
        + s[:-2, 1:-1, 1:-1]
        + s[1:-1, 2:, 1:-1]
        + s[1:-1, :-2, 1:-1]
        + s[1:-1, 1:-1, 2:]
        + s[1:-1, 1:-1, :-2]
    ) * c1 - s[1:-1, 1:-1, 1:-1] * c0


# ---------------------------------------------------------------------------------------
# 5-point blur, 2-D (benchmarks/layout.py): the GPU convention's row-major loops


@numba.njit(**_JIT)
def blur_step(src: np.ndarray, dst: np.ndarray) -> None:
    """dst = the mean of each interior pixel and its four neighbours; rows in parallel, x inner."""
    ny, nx = src.shape
    fifth = np.float32(0.2)
    for y in prange(1, ny - 1):
        for x in range(1, nx - 1):
            dst[y, x] = (src[y, x - 1] + src[y, x + 1] + src[y - 1, x] + src[y + 1, x] + src[y, x]) * fifth


def blur_step_numpy(src: np.ndarray, dst: np.ndarray) -> None:
    """The same blur with array slices (same operations in the same order)."""
    s = src
    dst[1:-1, 1:-1] = (s[1:-1, :-2] + s[1:-1, 2:] + s[:-2, 1:-1] + s[2:, 1:-1] + s[1:-1, 1:-1]) * np.float32(
        0.2
    )


def stencil_run(step, src: np.ndarray, dst: np.ndarray, c0, c1, iterations: int) -> np.ndarray:
    """``iterations`` steps of ``step`` with the host swapping in and out; returns the last output."""
    for _ in range(iterations):
        step(src, dst, c0, c1)
        src, dst = dst, src
    return src


# ---------------------------------------------------------------------------------------
# Histogram of bytes into nbins bins (bin = value * nbins // 256)


def histogram_private(values: np.ndarray, bins: np.ndarray) -> None:
    """Add the histogram of ``values`` into ``bins``: private per-thread bins, then a sum."""
    _histogram_private(values, bins, numba.get_num_threads())


@numba.njit(**_JIT)
def _histogram_private(values: np.ndarray, bins: np.ndarray, chunks: int) -> None:
    nbins = bins.shape[0]
    n = values.shape[0]
    size = (n + chunks - 1) // chunks
    local = np.zeros((chunks, nbins), dtype=np.int32)
    for t in prange(chunks):
        for i in range(t * size, min(n, (t + 1) * size)):
            local[t, np.int64(values[i]) * nbins // 256] += 1
    for t in range(chunks):
        for b in range(nbins):
            bins[b] += local[t, b]


def histogram_numpy(values: np.ndarray, bins: np.ndarray) -> None:
    nbins = bins.shape[0]
    bins += np.bincount(values.astype(np.intp) * nbins // 256, minlength=nbins).astype(np.int32)


# ---------------------------------------------------------------------------------------
# Block reduction: tree sum of each block in a scratch buffer


def block_tree_sum(data: np.ndarray, block: int, partials: np.ndarray) -> None:
    """partials[b] = tree sum of block b (same strides, same float32 order as the HPVM leaf)."""
    _block_tree_sum(data, block, partials, min(numba.get_num_threads(), data.shape[0] // block))


@numba.njit(**_JIT)
def _block_tree_sum(data: np.ndarray, block: int, partials: np.ndarray, chunks: int) -> None:
    nblocks = data.shape[0] // block
    size = (nblocks + chunks - 1) // chunks
    scratch = np.empty((chunks, block), dtype=np.float32)
    for t in prange(chunks):
        shared = scratch[t]
        for bid in range(t * size, min(nblocks, (t + 1) * size)):
            base = bid * block
            for lid in range(block):
                shared[lid] = data[base + lid]
            stride = block // 2
            while stride > 0:
                for lid in range(stride):
                    shared[lid] += shared[lid + stride]
                stride //= 2
            partials[bid] = shared[0]


def block_tree_sum_numpy(data: np.ndarray, block: int, partials: np.ndarray) -> None:
    """The same tree, vectorised over blocks (float32, same order: identical partial sums)."""
    tree = data.reshape(-1, block).copy()
    stride = block // 2
    while stride > 0:
        tree[:, :stride] += tree[:, stride : 2 * stride]
        stride //= 2
    partials[:] = tree[:, 0]


# ---------------------------------------------------------------------------------------
# Edge detection: the six stages of examples/edge_detection.py, one parallel function each


@numba.njit(**_JIT)
def gaussian_smooth(image: np.ndarray, kernel: np.ndarray, smoothed: np.ndarray) -> None:
    rows, cols = image.shape
    r = kernel.shape[0] // 2
    for i in prange(rows):
        for j in range(cols):
            acc = np.float32(0.0)
            for di in range(kernel.shape[0]):
                ii = min(max(i + di - r, 0), rows - 1)
                for dj in range(kernel.shape[1]):
                    jj = min(max(j + dj - r, 0), cols - 1)
                    acc += image[ii, jj] * kernel[di, dj]
            smoothed[i, j] = acc


@numba.njit(**_JIT)
def laplacian_estimate(smoothed: np.ndarray, laplacian: np.ndarray) -> None:
    rows, cols = smoothed.shape
    for i in prange(rows):
        for j in range(cols):
            center = smoothed[i, j]
            high = center
            low = center
            for di in range(-1, 2):
                ii = min(max(i + di, 0), rows - 1)
                for dj in range(-1, 2):
                    jj = min(max(j + dj, 0), cols - 1)
                    v = smoothed[ii, jj]
                    high = max(high, v)
                    low = min(low, v)
            laplacian[i, j] = (high + low) - np.float32(2.0) * center


@numba.njit(**_JIT)
def zero_crossings(laplacian: np.ndarray, crossings: np.ndarray) -> None:
    rows, cols = laplacian.shape
    for i in prange(rows):
        for j in range(cols):
            positive = False
            non_positive = False
            for di in range(-1, 2):
                ii = min(max(i + di, 0), rows - 1)
                for dj in range(-1, 2):
                    jj = min(max(j + dj, 0), cols - 1)
                    if laplacian[ii, jj] > 0:
                        positive = True
                    else:
                        non_positive = True
            crossings[i, j] = np.float32(1.0) if positive and non_positive else np.float32(0.0)


@numba.njit(**_JIT)
def gradient(smoothed: np.ndarray, grad: np.ndarray) -> None:
    rows, cols = smoothed.shape
    two = np.float32(2.0)
    for i in prange(rows):
        up, down = max(i - 1, 0), min(i + 1, rows - 1)
        for j in range(cols):
            left, right = max(j - 1, 0), min(j + 1, cols - 1)
            gx = (smoothed[up, right] + two * smoothed[i, right] + smoothed[down, right]) - (
                smoothed[up, left] + two * smoothed[i, left] + smoothed[down, left]
            )
            gy = (smoothed[down, left] + two * smoothed[down, j] + smoothed[down, right]) - (
                smoothed[up, left] + two * smoothed[up, j] + smoothed[up, right]
            )
            grad[i, j] = math.sqrt(gx * gx + gy * gy)


@numba.njit(**_JIT)
def max_gradient(grad: np.ndarray, max_grad: np.ndarray) -> None:
    """max_grad[0] = max(max_grad[0], every gradient): row maxima in parallel, then their max."""
    rows, cols = grad.shape
    row_max = np.empty(rows, dtype=np.float32)
    for i in prange(rows):
        m = grad[i, 0]
        for j in range(1, cols):
            m = max(m, grad[i, j])
        row_max[i] = m
    m = max_grad[0]
    for i in range(rows):
        m = max(m, row_max[i])
    max_grad[0] = m


@numba.njit(**_JIT)
def reject_zero_crossings(
    crossings: np.ndarray, grad: np.ndarray, max_grad: np.ndarray, theta: np.float32, edges: np.ndarray
) -> None:
    rows, cols = crossings.shape
    limit = theta * max_grad[0]
    for i in prange(rows):
        for j in range(cols):
            strong = grad[i, j] > limit
            edges[i, j] = np.float32(1.0) if crossings[i, j] > 0.5 and strong else np.float32(0.0)


def edge_frame(
    image: np.ndarray,
    kernel: np.ndarray,
    smoothed: np.ndarray,
    laplacian: np.ndarray,
    crossings: np.ndarray,
    grad: np.ndarray,
    max_grad: np.ndarray,
    edges: np.ndarray,
    theta: np.float32,
) -> np.ndarray:
    """One frame through the six stages, one after the other (the sequential baseline)."""
    max_grad[0] = 0.0
    gaussian_smooth(image, kernel, smoothed)
    laplacian_estimate(smoothed, laplacian)
    zero_crossings(laplacian, crossings)
    gradient(smoothed, grad)
    max_gradient(grad, max_grad)
    reject_zero_crossings(crossings, grad, max_grad, theta, edges)
    return edges


# ---------------------------------------------------------------------------------------
# Overhead references: an empty parallel loop, and one that writes each index


@numba.njit(**_JIT)
def empty_parallel_loop(n: int) -> None:
    """A prange loop with nothing in it: what a parallel region costs in Numba."""
    for _ in prange(n):
        pass


@numba.njit(**_JIT)
def write_ids(out: np.ndarray) -> None:
    """out[i] = i in parallel: the Numba twin of the ``write_id`` leaf."""
    for i in prange(out.shape[0]):
        out[i] = i


def warm_up() -> None:
    """Compile (or load from the cache) every baseline once, on tiny inputs."""
    f32 = np.float32
    v = np.ones(8, dtype=f32)
    vector_add(v, v, v.copy())
    m = np.ones((4, 4), dtype=f32)
    sgemm_tiled(m, m, m.copy(), f32(1), f32(0), 2)
    cube = np.ones((4, 4, 4), dtype=f32)
    stencil_step(cube, cube.copy(), f32(1), f32(1))
    blur_step(cube[0], cube[1].copy())
    histogram_private(np.zeros(8, dtype=np.uint8), np.zeros(4, dtype=np.int32))
    block_tree_sum(v, 4, np.zeros(2, dtype=f32))
    img = np.ones((8, 8), dtype=f32)
    buf = [np.zeros_like(img) for _ in range(5)]
    edge_frame(img, np.ones((5, 5), dtype=f32), *buf[:4], np.zeros(1, dtype=f32), buf[4], f32(0.1))
    empty_parallel_loop(4)
    write_ids(np.zeros(4, dtype=np.int64))
