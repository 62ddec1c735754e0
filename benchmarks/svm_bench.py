"""The Streaming Virtual Machine (``hpvm.svm``): a Move between two RAM streams beside
``numpy.copyto``, a three-kernel pipeline of Python kernels beside three threads joined by
``queue.Queue``, and edge detection through the HLC mapping beside the same stream on cpu.

- Move: 2^24 four-byte elements (``--quick``/``--tiny``: 2^22 / 2^16) from one RAM stream
  to another, ``kernel_run`` + ``kernel_wait`` on the DMA processor of "this computer",
  beside ``numpy.copyto`` of the same bytes. Target (issue 11): ≥ 50 % of copyto's
  bandwidth.
- Pipeline: source → FIR filter (16 taps, read with ``stream_peek``) → sink, float32, each a
  user kernel on its own stream processor, element by element in Python (2^14 elements;
  ``--tiny`` 2^10), beside the same three stages as threads joined by bounded
  ``queue.Queue``s; and the same pipeline of *compiled* kernels (``kernel_init(...,
  compiled=True)``: Numba, nogil, lock-free ring operations) over 2^22 elements
  (``--tiny`` 2^16), rings of ``COMPILED_CAPACITY`` elements, compile time excluded (the
  checked run compiles); ``COMPILED_SAMPLES`` samples per round, reported as the median,
  the slowest and fastest, and the process's CPU per element. Target (issue 11): compiled kernels ≥ 20 M elements/s end to end.

- Edge detection through the HLC mapping: ``examples/edge_detection.py``'s streaming graph
  launched with ``target="svm"`` (this computer; the stage kernels run leaves on ``cpu``)
  beside the same stream on ``cpu``, the preset's frames. Target (issue 11): ≤ 1.25× cpu's
  time.

Every result is checked before anything is timed; samples are taken round-robin and the
medians reported. ``run.py --only svm``, or ``python benchmarks/svm_bench.py [--quick]``
(``--edge``: the edge-detection row alone, 32 frames of 256²).
"""

from __future__ import annotations

import os
import queue
import statistics
import sys
import threading
import time
from collections import deque
from typing import Any

import numpy as np

from hpvm import svm

MOVE_TARGET = 0.5  # Move bandwidth / numpy.copyto bandwidth
EDGE_TARGET = 1.25  # edge detection: target="svm" time / target="cpu" time
EDGE_ROUNDS = 9  # rounds of (cpu, svm) for it
COMPILED_TARGET = 20e6  # elements/s, the compiled pipeline end to end
COMPILED_SAMPLES = 3  # compiled-pipeline samples per round (0.1-0.5 s each)
COMPILED_CAPACITY = 1 << 16  # elements per ring in the compiled pipeline (256 KiB of float32)
TAPS = 16
COEFFS = (np.arange(1, TAPS + 1, dtype=np.float32) / np.float32(136.0)).astype(np.float32)


def move_once(n: int) -> tuple[float, bool]:
    """Seconds for one Move of ``n`` int32 elements between RAM streams; and whether the
    bytes arrived."""
    src, dst, move = svm.Stream(), svm.Stream(), svm.Move()
    data = svm.memory_view("RAM", 0, n, np.int32)
    svm.stream_init_with_data_ram(src, "RAM", 0, n, np.int32, n, True)
    svm.stream_init_ram(dst, "RAM", 4 * n, n, np.int32)
    svm.move_init(move, "DMA", src, dst, svm.STREAM_LENGTH_ALL, True)
    start = time.perf_counter()
    svm.kernel_run(move)
    svm.kernel_wait(move)
    seconds = time.perf_counter() - start
    return seconds, bool(np.array_equal(svm.memory_view("RAM", 4 * n, n, np.int32), data))


def copyto_once(a: np.ndarray, b: np.ndarray) -> float:
    start = time.perf_counter()
    np.copyto(b, a)
    return time.perf_counter() - start


class Source(svm.Kernel):
    pass


class Fir(svm.Kernel):
    pass


class Sink(svm.Kernel):
    pass


