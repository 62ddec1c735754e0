"""``python benchmarks/hbir.py``: HBIR programs on the ``cpu`` back end beside the same
algorithms hand-written with Numba (issue 12's benchmark rows; docs/hbir.md records them).

- vector add: 2^24 ints over a 4×4 group, each tile adding its block (``iterator<n, L, x, y>``
  with ``layout L { block; }``); the Numba version is a ``prange`` over the 16 tiles, each
  adding the same block.
- matrix multiply: 512³ float32, 2-D blocked over the 4×4 group (tile (x, y) computes rows
  x·128… and columns y·128… of C in i-k-j order); the Numba version is a ``prange`` over
  the 16 tiles running the same loops.

Each HBIR result is checked against the Numba one before timing; the first (compiling)
runs are not timed; times are medians of samples taken in turn. The HBIR time is
``hpvm.launch`` + ``wait`` of the lowered graph on arrays tracked once (what a program
that runs many times pays); ``program.run`` (which also copies the inputs and makes the
outputs) is shown beside it. Compile time is parse + check + lower + the first launch.
Usage: ``python benchmarks/hbir.py [--quick] [--samples N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numba
import numpy as np
from numba import prange

import hpvm
from hpvm import hbir

TARGET_RATIO = 1.25

HEAD = """\
target { memory g[4] { size 8G; width 8B; }; tile t[4][4] { memory l { size 16K; width 8B; }; }; }
config { group tg[target.t.x_max][target.t.y_max] { tile target.t[x][y]; }; }
"""

VADD = (
    HEAD
    + """\
data {
    n = {N};
    layout L { global; block; };
    A: int[n] = block[4][4] { target.g[x][y]; L; host; };
    B: int[n] = block[4][4] { target.g[x][y]; L; host; };
    C: int[n] = block[4][4] { target.g[x][y]; L; device; };
}
code {
    config.tg[x][y] {
        for (int i in iterator<n, L, x, y>) { C[i] = A[i] + B[i]; }
    }
}
"""
)

MATMUL = (
    HEAD
    + """\
data {
    n = {N};
    in A : float[n][n] { location : config.tg, layout : block }
    in B : float[n][n] { location : config.tg, layout : replicated }
    out C : float[n][n] { location : config.tg, layout : block }
}
code {
    config.tg[x][y] {
        int rows = (n + x_max - 1) / x_max;
        int cols = (n + y_max - 1) / y_max;
        int i_end = (x + 1) * rows;
        if (i_end > n) { i_end = n; }
        int j_end = (y + 1) * cols;
        if (j_end > n) { j_end = n; }
        for (int i = x * rows; i < i_end; i++) {
            for (int k = 0; k < n; k++) {
                float a = A[i][k];
                for (int j = y * cols; j < j_end; j++) {
                    C[i][j] += a * B[k][j];
                }
            }
        }
    }
}
"""
)


@numba.njit(parallel=True, cache=True, nogil=True)
def vadd_tiles(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    n = a.shape[0]
    size = max(1, (n + 15) // 16)
    for t in prange(16):
        for i in range(t * size, min(n, t * size + size)):
            c[i] = a[i] + b[i]


@numba.njit(parallel=True, cache=True, nogil=True)
def matmul_tiles(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    n = a.shape[0]
    rows = (n + 3) // 4
    cols = (n + 3) // 4
    for t in prange(16):
        x, y = t // 4, t % 4
        for i in range(x * rows, min(n, (x + 1) * rows)):
            for k in range(n):
                av = a[i, k]
                for j in range(y * cols, min(n, (y + 1) * cols)):
                    c[i, j] += av * b[k, j]


def _median(fn: Callable[[], object], samples: int) -> float:
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench(name: str, text: str, inputs: dict[str, np.ndarray], baseline: Callable, samples: int) -> dict:
    started = time.perf_counter()
    program = hbir.parse(text, f"{name}.hbir")
    parsed = time.perf_counter()
    model = program.check()
    checked = time.perf_counter()
    root = program.to_hpvm()
    lowered = time.perf_counter()
    arrays = {
        a.name: (inputs[a.name] if a.direction == "in" else np.zeros(a.shape, a.dtype))
        for a in model.arrays.values()
    }
    args = tuple(arrays[p.name] for p in root.params)
    hpvm.init()
    for a in args:
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(root, args, target="cpu"))
    compiled = time.perf_counter()
    out_name = next(a.name for a in model.arrays.values() if a.direction == "out")
    expected = np.zeros_like(arrays[out_name])
    baseline(*[inputs[a.name] for a in model.arrays.values() if a.direction == "in"], expected)
    np.testing.assert_allclose(arrays[out_name], expected, rtol=1e-5)

    def hpvm_run() -> None:
        arrays[out_name][...] = 0
        hpvm.mark_host_modified(arrays[out_name])
        hpvm.wait(hpvm.launch(root, args, target="cpu"))

    def numba_run() -> None:
        expected[...] = 0
        baseline(*[inputs[a.name] for a in model.arrays.values() if a.direction == "in"], expected)

    times: dict[str, list[float]] = {"hbir": [], "numba": [], "run": []}
    for _ in range(samples):  # in turn, so both see the same machine noise
        times["hbir"].append(_median(hpvm_run, 1))
        times["numba"].append(_median(numba_run, 1))
    for a in args:
        hpvm.untrack_memory(a)
    times["run"].append(_median(lambda: program.run(inputs, target="cpu"), 1))
    hbir_t, numba_t = statistics.median(times["hbir"]), statistics.median(times["numba"])
    return {
        "name": name,
        "hbir_s": hbir_t,
        "numba_s": numba_t,
        "ratio": hbir_t / numba_t,
        "program_run_s": times["run"][0],
        "parse_s": parsed - started,
        "check_s": checked - parsed,
        "lower_s": lowered - checked,
        "first_launch_s": compiled - lowered,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (2^20 ints, 256³)")
    parser.add_argument("--samples", type=int, default=7)
    ns = parser.parse_args(argv)
    n_vadd, n_mm = (2**20, 256) if ns.quick else (2**24, 512)
    rng = np.random.default_rng(0)
    rows = [
        bench(
            f"vadd_{n_vadd}",
            VADD.replace("{N}", str(n_vadd)),
            {
                "A": rng.integers(-(2**20), 2**20, n_vadd, dtype=np.int32),
                "B": rng.integers(-(2**20), 2**20, n_vadd, dtype=np.int32),
            },
            vadd_tiles,
            ns.samples,
        ),
        bench(
            f"matmul_{n_mm}",
            MATMUL.replace("{N}", str(n_mm)),
            {
                "A": rng.random((n_mm, n_mm), dtype=np.float32),
                "B": rng.random((n_mm, n_mm), dtype=np.float32),
            },
            matmul_tiles,
            ns.samples,
        ),
    ]
    print(
        f"| row | hbir cpu | Numba | hbir/Numba (≤ {TARGET_RATIO}) | program.run | parse | check | lower | first launch (compile) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        verdict = "ok" if r["ratio"] <= TARGET_RATIO else "SLOWER"
        print(
            f"| {r['name']} | {r['hbir_s'] * 1e3:.1f} ms | {r['numba_s'] * 1e3:.1f} ms | {r['ratio']:.2f} {verdict} | "
            f"{r['program_run_s'] * 1e3:.1f} ms | {r['parse_s'] * 1e3:.1f} ms | {r['check_s'] * 1e3:.1f} ms | "
            f"{r['lower_s'] * 1e3:.1f} ms | {r['first_launch_s']:.2f} s |"
        )
    hpvm.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
