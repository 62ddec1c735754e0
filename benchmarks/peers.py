"""hpvm beside Taichi and Warp on the same kernels (issue 24, item 0: "hpvm ahead of both on every row").

Rows of ``run.py --only peers``, each kernel written once per system the way its users
write it — one instance / thread / loop iteration per output element, on NumPy arrays in
place — and hand-written Numba as the anchor:

- ``saxpy`` y = α·x + y, 2^24 float32 (``memory_bound.saxpy_root``: one instance per element);
- ``matmul`` 384³ float32, one instance per element of C in the GPU convention
  (``c[y, x] = Σ_k a[y, k] · b[k, x]``, x the fastest index), Numba the same loops;
- ``histogram`` 2^22 bytes into 256 bins with atomic adds (``examples/histogram.py``; Numba:
  private bins per thread, as a Numba user writes it — Numba has no atomics).

Taichi runs over all cores (``ti.cpu``), Warp's CPU back end on one thread (what it does).
Every result is checked against Numba's before anything is timed. hpvm, Numba and NumPy are
sampled in one set of rounds, the peers in rounds of their own with hpvm cpu and Numba
again (``run.kernel_row``); a peer's time over hpvm's is taken in those rounds. The target:
hpvm cpu ahead of every installed peer (its time over hpvm's > 1.0), and ≤ 1.10× Numba. The
peers are pyproject's ``bench`` extra, installed by ``make bench``; a row says "not
installed" without them. ``layout.py``'s GPU-convention rows use the same peers and verdict.
"""

# No ``from __future__ import annotations``: Taichi and Warp read their kernels' annotations
# as values.

import sys
from collections.abc import Callable
from typing import Any

import baselines
import kernels
import memory_bound
import numba
import numpy as np
from numba import prange

import hpvm

# ---------------------------------------------------------------------------------------
# The peers, loaded once


_PEERS: dict[str, Any] = {}


def peers() -> dict[str, Any]:
    """``{"Taichi": module or None, "Warp": module or None}``, initialised once."""
    if not _PEERS:
        try:
            import taichi as ti

            ti.init(arch=ti.cpu, log_level=ti.WARN)
            _PEERS["Taichi"] = ti
        except Exception:  # not installed, or no usable CPU back end
            _PEERS["Taichi"] = None
        try:
            import warp as wp

            wp.config.quiet = True
            wp.init()
            _PEERS["Warp"] = wp
        except Exception:
            _PEERS["Warp"] = None
    return _PEERS


def not_installed(row: Any) -> None:
    """Name the peers that are missing in the row's cells."""
    for name, module in peers().items():
        row.peers.setdefault(name, "not installed" if module is None else "—")


def peer_verdict(row: Any, harness: Any) -> None:
    """The row's measure and verdict: ≤ 1.10× Numba and ahead of every installed peer.

    Each peer's time over hpvm cpu's is taken in the peers' own rounds, where hpvm cpu and
    Numba run again beside them (``run.kernel_row``): the same minutes, and none of the
    row's NumPy (BLAS's threads spin after its call and slow whatever runs next).
    """
    not_installed(row)
    if "ratio" not in row.data:
        return
    over = {p: row.data[p + "_per_cpu"] for p in row.peers if p + "_per_cpu" in row.data}
    row.data["peer_over_hpvm"] = over
    if not over:
        return
    row.measure += "; " + ", ".join(f"{p} {v:.2f}× hpvm cpu's time" for p, v in over.items())
    row.target = f"≤ {harness.RATIO_TARGET:.2f}× Numba; ahead of Taichi and Warp"
    row.verdict = harness.verdict(row.data["ratio"] <= harness.RATIO_TARGET and min(over.values()) > 1.0)


def runner(run: Callable[[], object], sync: Callable[[], object]) -> Callable[[], None]:
    """A peer's call followed by its synchronisation (both are asynchronous)."""

    def call() -> None:
        run()
        sync()

    return call


# ---------------------------------------------------------------------------------------
# matmul: one instance per element of C, the GPU convention


@hpvm.leaf(ins=("a", "b"), outs=("c",))
def matmul_point(a: hpvm.f32[:, :], b: hpvm.f32[:, :], c: hpvm.f32[:, :]):
    """c[y, x] = Σ_k a[y, k] b[k, x]; x = instance id x, the fastest index of c and b."""
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    acc = np.float32(0.0)
    for k in range(a.shape[1]):
        acc += a[y, k] * b[k, x]
    c[y, x] = acc


@hpvm.internal()
def matmul_root(a: hpvm.f32[:, :], b: hpvm.f32[:, :], c: hpvm.f32[:, :]):
    node = hpvm.create_node_2d(matmul_point, c.shape[1], c.shape[0])
    for port in range(3):
        hpvm.bind_in(node, port, port)


