"""Memory-bound kernels beside the same loops in C with OpenMP, and the machine's bandwidth (issue 24, item 3).

``run.py --only membound``. Four kernels whose speed is set by memory, not arithmetic:

- ``STREAM triad`` a = b + s·c (2^24 float32: 12 bytes per element),
- ``vector add`` c = a + b (12 bytes per element),
- ``saxpy`` y = α·x + y (12 bytes per element),
- ``stencil 7-point 3-D`` Parboil's step at 256×256×64 (nx×ny×nz; 8 bytes per point: the
  grid read once, the next one written),

each four ways, every result checked against NumPy before anything is timed, the samples
interleaved (one of each in turn) and medians:

- hpvm cpu, the kernel as a Python leaf (``examples/vector_add.py``, the leaves below,
  ``layout.py``'s GPU-convention stencil: x = ``get_node_instance_id_x`` the fastest index);
- hpvm cpu, the kernel as an HPVM-C leaf (``examples/c/vector_add.c``, ``examples/c/stencil.c``,
  ``benchmarks/hpvm_c/saxpy.c`` and ``triad.c``), launched through ``hpvm.launch`` on tracked
  memory as ``__hpvm__launch`` does;
- the anchor: the same loops in C, ``gcc -O3 -march=native -fopenmp`` (``#pragma omp
  parallel for``, as many threads as cores), called through ctypes — without gcc the rows
  say "not run";
- hand-written Numba (``prange``), for reference;
- hpvm's two forms again as their compiled runs alone (``Backend.runner``: the root's
  compiled entry called on this thread, no launch, no wait, no tracker); every side on the same
  arrays (``Arrays``): the row's measure column gives both over OpenMP, so that it tells the loop's share of hpvm's
  time from the host path's (docs/backends/cpu.md, "Where the memory-bound rows' time goes").

The physical limit is the machine's measured bandwidth (``machine_bandwidth``: the best of
ten OpenMP triads, in GB/s; STREAM's convention: bytes the loop must move, no write-allocate
traffic), which every memory-bound row of ``make bench`` shows in its limit column: the
time that bandwidth allows, and the rate hpvm reaches. Goal: both hpvm forms ≤ 1.10× the
OpenMP loops.

Numba's OpenMP threading layer and the gcc-built loops share one libgomp in this process,
with the wait policy hpvm sets (``OMP_WAIT_POLICY=active``, ``GOMP_SPINCOUNT=3000`` unless
the user set either); at these sizes (milliseconds per call) the policy's wake-up cost is
noise.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
import tempfile
import timeit
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import baselines
import kernels
import layout
import numpy as np

import hpvm
from hpvm import c
from hpvm.backends import get_backend

HERE = Path(__file__).resolve().parent
EXAMPLES_C = HERE.parent / "examples" / "c"
HPVM_C = HERE / "hpvm_c"
RATIO_TARGET = 1.10  # hpvm / OpenMP C
OPENMP = "OpenMP C (gcc)"
PYTHON_LEAF = "hpvm cpu, Python leaf"
C_LEAF = "hpvm cpu, HPVM-C leaf"
PYTHON_RUN = "hpvm cpu, Python leaf, compiled run alone"
C_RUN = "hpvm cpu, HPVM-C leaf, compiled run alone"
C_FORMS = (C_LEAF, C_RUN)  # (the sides that pass HPVM-C's flat byte views)
SCALE = np.float32(3.0)

C_LOOPS = r"""
#include <stddef.h>

void triad(long n, float s, float *a, const float *b, const float *c) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

void vadd(long n, const float *a, const float *b, float *c) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) c[i] = a[i] + b[i];
}

void saxpy(long n, float alpha, const float *x, float *y) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) y[i] = alpha * x[i] + y[i];
}

