"""What the interpreter's race detector costs: ``python benchmarks/interp_races.py [REPEATS]``.

The interpreter's rows of ``benchmarks/run.py --tiny`` — the same kernels (``kernels.py``)
at the same sizes — run with the detector off and on, alternating in one process so that
both see the same machine; each time is the best CPU time (``time.process_time``) of
REPEATS runs (default 9), after one untimed run. Prints a Markdown table.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import hpvm
import hpvm.backends.interp as interp

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kernels  # noqa: E402
from run import PRESETS  # noqa: E402


def programs() -> dict[str, Callable[[], object]]:
    sizes = PRESETS["tiny"]
    rng = np.random.default_rng(0)
    a, b = rng.random(sizes.vadd, dtype=np.float32), rng.random(sizes.vadd, dtype=np.float32)
    c = np.zeros_like(a)
    m = sizes.sgemm
    am, bm = rng.random((m, m), dtype=np.float32), rng.random((m, m), dtype=np.float32)
    cm = np.zeros((m, m), np.float32)
    z, y, x = sizes.stencil
    src = rng.random((x, y, z), dtype=np.float32)
    dst = src.copy()
    values, bins = kernels.histogram_example.make_values(sizes.histogram, 0), np.zeros(256, np.int32)
    data = kernels.reduction_example.make_data(sizes.reduction, 0)
    partials = np.zeros(sizes.reduction // kernels.REDUCTION_BLOCK, np.float32)
    for array in (a, b, c, am, bm, cm, src, dst, values, bins, data, partials):
        hpvm.track_memory(array)

    def histogram() -> None:
        bins[:] = 0
        kernels.histogram(values, bins, "interp")

    return {
        f"vector add, {sizes.vadd:,} instances": lambda: kernels.vector_add(a, b, c, "interp"),
        f"sgemm {m}³, 16×16 tiles": lambda: kernels.sgemm(
            am, bm, cm, np.float32(1.5), np.float32(0.5), "interp"
        ),
        f"stencil {x}×{y}×{z}, {sizes.stencil_iterations} launches": lambda: kernels.stencil(
            src, dst, sizes.stencil_iterations, "interp"
        ),
        f"histogram of {sizes.histogram:,} bytes, atomics": histogram,
        f"block reduction of {sizes.reduction:,} floats": lambda: kernels.block_sum(
            data, kernels.REDUCTION_BLOCK, partials, "interp"
        ),
    }


def main(repeats: int) -> None:
    hpvm.init()
    previous = interp.configure()
    best: dict[tuple[str, bool], float] = {}
    try:
        for name, run in programs().items():
            run()
            for _ in range(repeats):
                for races in (False, True):
                    interp.configure(races=races)
                    start = time.process_time()
                    run()
                    elapsed = time.process_time() - start
                    best[name, races] = min(best.get((name, races), elapsed), elapsed)
    finally:
        interp.configure(**previous)
        hpvm.cleanup()
    print("| program | detector off | detector on | on / off |")
    print("| --- | --- | --- | --- |")
    for name in dict.fromkeys(n for n, _ in best):
        off, on = best[name, False], best[name, True]
        print(f"| {name} | {off * 1e3:.0f} ms | {on * 1e3:.0f} ms | {on / off:.2f}× |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 9)
