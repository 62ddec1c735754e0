"""LLVM leaves on the ``cpu`` back end beside the same programs' Python leaves (issue 13's
rows): ``run.py --only llvm``, or ``python benchmarks/llvm_bench.py``.

Vector add, sgemm and the 3-D stencil are exported to HPVM IR in LLVM form
(``hpvm.llvm.to_hpvm_ir``), imported back (``from_hpvm_ir``: leaves are then LLVM
functions) and launched on ``cpu``; the original graphs (Python leaves) are launched on
``cpu`` beside them. Both results are checked against each other first; times are medians
of samples taken in turn, first (compiling) runs excluded, as many rounds as fit in about
``ROUND_BUDGET_S`` (7 to 31). The ratio is LLVM ÷ Python, the median of the rounds' ratios
(goal ≤ 1.10×: LLVM leaves are linked into the same Numba graph code, so the loops should
cost the same). The same programs also go through seed 004's PREPARE, LLVM's -O2 and
EXTRACT (``llvm.extract(llvm.optimize(llvm.prepare(root), 2))``) and run on ``cpu``: the
"extracted" column and its ratio to Python leaves. The last row: export and import of the largest example
(``examples/edge_detection.py``), in this process (export compiles its leaves with Numba
once; a second export reuses them).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import hpvm
from hpvm import llvm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernels  # noqa: E402
from orders import interleaved_times, round_ratio  # noqa: E402

TARGET_RATIO = 1.10
ROUND_BUDGET_S = 3.0  # seconds of rounds a program gets: more for the fast ones
MAX_ROUNDS = 31


def _programs(
    sizes: Any,
) -> list[tuple[str, str, Any, Callable[[Any], Callable[[], object]], Callable[[], np.ndarray]]]:
    """(title, size, Python root, run(root) -> a launch, result) of each program."""
    rng = np.random.default_rng(0)
    out: list[Any] = []

    n = sizes.vadd
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    c = np.zeros(n, dtype=np.float32)
    for arr in (a, b, c):
        hpvm.track_memory(arr)

    def vadd(root: Any) -> Callable[[], object]:
        return lambda: hpvm.wait(hpvm.launch(root, (a, b, c, n), target="cpu"))

    out.append(("vector add", f"{n:,} f32", kernels.vector_add_example.root, vadd, lambda: c.copy()))

    m = sizes.sgemm
    ma, mb = rng.standard_normal((m, m), dtype=np.float32), rng.standard_normal((m, m), dtype=np.float32)
    mc0 = rng.standard_normal((m, m), dtype=np.float32)
    mc = mc0.copy()
    for arr in (ma, mb, mc):
        hpvm.track_memory(arr)

    def sgemm(root: Any) -> Callable[[], object]:
        def run() -> None:
            mc[...] = mc0
            hpvm.wait(
                hpvm.launch(
                    root, (ma, mb, mc, np.float32(1.5), np.float32(0.5), kernels.SGEMM_TILE), target="cpu"
                )
            )

        return run

    out.append(
        (f"sgemm, tiled {kernels.SGEMM_TILE}²", f"{m}³", kernels.sgemm_example.root, sgemm, lambda: mc.copy())
    )

    shape, iterations = sizes.stencil, sizes.stencil_iterations
    grid = rng.random(shape, dtype=np.float32)
    src, dst = grid.copy(), grid.copy()
    for arr in (src, dst):
        hpvm.track_memory(arr)
    last: list[np.ndarray] = [src]

    def stencil(root: Any) -> Callable[[], object]:
        def run() -> None:
            src[...] = grid
            dst[...] = grid
            last[0] = kernels.stencil(src, dst, iterations, "cpu", root)

        return run

    nz, ny, nx = shape
    out.append(
        (
            f"stencil 7-point 3-D, {iterations} launches",
            f"{nx}×{ny}×{nz}",
            kernels.stencil_root,
            stencil,
            lambda: last[0].copy(),
        )
    )
    return out


def measure(sizes: Any, samples: int) -> list[dict[str, Any]]:
    """Each program: Python and LLVM leaves on cpu (medians, the rounds' ratios), checked
    equal first; at least ``samples`` rounds, more for a fast program (``ROUND_BUDGET_S``)."""
    results = []
    for title, size, root, run, result in _programs(sizes):
        imported = llvm.from_hpvm_ir(llvm.to_hpvm_ir(root))
        extracted = llvm.extract(llvm.optimize(llvm.prepare(root), 2))
        runs = {"python": run(root), "llvm": run(imported), "extracted": run(extracted)}
        runs["python"]()
        want = result()
        for other in ("llvm", "extracted"):
            runs[other]()
            np.testing.assert_allclose(result(), want, rtol=1e-5, atol=1e-5, err_msg=f"{title}: {other}")
        start = time.perf_counter()
        runs["python"]()  # warm: what a round of three costs, about
        rounds = max(samples, min(MAX_ROUNDS, int(ROUND_BUDGET_S / (3 * (time.perf_counter() - start)))))
        times = interleaved_times(runs, rounds)
        results.append(
            {
                "title": title,
                "size": size,
                **{name: statistics.median(ts) for name, ts in times.items()},
                "llvm_ratio": round_ratio(times, "llvm", "python"),
                "extracted_ratio": round_ratio(times, "extracted", "python"),
            }
        )
    return results


def export_import_times() -> dict[str, float]:
    """Export (first and second) and import of ``examples/edge_detection.py``'s root."""
    root = kernels.edge_example.root
    start = time.perf_counter()
    text = llvm.to_hpvm_ir(root)
    first = time.perf_counter() - start
    start = time.perf_counter()
    llvm.to_hpvm_ir(root)
    second = time.perf_counter() - start
    start = time.perf_counter()
    llvm.from_hpvm_ir(text)
    imported = time.perf_counter() - start
    return {"export_s": first, "export_again_s": second, "import_s": imported, "lines": text.count("\n")}


def bench_llvm(ctx: Any) -> list[Any]:
    """``run.py``'s ``llvm`` rows."""
    harness = sys.modules[type(ctx).__module__]
    Row, verdict, fmt_time = harness.Row, harness.verdict, harness.fmt_time
    rows = []
    if "cpu" not in ctx.targets:
        return [Row("LLVM leaves", "—", measure="not run: needs --targets cpu")]
    samples = max(ctx.repeat, 7)
    for r in measure(ctx.sizes, samples):
        row = Row(f"{r['title']}, LLVM leaves", r["size"], target=f"≤ {TARGET_RATIO:.2f}×")
        row.hpvm["cpu"] = (
            f"{fmt_time(r['llvm'])} (Python leaves {fmt_time(r['python'])}; "
            f"prepare → O2 → extract {fmt_time(r['extracted'])})"
        )
        row.measure = f"LLVM/Python {r['llvm_ratio']:.2f}×, extracted/Python {r['extracted_ratio']:.2f}×"
        row.verdict = verdict(max(r["llvm_ratio"], r["extracted_ratio"]) <= TARGET_RATIO)
        row.data = r
        rows.append(row)
    t = export_import_times()
    row = Row("llvm export + import, edge_detection", f"{t['lines']:,} lines of LLVM")
    row.hpvm["cpu"] = f"export {fmt_time(t['export_s'])}, import {fmt_time(t['import_s'])}"
    row.measure = f"export again {fmt_time(t['export_again_s'])} (leaves compiled once)"
    row.data = t
    rows.append(row)
    return rows


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (sgemm 256³)")
    parser.add_argument("--samples", type=int, default=9)
    ns = parser.parse_args()

    class Sizes:
        vadd = 1 << 24
        sgemm = 256 if ns.quick else 1024
        stencil = (32, 128, 128)
        stencil_iterations = 10

    hpvm.init()
    print(
        f"| program | size | Python leaves | LLVM leaves | prepare → O2 → extract | LLVM/Python | "
        f"extracted/Python (≤ {TARGET_RATIO}) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in measure(Sizes, ns.samples):
        print(
            f"| {r['title']} | {r['size']} | {r['python'] * 1e3:.2f} ms | {r['llvm'] * 1e3:.2f} ms | "
            f"{r['extracted'] * 1e3:.2f} ms | {r['llvm_ratio']:.2f}× | {r['extracted_ratio']:.2f}× |"
        )
    t = export_import_times()
    print(
        f"edge_detection ({t['lines']} lines): export {t['export_s']:.2f} s (again {t['export_again_s']:.3f} s), "
        f"import {t['import_s']:.3f} s"
    )
    hpvm.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