void stencil(long nx, long ny, long nz, const float *a0, float *anext, float c0, float c1) {
#pragma omp parallel for schedule(static)
  for (long z = 1; z < nz - 1; z++)
    for (long y = 1; y < ny - 1; y++)
      for (long x = 1; x < nx - 1; x++) {
        long i = x + nx * (y + ny * z);
        anext[i] = c1 * (a0[i + nx * ny] + a0[i - nx * ny] + a0[i + nx] + a0[i - nx] + a0[i + 1] + a0[i - 1]) -
                   a0[i] * c0;
      }
}
"""

GCC_FLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC")


def openmp_loops(folder: Path) -> tuple[ctypes.CDLL | None, str]:
    """The loops above built by gcc with OpenMP, or None and why not (no gcc, a failed build)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        return None, "not run: gcc is not on this machine"
    src, lib = folder / "loops.c", folder / "libloops.so"
    src.write_text(C_LOOPS)
    built = subprocess.run([gcc, *GCC_FLAGS, str(src), "-o", str(lib)], capture_output=True, text=True)
    if built.returncode != 0:
        first = (built.stderr.strip().splitlines() or ["no message"])[0]
        return None, f"not run: gcc {' '.join(GCC_FLAGS)} failed: {first}"
    return ctypes.CDLL(str(lib)), "built"


_BANDWIDTH: list[tuple[float, str]] = []  # measured once per process


def machine_bandwidth(n: int = 1 << 24, samples: int = 10) -> tuple[float, str]:
    """The machine's memory bandwidth in bytes/s, as STREAM measures it: the best of
    ``samples`` triads over 2^24 float32 (12 bytes per element, three 64 MB arrays: far past
    any cache), with the OpenMP loops, or hand-written Numba's where gcc is missing; and
    which of the two measured it. Every limit column of ``make bench`` uses this number."""
    if not _BANDWIDTH:
        a, b, cvec = (np.full(n, 1.0, np.float32) for _ in range(3))
        with tempfile.TemporaryDirectory(prefix="hpvm-bandwidth-") as tmp:
            lib, _ = openmp_loops(Path(tmp))
            if lib is not None:
                args = (ctypes.c_long(n), ctypes.c_float(SCALE), f32p(a), f32p(b), f32p(cvec))
                run, how = (lambda: lib.triad(*args)), "STREAM triad, OpenMP C"
            else:
                run, how = (lambda: baselines.triad(a, b, cvec, SCALE)), "STREAM triad, Numba"
            run()
            best = min(timeit.repeat(run, number=1, repeat=samples))
        _BANDWIDTH.append((12 * n / best, how))
    return _BANDWIDTH[0]


# ---------------------------------------------------------------------------------------
# The Python leaves (vector add is examples/vector_add.py's, the stencil layout.py's)


@hpvm.leaf(ins=("x", "y"), outs=("y",))
def saxpy_point(x: hpvm.f32[:], y: hpvm.f32[:], alpha: hpvm.f32):
    """y[i] = alpha x[i] + y[i], one instance per element."""
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    y[i] = alpha * x[i] + y[i]


@hpvm.internal()
def saxpy_root(x: hpvm.f32[:], y: hpvm.f32[:], alpha: hpvm.f32):
    node = hpvm.create_node_1d(saxpy_point, x.shape[0])
    for port in range(3):
        hpvm.bind_in(node, port, port)


@hpvm.leaf(ins=("b", "c"), outs=("a",))
def triad_point(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:], s: hpvm.f32):
    """STREAM's triad: a[i] = b[i] + s c[i], one instance per element."""
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    a[i] = b[i] + s * c[i]


@hpvm.internal()
def triad_root(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:], s: hpvm.f32):
    node = hpvm.create_node_1d(triad_point, a.shape[0])
    for port in range(4):
        hpvm.bind_in(node, port, port)


# ---------------------------------------------------------------------------------------
# One kernel, four ways


@dataclass
class Kernel:
    """A kernel's implementations (name -> call), where each leaves its result, and its traffic."""

    name: str
    size: str
    bytes_moved: int
    runs: dict[str, Callable[[], object]] = field(default_factory=dict)
    results: dict[str, np.ndarray] = field(default_factory=dict)
    reset: Callable[[], None] = lambda: None


class Arrays:
    """One copy of the inputs that every side computes on, tracked for hpvm's: the same
    addresses for all. Copies of their own made each side's speed partly that of its
    placement — two stencil pairs made alike ran the same code 1.24× apart in one process
    (``run.py``, ``stencil_rows``), and these rows read 1.09–1.16× OpenMP C in full runs
    where alone they read 1.02–1.06×. HPVM-C takes them as flat byte views of the same
    memory (tracking a view of a tracked array is tracking it: its launches are not
    replayed, which a run of milliseconds does not notice)."""

    def __init__(self, names: list[str], **arrays: np.ndarray):
        shared = {k: v.copy() for k, v in arrays.items()}
        self.of = {name: shared for name in names}
        self.tracked: dict[int, np.ndarray] = {}  # data address -> an array tracked there

    def track(self, name: str, as_bytes: bool = False) -> dict[str, np.ndarray]:
        """``name``'s arrays tracked by the runtime; ``as_bytes``: flat byte views, as HPVM-C passes them."""
        mine = self.of[name]
        out = {k: v.reshape(-1).view(np.uint8) for k, v in mine.items()} if as_bytes else mine
        for array in out.values():
            hpvm.track_memory(array)
            self.tracked.setdefault(array.__array_interface__["data"][0], array)
        return out

    def release(self) -> None:
        for array in self.tracked.values():
            hpvm.untrack_memory(array)
        self.tracked.clear()


