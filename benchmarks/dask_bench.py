"""``target="dask"`` beside ``cpu``: the overhead of distribution, and the bytes it moves.

Run: ``PYTHONPATH=src python benchmarks/dask_bench.py`` (the worker processes import hpvm
from ``$PYTHONPATH`` like the host). A ``LocalCluster`` of single-threaded worker
processes on 127.0.0.1 (2, and 1 for the split row); every row is checked against ``cpu``
before it is timed, the first (compiling) run is never timed, and samples alternate
between the back ends so both see the same machine noise. Rows:

- vector add, 2^24 float32 — split into one chunk of rows per worker; and of 2 elements
  (the fixed cost of a launch);
- a flat sgemm 1024³ (one leaf instance per element of C) — split by rows of A and C, B
  broadcast to every chunk: the row for the scaling model;
- sgemm 1024³ (the two-level tiled graph) — a hierarchy: runs whole on one worker;
- the 3-D stencil, 128×128×32, 100 launches — rows at offsets from the instance id: split,
  each chunk with a halo of 2 rows (whole on one worker before commit ``3b5829b``); twice:
  with the arrays kept on the workers across launches (``resident.py``: only the blocks of
  rows the host changed since go again), and with ``KEEP`` off (every launch sends its
  rows, as before commit ``3b29567``);
- a leaf split by its declared ``strided`` layouts (``declared.py``), 2^20 float64 in x
  and y, 20 launches: kept (the owned pieces stay on the workers) and with ``KEEP`` off
  (each range's owned elements sent every launch, as before keeping layout pieces).
  ``--layout`` runs only these two rows.

Launches repeat on the same arrays, so every row moves less per launch once kept: inputs
the host did not change stay on the workers; written rows still come back every launch.

Prints a Markdown table (medians; bytes moved per launch from ``hpvm.memory_stats``).

``run.py --only dask`` prints one row from here (``bench_dask``): the fixed cost of a
launch + wait of the 2-element graph beside one Dask task's round trip on the same
cluster, sampled in turn (the anchor: what Dask itself costs per round trip there).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kernels  # noqa: E402

import hpvm  # noqa: E402


def _pickle_by_value() -> None:
    """The workers cannot import benchmarks/ or examples/: ship their functions by value."""
    import cloudpickle

    for module in (kernels, kernels.vector_add_example, kernels.sgemm_example):
        cloudpickle.register_pickle_by_value(module)


def _timed(run: Callable[[], None]) -> tuple[float, int]:
    before = hpvm.memory_stats()
    started = time.perf_counter()
    run()
    elapsed = time.perf_counter() - started
    moved = hpvm.memory_stats().since(before)
    return elapsed, moved.to_device + moved.to_host


def _row(name: str, launches: int, make: Callable[[str], Callable[[], None]], samples: int) -> str:
    runs = {t: make(t) for t in ("cpu", "dask")}
    for run in runs.values():
        run()  # compile (and, on dask, ship the graph to the workers)
    times: dict[str, list[float]] = {t: [] for t in runs}
    moved = 0
    for _ in range(samples):
        for target, run in runs.items():
            elapsed, nbytes = _timed(run)
            times[target].append(elapsed)
            if target == "dask":
                moved = nbytes
    cpu, dask = statistics.median(times["cpu"]), statistics.median(times["dask"])
    return (
        f"| {name} | {cpu * 1e3:.1f} ms | {dask * 1e3:.1f} ms | {dask / cpu:.2f}× | "
        f"{moved / launches / 2**20:.1f} MiB |"
    )


def _vadd(n: int) -> Callable[[str], Callable[[], None]]:
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    outs = {t: np.zeros(n, np.float32) for t in ("cpu", "dask")}
    for x in (a, b, *outs.values()):
        hpvm.track_memory(x)

    def make(target: str) -> Callable[[], None]:
        return lambda: kernels.vector_add(a, b, outs[target], target)

    return make


def _matrices(size: int, seed: int) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """A and B (tracked), and a tracked C per target, for the sgemm rows."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    cs = {t: np.zeros((size, size), np.float32) for t in ("cpu", "dask")}
    for x in (a, b, *cs.values()):
        hpvm.track_memory(x)
    return a, b, cs


def _sgemm(size: int) -> Callable[[str], Callable[[], None]]:
    a, b, cs = _matrices(size, 1)

    def make(target: str) -> Callable[[], None]:
        return lambda: kernels.sgemm(a, b, cs[target], np.float32(1.0), np.float32(0.0), target)

    return make


