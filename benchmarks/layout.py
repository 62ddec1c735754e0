"""Leaves written in the GPU convention beside hand-written Numba, Taichi and Warp (issue 24, item 0).

A leaf in the GPU convention takes ``x = get_node_instance_id_x``, indexes ``d[y, x]`` or
``d[z, y, x]``: x is the fastest (contiguous) index, as CUDA's and HPVM's examples write it.
The cpu back end orders a node's instance loops by its leaf's accesses (``ir/leafstride.py``),
so that x's loop runs innermost and vectorizes. Rows:

- ``blur 5-point 2-D, GPU convention``: 2048² float32, one launch per sample;
- ``stencil 7-point 3-D, GPU convention``: Parboil's step at 256×256×64 (nx×ny×nz), one
  launch per sample;
- ``stencil, ids' layout``: the same stencil with x as the *outer* index (``kernels.stencil_root``,
  ``d[x, y, z]``) beside x inner: no layout of the ids more than 1.10× another.

The anchor is hand-written Numba (``prange`` over the outer index, the inner loop over x:
``baselines.blur_step``, ``baselines.stencil_step``): hpvm cpu ≤ 1.10× its time. Taichi
and Warp, when installed (``pip install -e '.[bench]'``), run the same kernels on the same
NumPy arrays in place (Taichi over all cores, Warp's CPU back end on one thread); a row says
"not installed" without them. Every result is checked against Numba's before anything is
timed; the samples are interleaved (one of each implementation in turn), medians — hpvm,
Numba and NumPy in one set of rounds, then Taichi and Warp with hpvm cpu and Numba again
(Taichi's worker threads keep spinning after its kernel and slowed whatever ran next up
to 2×). Each row's measure gives each peer's time over hpvm cpu's (in the peers' rounds), and its
verdict asks for hpvm ahead of both (``peers.peer_verdict``); ``peers.py`` has the same
peers on saxpy, a matmul and a histogram.
"""

# No ``from __future__ import annotations``: Taichi and Warp read their kernels' annotations
# as values.

import sys
from collections.abc import Sequence
from typing import Any

import baselines
import kernels
import numpy as np
from peers import launch, peer_impls, peer_verdict

import hpvm

# ---------------------------------------------------------------------------------------
# The hpvm graphs


@hpvm.leaf(ins=("src",), outs=("dst",))
def blur_point(src: hpvm.f32[:, :], dst: hpvm.f32[:, :]):
    """One interior pixel, GPU convention: x the column (fastest) index."""
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node) + 1
    y = hpvm.get_node_instance_id_y(node) + 1
    dst[y, x] = (src[y, x - 1] + src[y, x + 1] + src[y - 1, x] + src[y + 1, x] + src[y, x]) * np.float32(0.2)


@hpvm.internal()
def blur_root(src: hpvm.f32[:, :], dst: hpvm.f32[:, :]):
    """The leaf replicated over the interior: (nx-2) x (ny-2) instances, x first."""
    n = hpvm.create_node_2d(blur_point, src.shape[1] - 2, src.shape[0] - 2)
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_in(n, 1, 1)


@hpvm.leaf(ins=("src",), outs=("dst",))
def stencil_gpu_point(src: hpvm.f32[:, :, :], dst: hpvm.f32[:, :, :], c0: hpvm.f32, c1: hpvm.f32):
    """Parboil's point in the GPU convention: ``d[z, y, x]`` (``kernels.stencil_point`` has x outer)."""
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node) + 1
    y = hpvm.get_node_instance_id_y(node) + 1
    z = hpvm.get_node_instance_id_z(node) + 1
    dst[z, y, x] = (
        src[z + 1, y, x]
        + src[z - 1, y, x]
        + src[z, y + 1, x]
        + src[z, y - 1, x]
        + src[z, y, x + 1]
        + src[z, y, x - 1]
    ) * c1 - src[z, y, x] * c0


@hpvm.internal()
def stencil_gpu_root(src: hpvm.f32[:, :, :], dst: hpvm.f32[:, :, :], c0: hpvm.f32, c1: hpvm.f32):
    """The leaf over the interior, x along the array's last axis: (nx-2) x (ny-2) x (nz-2)."""
    step = hpvm.create_node_3d(stencil_gpu_point, src.shape[2] - 2, src.shape[1] - 2, src.shape[0] - 2)
    for port in range(4):
        hpvm.bind_in(step, port, port)


# ---------------------------------------------------------------------------------------
# Taichi and Warp (optional)


_KERNELS: dict[str, Any] = {}