def launcher(root: Any, args: tuple) -> Callable[[], object]:
    def run() -> None:
        hpvm.wait(hpvm.launch(root, args, target="cpu"))

    return run


def compiled_run(root: Any, args: tuple) -> Callable[[], object]:
    """``root``'s compiled run alone, on this thread: what a launch + wait runs, without the
    launch's checks, tracker, hand-off and handle — the back end's runner
    (``Backend.runner``). ``Backend.run`` without a context checks the arguments on every
    call, and what that allocates ran the cyclic collector inside the samples (3.3 % of a
    loop of its calls: docs/backends/cpu-performance.md)."""
    runner = get_backend("cpu").runner(root)
    get_backend("cpu").run(root, args)  # (the arguments checked once)

    def run() -> None:
        runner(args, None)

    return run


def hpvm_forms(
    k: Kernel,
    arrays: Arrays,
    py: tuple[Any, Callable[[dict], tuple]],
    cc: tuple[Any, Callable[[dict], tuple]],
) -> None:
    """hpvm's sides of kernel ``k``: each form (``(root, args from its arrays)``) launched
    (on tracked arrays, HPVM-C's as byte views) and as its compiled run alone (arrays of its
    own)."""
    for (root, args), launched, alone in ((py, PYTHON_LEAF, PYTHON_RUN), (cc, C_LEAF, C_RUN)):
        as_bytes = launched in C_FORMS
        k.runs[launched] = launcher(root, args(arrays.track(launched, as_bytes)))
        k.runs[alone] = compiled_run(root, args(arrays.track(alone, as_bytes)))


def c_root(path: Path) -> Any:
    return c.compile(path).roots[0]


def f32p(array: np.ndarray) -> Any:
    return array.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def triad_kernel(n: int, lib: ctypes.CDLL | None, arrays: Arrays) -> Kernel:
    k = Kernel("STREAM triad a = b + s·c", f"2^{n.bit_length() - 1} f32", 12 * n)

    def ports(a: dict) -> tuple:  # (both forms take a, b, c, s)
        return (a["a"], a["b"], a["c"], SCALE)

    hpvm_forms(k, arrays, (triad_root, ports), (c_root(HPVM_C / "triad.c"), ports))
    nb = arrays.of["Numba"]
    k.runs["Numba"] = lambda: baselines.triad(nb["a"], nb["b"], nb["c"], SCALE)
    if lib is not None:
        om = arrays.of[OPENMP]
        args = (ctypes.c_long(n), ctypes.c_float(SCALE), f32p(om["a"]), f32p(om["b"]), f32p(om["c"]))
        k.runs[OPENMP] = lambda: lib.triad(*args)
    k.results = {name: arrays.of[name]["a"] for name in k.runs}
    return k


def vadd_kernel(n: int, lib: ctypes.CDLL | None, arrays: Arrays) -> Kernel:
    k = Kernel("vector add c = a + b", f"2^{n.bit_length() - 1} f32", 12 * n)
    hpvm_forms(  # (the Python leaf's root is kernels.vector_add's: examples/vector_add.py)
        k,
        arrays,
        (kernels.vector_add_example.root, lambda a: (a["a"], a["b"], a["c"], n)),
        (c_root(EXAMPLES_C / "vector_add.c"), lambda a: (a["a"], a["b"], a["c"])),
    )
    nb = arrays.of["Numba"]
    k.runs["Numba"] = lambda: baselines.vector_add(nb["a"], nb["b"], nb["c"])
    if lib is not None:
        om = arrays.of[OPENMP]
        args = (ctypes.c_long(n), f32p(om["a"]), f32p(om["b"]), f32p(om["c"]))
        k.runs[OPENMP] = lambda: lib.vadd(*args)
    k.results = {name: arrays.of[name]["c"] for name in k.runs}
    return k


