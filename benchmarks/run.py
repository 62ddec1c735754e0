"""``make bench``: the HPVM back ends beside hand-written Numba and NumPy, in one table.

Every row is measured in this one run, side by side: the HPVM graph on each selected back
end (``--targets``, default ``cpu``), the same algorithm hand-written with
``numba.njit(parallel=True)`` (``baselines.py`` — the bar: hpvm cpu ≤ 1.10× its time) and
NumPy's vectorised version. Each HPVM result is checked against the hand-written one
before anything is timed, and the first (compiling) run is never timed. Times are medians
of samples taken round-robin — one sample of each implementation in turn — so that all of
them see the same machine noise.

Every row names its **anchor** (what hpvm is measured against: ``ANCHORS``, or the row's
own) and, where there is one, its **limit**: for a memory-bound kernel the time the
machine's measured bandwidth allows for the bytes it must move (``memory_bound.machine_bandwidth``,
STREAM's triad with OpenMP, measured once per run) and the GB/s hpvm reaches; beside sgemm,
BLAS's GFLOP/s.

Rows:

- kernels — vector add (2^24 float32); Parboil sgemm (the two-level tiled graph, 1024³;
  NumPy's ``a @ b`` is BLAS, a different algorithm); Parboil stencil (7-point 3-D,
  128×128×32, 100 launches swapping in/out, ≤ 1.05× Numba: the host's cost per launch); sgemm and stencil again in the *wrapper-node*
  form of HPVM-C programs (root → one-instance internal node → the same graph); histogram (2^24 bytes, 256 bins,
  ``hpvm.atomic_add``); block reduction (2^22 floats; allocation node, malloc, barriers);
  edge detection (frames per second, streaming, against the stages one after the other);
- targets — sgemm speed-up from 1 to 2 threads (≥ 1.8×; each thread count in a process
  of its own, ``NUMBA_NUM_THREADS``, since ``numba.set_num_threads`` does not reach the
  runtime's launch threads), launch + wait of a one-instance graph (≤ 50 µs; and of a
  64-element vector add and of GenHPVM's saxpy IR — a looping leaf, the root's outputs —,
  each ≤ 1.2× a Numba ``prange`` call of the same loop), pipeline
  throughput against the same stages launched one after the other (≥ 1.0× where every
  stage is a parallel loop over both cores, issue 24 item 2; ≥ 1.8× with one thread per
  stage, where all the parallelism is the pipeline's), cold compile of the
  sgemm graph in a fresh process with empty caches (≤ 5 s) and the warm start of a new
  process (≤ 1 s, process start to first result);
- pictures in ``out/bench/``: time against size (vector add, sgemm), launch overhead
  against the number of instances (N = 1 … 2^20), ratios to Numba; ``results.json``
  (every number) and ``table.md`` (the table, for BENCHMARKS.md).

Run one part with ``--only NAME[,NAME]``: vadd, sgemm, sgemm_wrapper, stencil,
stencil_wrapper, layout (leaves in the GPU convention — a 2-D blur 2048², the 3-D stencil
256×256×64 — beside hand-written Numba, Taichi and Warp, and the stencil with x outer vs x
inner: ``benchmarks/layout.py``), peers (saxpy 2^24, a 384³ matmul one instance per
element, a 2^22 histogram with atomics, beside Taichi and Warp — hpvm ahead of both, ≤
1.10× Numba: ``benchmarks/peers.py``; the peers are the ``bench`` extra, installed by
``make bench``), histogram, reduction, pipeline, pipeline1, nested (three ~1 ms stages
streaming inside an internal node against the same stages launched in turn, ≥ 1.6×:
``benchmarks/nested_pipeline.py``), threads, launch, compile, overhead, scaling, stream
(items/s of scalar items through a two-stage stream beside two threads joined by
``queue.Queue``: ``benchmarks/streaming.py``), tensor (the models of
``hpvm.tensor.models`` on the tensor back end beside eager PyTorch:
``benchmarks/tensor.py``), gpulaunch (launch + wait of a one-kernel graph on ``--targets
cuda,opencl``: ``benchmarks/gpu.py``), svm (the Streaming Virtual Machine: a Move beside
``numpy.copyto``, three-kernel pipelines of Python and of compiled kernels beside
``queue.Queue`` threads, edge detection through the HLC mapping beside cpu:
``benchmarks/svm_bench.py``), hbir (HBIR programs — vector add 2^24 ints and a 512³ blocked
matrix multiply over a 4×4 group — on cpu beside the same loops hand-written in Numba, and
their cold compile times: ``benchmarks/hbir.py``), llvm (vector add, sgemm and the 3-D
stencil exported to LLVM, imported and run on cpu with LLVM leaves beside their Python
leaves, ≤ 1.10×; export/import time of edge detection: ``benchmarks/llvm_bench.py``), c
(HPVM-C: ``examples/c/sgemm.c``'s graph on cpu beside hand-written Numba and clang -O3
single-threaded, the stencil, the block reduction, HPVM's pipeline-style Gaussian smoothing
beside Numba, and ``c.compile`` plus first run of each example: ``benchmarks/c_bench.py``),
llvmpar (seed 004's PREPARE, -O2 and EXTRACT of edge detection: ``benchmarks/llvmpar_bench.py``),
wrapper_gpu (a replicated CPU wrapper node around a GPU leaf beside the same leaf launched
directly: the host's overhead per wrapper instance, ``benchmarks/mixed_bench.py``), membound
(STREAM triad, vector add, saxpy and the 3-D stencil as Python and HPVM-C leaves beside the
same loops in C with OpenMP, gcc -O3 -march=native -fopenmp, in GB/s beside the machine's
measured bandwidth: ``benchmarks/memory_bound.py``), dask (the fixed cost of a dask
launch + wait of a 2-element graph over 2 local worker processes, ≤ 5 ms, beside its
anchor, one Dask task's round trip on the same cluster: ``benchmarks/dask_bench.py``; the
other dask rows: run that file).

``--quick`` uses smaller sizes where it matters (sgemm 256³, 256² frames) and fewer
samples; ``--tiny`` uses sizes the interpreter can run, to check the harness itself.
The interpreter (``--targets cpu,interp``) skips rows it would need more than 10 s for.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import hpvm
from hpvm.backends import available_backends
from hpvm.ir.graph import InternalFunction

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import baselines  # noqa: E402
import c_bench  # noqa: E402
import dask_bench  # noqa: E402
import kernels  # noqa: E402
import layout  # noqa: E402
import llvm_bench  # noqa: E402
import llvmpar_bench  # noqa: E402
import memory_bound  # noqa: E402
import mixed_bench  # noqa: E402
import nested_pipeline  # noqa: E402
import peers as peers_bench  # noqa: E402
import plots  # noqa: E402
import streaming as stream_bench  # noqa: E402
import svm_bench  # noqa: E402
from orders import balanced_rows, round_ratio  # noqa: E402

import gpu as gpu_bench  # noqa: E402
import hbir as hbir_bench  # noqa: E402
import tensor as tensor_bench  # noqa: E402

RATIO_TARGET = 1.10  # hpvm cpu time / hand-written Numba time
STENCIL_RATIO_TARGET = 1.05  # the stencil's 100 launches (issue 24, item 1: the host's cost per launch)
BARRIER_RATIO_TARGET = 1.0  # barrier leaves as vector loops (issue 24 item 4): the block reduction
THREADS_TARGET = 1.8  # sgemm speed-up from 1 to 2 threads
LAUNCH_TARGET = 50e-6  # launch + wait of a one-instance graph, warm
LAUNCH_RATIO_TARGET = 1.2  # launch + wait of a tiny vector add / a Numba prange call of it
LAUNCH_VADD_SIZE = 64  # (elements: "a tiny graph")
LAUNCH_STEADY = 8  # calls in a row per sample of the vadd ratio, after an untimed one (``_launch_vadd``)
EDGE_TARGET = 1.05  # edge detection streamed / the same stages called in turn (issue 24, item 1)
PIPELINE_TARGET = 1.0  # streamed throughput / the graph launched per frame, stages parallel (item 2)
PIPELINE_SERIAL_TARGET = 1.8  # the same with one thread per stage, on 2 cores (item 2)
PIPELINE_ROUNDS = 9  # rounds of (stream, sequential, two threads) for it, in its own process
COLD_TARGET = 5.0  # cold compile of the sgemm graph
WARM_TARGET = 1.0  # new process, caches populated: start to first result
COLD_PROCESSES = 3  # cold-compile processes a side, each with empty caches (the median is read)
WARM_PROCESSES = 5  # warm-start processes a side, on the first cold one's caches
INTERP_LIMIT = 10.0  # seconds: longer interpreter rows are skipped
NUMBA = "Numba (hand-written)"


@dataclass(frozen=True)
class Sizes:
    """Problem sizes of one preset."""

    vadd: int
    sgemm: int
    stencil: tuple[int, int, int]  # (nz, ny, nx): Parboil's 128×128×32 is (32, 128, 128)
    stencil_iterations: int
    histogram: int
    reduction: int
    frame: int  # edge detection: frame edge in pixels
    frames: int
    compile_sgemm: int  # the sgemm of the cold/warm start measurements
    overhead_max_log2: int
    vadd_scaling: tuple[int, ...]
    sgemm_scaling: tuple[int, ...]
    launches: int  # samples of the launch latency
    repeat: int  # default samples per measurement
    min_sample_s: float  # fast kernels take more samples, until about this much time each


_FULL = Sizes(
    vadd=1 << 24,
    sgemm=1024,
    stencil=(32, 128, 128),
    stencil_iterations=100,
    histogram=1 << 24,
    reduction=1 << 22,
    frame=512,
    frames=64,
    compile_sgemm=128,
    overhead_max_log2=20,
    vadd_scaling=tuple(1 << p for p in range(10, 25, 2)),
    sgemm_scaling=(64, 128, 256, 512, 1024),
    launches=2000,
    repeat=5,
    min_sample_s=0.5,
)

PRESETS = {
    "full": _FULL,
    "quick": replace(
        _FULL,
        sgemm=256,
        frame=256,
        frames=32,
        sgemm_scaling=(64, 128, 256, 512),
        launches=1000,
        repeat=3,
        min_sample_s=0.2,
    ),
    "tiny": Sizes(
        vadd=4096,
        sgemm=32,
        stencil=(6, 10, 12),
        stencil_iterations=3,
        histogram=4096,
        reduction=1024,
        frame=24,
        frames=4,
        compile_sgemm=32,
        overhead_max_log2=10,
        vadd_scaling=(256, 1024, 4096),
        sgemm_scaling=(16, 32),
        launches=200,
        repeat=3,
        min_sample_s=0.05,
    ),
}

# Rough interpreter cost of one dynamic instance of each kernel, in vector-add instances
# (measured once with --tiny; used only to decide what to skip).
INTERP_WEIGHT = {
    "vadd": 1.0,
    "sgemm_per_k": 0.6,
    "stencil": 4.0,
    "histogram": 2.6,
    "reduction": 7.0,
    "pipeline": 40.0,  # per pixel and frame, six stages
    "noop": 0.6,
}


# ---------------------------------------------------------------------------------------
# Rows of the table


@dataclass
class Row:
    """One line of the table; ``data`` keeps the raw numbers for results.json."""

    benchmark: str
    size: str
    hpvm: dict[str, str] = field(default_factory=dict)  # back end -> cell
    numba: str = "—"
    numpy: str = "—"
    peers: dict[str, str] = field(default_factory=dict)  # other systems (PEERS) -> cell
    anchor: str = ""  # what hpvm is measured against (ANCHORS[benchmark] unless the row says)
    limit: str = "—"  # the physical limit, where there is one: bandwidth, BLAS GFLOP/s
    measure: str = "—"
    target: str = "—"
    verdict: str = "—"
    data: dict[str, Any] = field(default_factory=dict)


def fmt_time(seconds: float | None) -> str:
    """Seconds in µs, ms or s, with three significant-ish digits."""
    if seconds is None:
        return "—"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def verdict(ok: bool) -> str:
    """PASS or MISS, as the table says it."""
    return "PASS" if ok else "MISS"


class Bench:
    """What every benchmark needs: sizes, back ends, sampling, the interpreter's budget."""

    def __init__(self, sizes: Sizes, targets: list[str], repeat: int, out: Path, console: Console):
        self.sizes, self.targets, self.repeat, self.out, self.console = sizes, targets, repeat, out, console
        self.interp_instance_s: float | None = None  # seconds per vector-add instance
        self.notes: list[str] = []  # printed under the table
        #: every sample of the last ``interleaved`` call, per run, in round order: a row
        #: whose two sides ran next to each other in each round takes the median of the
        #: rounds' ratios (``round_ratio``)
        self.samples: dict[str, list[float]] = {}
        self.scaling_data: dict[str, dict[str, list[tuple[int, float]]]] = {}  # for results.json

    @property
    def hpvm_targets(self) -> list[str]:
        return [t for t in self.targets if t != "interp"]

    # -- the interpreter's budget ---------------------------------------------------------

    def interp_estimate(self, instances: float, weight: float) -> float:
        """Estimated seconds of one interpreter run of ``instances`` instances of this weight."""
        if self.interp_instance_s is None:
            n = 2000
            a, b, c = (np.ones(n, dtype=np.float32) for _ in range(3))
            for arr in (a, b, c):
                hpvm.track_memory(arr)
            start = time.perf_counter()
            kernels.vector_add(a, b, c, "interp")
            self.interp_instance_s = (time.perf_counter() - start) / n
        return instances * weight * self.interp_instance_s

    def too_slow(self, target: str, instances: float, weight: float) -> bool:
        return target == "interp" and self.interp_estimate(instances, weight) > INTERP_LIMIT

    # -- the physical limit ---------------------------------------------------------------

    def bandwidth(self) -> tuple[float, str]:
        """The machine's measured memory bandwidth in bytes/s, and how (measured once per run)."""
        return memory_bound.machine_bandwidth()

    # -- sampling -------------------------------------------------------------------------

    def samples_for(self, seconds: float) -> int:
        """More samples for fast work (at least ``repeat``, up to 200), fewer for the interpreter."""
        if seconds <= 0:
            return 200
        return max(self.repeat, min(200, int(self.sizes.min_sample_s / seconds)))

    def interleaved(
        self,
        runs: dict[str, Callable[[], object]],
        first: dict[str, float],
        steady: int = 0,
        extras: Collection[str] = (),
    ) -> dict[str, float]:
        """Median seconds per call of every run, one sample of each in turn.

        ``first`` holds the time of each run's last (warm) call, which sets the number of
        samples: fast kernels get more of them, and the slowest run decides, so that the
        row's total time stays bounded.

        ``extras``: runs shown beside the row's ratio but not in it (NumPy, the peers).
        They do not set the number of rounds — a 250 ms NumPy step left the stencil's 100
        launches (20 ms) with 5 samples a side, and their ratio swung 0.7–2.0× between runs
        — each takes its own number of samples instead (``samples_for`` its own time),
        spread evenly over the rounds, still interleaved with the others.

        ``steady`` > 0: a sample is one untimed call, then the mean of ``steady`` calls in
        a row — each run's cost in a loop of its own calls, with what the previous run
        left behind (the OpenMP team asleep, or sized for one thread) paid by the untimed
        call, not by the sample. For calls of tens of microseconds, where that leftover is
        as large as the call (``bench_launch``).
        """
        if not runs:
            return {}
        scale = max(1, steady + 1)
        measured = [name for name in runs if name not in extras] or list(runs)
        samples = self.samples_for(max(first.get(name, 0.0) for name in measured) * scale)
        due = {  # the rounds each extra takes part in
            name: sample_rounds(min(samples, self.samples_for(first.get(name, 0.0) * scale)), samples)
            for name in runs
            if name not in measured
        }
        times: dict[str, list[float]] = {name: [] for name in runs}
        for order in round_orders(measured, due, samples):
            for name in order:
                fn = runs[name]
                if steady:
                    fn()
                start = time.perf_counter()
                for _ in range(max(1, steady)):
                    fn()
                times[name].append((time.perf_counter() - start) / max(1, steady))
        self.samples = times
        return {name: statistics.median(ts) for name, ts in times.items()}

    def round_ratio(self, over: str, under: str) -> float:
        """``orders.round_ratio`` over the last ``interleaved`` call's rounds: the median of
        ``over``'s sample divided by ``under``'s from the same round."""
        return round_ratio(self.samples, over, under)

    def alone(self, fn: Callable[[], object], estimate: float) -> float:
        """Median of a few calls of a slow run (the interpreter), within its time budget."""
        count = max(1, min(self.repeat, int(INTERP_LIMIT / max(estimate, 1e-9))))
        times = []
        for _ in range(count):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times)


