"""hpvm's ``cuda`` back end on a real NVIDIA GPU beside hand-written numba-cuda kernels.

Why a script of its own: ``run.py``'s rows compare every back end with hand-written *CPU*
Numba; a user with a GPU would instead write the kernel in numba-cuda (or call a vendor
library). Each row here runs the same computation as an hpvm graph on ``cuda`` and as a
numba-cuda kernel a GPU programmer would write (a thread per element, x the fastest index,
shared memory where the algorithm has it), **interleaved** in one process (round-robin,
order alternating), and reports the medians and their ratio, beside the physical limit:
the device-to-device copy bandwidth measured in the same run for memory-bound rows, and
cuBLAS (through CuPy, where installed) for sgemm.

Both sides keep their data on the device between samples: hpvm's arrays are tracked
(``hpvm.track_memory``) and stay resident across launches; the numba-cuda side uses device
arrays. A sample is launch + wait (``hpvm.wait``; ``cuda.synchronize()``), so the host's
share of a launch counts on both sides. Every row checks hpvm's result against the
numba-cuda kernel's before timing.

Run on a machine with an NVIDIA GPU (``NUMBA_ENABLE_CUDASIM=0``, the default outside the
tests): ``python benchmarks/cuda_device.py [--out DIR]``. ``--tiny`` runs sizes the CUDA
simulator manages (``NUMBA_ENABLE_CUDASIM=1``): it checks the harness, not speed.
BENCHMARKS.md records the results (section "cuda on a real GPU").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kernels  # noqa: E402  (benchmarks/)
import layout  # noqa: E402  (benchmarks/)

import hpvm  # noqa: E402

TARGET = "cuda"


@dataclass
class Sizes:
    vadd: int = 1 << 26
    sgemm: int = 2048
    blur: int = 8192
    stencil: tuple[int, int, int] = (512, 512, 256)  # nx, ny, nz
    histogram: int = 1 << 24
    reduction: int = 1 << 24
    launch: int = 64
    samples: int = 15
    copy_bytes: int = 1 << 30


TINY = Sizes(
    vadd=1 << 10,
    sgemm=32,
    blur=34,
    stencil=(10, 10, 6),
    histogram=1 << 10,
    reduction=1 << 10,
    launch=64,
    samples=2,
    copy_bytes=1 << 16,
)


@dataclass
class Row:
    name: str
    size: str
    hpvm_s: float = math.nan
    anchor_s: float = math.nan
    anchor: str = "numba-cuda"
    limit: str = ""
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.hpvm_s / self.anchor_s


def interleaved(sides: dict[str, Callable[[], None]], samples: int) -> dict[str, float]:
    """Median seconds of each side, sampled round-robin with the order alternating."""
    for run in sides.values():  # warm: compile, first copies
        run()
        run()
    times: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for k in range(samples):
        for name in names if k % 2 == 0 else reversed(names):
            start = time.perf_counter()
            sides[name]()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


# ---------------------------------------------------------------------------------------
# The numba-cuda kernels a GPU programmer would write


def numba_kernels() -> dict[str, Any]:
    import cuda_kernels
    from numba import cuda

    names = ("vadd", "sgemm", "blur", "stencil", "histogram", "block_sum")
    return {"cuda": cuda, **{name: getattr(cuda_kernels, name) for name in names}}


def blocks(n: int, threads: int) -> int:
    return (n + threads - 1) // threads


# ---------------------------------------------------------------------------------------
# Rows


def copy_bandwidth(nb: dict[str, Any], nbytes: int, samples: int) -> float:
    """Device-to-device copy, bytes read + written per second: the memory-bound ceiling."""
    cuda = nb["cuda"]
    src = cuda.to_device(np.ones(nbytes // 4, np.float32))
    dst = cuda.device_array_like(src)

    def copy() -> None:
        dst.copy_to_device(src)
        cuda.synchronize()

    seconds = interleaved({"copy": copy}, samples)["copy"]
    return 2 * nbytes / seconds


def memory_limit(row: Row, traffic: int, bandwidth: float) -> None:
    row.limit = f"{traffic / bandwidth * 1e3:.3f} ms at the copy bandwidth"
    row.extra["limit_s"] = traffic / bandwidth
    row.extra["hpvm_GBps"] = traffic / row.hpvm_s / 1e9


def vadd_row(nb: dict[str, Any], n: int, samples: int, bandwidth: float) -> Row:
    cuda = nb["cuda"]
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(n, dtype=np.float32) for _ in range(2))
    c = np.zeros(n, np.float32)
    for array in (a, b, c):
        hpvm.track_memory(array)
    da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.device_array(n, np.float32)

    def numba() -> None:
        nb["vadd"][blocks(n, 256), 256](da, db, dc)
        cuda.synchronize()

    times = interleaved({"hpvm": lambda: kernels.vector_add(a, b, c, TARGET), "numba": numba}, samples)
    np.testing.assert_array_equal(hpvm.request_memory(c), dc.copy_to_host())
    row = Row("vector add", f"2^{n.bit_length() - 1} f32", times["hpvm"], times["numba"])
    memory_limit(row, 12 * n, bandwidth)
    return row


def sgemm_row(nb: dict[str, Any], n: int, samples: int) -> Row:
    cuda = nb["cuda"]
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    c0 = rng.standard_normal((n, n), dtype=np.float32)
    alpha, beta = np.float32(1.5), np.float32(0.0)  # beta 0: repeated runs give one answer
    c = c0.copy()
    for array in (a, b, c):
        hpvm.track_memory(array)
    da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.to_device(c0)
    tile = kernels.SGEMM_TILE

    def numba() -> None:
        nb["sgemm"][(n // tile, n // tile), (tile, tile)](da, db, dc, alpha, beta)
        cuda.synchronize()

    times = interleaved(
        {"hpvm": lambda: kernels.sgemm(a, b, c, alpha, beta, TARGET), "numba": numba}, samples
    )
    np.testing.assert_allclose(hpvm.request_memory(c), dc.copy_to_host(), rtol=1e-3, atol=1e-2)
    row = Row("sgemm (examples/sgemm.py: x = row)", f"{n}³ f32, tile {tile}", times["hpvm"], times["numba"])
    flops = 2 * n**3
    row.extra["hpvm_GFLOPs"] = flops / times["hpvm"] / 1e9
    row.extra["numba_GFLOPs"] = flops / times["numba"] / 1e9
    try:
        import cupy
    except ImportError:
        row.limit = "cuBLAS: not run (CuPy is not installed)"
        return row
    ca, cb = cupy.asarray(a), cupy.asarray(b)

    def cublas() -> None:
        cupy.matmul(ca, cb)
        cupy.cuda.Device().synchronize()

    seconds = interleaved({"cublas": cublas}, samples)["cublas"]
    row.limit = f"cuBLAS {flops / seconds / 1e12:.1f} TFLOP/s ({seconds * 1e3:.3f} ms)"
    row.extra["cublas_s"] = seconds
    return row


def blur_row(nb: dict[str, Any], side: int, samples: int, bandwidth: float) -> Row:
    cuda = nb["cuda"]
    src = np.random.default_rng(0).standard_normal((side, side), dtype=np.float32)
    dst = src.copy()
    for array in (src, dst):
        hpvm.track_memory(array)
    dsrc, ddst = cuda.to_device(src), cuda.to_device(src)
    grid = (blocks(side - 2, 32), blocks(side - 2, 8))

    def numba() -> None:
        nb["blur"][grid, (32, 8)](dsrc, ddst)
        cuda.synchronize()

    times = interleaved(
        {"hpvm": lambda: layout.launch(layout.blur_root, (src, dst), TARGET), "numba": numba}, samples
    )
    np.testing.assert_allclose(hpvm.request_memory(dst), ddst.copy_to_host(), rtol=1e-6, atol=1e-6)
    row = Row("blur 5-point 2-D, GPU convention", f"{side}² f32", times["hpvm"], times["numba"])
    memory_limit(row, 8 * side * side, bandwidth)
    return row


def stencil_rows(
    nb: dict[str, Any], shape: tuple[int, int, int], samples: int, bandwidth: float
) -> list[Row]:
    cuda = nb["cuda"]
    nx, ny, nz = shape
    src = np.random.default_rng(0).standard_normal((nz, ny, nx), dtype=np.float32)
    dst = src.copy()
    for array in (src, dst):
        hpvm.track_memory(array)
    dsrc, ddst = cuda.to_device(src), cuda.to_device(src)
    grid = (blocks(nx - 2, 32), blocks(ny - 2, 4), blocks(nz - 2, 2))
    c0, c1 = kernels.STENCIL_C0, kernels.STENCIL_C1

    def numba() -> None:
        nb["stencil"][grid, (32, 4, 2)](dsrc, ddst, c0, c1)
        cuda.synchronize()

    args = (src, dst, c0, c1)
    times = interleaved(
        {"hpvm": lambda: layout.launch(layout.stencil_gpu_root, args, TARGET), "numba": numba}, samples
    )
    np.testing.assert_allclose(hpvm.request_memory(dst), ddst.copy_to_host(), rtol=1e-5, atol=1e-5)
    size = f"{nx}×{ny}×{nz} f32"
    gpu = Row("stencil 7-point 3-D, GPU convention", size, times["hpvm"], times["numba"])
    memory_limit(gpu, 8 * nx * ny * nz, bandwidth)
    # Parboil's leaf as kernels.py writes it: x is the *outer* index (d[x, y, z] of a (nx, ny, nz) grid).
    parboil_src = np.ascontiguousarray(src.transpose(2, 1, 0))
    parboil_dst = parboil_src.copy()
    for array in (parboil_src, parboil_dst):
        hpvm.track_memory(array)
    parboil_args = (parboil_src, parboil_dst, c0, c1)
    times = interleaved(
        {"hpvm": lambda: layout.launch(kernels.stencil_root, parboil_args, TARGET), "numba": numba}, samples
    )
    np.testing.assert_allclose(
        hpvm.request_memory(parboil_dst).transpose(2, 1, 0), ddst.copy_to_host(), rtol=1e-5, atol=1e-5
    )
    parboil = Row("stencil 7-point 3-D, x outer (kernels.stencil_point)", size, times["hpvm"], times["numba"])
    parboil.note = "numba-cuda side: the GPU-convention kernel on the same grid"
    memory_limit(parboil, 8 * nx * ny * nz, bandwidth)
    return [gpu, parboil]


def histogram_row(nb: dict[str, Any], n: int, samples: int) -> Row:
    cuda = nb["cuda"]
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import histogram as example

    values = example.make_values(n, 0)
    bins = np.zeros(256, np.int32)
    for array in (values, bins):
        hpvm.track_memory(array)
    dvalues, dbins = cuda.to_device(values), cuda.to_device(np.zeros(256, np.int32))

    def numba() -> None:
        nb["histogram"][blocks(n, 256), 256](dvalues, dbins)
        cuda.synchronize()

    kernels.histogram(values, bins, TARGET)
    numba()
    np.testing.assert_array_equal(hpvm.request_memory(bins), dbins.copy_to_host())
    times = interleaved({"hpvm": lambda: kernels.histogram(values, bins, TARGET), "numba": numba}, samples)
    return Row("histogram, atomics", f"2^{n.bit_length() - 1} u8 → 256 bins", times["hpvm"], times["numba"])


def reduction_row(nb: dict[str, Any], n: int, samples: int, bandwidth: float) -> Row:
    cuda = nb["cuda"]
    block = kernels.REDUCTION_BLOCK
    data = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    partials = np.zeros(n // block, np.float32)
    for array in (data, partials):
        hpvm.track_memory(array)
    ddata, dpartials = cuda.to_device(data), cuda.device_array(n // block, np.float32)

    def numba() -> None:
        nb["block_sum"][n // block, block](ddata, dpartials)
        cuda.synchronize()

    times = interleaved(
        {"hpvm": lambda: kernels.block_sum(data, block, partials, TARGET), "numba": numba}, samples
    )
    np.testing.assert_allclose(hpvm.request_memory(partials), dpartials.copy_to_host(), rtol=1e-5, atol=1e-4)
    row = Row(
        "block reduction, barriers + shared buffer",
        f"2^{n.bit_length() - 1} f32, block {block}",
        times["hpvm"],
        times["numba"],
    )
    memory_limit(row, 4 * n, bandwidth)
    return row


def launch_row(nb: dict[str, Any], n: int, samples: int) -> Row:
    cuda = nb["cuda"]
    a, b, c = (np.full(n, 1.5, np.float32) for _ in range(3))
    for array in (a, b, c):
        hpvm.track_memory(array)
    da, db, dc = cuda.to_device(a), cuda.to_device(b), cuda.device_array(n, np.float32)

    def numba() -> None:
        nb["vadd"][1, n](da, db, dc)
        cuda.synchronize()

    times = interleaved({"hpvm": lambda: kernels.vector_add(a, b, c, TARGET), "numba": numba}, samples * 20)
    np.testing.assert_array_equal(hpvm.request_memory(c), dc.copy_to_host())
    return Row("launch + wait, one small kernel", f"vector add, {n} f32", times["hpvm"], times["numba"])


# ---------------------------------------------------------------------------------------


def device_label() -> str:
    from numba import cuda

    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return "numba-cuda simulator"
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    return f"{name} (compute capability {'.'.join(map(str, device.compute_capability))})"


def fmt(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.3f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="simulator sizes: checks the harness")
    parser.add_argument("--out", type=Path, default=None, help="write results.json here")
    args = parser.parse_args(argv)
    sizes = TINY if args.tiny else Sizes()
    nb = numba_kernels()
    hpvm.init()
    rows: list[Row] = []
    try:
        bandwidth = copy_bandwidth(nb, sizes.copy_bytes, sizes.samples)
        steps: dict[str, Callable[[], list[Row]]] = {
            "vector add": lambda: [vadd_row(nb, sizes.vadd, sizes.samples, bandwidth)],
            "sgemm": lambda: [sgemm_row(nb, sizes.sgemm, sizes.samples)],
            "blur": lambda: [blur_row(nb, sizes.blur, sizes.samples, bandwidth)],
            "stencil": lambda: stencil_rows(nb, sizes.stencil, sizes.samples, bandwidth),
            "histogram": lambda: [histogram_row(nb, sizes.histogram, sizes.samples)],
            "block reduction": lambda: [reduction_row(nb, sizes.reduction, sizes.samples, bandwidth)],
            "launch + wait": lambda: [launch_row(nb, sizes.launch, sizes.samples)],
        }
        for name, step in steps.items():
            try:
                rows.extend(step())
            except Exception as error:  # a row that fails is reported, the others still run
                rows.append(Row(name, "", note=f"FAILED: {type(error).__name__}: {error}"))
            if rows:
                print(json.dumps(rows[-1].__dict__, default=str), flush=True)
    finally:
        hpvm.cleanup()
    print(f"\ndevice: {device_label()}; copy bandwidth {bandwidth / 1e9:.0f} GB/s (read + write)")
    print("| row | size | hpvm cuda | numba-cuda | ratio | limit | note |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print(
            f"| {row.name} | {row.size} | {fmt(row.hpvm_s)} | {fmt(row.anchor_s)} | {row.ratio:.2f}× | {row.limit} | {row.note} |"
        )
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "cuda_device.json").write_text(
            json.dumps(
                {"device": device_label(), "bandwidth": bandwidth, "rows": [r.__dict__ for r in rows]},
                default=str,
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