def _stencil(shape: tuple[int, int, int], iterations: int) -> Callable[[str], Callable[[], None]]:
    grid = np.random.default_rng(2).random(shape, dtype=np.float32)
    pairs = {t: (grid.copy(), grid.copy()) for t in ("cpu", "dask")}
    for pair in pairs.values():
        for x in pair:
            hpvm.track_memory(x)

    def make(target: str) -> Callable[[], None]:
        src, dst = pairs[target]
        return lambda: kernels.stencil(src, dst, iterations, target)

    return make


# c[i, j] = a[i, :] · b[:, j]: one instance per element, a flat graph the dask back end
# splits by rows of ``a`` and ``c`` (``b`` broadcast).
@hpvm.leaf(ins=("a", "b"), outs=("c",))
def sgemm_row_element(a: hpvm.f32[:, :], b: hpvm.f32[:, :], c: hpvm.f32[:, :]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    j = hpvm.get_node_instance_id_y(node)
    total = np.float32(0.0)
    for t in range(a.shape[1]):
        total += a[i, t] * b[t, j]
    c[i, j] = total


@hpvm.internal
def sgemm_rows_root(a: hpvm.f32[:, :], b: hpvm.f32[:, :], c: hpvm.f32[:, :]):
    node = hpvm.create_node_2d(sgemm_row_element, a.shape[0], b.shape[1])
    for port in range(3):
        hpvm.bind_in(node, port, port)


def _sgemm_rows(size: int) -> Callable[[str], Callable[[], None]]:
    a, b, cs = _matrices(size, 3)

    def make(target: str) -> Callable[[], None]:
        return lambda: hpvm.wait(hpvm.launch(sgemm_rows_root, (a, b, cs[target]), target=target)) and None

    return make


# y[k] = a x[k] + y[k] / 2 for the elements k instance i owns under ``strided`` (every G-th):
# indexing the ownership proof cannot read, so the dask back end splits it by its layouts.
@hpvm.leaf(ins=("x", "y"), outs=("y",), layouts={"x": "strided", "y": "strided"})
def strided_axpy(x: hpvm.f64[:], y: hpvm.f64[:], a: hpvm.f64):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    g = hpvm.get_num_node_instances_x(node)
    for k in range(i, y.shape[0], g):
        y[k] = a * x[k] + 0.5 * y[k]


@hpvm.internal
def strided_root(x: hpvm.f64[:], y: hpvm.f64[:], a: hpvm.f64):
    node = hpvm.create_node_1d(strided_axpy, 8)
    for port in range(3):
        hpvm.bind_in(node, port, port)


def _strided(n: int, launches: int) -> Callable[[str], Callable[[], None]]:
    x = np.random.default_rng(4).random(n)
    ys = {t: np.zeros(n) for t in ("cpu", "dask")}
    for v in (x, *ys.values()):
        hpvm.track_memory(v)

    def make(target: str) -> Callable[[], None]:
        def run() -> None:
            for _ in range(launches):
                hpvm.wait(hpvm.launch(strided_root, (x, ys[target], 0.25), target=target))

        return run

    return make


def _layout_rows() -> None:
    """The declared-layout split, kept and sent every launch (the module doc)."""
    from hpvm.backends.dask import backend

    x = np.random.default_rng(5).random(4099)  # checked first: the two back ends agree
    ys = {t: np.zeros(4099) for t in ("cpu", "dask")}
    for v in (x, *ys.values()):
        hpvm.track_memory(v)
    for target, y in ys.items():
        for _ in range(3):
            hpvm.wait(hpvm.launch(strided_root, (x, y, 0.25), target=target))
    np.testing.assert_allclose(ys["dask"], ys["cpu"], rtol=1e-12)
    for keep, how in ((True, "kept on workers"), (False, "sent every launch")):
        backend.KEEP = keep
        try:
            make = _strided(1 << 20, 20)
            print(_row(f"strided layout 2^20 f64, 20 launches (split by layout; {how})", 20, make, 5))
        finally:
            backend.KEEP = True


def _tiny() -> Callable[[str], Callable[[], None]]:
    a, b = np.ones(2, np.float32), np.ones(2, np.float32)
    outs = {t: np.zeros(2, np.float32) for t in ("cpu", "dask")}
    for x in (a, b, *outs.values()):
        hpvm.track_memory(x)

    def make(target: str) -> Callable[[], None]:
        return lambda: kernels.vector_add(a, b, outs[target], target)

    return make


#: The goal for the fixed cost of a dask launch + wait (issue 24, item 7).
FIXED_TARGET = 5e-3


def _noop(x: int) -> int:
    return x


def fixed_cost(
    interleaved: Callable[[dict[str, Callable[[], object]]], dict[str, float]],
) -> dict[str, float]:
    """The fixed cost of a dask launch + wait (the 2-element vector add, split over two
    single-threaded worker processes on 127.0.0.1: 2 tasks, sent straight to the workers
    as a small launch's are, ``backends/dask/direct.py``) beside its anchor, one Dask
    task's round trip on the same cluster (``client.submit`` of a no-op + ``gather``):
    ``interleaved`` samples both in turn (``run.py``'s ``Bench.interleaved``)."""
    with hpvm_on_local_cluster(2) as client:
        run = _tiny()("dask")
        runs = {"dask": run, "dask_task": lambda: client.gather(client.submit(_noop, 1, pure=False))}
        for fn in runs.values():
            fn()
            fn()
        return interleaved(runs)


def bench_dask(ctx: Any) -> list[Any]:
    """``run.py``'s ``dask`` row: the fixed cost per launch (``fixed_cost``)."""
    harness = sys.modules[type(ctx).__module__]  # run.py, as __main__ or imported
    Row, fmt_time = harness.Row, harness.fmt_time
    row = Row(
        "dask launch + wait, 2 elements (fixed cost per launch)",
        "2 workers × 1 thread",
        target=f"≤ {FIXED_TARGET * 1e3:.0f} ms",
    )
    from hpvm.backends import available_backends

    if "dask" not in available_backends():
        row.measure = "not run: distributed is not installed"
        return [row]
    m = fixed_cost(lambda runs: ctx.interleaved(runs, {n: harness.timed(fn) for n, fn in runs.items()}))
    row.hpvm = {"dask": fmt_time(m["dask"])}
    row.numba = f"{fmt_time(m['dask_task'])} (anchor: one Dask task's round trip)"
    row.measure = f"{fmt_time(m['dask'])} = {m['dask'] / m['dask_task']:.2f}× one Dask task; load {_load()}"
    row.verdict = harness.verdict(m["dask"] <= FIXED_TARGET)
    row.data = {"dask_s": m["dask"], "dask_task_s": m["dask_task"], "load": _load()}
    return [row]


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


@contextmanager
def hpvm_on_local_cluster(workers: int) -> Iterator[Any]:
    """A ``LocalCluster`` of ``workers`` single-threaded worker processes on 127.0.0.1, hpvm
    initialised on its client (yielded); hpvm, the client and the cluster stopped after."""
    from distributed import Client, LocalCluster

    _pickle_by_value()
    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        worker_dashboard_address="127.0.0.1:0",
    )
    client = Client(cluster, set_as_default=False)
    hpvm.cleanup()
    hpvm.init(dask=client)
    try:
        yield client
    finally:
        hpvm.cleanup()
        client.close()
        cluster.close()