def taichi_kernels(ti: Any) -> dict[str, Any]:
    """The blur and the stencil as Taichi kernels over NumPy arrays (``ti.types.ndarray``)."""
    if "ti" not in _KERNELS:
        f32_2d = ti.types.ndarray(dtype=ti.f32, ndim=2)
        f32_3d = ti.types.ndarray(dtype=ti.f32, ndim=3)

        @ti.kernel
        def blur(src: f32_2d, dst: f32_2d):  # type: ignore[no-untyped-def]
            for y, x in ti.ndrange((1, src.shape[0] - 1), (1, src.shape[1] - 1)):
                dst[y, x] = (src[y, x - 1] + src[y, x + 1] + src[y - 1, x] + src[y + 1, x] + src[y, x]) * 0.2

        @ti.kernel
        def stencil(src: f32_3d, dst: f32_3d, c0: ti.f32, c1: ti.f32):  # type: ignore[no-untyped-def]
            for z, y, x in ti.ndrange((1, src.shape[0] - 1), (1, src.shape[1] - 1), (1, src.shape[2] - 1)):
                dst[z, y, x] = (
                    src[z + 1, y, x]
                    + src[z - 1, y, x]
                    + src[z, y + 1, x]
                    + src[z, y - 1, x]
                    + src[z, y, x + 1]
                    + src[z, y, x - 1]
                ) * c1 - src[z, y, x] * c0

        _KERNELS["ti"] = {"blur": blur, "stencil": stencil}
    return _KERNELS["ti"]


def warp_kernels(wp: Any) -> dict[str, Any]:
    """The blur and the stencil as Warp kernels (one thread per interior point)."""
    if "wp" not in _KERNELS:

        @wp.kernel
        def blur(src: wp.array2d(dtype=wp.float32), dst: wp.array2d(dtype=wp.float32)):  # type: ignore[no-untyped-def]
            j, i = wp.tid()
            y = j + 1
            x = i + 1
            dst[y, x] = (src[y, x - 1] + src[y, x + 1] + src[y - 1, x] + src[y + 1, x] + src[y, x]) * 0.2

        @wp.kernel
        def stencil(  # type: ignore[no-untyped-def]
            src: wp.array3d(dtype=wp.float32), dst: wp.array3d(dtype=wp.float32), c0: float, c1: float
        ):
            k, j, i = wp.tid()
            z = k + 1
            y = j + 1
            x = i + 1
            dst[z, y, x] = (
                src[z + 1, y, x]
                + src[z - 1, y, x]
                + src[z, y + 1, x]
                + src[z, y - 1, x]
                + src[z, y, x + 1]
                + src[z, y, x - 1]
            ) * c1 - src[z, y, x] * c0

        _KERNELS["wp"] = {"blur": blur, "stencil": stencil}
    return _KERNELS["wp"]


TABLES = (taichi_kernels, warp_kernels)
PEER_NAMES = ("Taichi", "Warp")


def interior_grid(src: np.ndarray) -> tuple[int, ...]:
    """Warp's launch grid: one thread per interior point."""
    return tuple(n - 2 for n in src.shape)


# ---------------------------------------------------------------------------------------
# Rows


def bench_layout(ctx: Any) -> list[Any]:
    """``run.py``'s ``layout`` benchmark: the GPU-convention blur and stencil, and the ids' layout row."""
    harness = sys.modules[type(ctx).__module__]  # run.py, as __main__ or imported
    tiny = ctx.sizes.vadd < (1 << 16)
    side = 64 if tiny else 2048
    shape = (6, 10, 12) if tiny else (64, 256, 256)  # (nz, ny, nx)
    rows = [blur_row(ctx, harness, side), *stencil_rows(ctx, harness, shape)]
    return rows


def outputs(harness: Any, targets: Sequence[str], src: np.ndarray) -> dict[str, np.ndarray]:
    """The array each implementation writes: one for hpvm's host back ends, hand-written
    Numba and NumPy — the same addresses, whose placement alone moved a stencil 1.24× in
    one process (``run.py``, ``stencil_rows``) — and one each for a device back end and
    the peers (their own copies)."""
    host = src.copy()
    own = (*harness.DEVICE_TARGETS, *harness.PEERS)
    names = (*targets, harness.NUMBA, "NumPy", *harness.PEERS)
    return {name: src.copy() if name in own else host for name in names}


