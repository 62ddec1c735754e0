"""Measurements that need a process of their own; ``run.py`` starts them and reads one JSON line.

- ``compile``: the first sgemm result of a new process — cold (with empty Numba and hpvm
  cache directories, set by the parent through ``NUMBA_CACHE_DIR`` / ``HPVM_CACHE_DIR``) or
  warm (the same directories, already filled). Reports the wall-clock time at which the
  result was ready, so that the parent can measure from the moment it started the process,
  and the time of the first launch + wait alone (compiling included), with the process's
  CPU time over the same span (less sensitive than wall time to other processes on a
  shared machine) and how many functions Numba compiled (``numba:compile`` events: none
  when everything came from the caches). With ``--numba``, the same for the hand-written
  Numba sgemm, for comparison.
- ``pipeline``: the edge-detection stream against the same stages launched one after the
  other, on the ``cpu`` back end, with the thread count set by the parent: with one
  Numba thread per stage, all the parallelism left is the pipeline's (stages on
  different frames at once), which isolates what the streaming runtime contributes.
- ``threads``: sgemm on the ``cpu`` back end and hand-written Numba, with the number of
  threads fixed for the whole process by the parent (``NUMBA_NUM_THREADS``). A process of
  its own because ``numba.set_num_threads`` is per thread: it would not reach the threads
  the hpvm runtime launches graphs on.

Kept small on purpose: ``compile`` imports only hpvm and the sgemm example, so the warm
start it measures is what a user's program would see.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np


def _sgemm_inputs(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    c = rng.standard_normal((size, size), dtype=np.float32)
    return a, b, c


class _CompileCounter:
    """Counts Numba's ``numba:compile`` events (each function compiled, not loaded)."""

    def __init__(self) -> None:
        from numba.core import event

        self.count = 0
        counter = self

        class Listener(event.Listener):
            def on_start(self, ev: event.Event) -> None:
                counter.count += 1

            def on_end(self, ev: event.Event) -> None:
                pass

        event.register("numba:compile", Listener())


def _first(run: Callable[[], object], start: float, imported: float) -> dict:
    """Time ``run()`` (the first launch + wait): wall, CPU, and functions compiled. The
    counter is made inside the span: it imports numba, which hpvm imports on first launch."""
    launched, cpu = time.perf_counter(), time.process_time()
    counter = _CompileCounter()
    run()
    done_wall, done = time.time(), time.perf_counter()
    return {
        "result_wall": done_wall,
        "import_s": imported - start,
        "first_launch_s": done - launched,
        "first_launch_cpu_s": time.process_time() - cpu,
        "compiled": counter.count,
    }


def compile_start(size: int) -> dict:
    """Time to the first sgemm result on the cpu back end, in this (new) process."""
    start = time.perf_counter()
    import hpvm

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import sgemm

    imported = time.perf_counter()
    a, b, c = _sgemm_inputs(size)
    hpvm.init()
    for array in (a, b, c):
        hpvm.track_memory(array)
    args = (a, b, c, 1.0, 0.0, sgemm.DEFAULT_TILE)
    result = _first(lambda: hpvm.wait(hpvm.launch(sgemm.root, args, target="cpu")), start, imported)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-5 * size)
    hpvm.cleanup()
    return result


def compile_start_numba(size: int) -> dict:
    """The same for the hand-written Numba sgemm (``cache=True``): what a plain Numba program pays."""
    start = time.perf_counter()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import baselines

    imported = time.perf_counter()
    a, b, c = _sgemm_inputs(size)
    result = _first(
        lambda: baselines.sgemm_tiled(a, b, c, np.float32(1.0), np.float32(0.0), 16), start, imported
    )
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-5 * size)
    return result


def threads(size: int, repeat: int) -> dict:
    """Median sgemm times on the cpu back end and in hand-written Numba, this process's threads."""
    import numba

    import hpvm

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import baselines
    import kernels

    a, b, c = _sgemm_inputs(size)
    c_numba = c.copy()
    alpha, beta = np.float32(1.0), np.float32(0.5)
    hpvm.init()
    for array in (a, b, c):
        hpvm.track_memory(array)
    runs = {
        "cpu": lambda: kernels.sgemm(a, b, c, alpha, beta, "cpu"),
        "numba": lambda: baselines.sgemm_tiled(a, b, c_numba, alpha, beta, kernels.SGEMM_TILE),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    for fn in runs.values():
        fn()  # compile, or load from the cache
    for _ in range(repeat):
        for name, fn in runs.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    hpvm.cleanup()
    return {"threads": numba.config.NUMBA_NUM_THREADS, **{k: statistics.median(v) for k, v in times.items()}}


def pipeline(size: int, frames: int, repeat: int) -> dict:
    """Median seconds of the streamed and of the sequential edge-detection runs on the cpu back
    end, and of the sequential launches spread over two threads (whole frames at once: the
    limit of any pipeline of these stages on two cores), interleaved; and the medians of each
    round's ratios (``speedup``: sequential ÷ stream, ``limit``: sequential ÷ two threads),
    whose two sides ran next to each other and so saw the same load."""
    import numba

    import hpvm

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import kernels

    hpvm.init()
    images = kernels.synthetic_frames(frames, size)
    pipe = kernels.EdgePipeline(size, size, in_flight=8)
    runs = {
        "stream": lambda: pipe.stream(images, "cpu"),
        "sequential": lambda: pipe.sequential(images, "cpu"),
        # the limit: whole frames on two threads at once, no stage handed on (kernels.py)
        "two_threads": lambda: pipe.frames_on_threads(images, "cpu", 2),
    }
    reference = runs["sequential"]()
    np.testing.assert_array_equal(runs["stream"](), reference)
    np.testing.assert_array_equal(runs["two_threads"](), reference)
    from orders import interleaved_times

    times = interleaved_times(runs, repeat)
    hpvm.cleanup()
    rounds = list(zip(times["sequential"], times["stream"], times["two_threads"]))
    return {
        "threads": numba.config.NUMBA_NUM_THREADS,
        **{k: statistics.median(v) for k, v in times.items()},
        "speedup": statistics.median(seq / stream for seq, stream, _ in rounds),
        "limit": statistics.median(seq / two for seq, _, two in rounds),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("compile", "threads", "pipeline"))
    parser.add_argument("--size", type=int, required=True, help="sgemm matrix edge, or frame edge")
    parser.add_argument("--frames", type=int, default=32, help="pipeline: frames per run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--numba", action="store_true", help="compile: the hand-written Numba sgemm instead")
    ns = parser.parse_args(argv)
    if ns.mode == "threads":
        result = threads(ns.size, ns.repeat)
    elif ns.mode == "pipeline":
        result = pipeline(ns.size, ns.frames, ns.repeat)
    else:
        result = compile_start_numba(ns.size) if ns.numba else compile_start(ns.size)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