def saxpy_kernel(n: int, lib: ctypes.CDLL | None, arrays: Arrays, y0: np.ndarray) -> Kernel:
    k = Kernel("saxpy y = α·x + y", f"2^{n.bit_length() - 1} f32", 12 * n)
    hpvm_forms(
        k,
        arrays,
        (saxpy_root, lambda a: (a["x"], a["y"], SCALE)),
        (c_root(HPVM_C / "saxpy.c"), lambda a: (SCALE, a["x"], a["y"])),
    )
    nb = arrays.of["Numba"]
    k.runs["Numba"] = lambda: baselines.saxpy(SCALE, nb["x"], nb["y"])
    if lib is not None:
        om = arrays.of[OPENMP]
        args = (ctypes.c_long(n), ctypes.c_float(SCALE), f32p(om["x"]), f32p(om["y"]))
        k.runs[OPENMP] = lambda: lib.saxpy(*args)
    k.results = {name: arrays.of[name]["y"] for name in k.runs}

    def reset() -> None:  # y is updated in place: every side starts from the same y
        arrays.of[PYTHON_LEAF]["y"][...] = y0  # (one copy for all: ``Arrays``)

    k.reset = reset
    return k


def stencil_kernel(shape: tuple[int, int, int], lib: ctypes.CDLL | None, arrays: Arrays) -> Kernel:
    nz, ny, nx = shape
    k = Kernel("stencil 7-point 3-D, one step", f"{nx}×{ny}×{nz} f32", 8 * nx * ny * nz)
    c0, c1 = kernels.STENCIL_C0, kernels.STENCIL_C1
    hpvm_forms(
        k,
        arrays,
        (layout.stencil_gpu_root, lambda a: (a["src"], a["dst"], c0, c1)),
        (c_root(EXAMPLES_C / "stencil.c"), lambda a: (c0, c1, a["src"], a["dst"], nx, ny, nz)),
    )
    nb = arrays.of["Numba"]
    k.runs["Numba"] = lambda: baselines.stencil_step(nb["src"], nb["dst"], c0, c1)
    if lib is not None:
        om = arrays.of[OPENMP]
        extents = (ctypes.c_long(nx), ctypes.c_long(ny), ctypes.c_long(nz))
        args = (*extents, f32p(om["src"]), f32p(om["dst"]), ctypes.c_float(c0), ctypes.c_float(c1))
        k.runs[OPENMP] = lambda: lib.stencil(*args)
    k.results = {name: arrays.of[name]["dst"] for name in k.runs}
    return k


# ---------------------------------------------------------------------------------------
# The rows


def check(kernel: Kernel, want: np.ndarray) -> None:
    """Run every side once from the same inputs and compare with NumPy's result."""
    for name, run in kernel.runs.items():
        kernel.reset()  # (one copy of the arrays: saxpy's y back to its start for each)
        run()
        got = kernel.results[name]
        if name in C_FORMS:  # HPVM-C writes through the tracked byte view: ask for it back
            hpvm.request_memory(got.reshape(-1).view(np.uint8))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{kernel.name}: {name}")


def harness(ctx: Any) -> Any:
    """``run.py``, the module that made ``ctx`` (imported as ``__main__`` or as ``run``)."""
    return sys.modules[type(ctx).__module__]


def measure(ctx: Any, kernel: Kernel) -> dict[str, float]:
    """Every side's median, the samples taken one of each in turn after a warm call each."""
    timed = harness(ctx).timed
    first = {name: timed(run) for name, run in kernel.runs.items()}
    return ctx.interleaved(kernel.runs, first)