def round_orders(measured: list[str], due: dict[str, frozenset[int]], rounds: int) -> Iterator[list[str]]:
    """The order of each of ``rounds`` rounds: the extras due that round (``due``: the rounds
    each takes part in), then every measured run in a row of ``balanced_rows``.

    What one run leaves behind (the caches full of its arrays, the OpenMP workers asleep
    after a single-threaded NumPy step) is paid by the run after it, so each measured run
    must follow each other run equally often. Rotating one list did not do that with three
    runs or more: ``[hpvm, Numba, NumPy]`` rotated puts hpvm after NumPy in two rounds of
    three and Numba in one (a rotation keeps neighbours: Numba always follows hpvm within
    a round). Here the extras come first, and the measured rows are taken in turn
    separately for each set of extras due, so that whichever run follows the extras cycles
    through all of them even when the extras are due every other round (the same row
    every time otherwise: ``sample_rounds`` spaces them evenly).
    """
    rows = balanced_rows(len(measured))
    taken: dict[tuple[str, ...], int] = {}
    for r in range(rounds):
        extras = [name for name in due if r in due[name]]
        k = r % len(extras) if extras else 0
        key = tuple(extras)
        row = rows[taken.get(key, 0) % len(rows)]
        taken[key] = taken.get(key, 0) + 1
        yield extras[k:] + extras[:k] + [measured[i] for i in row]