def blur_row(ctx: Any, harness: Any, side: int) -> Any:
    rng = np.random.default_rng(0)
    src = rng.random((side, side), dtype=np.float32)
    dst = outputs(harness, ctx.targets, src)
    harness.tracked(src, *{id(a): a for a in dst.values()}.values())

    def hpvm_impl(target: str) -> Any:
        return harness.Impl(lambda: launch(blur_root, (src, dst[target]), target), lambda: dst[target])

    def check(result: np.ndarray, reference: np.ndarray) -> None:
        np.testing.assert_allclose(result, reference, rtol=1e-6, atol=1e-6)

    row = harness.kernel_row(
        ctx,
        "blur 5-point 2-D, GPU convention (x the fastest index)",
        f"{side}²",
        {t: hpvm_impl(t) for t in ctx.targets},
        harness.Impl(lambda: baselines.blur_step(src, dst[harness.NUMBA]), lambda: dst[harness.NUMBA]),
        harness.Impl(lambda: baselines.blur_step_numpy(src, dst["NumPy"]), lambda: dst["NumPy"]),
        lambda: None,
        check,
        ((side - 2) ** 2, harness.INTERP_WEIGHT["stencil"]),
        peers=peer_impls(
            harness, "blur", {p: (src, dst[p]) for p in PEER_NAMES}, interior_grid(src), dst, TABLES
        ),
        traffic=8 * side * side,  # the image read once, the next written
    )
    peer_verdict(row, harness)
    return row


def stencil_rows(ctx: Any, harness: Any, shape: tuple[int, int, int]) -> list[Any]:
    rng = np.random.default_rng(0)
    src = rng.random(shape, dtype=np.float32)
    c0, c1 = kernels.STENCIL_C0, kernels.STENCIL_C1
    dst = outputs(harness, ctx.targets, src)
    harness.tracked(src, *{id(a): a for a in dst.values()}.values())

    def hpvm_impl(target: str) -> Any:
        return harness.Impl(
            lambda: launch(stencil_gpu_root, (src, dst[target], c0, c1), target), lambda: dst[target]
        )

    def check(result: np.ndarray, reference: np.ndarray) -> None:
        np.testing.assert_allclose(result, reference, rtol=1e-5, atol=1e-6)

    nz, ny, nx = shape
    interior = (nz - 2) * (ny - 2) * (nx - 2)
    row = harness.kernel_row(
        ctx,
        "stencil 7-point 3-D, GPU convention (x the fastest index), one launch",
        f"{nx}×{ny}×{nz}",
        {t: hpvm_impl(t) for t in ctx.targets},
        harness.Impl(
            lambda: baselines.stencil_step(src, dst[harness.NUMBA], c0, c1), lambda: dst[harness.NUMBA]
        ),
        harness.Impl(lambda: baselines.stencil_step_numpy(src, dst["NumPy"], c0, c1), lambda: dst["NumPy"]),
        lambda: None,
        check,
        (interior, harness.INTERP_WEIGHT["stencil"]),
        peers=peer_impls(
            harness,
            "stencil",
            {p: (src, dst[p], c0, c1) for p in PEER_NAMES},
            interior_grid(src),
            dst,
            TABLES,
        ),
        traffic=8 * nx * ny * nz,  # the grid read once, the next written
    )
    peer_verdict(row, harness)
    rows = [row]
    if "cpu" in ctx.targets:
        rows.append(layout_row(ctx, harness, src, dst, shape, check))
    return rows


def layout_row(ctx: Any, harness: Any, src: np.ndarray, dst: dict, shape: tuple, check: Any) -> Any:
    """The same stencil on the same arrays with x the *slowest* index (``kernels.stencil_root``:
    ``d[x, y, z]``) beside x the fastest (``d[z, y, x]``), both on cpu: only which instance id
    is which axis differs; the slower ÷ the faster ≤ 1.10×."""
    c0, c1 = kernels.STENCIL_C0, kernels.STENCIL_C1
    outer = src.copy()
    hpvm.track_memory(outer)
    runs = {
        "x inner": lambda: launch(stencil_gpu_root, (src, dst["cpu"], c0, c1), "cpu"),
        "x outer": lambda: launch(kernels.stencil_root, (src, outer, c0, c1), "cpu"),
    }
    for run in runs.values():
        run()
    check(outer, dst["cpu"])  # the same values, whichever id indexes which axis
    first = {name: harness.timed(run) for name, run in runs.items()}
    medians = ctx.interleaved(runs, first)
    ratio = max(medians.values()) / min(medians.values())
    nz, ny, nx = shape
    row = harness.Row(
        "stencil 7-point 3-D, ids' layout: x the slowest vs the fastest index",
        f"{nx}×{ny}×{nz}",
        target=f"≤ {harness.RATIO_TARGET:.2f}×",
    )
    row.hpvm["cpu"] = f"{harness.fmt_time(medians['x outer'])} / {harness.fmt_time(medians['x inner'])}"
    row.measure = f"slower/faster layout {ratio:.2f}×"
    row.verdict = harness.verdict(ratio <= harness.RATIO_TARGET)
    row.data = {"x_outer_s": medians["x outer"], "x_inner_s": medians["x inner"], "layout_ratio": ratio}
    return row