def main() -> int:
    print("| row | cpu | dask | dask / cpu | moved per launch |")
    print("| --- | --- | --- | --- | --- |")
    if "--layout" in sys.argv[1:]:
        with hpvm_on_local_cluster(2):
            _layout_rows()
        return 0
    for workers in (2, 1):
        with hpvm_on_local_cluster(workers):
            print(_row(f"vector add 2^24 ({workers} worker(s))", 1, _vadd(1 << 24), 7), flush=True)
            print(_row(f"vector add of 2 elements ({workers} worker(s))", 1, _tiny(), 15), flush=True)
            print(
                _row(f"flat sgemm 1024³, split by rows ({workers} worker(s))", 1, _sgemm_rows(1024), 3),
                flush=True,
            )
            if workers == 2:
                print(_row("sgemm 1024³ (whole on one worker)", 1, _sgemm(1024), 3), flush=True)
                print(
                    _row(
                        "stencil 128×128×32, 100 launches (split, halo; kept on workers)",
                        100,
                        _stencil((32, 128, 128), 100),
                        3,
                    ),
                    flush=True,
                )
                from hpvm.backends.dask import backend

                backend.KEEP = False
                try:
                    print(
                        _row(
                            "stencil 128×128×32, 100 launches (split, halo; sent every launch)",
                            100,
                            _stencil((32, 128, 128), 100),
                            3,
                        ),
                        flush=True,
                    )
                finally:
                    backend.KEEP = True
                _layout_rows()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
