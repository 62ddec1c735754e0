"""The tensor back end beside eager PyTorch: batch inference of the HPVM benchmark models.

For each model of ``hpvm.tensor.models`` the benchmark imports it with
``hpvm.tensor.from_torch`` and times, on the same batch, in the same process and with the
same number of PyTorch threads (``torch.get_num_threads()``):

- ``hpvm tensor``: ``program(x)`` — the fused graph on the ``tensor`` back end, the whole
  host sequence included (copy and track the input, launch, wait, the NumPy result);
- ``hpvm unfused``: the graph as imported, one node per operation (what fusion saves);
- ``eager PyTorch``: ``model(x)`` under ``torch.inference_mode()`` (and ``.numpy()``).

Each row has its physical limit (issue 24, item 8): the model's floating-point operations
per batch (``model_flops``: 2 per multiply-add of its convolutions and dense layers, counted
by forward hooks on one eager run), the rate each side reaches, and the machine's BLAS rate
(``blas_rate``: the best of ``torch.mm`` of two 2048² f32 matrices, PyTorch's threads,
measured in the same run). A convolution network whose eager run is already near that rate
cannot be run in 0.90× its time by any layout or fusion of direct convolutions; the tensor
back end's Winograd convolutions make a quarter of the multiplies (docs/tensor.md §6), so
its rate, counted in the direct convolution's operations, can pass the BLAS's.

HPVM's output is checked against eager PyTorch (1e-4 relative) before anything is timed;
the first runs are not timed. Times are medians of samples taken one of each a round, the
rounds in balanced orders (``orders.interleaved_medians``: each side after each other
equally often), at least ``MIN_ROUNDS`` rounds and about ``MIN_BUDGET_S`` of each
implementation: on a shared 2-core machine the median of three let one burst of
another process's work decide a row. The target is
issue 24's ``hpvm tensor / eager ≤ 0.90×``: the graph is known before it runs, so the
tensor back end prepares what eager PyTorch redoes on every call (batch-norm folded into the
convolutions, oneDNN's weight layout, the activation fused into the convolution; docs/
tensor.md §6).

Run it alone (``python benchmarks/tensor.py [--quick] [--models lenet,vgg16]``, which
prints its own table and writes ``out/bench/tensor.md``) or as part of ``run.py``
(``--only tensor``, and in the full run).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from orders import interleaved_medians  # noqa: E402

TARGET = 0.90  # hpvm tensor time / eager PyTorch time (issue 24, item 5)
MIN_SAMPLE_S = 1.0  # each implementation is sampled for about this long (at least REPEAT times)
REPEAT = 5
MIN_ROUNDS = 11  # round-robin rounds at least, whatever the time per sample
MIN_BUDGET_S = 1.0  # and rounds for about this long per implementation (quick runs included)
# Batch sizes: a batch a server would run, each model's eager time tens of milliseconds here.
BATCH = {"lenet": 64, "alexnet": 32, "alexnet2": 64, "vgg16": 16, "resnet18": 8, "mobilenet": 32}
QUICK_BATCH = {"lenet": 16, "alexnet": 8, "alexnet2": 16, "vgg16": 4, "resnet18": 2, "mobilenet": 8}


@dataclass
class Result:
    """One model's measurements (seconds)."""

    model: str
    batch: int
    input_shape: tuple[int, ...]
    nodes: tuple[int, int]  # (unfused, fused)
    fused_s: float
    unfused_s: float
    eager_s: float
    flops: float  # per batch (``model_flops``)
    error: float  # relative error of HPVM's output against eager PyTorch

    @property
    def ratio(self) -> float:
        return self.fused_s / self.eager_s

    @property
    def passed(self) -> bool:
        return self.ratio <= TARGET

    def rate(self, seconds: float) -> float:
        """GFLOP/s of a run of one batch in ``seconds``."""
        return self.flops / seconds / 1e9