@numba.njit(parallel=True, cache=True, nogil=True)
def matmul_numba(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """The same loops by hand: rows in parallel, x inner, the sum over k per element."""
    for y in prange(c.shape[0]):
        for x in range(c.shape[1]):
            acc = np.float32(0.0)
            for k in range(a.shape[1]):
                acc += a[y, k] * b[k, x]
            c[y, x] = acc


# ---------------------------------------------------------------------------------------
# The peers' kernels (built on first use)

_KERNELS: dict[str, dict[str, Any]] = {}


def taichi_kernels(ti: Any) -> dict[str, Any]:
    if "ti" not in _KERNELS:
        f32_1d = ti.types.ndarray(dtype=ti.f32, ndim=1)
        f32_2d = ti.types.ndarray(dtype=ti.f32, ndim=2)

        @ti.kernel
        def saxpy(x: f32_1d, y: f32_1d, alpha: ti.f32):  # type: ignore[no-untyped-def]
            for i in range(x.shape[0]):
                y[i] = alpha * x[i] + y[i]

        @ti.kernel
        def matmul(a: f32_2d, b: f32_2d, c: f32_2d):  # type: ignore[no-untyped-def]
            for y, x in ti.ndrange(c.shape[0], c.shape[1]):
                acc = 0.0
                for k in range(a.shape[1]):
                    acc += a[y, k] * b[k, x]
                c[y, x] = acc

        @ti.kernel
        def histogram(  # type: ignore[no-untyped-def]
            values: ti.types.ndarray(dtype=ti.u8, ndim=1), bins: ti.types.ndarray(dtype=ti.i32, ndim=1)
        ):
            for i in range(values.shape[0]):
                ti.atomic_add(bins[ti.i32(values[i]) * bins.shape[0] // 256], 1)

        _KERNELS["ti"] = {"saxpy": saxpy, "matmul": matmul, "histogram": histogram}
    return _KERNELS["ti"]


def warp_kernels(wp: Any) -> dict[str, Any]:
    if "wp" not in _KERNELS:

        @wp.kernel
        def saxpy(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32), alpha: float):  # type: ignore[no-untyped-def]
            i = wp.tid()
            y[i] = alpha * x[i] + y[i]

        @wp.kernel
        def matmul(  # type: ignore[no-untyped-def]
            a: wp.array2d(dtype=wp.float32), b: wp.array2d(dtype=wp.float32), c: wp.array2d(dtype=wp.float32)
        ):
            y, x = wp.tid()
            acc = float(0.0)  # noqa: UP018 (Warp: a variable the loop may change, not a constant)
            for k in range(a.shape[1]):
                acc += a[y, k] * b[k, x]
            c[y, x] = acc

        @wp.kernel
        def histogram(values: wp.array(dtype=wp.uint8), bins: wp.array(dtype=wp.int32)):  # type: ignore[no-untyped-def]
            i = wp.tid()
            wp.atomic_add(bins, int(values[i]) * bins.shape[0] // 256, 1)

        _KERNELS["wp"] = {"saxpy": saxpy, "matmul": matmul, "histogram": histogram}
    return _KERNELS["wp"]


def peer_impls(
    harness: Any, kernel: str, args: dict[str, tuple], dims: tuple[int, ...], result: dict, tables: Any = None
) -> dict:
    """The installed peers' ``Impl`` of ``kernel``: ``args[peer]`` are its NumPy arrays (and
    scalars), ``dims`` Warp's launch grid, ``result[peer]`` the array it writes; ``tables``
    the (Taichi, Warp) kernel tables to take ``kernel`` from (this module's by default)."""
    taichi_table, warp_table = tables or (taichi_kernels, warp_kernels)
    impls = {}
    found = peers()
    if found["Taichi"] is not None:
        ti = found["Taichi"]
        tk = taichi_table(ti)[kernel]
        ti_args = args["Taichi"]
        impls["Taichi"] = harness.Impl(runner(lambda: tk(*ti_args), ti.sync), lambda: result["Taichi"])
    if found["Warp"] is not None:
        wp = found["Warp"]
        wk = warp_table(wp)[kernel]
        wp_args = [
            wp.array(
                v, dtype=wp.dtype_from_numpy(v.dtype), device="cpu", copy=False
            )  # the NumPy arrays themselves
            if isinstance(v, np.ndarray)
            else float(v)
            for v in args["Warp"]
        ]
        impls["Warp"] = harness.Impl(
            runner(lambda: wp.launch(wk, dim=dims, inputs=wp_args, device="cpu"), wp.synchronize),
            lambda: result["Warp"],
        )
    return impls


def launch(root: Any, args: tuple, target: str) -> None:
    """One launch of ``root`` on ``target``, waited for (also ``layout.py``'s, and through it
    ``cuda_device.py``'s)."""
    hpvm.wait(hpvm.launch(root, args, target=target))


# ---------------------------------------------------------------------------------------
# Rows


def bench_peers(ctx: Any) -> list[Any]:
    """``run.py``'s ``peers`` benchmark: saxpy, matmul, histogram beside Taichi and Warp."""
    harness = sys.modules[type(ctx).__module__]  # run.py, as __main__ or imported
    tiny = ctx.sizes.vadd < (1 << 16)
    return [
        saxpy_row(ctx, harness, 1 << 10 if tiny else 1 << 24),
        matmul_row(ctx, harness, 16 if tiny else 384),
        histogram_row(ctx, harness, 1 << 10 if tiny else 1 << 22),
    ]


def names(ctx: Any, harness: Any) -> tuple[str, ...]:
    return (*ctx.targets, harness.NUMBA, "NumPy", *peers())


def saxpy_row(ctx: Any, harness: Any, n: int) -> Any:
    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    y0 = rng.random(n, dtype=np.float32)
    alpha = memory_bound.SCALE
    ys = {name: y0.copy() for name in names(ctx, harness)}
    harness.tracked(x, *ys.values())

    def reset() -> None:  # saxpy updates y in place: every side starts from y0 when checked
        for y in ys.values():
            y[...] = y0

    def check(result: np.ndarray, reference: np.ndarray) -> None:
        np.testing.assert_allclose(result, reference, rtol=1e-6, atol=1e-6)

    def numpy_saxpy() -> None:
        ys["NumPy"] += alpha * x

    row = harness.kernel_row(
        ctx,
        "peers: saxpy y = α·x + y",
        f"2^{n.bit_length() - 1} f32",
        {
            t: harness.Impl(
                lambda t=t: launch(memory_bound.saxpy_root, (x, ys[t], alpha), t), lambda t=t: ys[t]
            )
            for t in ctx.targets
        },
        harness.Impl(lambda: baselines.saxpy(alpha, x, ys[harness.NUMBA]), lambda: ys[harness.NUMBA]),
        harness.Impl(numpy_saxpy, lambda: ys["NumPy"]),
        reset,
        check,
        (n, harness.INTERP_WEIGHT["vadd"]),
        peers=peer_impls(harness, "saxpy", {p: (x, ys[p], alpha) for p in peers()}, (n,), ys),
        traffic=12.0 * n,
    )
    peer_verdict(row, harness)
    return row


def matmul_row(ctx: Any, harness: Any, n: int) -> Any:
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    cs = {name: np.zeros((n, n), dtype=np.float32) for name in names(ctx, harness)}
    harness.tracked(a, b, *cs.values())

    def check(result: np.ndarray, reference: np.ndarray) -> None:
        np.testing.assert_allclose(result, reference, rtol=1e-4, atol=1e-4)

    def numpy_matmul() -> None:
        np.matmul(a, b, out=cs["NumPy"])

    row = harness.kernel_row(
        ctx,
        "peers: matmul, one instance per element of C (GPU convention)",
        f"{n}³ f32",
        {
            t: harness.Impl(lambda t=t: launch(matmul_root, (a, b, cs[t]), t), lambda t=t: cs[t])
            for t in ctx.targets
        },
        harness.Impl(lambda: matmul_numba(a, b, cs[harness.NUMBA]), lambda: cs[harness.NUMBA]),
        harness.Impl(numpy_matmul, lambda: cs["NumPy"]),
        lambda: None,
        check,
        (n * n * n, harness.INTERP_WEIGHT["sgemm_per_k"]),
        numpy_label="BLAS: other algorithm",
        peers=peer_impls(harness, "matmul", {p: (a, b, cs[p]) for p in peers()}, (n, n), cs),
        flops=2.0 * n**3,
    )
    peer_verdict(row, harness)
    return row


def histogram_row(ctx: Any, harness: Any, n: int) -> Any:
    values = kernels.histogram_example.make_values(n, 0)
    bins = {name: np.zeros(256, dtype=np.int32) for name in names(ctx, harness)}
    harness.tracked(values, *bins.values())

    def reset() -> None:  # each run adds into its bins: zeroed before every checked run
        for b in bins.values():
            b[...] = 0

    def check(result: np.ndarray, reference: np.ndarray) -> None:
        np.testing.assert_array_equal(result, reference)

    def zeroed(run: Callable[[], object], out: np.ndarray) -> Callable[[], None]:
        def call() -> None:
            out[...] = 0
            run()

        return call

    peer_runs = peer_impls(harness, "histogram", {p: (values, bins[p]) for p in peers()}, (n,), bins)
    row = harness.kernel_row(
        ctx,
        "peers: histogram, atomics",
        f"2^{n.bit_length() - 1} u8, 256 bins",
        {
            t: harness.Impl(
                zeroed(lambda t=t: kernels.histogram(values, bins[t], t), bins[t]), lambda t=t: bins[t]
            )
            for t in ctx.targets
        },
        harness.Impl(
            zeroed(lambda: baselines.histogram_private(values, bins[harness.NUMBA]), bins[harness.NUMBA]),
            lambda: bins[harness.NUMBA],
        ),
        harness.Impl(
            zeroed(lambda: baselines.histogram_numpy(values, bins["NumPy"]), bins["NumPy"]),
            lambda: bins["NumPy"],
        ),
        reset,
        check,
        (n, harness.INTERP_WEIGHT["histogram"]),
        numpy_label="bincount",
        peers={p: harness.Impl(zeroed(impl.run, bins[p]), impl.result) for p, impl in peer_runs.items()},
        traffic=float(n),
    )
    peer_verdict(row, harness)
    return row