def rows_for(ctx: Any, kernel: Kernel, lib_state: str) -> Any:
    """One table row: hpvm's two forms, Numba, OpenMP C, GB/s, the limit, PASS/MISS."""
    h = harness(ctx)
    Row, fmt_time, verdict = h.Row, h.fmt_time, h.verdict
    med = measure(ctx, kernel)

    def rate(seconds: float) -> str:
        return f"{kernel.bytes_moved / seconds / 1e9:.1f} GB/s"

    row = Row(f"memory-bound: {kernel.name}", f"{kernel.size}, {kernel.bytes_moved / 1e6:.0f} MB moved")
    row.hpvm["cpu"] = f"{fmt_time(med[PYTHON_LEAF])} ({rate(med[PYTHON_LEAF])})"
    row.numba = fmt_time(med["Numba"])
    row.data = {f"{name}_s": seconds for name, seconds in med.items()} | {"bytes": kernel.bytes_moved}
    parts = [f"HPVM-C leaf {fmt_time(med[C_LEAF])} ({rate(med[C_LEAF])})"]
    if OPENMP in med:
        anchor = med[OPENMP]
        row.peers[OPENMP] = f"{fmt_time(anchor)} ({rate(anchor)})"
        # (each the median of the rounds' ratios: the two samples of a round ran side by side)
        ratios = {name: ctx.round_ratio(name, OPENMP) for name in (PYTHON_LEAF, C_LEAF)}
        parts.insert(
            0, f"over OpenMP: Python leaf {ratios[PYTHON_LEAF]:.2f}×, HPVM-C leaf {ratios[C_LEAF]:.2f}×"
        )
        row.verdict = verdict(max(ratios.values()) <= RATIO_TARGET)
        alone = {name: ctx.round_ratio(name, OPENMP) for name in (PYTHON_RUN, C_RUN)}
        parts.insert(
            1,
            f"compiled runs alone over OpenMP: Python leaf {alone[PYTHON_RUN]:.2f}×, HPVM-C leaf {alone[C_RUN]:.2f}×",
        )
        row.data |= {f"{name}_over_openmp": r for name, r in (ratios | alone).items()}
    else:
        parts.insert(0, f"OpenMP C {lib_state}")
    row.limit = h.limit_cell(ctx, med[PYTHON_LEAF], kernel.bytes_moved, 0.0, 0.0, row.data)
    row.measure = "; ".join(parts)
    row.target = f"both ≤ {RATIO_TARGET:.2f}× OpenMP C"
    return row


def bench_membound(ctx: Any) -> list[Any]:
    """``run.py``'s ``membound`` rows, each with the machine's bandwidth as its limit."""
    Row = harness(ctx).Row
    if "cpu" not in ctx.targets:
        row = Row("memory-bound kernels", "—")
        row.measure = "not run: needs --targets cpu"
        return [row]
    tiny = ctx.sizes.vadd < (1 << 16)
    n = ctx.sizes.vadd
    shape = ctx.sizes.stencil if tiny else (64, 256, 256)
    names = [PYTHON_LEAF, C_LEAF, "Numba", OPENMP, PYTHON_RUN, C_RUN]
    rng = np.random.default_rng(0)
    rows = []
    hpvm.init()
    with tempfile.TemporaryDirectory(prefix="hpvm-membound-") as tmp:
        lib, lib_state = openmp_loops(Path(tmp))
        b, cvec = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        kernels_and_wants: list[tuple[Callable[[Arrays], Kernel], Arrays, np.ndarray]] = []
        triad_arrays = Arrays(names, a=np.zeros(n, np.float32), b=b, c=cvec)
        kernels_and_wants.append((lambda a: triad_kernel(n, lib, a), triad_arrays, b + SCALE * cvec))
        vadd_arrays = Arrays(names, a=b, b=cvec, c=np.zeros(n, np.float32))
        kernels_and_wants.append((lambda a: vadd_kernel(n, lib, a), vadd_arrays, b + cvec))
        saxpy_arrays = Arrays(names, x=b, y=cvec)
        kernels_and_wants.append((lambda a: saxpy_kernel(n, lib, a, cvec), saxpy_arrays, SCALE * b + cvec))
        grid = rng.random(shape, dtype=np.float32)
        want = grid.copy()
        baselines.stencil_step_numpy(grid, want, kernels.STENCIL_C0, kernels.STENCIL_C1)
        stencil_arrays = Arrays(names, src=grid, dst=grid)
        kernels_and_wants.append((lambda a: stencil_kernel(shape, lib, a), stencil_arrays, want))
        for make, arrays, want in kernels_and_wants:
            try:
                kernel = make(arrays)
                check(kernel, want)
                rows.append(rows_for(ctx, kernel, lib_state))
            finally:
                arrays.release()
                del arrays
    return rows


def main() -> int:
    """Print the rows alone: ``python benchmarks/memory_bound.py [--quick|--tiny]``."""
    import run

    argv = ["--only", "membound", *sys.argv[1:]]
    return run.main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