def sample_rounds(count: int, rounds: int) -> frozenset[int]:
    """``count`` of the rounds ``0 .. rounds-1``, spread evenly (the first always among them)."""
    return frozenset((k * rounds) // count for k in range(count))


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


@dataclass
class Impl:
    """One implementation of a kernel: how to run it, and where its result is."""

    run: Callable[[], object]
    result: Callable[[], np.ndarray]


def kernel_row(
    ctx: Bench,
    name: str,
    size: str,
    hpvm_impls: dict[str, Impl],
    numba_impl: Impl,
    numpy_impl: Impl,
    reset: Callable[[], None],
    check: Callable[[np.ndarray, np.ndarray], None],
    interp: tuple[float, float],
    numpy_label: str = "",
    peers: dict[str, Impl] | None = None,
    traffic: float = 0.0,
    flops: float = 0.0,
    ratio_target: float = RATIO_TARGET,
) -> Row:
    """Verify every implementation against hand-written Numba, then time them side by side.

    ``reset`` restores the inputs before each verification run (kernels that update their
    output in place); ``interp`` is (instances, weight) for the interpreter's estimate;
    ``peers``: other systems' versions of the kernel (``PEERS``), timed in the same rounds;
    ``traffic``: the bytes one call must move (a memory-bound kernel: its limit is the
    machine's bandwidth), ``flops``: its floating-point operations (compute-bound: its
    limit is BLAS's rate, the NumPy column); ``ratio_target``: the most hpvm cpu ÷ Numba may be.
    """
    row = Row(name, size)
    reset()
    first = {NUMBA: timed(numba_impl.run)}
    reference = numba_impl.result().copy()
    first[NUMBA] = timed(numba_impl.run)  # warm
    reset()
    numpy_impl.run()
    check(numpy_impl.result(), reference)
    first["NumPy"] = timed(numpy_impl.run)

    runs = {NUMBA: numba_impl.run, "NumPy": numpy_impl.run}
    peer_runs = {NUMBA: numba_impl.run}
    for name, impl in (peers or {}).items():
        reset()
        impl.run()  # (compiles)
        try:
            check(impl.result(), reference)
        except AssertionError as e:
            raise AssertionError(f"{name} result differs from hand-written Numba: {e}") from None
        first[name] = timed(impl.run)
        peer_runs[name] = impl.run
    slow: dict[str, Callable[[], object]] = {}
    for target, impl in hpvm_impls.items():
        if ctx.too_slow(target, *interp):
            row.hpvm[target] = "skipped (too slow)"
            continue
        host_current(ctx.targets)
        reset()
        host_wrote(ctx.targets)
        compile_s = timed(impl.run)
        host_current(ctx.targets)
        try:
            check(impl.result(), reference)
        except AssertionError as e:
            raise AssertionError(f"hpvm {target} result differs from hand-written Numba: {e}") from None
        row.data[f"{target}_first_s"] = compile_s
        if target == "interp":
            slow[target] = impl.run
        else:
            first[target] = timed(impl.run)
            runs[target] = impl.run

    # hpvm back ends first, then the baselines
    order = {k: runs[k] for k in sorted(runs, key=lambda k: (k in (NUMBA, "NumPy"), k))}
    medians = ctx.interleaved(order, first, extras=("NumPy",))
    # the verdict's ratio, taken before the peers' rounds replace ``ctx.samples``
    paired = ctx.round_ratio("cpu", NUMBA) if "cpu" in runs else None
    for target, fn in slow.items():
        medians[target] = ctx.alone(fn, ctx.interp_estimate(*interp))
    for target in hpvm_impls:
        if target in medians:
            row.hpvm[target] = fmt_time(medians[target])
    row.numba = fmt_time(medians[NUMBA])
    row.numpy = fmt_time(medians["NumPy"]) + (f" ({numpy_label})" if numpy_label else "")
    if peers:
        # The peers in rounds of their own, with Numba and hpvm cpu again: Taichi's worker
        # threads keep spinning after its kernel and slowed whatever ran next up to 2x, and
        # the row's own rounds hold NumPy (BLAS's threads spin after a matmul too), so a
        # peer is compared with hpvm in the same rounds, not through Numba across rounds.
        if "cpu" in runs:
            peer_runs["cpu"] = runs["cpu"]
        again = ctx.interleaved(peer_runs, first, extras=tuple(peers))
        for name in peers:
            row.peers[name] = fmt_time(again[name])
            row.data[f"{name}_s"] = again[name]
            row.data[f"{name}_per_numba"] = again[name] / again[NUMBA]
            if "cpu" in again:
                row.data[f"{name}_per_cpu"] = again[name] / again["cpu"]
    row.data.update({f"{k}_s": v for k, v in medians.items()})
    ratio_row(row, medians, paired, ratio_target)
    row.limit = limit_cell(ctx, medians.get("cpu"), traffic, flops, medians["NumPy"], row.data)
    return row


def limit_cell(
    ctx: Bench, seconds: float | None, traffic: float, flops: float, blas_s: float, data: dict[str, Any]
) -> str:
    """The limit column: the time the machine's bandwidth allows for ``traffic`` bytes and
    the share of it hpvm cpu reaches, or BLAS's GFLOP/s beside hpvm's for ``flops``."""
    if traffic:
        bandwidth, how = ctx.bandwidth()
        limit = traffic / bandwidth
        data |= {"limit_s": limit, "bandwidth_Bps": bandwidth}
        cell = f"{fmt_time(limit)} at {bandwidth / 1e9:.1f} GB/s ({how})"
        return cell + (f"; cpu {traffic / seconds / 1e9:.1f} GB/s" if seconds else "")
    if flops:
        data["blas_gflops"] = flops / blas_s / 1e9
        cell = f"BLAS {flops / blas_s / 1e9:.1f} GFLOP/s"
        return cell + (f"; cpu {flops / seconds / 1e9:.1f}" if seconds else "")
    return "—"


def ratio_row(
    row: Row, medians: dict[str, float], paired: float | None, target: float = RATIO_TARGET
) -> None:
    """Fill measure / target / verdict with hpvm cpu ÷ Numba (or the interpreter's ratio).

    ``paired``: cpu ÷ Numba as the median of the rounds' ratios (``Bench.round_ratio``),
    the verdict's measure, given whenever cpu ran; the time columns stay each side's median."""
    row.target = f"≤ {target:.2f}×"
    if "cpu" in medians:
        assert paired is not None, "cpu ran in the row's rounds"
        ratio = paired
        row.data["ratio_of_medians"] = medians["cpu"] / medians[NUMBA]
        row.measure = f"cpu/Numba {ratio:.2f}×"
        row.verdict = verdict(ratio <= target)
        row.data["ratio"] = ratio
    elif "interp" in medians:
        row.measure = f"interp/Numba {medians['interp'] / medians[NUMBA]:,.0f}×"


def tracked(*arrays: np.ndarray) -> None:
    """Track every array with the hpvm runtime (launches need it); they are the row's arrays."""
    _row_arrays[:] = arrays
    for array in arrays:
        hpvm.track_memory(array)


DEVICE_TARGETS = ("cuda", "opencl")  # back ends that leave results in device memory
_row_arrays: list[np.ndarray] = []


def host_current(targets: list[str]) -> None:
    """With a device back end, bring the row's arrays back to the host before it reads or
    writes them (results stay on the device until requested)."""
    if any(t in DEVICE_TARGETS for t in targets):
        for array in _row_arrays:
            hpvm.request_memory(array)


def host_wrote(targets: list[str]) -> None:
    """Declare the host's writes (``reset``) so device back ends copy the arrays again."""
    if any(t in DEVICE_TARGETS for t in targets):
        for array in _row_arrays:
            hpvm.mark_host_modified(array)


# ---------------------------------------------------------------------------------------
# Kernels


def bench_vadd(ctx: Bench) -> list[Row]:
    """Vector add, c = a + b (2^24 float32)."""
    n = ctx.sizes.vadd
    return [vadd_row(ctx, n, ctx.targets)]


def vadd_row(ctx: Bench, n: int, targets: list[str]) -> Row:
    """One vector-add row of length ``n`` (also a point of the scaling picture)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    out = {name: np.zeros(n, dtype=np.float32) for name in (*targets, NUMBA, "NumPy")}
    tracked(a, b, *out.values())

    def hpvm_impl(target: str) -> Impl:
        return Impl(lambda: kernels.vector_add(a, b, out[target], target), lambda: out[target])

    return kernel_row(
        ctx,
        "vector add",
        f"2^{n.bit_length() - 1} f32" if n & (n - 1) == 0 else f"{n:,} f32",
        {t: hpvm_impl(t) for t in targets},
        Impl(lambda: baselines.vector_add(a, b, out[NUMBA]), lambda: out[NUMBA]),
        Impl(lambda: baselines.vector_add_numpy(a, b, out["NumPy"]), lambda: out["NumPy"]),
        lambda: None,
        np.testing.assert_array_equal,
        (n, INTERP_WEIGHT["vadd"]),
        traffic=12 * n,  # a and b read, c written
    )


def bench_sgemm(ctx: Bench) -> list[Row]:
    """Parboil sgemm, C = alpha A B + beta C, with the two-level tiled graph."""
    return [sgemm_row(ctx, ctx.sizes.sgemm, ctx.targets)]


def bench_sgemm_wrapper(ctx: Bench) -> list[Row]:
    """The same sgemm under a one-instance internal node, as HPVM-C programs are written."""
    return [sgemm_row(ctx, ctx.sizes.sgemm, ctx.targets, kernels.sgemm_wrapper_root, ", wrapper node")]


def sgemm_row(
    ctx: Bench,
    size: int,
    targets: list[str],
    root: InternalFunction = kernels.sgemm_example.root,
    label: str = "",
) -> Row:
    """One sgemm row of size³ (also a point of the scaling picture) with the graph ``root``."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    c0 = rng.standard_normal((size, size), dtype=np.float32)
    alpha, beta = np.float32(1.5), np.float32(0.5)
    out = {name: c0.copy() for name in (*targets, NUMBA, "NumPy")}
    tracked(a, b, *out.values())

    def reset() -> None:
        for c in out.values():
            c[...] = c0

    def check(result: np.ndarray, reference: np.ndarray) -> None:
        np.testing.assert_allclose(result, reference, rtol=1e-4, atol=1e-5 * size)

    def hpvm_impl(target: str) -> Impl:
        return Impl(lambda: kernels.sgemm(a, b, out[target], alpha, beta, target, root), lambda: out[target])

    tile = kernels.SGEMM_TILE
    return kernel_row(
        ctx,
        f"sgemm, tiled {tile}×{tile}{label}",
        f"{size}³",
        {t: hpvm_impl(t) for t in targets},
        Impl(lambda: baselines.sgemm_tiled(a, b, out[NUMBA], alpha, beta, tile), lambda: out[NUMBA]),
        Impl(lambda: baselines.sgemm_numpy(a, b, out["NumPy"], alpha, beta), lambda: out["NumPy"]),
        reset,
        check,
        (size * size, 1.0 + INTERP_WEIGHT["sgemm_per_k"] * size),
        numpy_label="BLAS: other algorithm",
        flops=2.0 * size**3,
    )


def bench_stencil(ctx: Bench) -> list[Row]:
    """Parboil stencil: 7-point 3-D, one launch per iteration, arrays swapped by the host."""
    return stencil_rows(ctx, kernels.stencil_root)


def bench_stencil_wrapper(ctx: Bench) -> list[Row]:
    """The same stencil under a one-instance internal node, as HPVM-C programs are written."""
    return stencil_rows(ctx, kernels.stencil_wrapper_root, ", wrapper node")


def stencil_rows(ctx: Bench, root: InternalFunction, label: str = "") -> list[Row]:
    """The stencil row of the graph ``root``."""
    shape, iterations = ctx.sizes.stencil, ctx.sizes.stencil_iterations
    rng = np.random.default_rng(0)
    grid = rng.random(shape, dtype=np.float32)
    # One pair of arrays for every implementation computing in host memory: the same arrays
    # at the same addresses. Two pairs made alike ran the same code up to 1.24× apart (166
    # against 206 µs a step, Numba's and hpvm's alike, in one process): the allocator's
    # placement, which the row read as hpvm against Numba (1.25× in full runs, 0.69× in
    # others; BENCHMARKS.md). A device back end computes on its own copies: a pair of its own.
    host = (grid.copy(), grid.copy())
    names = (*ctx.targets, NUMBA, "NumPy")
    pairs = {name: (grid.copy(), grid.copy()) if name in DEVICE_TARGETS else host for name in names}
    tracked(*{id(arr): arr for pair in pairs.values() for arr in pair}.values())
    last: dict[str, np.ndarray] = {}
    c0, c1 = kernels.STENCIL_C0, kernels.STENCIL_C1

    def reset() -> None:
        for src, dst in pairs.values():
            src[...] = grid
            dst[...] = grid

    def hpvm_run(target: str) -> Callable[[], object]:
        def run() -> None:
            last[target] = kernels.stencil(*pairs[target], iterations, target, root)

        return run

    def baseline_run(name: str, step: Callable[..., None]) -> Callable[[], object]:
        def run() -> None:
            last[name] = baselines.stencil_run(step, *pairs[name], c0, c1, iterations)

        return run

    def check(result: np.ndarray, reference: np.ndarray) -> None:
        np.testing.assert_allclose(result, reference, rtol=1e-5, atol=1e-6)

    nz, ny, nx = shape
    interior = (nz - 2) * (ny - 2) * (nx - 2)
    row = kernel_row(
        ctx,
        f"stencil 7-point 3-D, {iterations} launches{label}",
        f"{nx}×{ny}×{nz}",
        {t: Impl(hpvm_run(t), lambda t=t: last[t]) for t in ctx.targets},
        Impl(baseline_run(NUMBA, baselines.stencil_step), lambda: last[NUMBA]),
        Impl(baseline_run("NumPy", baselines.stencil_step_numpy), lambda: last["NumPy"]),
        reset,
        check,
        (interior * iterations, INTERP_WEIGHT["stencil"]),
        traffic=8.0 * nx * ny * nz * iterations,  # each step reads the grid once, writes the next
        ratio_target=STENCIL_RATIO_TARGET,
    )
    if "cpu_s" in row.data:
        row.data["cpu_per_launch_s"] = row.data["cpu_s"] / iterations
    return [row]


def bench_histogram(ctx: Bench) -> list[Row]:
    """Histogram of bytes into 256 bins with ``hpvm.atomic_add`` (bins zeroed before each run)."""
    n, nbins = ctx.sizes.histogram, 256
    values = kernels.histogram_example.make_values(n, 0)
    bins = {name: np.zeros(nbins, dtype=np.int32) for name in (*ctx.targets, NUMBA, "NumPy")}
    tracked(values, *bins.values())

    def impl(name: str, fn: Callable[[np.ndarray], None]) -> Impl:
        def run() -> None:
            bins[name][:] = 0  # the host zeroes the bins before every run, in every version
            fn(bins[name])

        return Impl(run, lambda: bins[name])

    return [
        kernel_row(
            ctx,
            "histogram, atomics",
            f"2^{n.bit_length() - 1} u8, {nbins} bins",
            {t: impl(t, lambda out, t=t: kernels.histogram(values, out, t)) for t in ctx.targets},
            impl(NUMBA, lambda out: baselines.histogram_private(values, out)),
            impl("NumPy", lambda out: baselines.histogram_numpy(values, out)),
            lambda: None,
            np.testing.assert_array_equal,
            (n, INTERP_WEIGHT["histogram"]),
            numpy_label="bincount",
            traffic=n,  # one byte read per value (the bins stay in cache)
        )
    ]


def bench_reduction(ctx: Bench) -> list[Row]:
    """Block-wise tree sums with an allocation node, malloc and barriers; the host adds the partials."""
    n, block = ctx.sizes.reduction, kernels.REDUCTION_BLOCK
    data = kernels.reduction_example.make_data(n, 0)
    partials = {name: np.zeros(n // block, dtype=np.float32) for name in (*ctx.targets, NUMBA, "NumPy")}
    tracked(data, *partials.values())
    totals: dict[str, float] = {}

    def impl(name: str, fn: Callable[[np.ndarray], None]) -> Impl:
        def run() -> None:
            fn(partials[name])
            totals[name] = float(partials[name].sum())  # the host adds the partial sums

        return Impl(run, lambda: partials[name])

    def check(result: np.ndarray, reference: np.ndarray) -> None:
        np.testing.assert_allclose(result, reference, rtol=1e-6, atol=1e-6)

    return [
        kernel_row(
            ctx,
            f"block reduction, barriers ({block}/block)",
            f"2^{n.bit_length() - 1} f32",
            {t: impl(t, lambda out, t=t: kernels.block_sum(data, block, out, t)) for t in ctx.targets},
            impl(NUMBA, lambda out: baselines.block_tree_sum(data, block, out)),
            impl("NumPy", lambda out: baselines.block_tree_sum_numpy(data, block, out)),
            lambda: None,
            check,
            (n, INTERP_WEIGHT["reduction"]),
            traffic=4 * n,  # the data read once
            ratio_target=BARRIER_RATIO_TARGET,
        )
    ]


# ---------------------------------------------------------------------------------------
# The streaming pipeline


def bench_pipeline(ctx: Bench) -> list[Row]:
    """Edge detection: the streamed graph, the same graph launched per frame, Numba, NumPy.

    Two rows: frames per second against the hand-written stages called one after the other
    (≤ 1.05× their time per frame), and the stream against the same leaves launched once
    per frame in a non-streaming graph (≥ 1.0×: each stage is a parallel loop over every
    core, so overlapping stages has little to gain on 2 cores, but must not lose), the
    median of each round's ratio (``Bench.round_ratio``). Every edge map is compared exactly
    with NumPy's before anything is timed.
    """
    size, count = ctx.sizes.frame, ctx.sizes.frames
    frames = kernels.synthetic_frames(count, size)
    pipeline = kernels.EdgePipeline(size, size, in_flight=8)
    kernel, theta = pipeline.kernel, pipeline.theta
    reference = np.stack([kernels.edge_example.reference_edges(f, kernel, theta) for f in frames])
    buffers = [np.zeros((size, size), dtype=np.float32) for _ in range(5)]
    max_grad = np.zeros(1, dtype=np.float32)
    numba_edges = np.empty_like(reference)

    def numba_run() -> None:
        for k, frame in enumerate(frames):
            numba_edges[k] = baselines.edge_frame(frame, kernel, *buffers[:4], max_grad, buffers[4], theta)

    numpy_frames = frames[: min(count, 8)]  # NumPy is slow: its rate is measured on fewer frames

    def numpy_run() -> None:
        for frame in numpy_frames:
            kernels.edge_example.reference_edges(frame, kernel, theta)

    numba_run()
    np.testing.assert_array_equal(
        numba_edges, reference, err_msg="hand-written Numba edges differ from NumPy"
    )
    first = {NUMBA: timed(numba_run), "NumPy": timed(numpy_run)}
    runs: dict[str, Callable[[], object]] = {NUMBA: numba_run, "NumPy": numpy_run}

    main = Row("edge detection, 6 stages streaming", f"{count} frames {size}²")
    versus = Row("pipeline vs same stages sequential", f"{count} frames {size}²")
    slow: dict[str, Callable[[], object]] = {}
    estimate = count * size * size * INTERP_WEIGHT["pipeline"]
    for target in ctx.targets:
        if ctx.too_slow(target, estimate, 1.0):
            main.hpvm[target] = versus.hpvm[target] = "skipped (too slow)"
            continue
        modes = {
            f"{target} stream": lambda t=target: pipeline.stream(frames, t),
            f"{target} sequential": lambda t=target: pipeline.sequential(frames, t),
        }
        for mode, fn in modes.items():
            start = time.perf_counter()
            got = fn()  # compiles
            main.data[f"{mode}_first_s"] = time.perf_counter() - start
            try:
                np.testing.assert_array_equal(got, reference)
            except AssertionError as e:
                raise AssertionError(f"hpvm {mode}: edge maps differ from NumPy: {e}") from None
            if target == "interp":
                slow[mode] = fn
            else:
                first[mode] = timed(fn)
                runs[mode] = fn
    order = {k: runs[k] for k in sorted(runs, key=lambda k: (k in (NUMBA, "NumPy"), k))}
    medians = ctx.interleaved(order, first, extras=("NumPy",))
    for mode, fn in slow.items():
        medians[mode] = ctx.alone(fn, ctx.interp_estimate(estimate, 1.0) / 2)
    medians["NumPy"] *= count / len(numpy_frames)
    main.data.update({f"{k}_s": v for k, v in medians.items()})
    main.data["frames"] = count

    def fps(seconds: float) -> str:
        return f"{count / seconds:,.1f} fps"

    main.numba = fps(medians[NUMBA]) + " (stages in turn)"
    main.numpy = fps(medians["NumPy"])
    main.target = f"≤ {EDGE_TARGET:.2f}×"
    versus.target = f"≥ {PIPELINE_TARGET:.1f}×"
    for target in ctx.targets:
        stream, seq = medians.get(f"{target} stream"), medians.get(f"{target} sequential")
        if stream is None or seq is None:
            continue
        main.hpvm[target] = fps(stream)
        versus.hpvm[target] = f"{fps(stream)} vs {fps(seq)} sequential"
        if target == "cpu" or (target == "interp" and "cpu" not in ctx.targets):
            ratio, speedup = stream / medians[NUMBA], seq / stream
            if (
                f"{target} stream" in ctx.samples
            ):  # (interleaved: each round's ratio; the interpreter runs alone)
                speedup = ctx.round_ratio(f"{target} sequential", f"{target} stream")
            main.measure = f"{target}/Numba time {ratio:,.2f}×"
            versus.measure = f"{target} stream/sequential {speedup:.2f}×"
            if target == "cpu":
                main.verdict, versus.verdict = (
                    verdict(ratio <= EDGE_TARGET),
                    verdict(speedup >= PIPELINE_TARGET),
                )
                main.data["ratio"], versus.data["speedup"] = ratio, speedup
    return [main, versus]


# ---------------------------------------------------------------------------------------
# Targets measured in other processes, and the launch latency


def run_worker(args: list[str], env: dict[str, str]) -> tuple[dict, float]:
    """Run ``worker.py`` with ``args``; its JSON line and the wall time at which it started."""
    started = time.time()
    proc = subprocess.run(
        [sys.executable, str(HERE / "worker.py"), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"worker {' '.join(args)} failed:\n{proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), started


def bench_pipeline_serial(ctx: Bench) -> list[Row]:
    """Streaming vs sequential with one Numba thread per process: the pipeline's own parallelism.

    With one thread, each stage runs serially, so all the parallelism the stream can add is
    running different stages on different frames at once (ideal: min(2 cores, 6 stages)
    = 2×; the target is ≥ 1.8×). Beside the ≥ 1.0× row, where the stages are also data-parallel.
    The limit column: the same launches spread over two host threads, whole frames at once
    (``EdgePipeline.frames_on_threads``), what two cores give these stages with no hand-off
    at all — on a machine whose two cores do not give 2× to two threads, the stream cannot.
    """
    size, count = ctx.sizes.frame, ctx.sizes.frames
    row = Row(
        "pipeline vs sequential, 1 thread/stage",
        f"{count} frames {size}²",
        target=f"≥ {PIPELINE_SERIAL_TARGET:.1f}×",
    )
    if "cpu" not in ctx.targets:
        row.measure = "not run: needs --targets cpu"
        return [row]
    result, _ = run_worker(
        [
            "pipeline",
            "--size",
            str(size),
            "--frames",
            str(count),
            "--repeat",
            str(max(PIPELINE_ROUNDS, ctx.repeat)),
        ],
        {"NUMBA_NUM_THREADS": "1"},
    )
    speedup = result["speedup"]  # the median of each round's ratio: its two runs side by side
    row.hpvm["cpu"] = (
        f"{count / result['stream']:,.1f} fps vs {count / result['sequential']:,.1f} fps sequential"
    )
    row.measure = f"cpu stream/sequential {speedup:.2f}×"
    if "two_threads" in result:  # whole frames on two threads: what two cores give these stages
        limit = result["limit"]
        row.limit = f"frames on 2 threads {limit:.2f}× (stream {speedup / limit:.2f} of it)"
    row.verdict = verdict(speedup >= PIPELINE_SERIAL_TARGET)
    row.data = {**result, "speedup": speedup}
    return [row]


def bench_threads(ctx: Bench) -> list[Row]:
    """sgemm speed-up from 1 to 2 threads, each thread count in a process of its own."""
    size = ctx.sizes.sgemm
    row = Row("sgemm speed-up, 1 → 2 threads", f"{size}³", target=f"≥ {THREADS_TARGET:.1f}×")
    if "cpu" not in ctx.targets:
        row.measure = "not run: needs --targets cpu"
        return [row]
    repeat = max(3, ctx.repeat)
    results = {}
    for threads in (1, 2):
        results[threads], _ = run_worker(
            ["threads", "--size", str(size), "--repeat", str(repeat)], {"NUMBA_NUM_THREADS": str(threads)}
        )
    one, two = results[1], results[2]
    speedup = one["cpu"] / two["cpu"]
    row.hpvm["cpu"] = f"{fmt_time(one['cpu'])} → {fmt_time(two['cpu'])}"
    row.numba = f"{one['numba'] / two['numba']:.2f}× ({fmt_time(one['numba'])} → {fmt_time(two['numba'])})"
    row.measure = f"cpu speed-up {speedup:.2f}×"
    row.verdict = verdict(speedup >= THREADS_TARGET)
    row.data = {"one": one, "two": two, "speedup": speedup, "numba_speedup": one["numba"] / two["numba"]}
    if (os.cpu_count() or 1) < 2:
        ctx.notes.append("Only one CPU: the 1 → 2 thread speed-up cannot be measured meaningfully.")
    return [row]


def bench_launch(ctx: Bench) -> list[Row]:
    """Median launch + wait of a one-instance graph, warm (after a first, compiling launch)."""
    row = Row("launch + wait, one instance (warm)", "1 leaf", target=f"≤ {LAUNCH_TARGET * 1e6:.0f} µs")
    count = ctx.sizes.launches

    def per_call(fn: Callable[[], object], n: int) -> float:
        fn()
        times = []
        for _ in range(n):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    for target in ctx.targets:
        if kernels.launch_one(target) != 42:
            raise AssertionError(f"the one-instance graph returned a wrong result on {target}")
        seconds = per_call(
            lambda t=target: kernels.launch_one(t), count if target != "interp" else count // 4
        )
        row.hpvm[target] = fmt_time(seconds)
        row.data[f"{target}_s"] = seconds
    empty = per_call(lambda: baselines.empty_parallel_loop(1), count)
    row.numba = f"{fmt_time(empty)} (empty prange call)"
    row.data["numba_empty_s"] = empty
    if "cpu_s" in row.data:
        row.measure = fmt_time(row.data["cpu_s"])
        row.verdict = verdict(row.data["cpu_s"] <= LAUNCH_TARGET)
        row.target += f"; vadd ≤ {LAUNCH_RATIO_TARGET:.1f}× Numba"
        ratio = _launch_vadd(ctx, row)
        field = _launch_genhpvm(ctx, row)
        row.target += f"; GenHPVM saxpy ≤ {LAUNCH_RATIO_TARGET:.1f}× Numba"
        row.verdict = verdict(
            row.data["cpu_s"] <= LAUNCH_TARGET
            and ratio <= LAUNCH_RATIO_TARGET
            and field <= LAUNCH_RATIO_TARGET
        )
    return [row]


def _hot_loop(launch: Callable[[], object]) -> None:
    """``launch`` as often as a host loop calls it before it is hot (``plan.HOT_REPLAYS``
    replays: the record's native calls made, a fraction of a second once), so that the
    samples measure the loop's steady state, not whether the row's own number of samples
    (set by one warm call's time) happened to reach the record's 200th replay: a sample
    count of 70 left GenHPVM's saxpy on its dispatcher call, 3 µs against 1.7."""
    from hpvm.runtime.plan import HOT_REPLAYS

    for _ in range(HOT_REPLAYS + 20):
        launch()


def _launch_genhpvm(ctx: Bench, row: Row) -> float:
    """Launch + wait of the field's IR form on cpu — GenHPVM's saxpy
    (``kernels.GENHPVM_SAXPY``: a leaf looping over four elements per instance, the root's
    two outputs bound from it, byte views made once) — against a Numba ``prange`` call of the
    same loops returning the same two values, interleaved as ``_launch_vadd``: the ratio,
    also written into ``row``. (Before issue 24's last stop the leaf's loop sent every launch
    to a worker, 100–170 µs, and the root's outputs kept it from the direct and native calls.)"""
    n = LAUNCH_VADD_SIZE
    x, y = np.arange(n, dtype=np.float32), np.full(n, 2, dtype=np.float32)
    z_hpvm, z_numba = np.zeros(n, np.float32), np.zeros(n, np.float32)
    for array in (x, y, z_hpvm):
        hpvm.track_memory(array)
    views = tuple(v.view(np.uint8) for v in (x, y, z_hpvm))
    a, instances = np.float32(1.5), np.int64(n // 4)
    runs = {
        "cpu": lambda: kernels.genhpvm_saxpy(views, a, instances, "cpu"),
        NUMBA: lambda: baselines.saxpy_fours(x, y, z_numba, a, n // 4),
    }
    first = {name: timed(fn) for name, fn in runs.items() for _ in range(3)}  # (compiles, then warm)
    got, want = runs["cpu"](), runs[NUMBA]()
    np.testing.assert_array_equal(z_hpvm, z_numba)
    if got != (np.float32(want[0]), np.int64(want[1])) or [type(v) for v in got] != [np.float32, np.int64]:
        raise AssertionError(f"the GenHPVM saxpy returned {got!r}, Numba's loop {want!r}")
    return _hot_ratio(
        ctx,
        row,
        runs,
        first,
        (x, y, z_hpvm),
        "genhpvm",
        f"GenHPVM saxpy {n}",
        " (a looping leaf, root outputs)",
    )


def _hot_ratio(
    ctx: Bench,
    row: Row,
    runs: dict[str, Callable[[], object]],
    first: dict[str, float],
    tracked: tuple[np.ndarray, ...],
    key: str,
    label: str,
    about: str = "",
) -> float:
    """The launch row's measure of one program: ``runs``' cpu launch as hot as a host loop
    makes it (``_hot_loop``), and the Numba call given as many calls, then both sides
    interleaved (``steady``); the ``tracked`` arrays let go; the ratio, also written into
    ``row`` (as ``label``, and ``key`` in its data). Warmed with three calls only, Numba's
    ``prange`` call of the GenHPVM saxpy's loop read 29–59 µs a call, against 2 µs warm, in
    3 of 4 processes, for its first few hundred calls: one ``make bench`` (at ``1a3743e``)
    recorded 60.6 µs and a ratio of 0.04×. The worker that ran the first, compiling launch
    is let go first (``workers.IDLE_RETIRE_S``): while it lives, its OpenMP team makes the
    process hold more OpenMP threads than cores, libgomp cuts every team's spinning short,
    and each Numba call woke a sleeping team."""
    from hpvm.runtime import workers

    time.sleep(3 * workers.IDLE_RETIRE_S)
    for run in runs.values():
        _hot_loop(run)
    medians = ctx.interleaved(runs, first, steady=LAUNCH_STEADY)
    for array in tracked:
        hpvm.untrack_memory(array)
    ratio = medians["cpu"] / medians[NUMBA]
    row.numba += f"; {label}: {fmt_time(medians[NUMBA])}"
    row.hpvm["cpu"] += f"; {label}{about}: {fmt_time(medians['cpu'])}"
    row.measure += f"; {label.rsplit(' ', 1)[0]} cpu/Numba {ratio:.2f}×"
    row.data.update({f"{key}_cpu_s": medians["cpu"], f"{key}_numba_s": medians[NUMBA], f"{key}_ratio": ratio})
    return ratio


def _launch_vadd(ctx: Bench, row: Row) -> float:
    """Launch + wait of a tiny vector add on cpu against a Numba ``prange`` call of the same
    loop, interleaved (issue 24, item 1): the ratio, also written into ``row``.

    Each sample is a short loop of one side's calls after an untimed one
    (``interleaved``'s ``steady``): what a host calling either in a loop pays. Sampled one
    call at a time, each side paid for the other's leftovers: hpvm's quick runs of this
    tiny graph use one thread (``quick.Runs.threads``), so the Numba call after each found
    the OpenMP team sized for one and asleep (98 µs in ``make bench`` at 7111930: the row
    read 0.85×, an artifact), and an hpvm launch right after a Numba call paid for the
    team Numba left (at load 3.8, medians of 400: Numba 25.0 µs after an hpvm launch,
    18.7 after its own call; hpvm 59.1 µs after a Numba call, 44.8 after its own launch).
    The untimed call pays that switch on both sides alike."""
    n = LAUNCH_VADD_SIZE
    a, b = np.arange(n, dtype=np.float32), np.full(n, 2, dtype=np.float32)
    c_hpvm, c_numba = np.zeros(n, np.float32), np.zeros(n, np.float32)
    for array in (a, b, c_hpvm):
        hpvm.track_memory(array)
    runs = {
        "cpu": lambda: kernels.vector_add(a, b, c_hpvm, "cpu"),
        NUMBA: lambda: baselines.vector_add(a, b, c_numba),
    }
    first = {name: timed(fn) for name, fn in runs.items() for _ in range(3)}  # (compiles, then warm)
    np.testing.assert_array_equal(c_hpvm, c_numba)
    row.data.update(vadd_size=n)
    return _hot_ratio(ctx, row, runs, first, (a, b, c_hpvm), "vadd", f"vadd {n}")


def _median_process(samples: list[dict], key: str) -> dict:
    """The sample whose ``key`` is the median of ``samples`` (an odd count: one of them, so
    its other numbers belong to the same process), with the spread of ``key`` added."""
    ordered = sorted(samples, key=lambda sample: sample[key])
    return {**ordered[len(ordered) // 2], "runs": [sample[key] for sample in samples]}


def _spread(sample: dict) -> str:
    runs = sample["runs"]
    return f"median of {len(runs)} processes, {fmt_time(min(runs))}–{fmt_time(max(runs))}"


def bench_compile(ctx: Bench) -> list[Row]:
    """Cold compile and warm start of the sgemm graph in new processes (hpvm cpu and Numba).

    Each side runs ``COLD_PROCESSES`` cold processes (each with empty caches of its own) and
    then ``WARM_PROCESSES`` warm ones (on the first cold process's caches), the two sides
    alternating; a row reads the median process. With one process a side, the same warm
    start read 0.70–1.19 s in five runs within 20 minutes on the 2-core machine: one
    process's start-up time carried the host's noise into the verdict."""
    size = ctx.sizes.compile_sgemm
    cold = Row("cold compile, sgemm graph (new process)", f"{size}³", target=f"≤ {COLD_TARGET:.0f} s")
    warm = Row("warm start, new process → 1st result", f"{size}³", target=f"≤ {WARM_TARGET:.0f} s")
    if "cpu" not in ctx.targets:
        cold.measure = warm.measure = "not run: needs --targets cpu"
        return [cold, warm]
    samples: dict[tuple[str, str], list[dict]] = {
        (which, phase): [] for which in ("cpu", "numba") for phase in ("cold", "warm")
    }
    with tempfile.TemporaryDirectory(prefix="hpvm-bench-cache-") as tmp:

        def env(caches: int) -> dict[str, str]:
            # Python may write (and so read) .pyc files, as for any user: a shell that says
            # PYTHONDONTWRITEBYTECODE would otherwise make every warm start compile hpvm's
            # modules from source (about 0.2 s of it, issue 24).
            return {
                "NUMBA_CACHE_DIR": str(Path(tmp) / str(caches) / "numba"),
                "HPVM_CACHE_DIR": str(Path(tmp) / str(caches) / "hpvm"),
                "PYTHONDONTWRITEBYTECODE": "",
            }

        runs = [("cold", i) for i in range(COLD_PROCESSES)] + [("warm", 0)] * WARM_PROCESSES
        for phase, caches in runs:
            for which in ("cpu", "numba"):
                args = ["compile", "--size", str(size)] + (["--numba"] if which == "numba" else [])
                result, started = run_worker(args, env(caches))
                result["start_to_result_s"] = result["result_wall"] - started
                samples[which, phase].append(result)
    c = _median_process(samples["cpu", "cold"], "first_launch_s")
    nc = _median_process(samples["numba", "cold"], "first_launch_s")
    w = _median_process(samples["cpu", "warm"], "start_to_result_s")
    nw = _median_process(samples["numba", "warm"], "start_to_result_s")
    cold.hpvm["cpu"] = f"{fmt_time(c['first_launch_s'])} (start → result {fmt_time(c['start_to_result_s'])})"
    cold.numba = f"{fmt_time(nc['first_launch_s'])} (start → result {fmt_time(nc['start_to_result_s'])})"
    cold.measure = (
        f"1st launch+wait {fmt_time(c['first_launch_s'])} ({_spread(c)}; CPU "
        f"{fmt_time(c['first_launch_cpu_s'])}, {c['compiled']} functions compiled)"
    )
    cold.verdict = verdict(c["first_launch_s"] <= COLD_TARGET)
    warm.hpvm["cpu"] = f"{fmt_time(w['start_to_result_s'])} (imports {fmt_time(w['import_s'])})"
    warm.numba = f"{fmt_time(nw['start_to_result_s'])} (imports {fmt_time(nw['import_s'])})"
    warm.measure = (
        f"start → result {fmt_time(w['start_to_result_s'])} ({_spread(w)}; "
        f"{w['compiled']} functions compiled)"
    )
    warm.verdict = verdict(w["start_to_result_s"] <= WARM_TARGET)
    cold.data = {"cpu": c, "numba": nc}
    warm.data = {"cpu": w, "numba": nw}
    return [cold, warm]


# ---------------------------------------------------------------------------------------
# Scaling pictures


def bench_overhead(ctx: Bench) -> list[Row]:
    """Launch + wait of a trivial leaf replicated N times, N = 1 … 2^max: a picture and two rows.

    Two trivial leaves: ``noop`` (empty: a compiler may drop its loop, leaving the pure
    launch cost) and ``write_id`` (each instance writes its id: the per-instance cost of
    scheduling, beside Numba's ``prange`` loop writing ``out[i] = i``).
    """
    top_log2 = ctx.sizes.overhead_max_log2
    counts = sorted({1 << p for p in range(0, top_log2 + 1, 2)} | {1 << top_log2})
    leaves = {
        "empty leaf": (kernels.launch_noop, lambda n, out: baselines.empty_parallel_loop(n)),
        "writes id": (kernels.launch_write_id, lambda n, out: baselines.write_ids(out)),
    }
    series: dict[str, list[tuple[int, float]]] = {}
    for n in counts:
        out = {name: np.zeros(n, dtype=np.int64) for name in (*ctx.targets, NUMBA)}
        tracked(*out.values())
        runs: dict[str, Callable[[], object]] = {}
        first: dict[str, float] = {}
        for leaf, (launch, baseline) in leaves.items():
            for target in ctx.targets:
                label = f"hpvm {target}, {leaf}"
                estimate = ctx.interp_estimate(n, INTERP_WEIGHT["noop"]) if target == "interp" else 0.0
                if estimate > 2.0:
                    continue
                arg = n if leaf == "empty leaf" else out[target]
                fn = lambda f=launch, a=arg, t=target: f(a, t)  # noqa: E731
                fn()
                if leaf == "writes id":
                    np.testing.assert_array_equal(out[target], np.arange(n))
                if target == "interp":
                    series.setdefault(label, []).append((n, ctx.alone(fn, estimate)))
                else:
                    runs[label], first[label] = fn, timed(fn)
            label = f"Numba, {'empty prange' if leaf == 'empty leaf' else 'prange writes i'}"
            runs[label] = lambda f=baseline, n=n, o=out[NUMBA]: f(n, o)
            first[label] = timed(runs[label])
        for label, seconds in ctx.interleaved(runs, first).items():
            series.setdefault(label, []).append((n, seconds))
        hpvm.cleanup()
        hpvm.init()
    path = plots.overhead(ctx.out / "overhead_instances.png", series)
    ctx.notes.append(f"Launch overhead against instances: {path}")

    top = counts[-1]
    rows = []
    for leaf, numba_label in (("empty leaf", "Numba, empty prange"), ("writes id", "Numba, prange writes i")):
        row = Row(f"launch + wait, {leaf} × N", f"N = 2^{top_log2}")
        for target in ctx.targets:
            points = dict(series.get(f"hpvm {target}, {leaf}", []))
            row.hpvm[target] = fmt_time(points[top]) if top in points else "skipped (too slow)"
        numba_points = dict(series[numba_label])
        row.numba = f"{fmt_time(numba_points[top])} ({numba_label.split(', ')[1]})"
        cpu_points = dict(series.get(f"hpvm cpu, {leaf}", []))
        if top in cpu_points:
            per = (cpu_points[top] - cpu_points[1]) / (top - 1)
            numba_per = (numba_points[top] - numba_points[1]) / (top - 1)
            row.measure = f"{per * 1e9:.2f} ns/instance (Numba {numba_per * 1e9:.2f})"
        row.data = {label: pts for label, pts in series.items() if leaf in label or label == numba_label}
        rows.append(row)
    return rows


def bench_scaling(ctx: Bench) -> list[Row]:
    """Time against size for vector add and sgemm: hpvm vs hand-written Numba (pictures only)."""
    targets = ctx.hpvm_targets
    if not targets:
        ctx.notes.append("Scaling pictures need a compiled back end (--targets cpu): skipped.")
        return []
    data: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for name, sizes, make in (
        ("vector add", ctx.sizes.vadd_scaling, vadd_row),
        ("sgemm", ctx.sizes.sgemm_scaling, sgemm_row),
    ):
        series: dict[str, list[tuple[int, float]]] = {f"hpvm {t}": [] for t in targets}
        series[NUMBA], series["NumPy"] = [], []
        for size in sizes:
            hpvm.init()
            row = make(ctx, size, targets)
            hpvm.cleanup()
            for t in targets:
                series[f"hpvm {t}"].append((size, row.data[f"{t}_s"]))
            series[NUMBA].append((size, row.data[f"{NUMBA}_s"]))
            series["NumPy"].append((size, row.data["NumPy_s"]))
        data[name] = series
    vadd_path = plots.scaling(
        ctx.out / "scaling_vector_add.png", "Vector add (float32)", "elements", data["vector add"]
    )
    sgemm_path = plots.scaling(
        ctx.out / "scaling_sgemm.png",
        f"sgemm, {kernels.SGEMM_TILE}×{kernels.SGEMM_TILE} tiles (NumPy: BLAS)",
        "matrix edge (n for n×n×n)",
        data["sgemm"],
    )
    ctx.notes.append(f"Time against size: {vadd_path}, {sgemm_path}")
    ctx.scaling_data = data
    return []


BENCHMARKS: dict[str, Callable[[Bench], list[Row]]] = {
    "vadd": bench_vadd,
    "sgemm": bench_sgemm,
    "sgemm_wrapper": bench_sgemm_wrapper,
    "stencil": bench_stencil,
    "stencil_wrapper": bench_stencil_wrapper,
    "layout": layout.bench_layout,  # GPU-convention blur and stencil, Taichi, Warp, ids' layout (layout.py)
    "peers": peers_bench.bench_peers,  # saxpy, matmul, histogram beside Taichi and Warp (benchmarks/peers.py)
    "histogram": bench_histogram,
    "reduction": bench_reduction,
    "pipeline": bench_pipeline,
    "pipeline1": bench_pipeline_serial,
    "nested": nested_pipeline.bench_nested,  # a pipeline one level down vs its stages in turn (nested_pipeline.py)
    "threads": bench_threads,
    "launch": bench_launch,
    "compile": bench_compile,
    "overhead": bench_overhead,
    "scaling": bench_scaling,
    "stream": stream_bench.bench_stream,  # small items, hpvm beside a queue.Queue pair (benchmarks/streaming.py)
    "tensor": tensor_bench.bench_tensor,  # the tensor back end beside eager PyTorch (benchmarks/tensor.py)
    "gpulaunch": gpu_bench.bench_gpu_launch,  # launch + wait on cuda / opencl (benchmarks/gpu.py)
    "svm": svm_bench.bench_svm,  # the Streaming VM: Move, Python/compiled pipelines, HLC mapping (svm_bench.py)
    "hbir": hbir_bench.bench_hbir,  # HBIR programs on cpu beside hand-written Numba, compile time (benchmarks/hbir.py)
    "llvm": llvm_bench.bench_llvm,  # LLVM leaves beside Python leaves on cpu, export/import time (llvm_bench.py)
    "c": c_bench.bench_c,  # HPVM-C sgemm on cpu beside Numba and clang -O3, compile per example (benchmarks/c_bench.py)
    "llvmpar": llvmpar_bench.bench_llvmpar,  # PREPARE, -O2, EXTRACT of edge detection (llvmpar_bench.py)
    "wrapper_gpu": mixed_bench.bench_wrapper_gpu,  # a CPU wrapper[64] around a GPU leaf (mixed_bench.py)
    "membound": memory_bound.bench_membound,  # triad, vadd, saxpy, stencil vs OpenMP C, GB/s (memory_bound.py)
    "dask": dask_bench.bench_dask,  # dask's fixed cost per launch beside one Dask task (dask_bench.py)
}
NUMBA_ANCHOR = "hand-written Numba (prange)"
#: What each benchmark's hpvm side is measured against (a row may say more in its own cells).
ANCHORS = {
    "vadd": NUMBA_ANCHOR,
    "sgemm": NUMBA_ANCHOR,
    "sgemm_wrapper": NUMBA_ANCHOR,
    "stencil": NUMBA_ANCHOR,
    "stencil_wrapper": NUMBA_ANCHOR,
    "layout": NUMBA_ANCHOR + "; Taichi, Warp",
    "peers": NUMBA_ANCHOR + "; Taichi, Warp",
    "histogram": NUMBA_ANCHOR,
    "reduction": NUMBA_ANCHOR,
    "pipeline": "the same stages called in turn",
    "pipeline1": "the same stages launched in turn",
    "nested": "the same stages launched in turn",
    "threads": "the same graph on 1 thread",
    "launch": "absolute time; a Numba prange call of the same loop",
    "compile": "absolute time",
    "overhead": "Numba prange over N",
    "scaling": NUMBA_ANCHOR,
    "stream": "a queue.Queue pair",
    "tensor": "eager PyTorch",
    "gpulaunch": "absolute time",
    "svm": "numpy.copyto; queue.Queue threads; the cpu back end",
    "hbir": NUMBA_ANCHOR,
    "llvm": "the same kernels as Python leaves",
    "c": NUMBA_ANCHOR + "; clang -O3, 1 thread",
    "llvmpar": "absolute time",
    "wrapper_gpu": "the same leaf launched directly",
    "membound": "OpenMP C (gcc -O3 -march=native -fopenmp)",
    "dask": "one Dask task's round trip (submit + gather)",
}
assert set(ANCHORS) == set(BENCHMARKS), "every benchmark names its anchor"

KERNEL_ROWS = (
    "vadd",
    "sgemm",
    "sgemm_wrapper",
    "stencil",
    "stencil_wrapper",
    "histogram",
    "reduction",
    "pipeline",
)


# ---------------------------------------------------------------------------------------
# Output


def machine() -> dict[str, str]:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numba

    try:
        layer = numba.threading_layer()  # known once a parallel function has run
    except ValueError:
        layer = "not initialised"
    code = "unknown"
    try:  # read-only: which commit the imported hpvm comes from (PYTHONPATH may name a worktree), and
        # whether its sources were being edited
        package = Path(hpvm.__file__).resolve().parent
        root = Path(
            subprocess.run(
                ["git", "rev-parse", "--show-toplevel"],
                cwd=package,
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.strip()
            or HERE.parent
        )
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.split("\n")
        changed = [line[3:] for line in dirty if line.strip()]
        code = commit + (f" + uncommitted changes to {', '.join(changed)}" if changed else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return {
        "cpu": model,
        "cores": str(os.cpu_count()),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "threading_layer": layer,
        "code": code,
        "date": date.today().isoformat(),
    }


PEERS = ("OpenMP C (gcc)", "Taichi", "Warp")  # optional columns: other systems, on the rows that run them


def peer_columns(rows: list[Row]) -> list[str]:
    """The peers some row has a cell for (none: no such column)."""
    return [p for p in PEERS if any(p in r.peers for r in rows)]


def columns(targets: list[str], peers: Sequence[str] = ()) -> list[str]:
    return [
        "benchmark",
        "size",
        *(f"hpvm {t}" for t in targets),
        NUMBA,
        "NumPy",
        *peers,
        "anchor",
        "limit",
        "measure",
        "target",
        "result",
    ]


def cells(row: Row, targets: list[str], peers: Sequence[str] = ()) -> list[str]:
    return [
        row.benchmark,
        row.size,
        *(row.hpvm.get(t, "—") for t in targets),
        row.numba,
        row.numpy,
        *(row.peers.get(p, "—") for p in peers),
        row.anchor or "—",
        row.limit,
        row.measure,
        row.target,
        row.verdict,
    ]


def render_table(rows: list[Row], targets: list[str], info: dict[str, str]) -> Table:
    table = Table(
        title=f"hpvm benchmarks — {info['cpu']}, {info['cores']} cores, Python {info['python']}, "
        f"Numba {info['numba']} ({info['threading_layer']} threads), NumPy {info['numpy']}"
    )
    peers = peer_columns(rows)
    for i, name in enumerate(columns(targets, peers)):
        table.add_column(name, justify="left" if i < 2 else "right", overflow="fold")
    colour = {"PASS": "green", "MISS": "bold red", "ERROR": "bold red"}
    for row in rows:
        values = cells(row, targets, peers)
        style = colour.get(row.verdict)
        if style:
            values[-1] = f"[{style}]{row.verdict}[/]"
        table.add_row(*values)
    return table


def markdown_table(rows: list[Row], targets: list[str]) -> str:
    peers = peer_columns(rows)
    head = columns(targets, peers)
    lines = [
        "| " + " | ".join(head) + " |",
        "| " + " | ".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + " |",
    ]
    for row in rows:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells(row, targets, peers)) + " |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--quick", action="store_true", help="smaller sizes and fewer samples (about 3 minutes)"
    )
    size.add_argument("--tiny", action="store_true", help="sizes the interpreter can run: checks the harness")
    parser.add_argument(
        "--only", default="", help=f"comma-separated benchmarks to run, of: {', '.join(BENCHMARKS)}"
    )
    parser.add_argument("--repeat", type=int, default=None, help="samples per measurement (at least)")
    parser.add_argument(
        "--targets",
        default=None,
        help="comma-separated hpvm back ends: cpu, interp, opencl, cuda (default: cpu if it is available)",
    )
    parser.add_argument(
        "--out", default="out/bench", help="folder for pictures and results (default: %(default)s)"
    )
    ns = parser.parse_args(argv)
    ns.preset = "quick" if ns.quick else "tiny" if ns.tiny else "full"
    unknown = [n for n in filter(None, ns.only.split(",")) if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    if ns.repeat is not None and ns.repeat < 1:
        parser.error("--repeat must be positive")
    return ns


def main(argv: list[str] | None = None) -> int:
    ns = parse_args(argv)
    console = Console()
    if not console.is_terminal:  # a log file: do not fold the table into 80 columns
        console = Console(width=220)
    sizes = PRESETS[ns.preset]
    available = available_backends()
    if ns.targets is None:
        targets = ["cpu"] if "cpu" in available else []
        if not targets:
            console.print("[yellow]The cpu back end is not available: measuring the baselines only.[/]")
    else:
        targets = [t for t in ns.targets.split(",") if t]
        missing = [t for t in targets if t not in available]
        if missing:
            console.print(
                f"[red]not available here: {', '.join(missing)} (available: {', '.join(available)})[/]"
            )
            return 2
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    ctx = Bench(sizes, targets, ns.repeat or sizes.repeat, out, console)
    selected = [n for n in filter(None, ns.only.split(","))] or list(BENCHMARKS)
    command = " ".join(["python benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)])

    load_before = os.getloadavg()[0]
    if load_before > 0.5:
        console.print(
            f"[yellow]Load average {load_before:.2f} over the last minute: other processes have been using "
            "the CPUs; expect noisy times (ratios suffer less: every row is sampled round-robin).[/]"
        )
    started = time.perf_counter()
    baselines.warm_up()
    info = machine()  # before the benchmarks: the code they measure
    rows: list[Row] = []
    errors: list[str] = []
    progress_columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*progress_columns, console=console, transient=True) as progress:
        task = progress.add_task("benchmarks", total=len(selected))
        for name in selected:
            progress.update(task, description=f"benchmark: {name}")
            hpvm.init()
            try:
                made = BENCHMARKS[name](ctx)
                for row in made:
                    row.anchor = row.anchor or ANCHORS[name]
                rows.extend(made)
            except Exception as e:
                rows.append(
                    Row(
                        name,
                        "—",
                        measure=f"{type(e).__name__}: {str(e).splitlines()[0][:80]}",
                        verdict="ERROR",
                    )
                )
                errors.append(f"{name}: {''.join(traceback.format_exception(e))}")
            finally:
                hpvm.cleanup()
            progress.advance(task)
    elapsed = time.perf_counter() - started

    info["load_average"] = f"{load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    console.print(render_table(rows, targets, info))
    ratios = {r.benchmark.split(",")[0]: r.data["ratio"] for r in rows if "ratio" in r.data}
    if ratios:
        ctx.notes.append(f"Ratios to hand-written Numba: {plots.ratios(out / 'ratios.png', ratios)}")
    ctx.notes.append(f"Code: {info['code']}; load average {info['load_average']}.")
    for note in ctx.notes:
        console.print(note)
    (out / "table.md").write_text(markdown_table(rows, targets))
    results = {
        "command": command,
        "preset": ns.preset,
        "targets": targets,
        "machine": info,
        "elapsed_s": elapsed,
        "rows": [asdict(r) for r in rows],
        "scaling": ctx.scaling_data,
    }
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    console.print(f"Results: {out / 'results.json'}, {out / 'table.md'} ({elapsed:.0f} s)")
    for error in errors:
        console.print(f"[red]error in {error}[/]", highlight=False)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
