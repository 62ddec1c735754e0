"""The numba-cuda kernels ``cuda_device.py`` compares hpvm with: what a GPU programmer writes.

A module of their own, with ``cuda`` a global, because numba-cuda's simulator
(``NUMBA_ENABLE_CUDASIM=1``, what ``cuda_device.py --tiny`` runs on) swaps a kernel's global
``cuda`` for its fake one and cannot see one captured in a closure.
"""

from __future__ import annotations

import kernels  # (benchmarks/, on the path)
import numpy as np
from numba import cuda, float32

tile = kernels.SGEMM_TILE
block = kernels.REDUCTION_BLOCK  # a module constant: numba-cuda needs shared arrays' sizes as constants


@cuda.jit
def vadd(a, b, c):
    i = cuda.grid(1)
    if i < c.shape[0]:
        c[i] = a[i] + b[i]


@cuda.jit
def sgemm(a, b, c, alpha, beta):
    sa = cuda.shared.array((tile, tile), float32)
    sb = cuda.shared.array((tile, tile), float32)
    col, row = cuda.grid(2)  # x: the column, the fastest index
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    acc = float32(0.0)
    for t in range(a.shape[1] // tile):
        sa[ty, tx] = a[row, t * tile + tx]
        sb[ty, tx] = b[t * tile + ty, col]
        cuda.syncthreads()
        for p in range(tile):
            acc += sa[ty, p] * sb[p, tx]
        cuda.syncthreads()
    c[row, col] = alpha * acc + beta * c[row, col]


@cuda.jit
def blur(src, dst):
    x, y = cuda.grid(2)
    x += 1
    y += 1
    if y < src.shape[0] - 1 and x < src.shape[1] - 1:
        dst[y, x] = (src[y, x - 1] + src[y, x + 1] + src[y - 1, x] + src[y + 1, x] + src[y, x]) * float32(0.2)


@cuda.jit
def stencil(src, dst, c0, c1):
    x, y, z = cuda.grid(3)
    x += 1
    y += 1
    z += 1
    if z < src.shape[0] - 1 and y < src.shape[1] - 1 and x < src.shape[2] - 1:
        dst[z, y, x] = (
            src[z + 1, y, x]
            + src[z - 1, y, x]
            + src[z, y + 1, x]
            + src[z, y - 1, x]
            + src[z, y, x + 1]
            + src[z, y, x - 1]
        ) * c1 - src[z, y, x] * c0


@cuda.jit
def histogram(values, bins):
    i = cuda.grid(1)
    if i < values.shape[0]:
        cuda.atomic.add(bins, np.int32(values[i]) * bins.shape[0] // 256, 1)


@cuda.jit
def block_sum(data, partials):
    shared = cuda.shared.array(block, float32)
    lid = cuda.threadIdx.x
    bid = cuda.blockIdx.x
    shared[lid] = data[bid * block + lid]
    cuda.syncthreads()
    stride = block // 2
    while stride > 0:
        if lid < stride:
            shared[lid] += shared[lid + stride]
        cuda.syncthreads()
        stride //= 2
    if lid == 0:
        partials[bid] = shared[0]