def source_work(k: Source) -> None:
    for i in range(k.n - 1):
        svm.stream_push(k.out, np.float32(i % 7))
    svm.stream_push_with_eos(k.out, np.float32((k.n - 1) % 7))


def fir_work(k: Fir) -> None:
    """y[i] = sum_j c[j] * x[i + j]: 16 peeks, then a pop, per output."""
    coeffs = [float(c) for c in COEFFS]
    for _ in range(k.n - TAPS + 1):
        acc = 0.0
        for j in range(TAPS):
            acc += coeffs[j] * float(svm.stream_peek(k.in_, j))
        svm.stream_push(k.out, np.float32(acc))
        svm.stream_pop(k.in_)
    while not svm.stream_peek_eos(k.in_, 0):
        svm.stream_pop(k.in_)
    svm.stream_pop(k.in_)


def sink_work(k: Sink) -> None:
    total = 0.0
    for _ in range(k.count):
        total += float(svm.stream_pop(k.in_))
    k.total = total


def c_source_work(k: Source) -> None:
    """The compiled kernels: the same pipeline, written in the subset Numba compiles (results
    go into a NumPy array member); tests/svm/test_compiled_kernels.py runs these shapes both
    ways."""
    for i in range(k.n - 1):
        svm.stream_push(k.out, np.float32(i % 7))
    svm.stream_push_with_eos(k.out, np.float32((k.n - 1) % 7))


def c_fir_work(k: Fir) -> None:
    for _ in range(k.n - TAPS + 1):
        acc = np.float32(0.0)
        for j in range(TAPS):
            acc += k.coeffs[j] * svm.stream_peek(k.in_, j)
        svm.stream_push(k.out, acc)
        svm.stream_pop(k.in_)
    while not svm.stream_peek_eos(k.in_, 0):
        svm.stream_pop(k.in_)
    svm.stream_pop(k.in_)


def c_sink_work(k: Sink) -> None:
    total = 0.0
    for _ in range(k.count):
        total += svm.stream_pop(k.in_)
    k.total[0] = total


def compiled_pipeline(n: int) -> tuple[float, float]:
    """Seconds for the compiled three-kernel pipeline over ``n`` elements (from the first
    ``kernel_run`` to the last ``kernel_wait``), and the sink's total."""
    a, b = svm.Stream(), svm.Stream()
    svm.stream_init_ram(a, "RAM", 0, COMPILED_CAPACITY, np.float32)
    svm.stream_init_ram(b, "RAM", 4 * COMPILED_CAPACITY, COMPILED_CAPACITY, np.float32)
    src, fir, sink = Source(), Fir(), Sink()
    svm.kernel_init(src, "PROC0", None, c_source_work, compiled=True)
    src.out, src.n = a, n
    svm.kernel_init(fir, "PROC1", None, c_fir_work, compiled=True)
    fir.in_, fir.out, fir.n, fir.coeffs = a, b, n, COEFFS
    svm.kernel_init(sink, "PROC2", None, c_sink_work, compiled=True)
    sink.in_, sink.count, sink.total = b, n - TAPS + 1, np.zeros(1)
    start = time.perf_counter()
    for k in (src, fir, sink):
        svm.kernel_run(k)
    svm.kernel_wait(sink)
    svm.kernel_wait(fir)
    svm.kernel_wait(src)
    return time.perf_counter() - start, float(sink.total[0])


def reference_total(n: int) -> float:
    x = (np.arange(n) % 7).astype(np.float32)
    y = np.convolve(x, COEFFS[::-1], mode="valid").astype(np.float32)
    return float(y.astype(np.float64).sum())


