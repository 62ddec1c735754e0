"""Seed 004's PREPARE and EXTRACT on the largest example (``examples/edge_detection.py``):
``run.py --only llvmpar``, or ``python benchmarks/llvmpar_bench.py``.

Rows: ``llvm.prepare`` (first, which compiles the leaves with Numba, and again, which reuses
them), ``llvm.optimize`` at -O2 of the prepared text, and ``llvm.extract`` of the prepared
and of the optimized text — each the median of a few runs in this process, after the first
(compiling) prepare. The extracted graph is checked to print like the original first.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hpvm import llvm
from hpvm.ir.printer import print_program

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernels  # noqa: E402


def _median(fn: Callable[[], object], samples: int) -> float:
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def prepare_extract_times(samples: int = 5) -> dict[str, Any]:
    """Seconds of each step on edge detection's root, and the sizes of the texts."""
    root = kernels.edge_example.root
    start = time.perf_counter()
    prepared = llvm.prepare(root)
    first = time.perf_counter() - start
    optimized = llvm.optimize(prepared, 2)
    extracted = llvm.extract(optimized)
    assert print_program(extracted, bodies=False) == print_program(root, bodies=False)
    return {
        "prepare_first_s": first,
        "prepare_s": _median(lambda: llvm.prepare(root), samples),
        "optimize_o2_s": _median(lambda: llvm.optimize(prepared, 2), samples),
        "extract_s": _median(lambda: llvm.extract(prepared), samples),
        "extract_o2_s": _median(lambda: llvm.extract(optimized), samples),
        "lines": prepared.count("\n"),
        "lines_o2": optimized.count("\n"),
        "nodes": len(root.graph.nodes),
    }


def bench_llvmpar(ctx: Any) -> list[Any]:
    """``run.py``'s ``llvmpar`` rows (no back end runs: LLVM's and our own time only)."""
    harness = sys.modules[type(ctx).__module__]
    Row, fmt_time = harness.Row, harness.fmt_time
    t = prepare_extract_times(max(3, ctx.repeat))
    size = f"{t['lines']:,} lines of LLVM ({t['lines_o2']:,} after -O2)"
    rows = []
    for title, cell, note in (
        (
            "llvm.prepare, edge_detection",
            t["prepare_s"],
            f"first {fmt_time(t['prepare_first_s'])} (Numba compiles the leaves)",
        ),
        ("llvm.optimize -O2 of the prepared IR", t["optimize_o2_s"], "LLVM's own pipeline"),
        ("llvm.extract, edge_detection", t["extract_s"], "prepared, not optimized"),
        ("llvm.extract after -O2, edge_detection", t["extract_o2_s"], "prints like the original (checked)"),
    ):
        row = Row(title, size)
        row.hpvm["cpu"] = fmt_time(cell)
        row.measure = note
        row.data = t
        rows.append(row)
    return rows


def main() -> int:
    t = prepare_extract_times()
    print(
        f"edge_detection ({t['lines']} lines prepared, {t['lines_o2']} after -O2): prepare {t['prepare_s']:.3f} s "
        f"(first {t['prepare_first_s']:.2f} s), optimize -O2 {t['optimize_o2_s']:.3f} s, extract "
        f"{t['extract_s']:.3f} s, extract after -O2 {t['extract_o2_s']:.3f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