def model_flops(model: Any, x: Any) -> float:
    """Floating-point operations of one eager run of ``model`` on ``x``: 2 per multiply-add
    of each ``Conv2d`` (output elements × kernel area × input channels per group) and each
    ``Linear`` (output elements × input features), counted by forward hooks. Pooling,
    activations, batch norm and adds are left out: they are memory passes, a few percent of
    a convolution network's operations."""
    import torch

    total = 0

    def count(module: Any, _inputs: Any, out: Any) -> None:
        nonlocal total
        if isinstance(module, torch.nn.Conv2d):
            kh, kw = module.kernel_size
            total += 2 * out.numel() * kh * kw * (module.in_channels // module.groups)
        elif isinstance(module, torch.nn.Linear):
            total += 2 * out.numel() * module.in_features

    hooks = [m.register_forward_hook(count) for m in model.modules()]
    try:
        with torch.inference_mode():
            model(x)
    finally:
        for hook in hooks:
            hook.remove()
    return float(total)


def blas_rate(size: int = 2048, repeat: int = 10) -> float:
    """The machine's BLAS rate in GFLOP/s: the best of ``repeat`` products of two ``size``²
    f32 matrices through ``torch.mm`` (PyTorch's BLAS and threads, as the models use)."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    for _ in range(2):
        torch.mm(a, b)
    best = min(_timed(lambda: torch.mm(a, b)) for _ in range(repeat))
    return 2 * size**3 / best / 1e9


def measure(name: str, batch: int, min_sample_s: float = MIN_SAMPLE_S, repeat: int = REPEAT) -> Result:
    """Import model ``name``, check HPVM against PyTorch, then time the three side by side."""
    import torch

    import hpvm.tensor
    from hpvm.tensor import models

    model = models.MODELS[name]()
    x = model.example_input(batch)
    program = hpvm.tensor.from_torch(model, x)

    def eager() -> np.ndarray:
        with torch.inference_mode():
            return model(x).numpy()

    runs: dict[str, Callable[[], Any]] = {
        "fused": lambda: program(x, target="tensor"),
        "unfused": lambda: program(x, target="tensor", fused=False),
        "eager": eager,
    }
    reference = eager()
    scale = float(np.abs(reference).max())
    errors = [float(np.abs(runs[k]() - reference).max()) / scale for k in ("fused", "unfused")]
    if max(errors) > 1e-4:
        raise AssertionError(f"{name}: hpvm differs from eager PyTorch (relative error {max(errors):.2e})")
    warm = {k: _timed(fn) for k, fn in runs.items()}
    budget = max(min_sample_s, MIN_BUDGET_S)
    samples = max(repeat, MIN_ROUNDS, min(100, int(budget / max(warm.values()))))
    median = interleaved_medians(runs, samples)
    return Result(
        name,
        batch,
        tuple(x.shape[1:]),
        (program.unfused_node_count, program.node_count),
        median["fused"],
        median["unfused"],
        median["eager"],
        model_flops(model, x),
        errors[0],
    )


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def fmt(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


HEADER = ("model", "batch", "nodes (unfused → fused)", "hpvm tensor", "hpvm unfused", "eager PyTorch", "GFLOP per batch", "GFLOP/s hpvm / eager (BLAS)", "hpvm/eager", "target", "result")  # fmt: skip


def limit_cell(r: Result, blas: float) -> str:
    """The row's physical limit: each side's GFLOP/s beside the machine's BLAS rate."""
    return f"{r.rate(r.fused_s):.0f} / {r.rate(r.eager_s):.0f} ({blas:.0f})"


def cells(r: Result, blas: float) -> list[str]:
    shape = "×".join(map(str, r.input_shape))
    return [
        r.model,
        f"{r.batch} × {shape}",
        f"{r.nodes[0]} → {r.nodes[1]}",
        fmt(r.fused_s),
        fmt(r.unfused_s),
        fmt(r.eager_s),
        f"{r.flops / 1e9:.2f}",
        limit_cell(r, blas),
        f"{r.ratio:.2f}×",
        f"≤ {TARGET:.2f}×",
        "PASS" if r.passed else "MISS",
    ]


def markdown(results: list[Result], blas: float) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "| --- | --- | --- | " + " | ".join(["---:"] * 8) + " |"]
    lines += ["| " + " | ".join(cells(r, blas)) + " |" for r in results]
    return "\n".join(lines) + "\n"