def svm_pipeline(n: int) -> tuple[float, float]:
    """Seconds for the three-kernel pipeline over ``n`` elements, and the sink's total."""
    a, b = svm.Stream(), svm.Stream()
    svm.stream_init_ram(a, "RAM", 0, 64, np.float32)
    svm.stream_init_ram(b, "RAM", 4096, 64, np.float32)
    src, fir, sink = Source(), Fir(), Sink()
    svm.kernel_init(src, "PROC0", None, source_work)
    src.out, src.n = a, n
    svm.kernel_init(fir, "PROC1", None, fir_work)
    fir.in_, fir.out, fir.n = a, b, n
    svm.kernel_init(sink, "PROC2", None, sink_work)
    sink.in_, sink.count, sink.total = b, n - TAPS + 1, 0.0
    start = time.perf_counter()
    for k in (src, fir, sink):
        svm.kernel_run(k)
    svm.kernel_wait(sink)
    svm.kernel_wait(fir)
    svm.kernel_wait(src)
    return time.perf_counter() - start, sink.total


def queue_pipeline(n: int) -> tuple[float, float]:
    """The same three stages as threads joined by bounded queues (None ends the stream)."""
    q1: queue.Queue = queue.Queue(64)
    q2: queue.Queue = queue.Queue(64)
    result: list[float] = []
    coeffs = [float(c) for c in COEFFS]

    def source() -> None:
        for i in range(n):
            q1.put(np.float32(i % 7))
        q1.put(None)

    def fir() -> None:
        window: deque[float] = deque(maxlen=TAPS)
        while (x := q1.get()) is not None:
            window.append(float(x))
            if len(window) == TAPS:
                q2.put(np.float32(sum(c * w for c, w in zip(coeffs, window))))
        q2.put(None)

    def sink() -> None:
        total = 0.0
        while (y := q2.get()) is not None:
            total += float(y)
        result.append(total)

    threads = [threading.Thread(target=f) for f in (source, fir, sink)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start, result[0]


def measure(move_n: int, pipe_n: int, repeat: int, compiled_n: int) -> dict[str, Any]:
    """Every number of both rows (checked first, then ``repeat`` round-robin samples)."""
    svm.init(svm.this_computer(cores=3))
    try:
        a = np.arange(move_n, dtype=np.int32)
        b = np.empty_like(a)
        svm.memory_view("RAM", 0, move_n, np.int32)[:] = a  # the source: distinct values
        svm.memory_view("RAM", 4 * move_n, move_n, np.int32)[:] = -1
        ok = move_once(move_n)[1]
        copyto_once(a, b)
        if not ok or not np.array_equal(a, b):
            raise AssertionError("svm Move or copyto moved the wrong bytes")
        expected = reference_total(pipe_n)
        for name, run in (("svm", svm_pipeline), ("queue", queue_pipeline)):
            total = run(pipe_n)[1]
            if abs(total - expected) > 1e-3 * max(1.0, abs(expected)):
                raise AssertionError(f"{name} pipeline total {total} != {expected}")
        compiled_expected = reference_total(compiled_n)
        total = compiled_pipeline(compiled_n)[1]  # compiles the three kernels
        if abs(total - compiled_expected) > 1e-4 * max(1.0, abs(compiled_expected)):
            raise AssertionError(f"compiled pipeline total {total} != {compiled_expected}")
        samples: dict[str, list[float]] = {"move": [], "copyto": [], "svm": [], "queue": [], "compiled": []}
        cpu: list[float] = []  # the process's CPU seconds (all threads) per compiled run
        for _ in range(repeat):
            samples["move"].append(move_once(move_n)[0])
            samples["copyto"].append(copyto_once(a, b))
            samples["svm"].append(svm_pipeline(pipe_n)[0])
            samples["queue"].append(queue_pipeline(pipe_n)[0])
            for _ in range(COMPILED_SAMPLES):  # short and noisy (the cores' share): more of them
                start = time.process_time()
                samples["compiled"].append(compiled_pipeline(compiled_n)[0])
                cpu.append(time.process_time() - start)
    finally:
        svm.cleanup()
    med = {name: statistics.median(v) for name, v in samples.items()}
    nbytes = 4 * move_n
    return {
        "move_elements": move_n,
        "move_GBps": nbytes / med["move"] / 1e9,
        "copyto_GBps": nbytes / med["copyto"] / 1e9,
        "move_ratio": med["copyto"] / med["move"],
        "pipeline_elements": pipe_n,
        "svm_python_elements_per_s": pipe_n / med["svm"],
        "queue_elements_per_s": pipe_n / med["queue"],
        "compiled_elements": compiled_n,
        "compiled_elements_per_s": compiled_n / med["compiled"],
        # The spread: on a shared machine the wall rate follows the CPU left to the three
        # kernel threads; the CPU per element (every thread of the process) hardly moves.
        "compiled_elements_per_s_min": compiled_n / max(samples["compiled"]),
        "compiled_elements_per_s_max": compiled_n / min(samples["compiled"]),
        "compiled_cpu_ns_per_element": statistics.median(cpu) / compiled_n * 1e9,
        "compiled_capacity": COMPILED_CAPACITY,
    }


def edge_measure(size: int, count: int, repeat: int) -> dict[str, Any]:
    """Edge detection's streaming graph on ``cpu`` and through the HLC mapping
    (``target="svm"`` on this computer, leaves on ``cpu``): seconds for ``count`` frames of
    ``size``², each edge map first checked against NumPy's. Needs ``hpvm.init()``."""
    import kernels  # benchmarks/kernels.py: the edge-detection pipeline and its frames

    frames = kernels.synthetic_frames(count, size)
    pipeline = kernels.EdgePipeline(size, size, in_flight=8)
    reference = np.stack(
        [kernels.edge_example.reference_edges(f, pipeline.kernel, pipeline.theta) for f in frames]
    )
    for target in ("cpu", "svm"):
        got = pipeline.stream(frames, target)  # (compiles)
        if not np.array_equal(got, reference):
            raise AssertionError(f"edge detection on {target}: edge maps differ from NumPy")
    samples: dict[str, list[float]] = {"cpu": [], "svm": []}
    for _ in range(repeat):
        for target in samples:
            start = time.perf_counter()
            pipeline.stream(frames, target)
            samples[target].append(time.perf_counter() - start)
    med = {target: statistics.median(v) for target, v in samples.items()}
    return {
        "edge_frames": count,
        "edge_size": size,
        "edge_cpu_s": med["cpu"],
        "edge_svm_s": med["svm"],
        # each round's ratio (its two runs side by side, under the same load), their median
        "edge_ratio": statistics.median(s / c for s, c in zip(samples["svm"], samples["cpu"])),
    }


def sizes_for(tiny: bool, quick: bool) -> tuple[int, int, int]:
    """Elements of the Move, the Python pipeline and the compiled pipeline."""
    if tiny:
        return 1 << 16, 1 << 10, 1 << 16
    return (1 << 22 if quick else 1 << 24), 1 << 14, 1 << 22


def bench_svm(ctx: Any) -> list[Any]:
    """``run.py``'s ``svm`` rows."""
    harness = sys.modules[type(ctx).__module__]
    Row, verdict = harness.Row, harness.verdict
    tiny = ctx.sizes.vadd < (1 << 16)
    quick = ctx.sizes.sgemm < 1024
    move_n, pipe_n, compiled_n = sizes_for(tiny, quick)
    r = measure(move_n, pipe_n, max(3, ctx.repeat), compiled_n)
    move = Row(
        "svm Move, RAM stream → RAM stream", f"2^{move_n.bit_length() - 1} × 4 B", target="≥ 50 % of copyto"
    )
    # The table's hpvm columns are back ends of launch(); the SVM's numbers go in "measure".
    move.numpy = f"{r['copyto_GBps']:.2f} GB/s (numpy.copyto)"
    move.measure = f"svm {r['move_GBps']:.2f} GB/s = {r['move_ratio']:.0%} of copyto"
    move.verdict = verdict(r["move_ratio"] >= MOVE_TARGET)
    move.data = {k: v for k, v in r.items() if k.startswith(("move", "copyto"))}
    pipe = Row("svm pipeline: source → FIR 16 taps → sink", f"2^{pipe_n.bit_length() - 1} float32")
    pipe.numba = f"{r['queue_elements_per_s']:,.0f} el/s (3 threads, queue.Queue)"
    ratio = r["svm_python_elements_per_s"] / r["queue_elements_per_s"]
    pipe.measure = (
        f"svm Python kernels {r['svm_python_elements_per_s']:,.0f} el/s = {ratio:.2f}× the queue threads"
    )
    pipe.data = {k: v for k, v in r.items() if k.startswith(("pipeline", "svm", "queue"))}
    comp = Row(
        "svm pipeline, compiled kernels (nogil)",
        f"2^{compiled_n.bit_length() - 1} float32",
        target="≥ 20 M el/s",
    )
    comp.numba = pipe.numba
    comp.measure = (
        f"svm compiled kernels {r['compiled_elements_per_s'] / 1e6:.1f} M el/s "
        f"({r['compiled_elements_per_s_min'] / 1e6:.1f}–{r['compiled_elements_per_s_max'] / 1e6:.1f}; "
        f"CPU {r['compiled_cpu_ns_per_element']:.0f} ns/el) = "
        f"{r['compiled_elements_per_s'] / r['queue_elements_per_s']:.0f}× the queue threads"
    )
    comp.verdict = verdict(r["compiled_elements_per_s"] >= COMPILED_TARGET)
    comp.data = {k: v for k, v in r.items() if k.startswith("compiled")}
    return [move, pipe, comp, edge_row(ctx, Row, verdict)]


def edge_row(ctx: Any, Row: Any, verdict: Any) -> Any:
    """Edge detection through the HLC mapping beside the same stream on ``cpu``."""
    size, count = ctx.sizes.frame, ctx.sizes.frames
    row = Row(
        "edge detection through the HLC mapping",
        f"{count} frames {size}²",
        target=f"svm ≤ {EDGE_TARGET:g}× cpu",
    )
    if "cpu" not in ctx.targets:
        row.measure = "not run: needs --targets cpu"
        return row
    r = edge_measure(size, count, max(EDGE_ROUNDS, ctx.repeat))
    row.hpvm["cpu"] = f"{count / r['edge_cpu_s']:,.1f} fps"
    row.measure = f"target=svm {count / r['edge_svm_s']:,.1f} fps = {r['edge_ratio']:.2f}× cpu's time"
    row.verdict = verdict(r["edge_ratio"] <= EDGE_TARGET)
    row.data = r
    return row


def main(argv: list[str]) -> int:
    move_n, pipe_n, compiled_n = sizes_for("--tiny" in argv, "--quick" in argv)
    if "--edge" in argv:  # only the HLC-mapping row: 32 frames of 256² (--tiny: 4 of 24²)
        import hpvm

        size, count = (24, 4) if "--tiny" in argv else (256, 32)
        hpvm.init()
        try:
            e = edge_measure(size, count, 3)
        finally:
            hpvm.cleanup()
        print(
            f"edge detection {count} frames {size}²: cpu {e['edge_cpu_s']:.3f} s, target=svm "
            f"{e['edge_svm_s']:.3f} s = {e['edge_ratio']:.2f}× (target ≤ {EDGE_TARGET:g}×)"
        )
        return 0
    r = measure(move_n, pipe_n, 3, compiled_n)
    print(
        f"Move {move_n:,} × 4 B: {r['move_GBps']:.2f} GB/s; numpy.copyto {r['copyto_GBps']:.2f} GB/s; "
        f"{r['move_ratio']:.0%} of copyto (target ≥ {MOVE_TARGET:.0%})"
    )
    print(
        f"pipeline {pipe_n:,} float32: svm Python kernels {r['svm_python_elements_per_s']:,.0f} el/s; "
        f"queue.Queue threads {r['queue_elements_per_s']:,.0f} el/s"
    )
    print(
        f"pipeline {compiled_n:,} float32: svm compiled kernels {r['compiled_elements_per_s']:,.0f} el/s "
        f"(min {r['compiled_elements_per_s_min']:,.0f}, max {r['compiled_elements_per_s_max']:,.0f}; "
        f"CPU {r['compiled_cpu_ns_per_element']:.0f} ns/el, all threads) (target ≥ {COMPILED_TARGET:,.0f}); "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