def threads_note() -> str:
    import torch

    return f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads (the same for HPVM and eager)"


# ---------------------------------------------------------------------------------------
# Inside run.py: one row per model in the main table


def bench_tensor(ctx: Any) -> list[Any]:
    """``run.py``'s ``tensor`` benchmark: one row per model (hpvm tensor ÷ eager PyTorch).

    The main table has a column per hpvm back end of ``--targets`` (cpu…), so the times go
    in the *measure* cell; the model table of its own (``tensor.md``) has them in columns.
    """
    harness = sys.modules[type(ctx).__module__]  # run.py, as __main__ or imported
    Row, fmt_time, verdict = harness.Row, harness.fmt_time, harness.verdict

    try:
        import torch  # noqa: F401
    except ImportError:
        return [
            Row("tensor models", "—", measure="skipped: torch is not installed (pip install 'hpvm[tensor]')")
        ]
    tiny = ctx.sizes.vadd < (1 << 16)  # --tiny checks the harness: two small models, batch 1
    quick = ctx.sizes.repeat < REPEAT
    rows = []
    results = []
    blas = blas_rate(256 if tiny else 2048)
    for name in ["lenet", "alexnet2"] if tiny else list(BATCH):
        batch = 1 if tiny else (QUICK_BATCH if quick else BATCH)[name]
        r = measure(name, batch, ctx.sizes.min_sample_s, ctx.repeat)
        results.append(r)
        shape = "×".join(map(str, r.input_shape))
        row = Row(f"tensor: {name} ({r.nodes[0]} → {r.nodes[1]} nodes)", f"batch {batch} × {shape}")
        row.measure = (
            f"hpvm tensor {fmt_time(r.fused_s)} / eager PyTorch {fmt_time(r.eager_s)} = {r.ratio:.2f}×"
        )
        row.target = f"≤ {TARGET:.2f}×"
        row.limit = (
            f"BLAS {blas:.0f} GFLOP/s (torch.mm 2048²); {r.flops / 1e9:.2f} GFLOP a batch: "
            f"hpvm {r.rate(r.fused_s):.0f}, eager {r.rate(r.eager_s):.0f} GFLOP/s"
        )
        row.verdict = verdict(r.passed)
        row.data = {
            "hpvm_tensor_s": r.fused_s,
            "hpvm_unfused_s": r.unfused_s,
            "eager_s": r.eager_s,
            "flops": r.flops,
            "blas_flops_per_s": blas * 1e9,
        }
        rows.append(row)
    (ctx.out / "tensor.md").write_text(markdown(results, blas))
    ctx.notes.append(f"Tensor models, {threads_note()}, unfused graphs too: {ctx.out / 'tensor.md'}")
    return rows


# ---------------------------------------------------------------------------------------
# Alone


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller batches, shorter sampling")
    parser.add_argument("--models", default=",".join(BATCH), help="comma-separated models (default: all)")
    parser.add_argument("--out", default="out/bench", help="folder for tensor.md (default: %(default)s)")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch.set_num_threads for both (default: PyTorch's own)"
    )
    ns = parser.parse_args(argv)
    names = [n for n in ns.models.split(",") if n]
    unknown = [n for n in names if n not in BATCH]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(BATCH)}")
    import torch

    import hpvm

    if ns.threads is not None:
        if ns.threads < 1:
            parser.error(f"--threads must be at least 1, not {ns.threads}")
        torch.set_num_threads(ns.threads)
    hpvm.init()
    results = []
    blas = blas_rate()
    for name in names:
        batch = (QUICK_BATCH if ns.quick else BATCH)[name]
        r = measure(name, batch, 0.3 if ns.quick else MIN_SAMPLE_S, 3 if ns.quick else REPEAT)
        results.append(r)
        print(" | ".join(cells(r, blas)), flush=True)
    hpvm.cleanup()
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    table = markdown(results, blas)
    (out / "tensor.md").write_text(table)
    print()
    print(table)
    print(f"{threads_note()}; written to {out / 'tensor.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
