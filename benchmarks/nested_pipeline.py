"""A pipeline nested one level down: three single-threaded stages streaming inside an
internal node, against the same stages called in turn (issue 23, item 3).

The root holds one internal node, ``stages``, whose child graph is ``a → b → c`` over
streaming edges; each stage is a scalar leaf doing about a millisecond of dependent
floating-point work, which the ``cpu`` back end compiles with Numba (no parallel loop: one
thread per stage). A streaming launch inlines ``stages`` into the root
(``passes/flatten_streams.py``), so the three run as a pipeline, each on a thread of its
own; the baseline launches the same root without streaming, once per item (``launch`` +
``wait``), which runs the stages one after the other. With three equal stages on two
cores, the ideal speed-up is 2×; the target is ≥ 1.6×.

All are timed in this process, round-robin (one run of each in turn, medians), beside
the same three stages launched as the root's own pipeline (what nesting costs: nothing,
once inlined); the streamed results are checked against the sequential ones first. ``run.py --only nested``.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

import numpy as np

import hpvm

TARGET = 1.6  # streamed throughput / stages in turn, on 2 cores


@hpvm.leaf
def stage_a(x: hpvm.f64) -> hpvm.f64:
    acc = x
    for _ in range(400_000):  # about a millisecond: a chain of dependent multiply-adds
        acc = acc * 0.9999999 + 1e-7
    return acc


@hpvm.leaf
def stage_b(x: hpvm.f64) -> hpvm.f64:
    acc = x
    for _ in range(400_000):
        acc = acc * 0.9999998 + 2e-7
    return acc


@hpvm.leaf
def stage_c(x: hpvm.f64) -> hpvm.f64:
    acc = x
    for _ in range(400_000):
        acc = acc * 0.9999997 + 3e-7
    return acc


@hpvm.internal
def stages(x: hpvm.f64):  # type: ignore[no-untyped-def]
    a = hpvm.create_node(stage_a)
    b = hpvm.create_node(stage_b)
    c = hpvm.create_node(stage_c)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.edge(b, c, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(c, 0, 0)


@hpvm.internal
def nested(x: hpvm.f64):  # type: ignore[no-untyped-def]
    inner = hpvm.create_node(stages)
    hpvm.bind_in(inner, 0, 0)
    hpvm.bind_out(inner, 0, 0)


def streamed(items: list[float], target: str, root: Any = nested) -> tuple[float, list[float]]:
    """Seconds from the launch to the last pop, and what was popped."""
    start = time.perf_counter()
    handle = hpvm.launch(root, None, stream=True, target=target)
    got: list[float] = []
    for k, x in enumerate(items):
        if k >= 16:  # keep the pipeline full without holding every result back
            got.append(float(hpvm.pop(handle)[0]))
        hpvm.push(handle, (x,))
    got += [float(hpvm.pop(handle)[0]) for _ in range(len(items) - len(got))]
    hpvm.wait(handle)
    return time.perf_counter() - start, got


def in_turn(items: list[float], target: str) -> tuple[float, list[float]]:
    """The same root launched without streaming, item after item: the stages in turn."""
    start = time.perf_counter()
    got = [float(hpvm.wait(hpvm.launch(nested, (x,), target=target))[0]) for x in items]
    return time.perf_counter() - start, got


def bench_nested(ctx: Any) -> list[Any]:
    """``run.py``'s ``nested`` benchmark: streamed vs in turn, on ``cpu``."""
    harness = sys.modules[type(ctx).__module__]  # run.py, as __main__ or imported
    Row, verdict = harness.Row, harness.verdict
    tiny = ctx.sizes.vadd < (1 << 16)
    count = 20 if tiny else 150 if ctx.sizes.repeat < 5 else 400
    row = Row(
        "nested pipeline vs same stages in turn",
        f"{count} items, 3 stages × ~1 ms, 1 level down",
        target=f"≥ {TARGET:.1f}×",
    )
    if "cpu" not in ctx.targets:
        row.measure = "not run: needs --targets cpu"
        return [row]
    items = [float(k % 7) for k in range(count)]
    _, want = in_turn(items, "cpu")  # compiles both; checked before anything is timed
    _, got = streamed(items, "cpu")
    if not np.allclose(got, want, rtol=1e-12, atol=0.0):
        raise AssertionError("nested pipeline: the streamed results differ from the stages in turn")
    streamed(items[:4], "cpu", stages)  # (compiles the same pipeline launched as the root)
    times: dict[str, list[float]] = {"stream": [], "in turn": [], "at root": []}
    for _ in range(max(3, ctx.repeat)):
        times["stream"].append(streamed(items, "cpu")[0])
        times["in turn"].append(in_turn(items, "cpu")[0])
        times["at root"].append(streamed(items, "cpu", stages)[0])
    stream, sequential, at_root = (statistics.median(times[k]) for k in ("stream", "in turn", "at root"))
    speedup = sequential / stream
    stage_ms = sequential / count / 3 * 1e3
    row.hpvm["cpu"] = f"{count / stream:,.0f} items/s vs {count / sequential:,.0f} items/s in turn"
    row.measure = (
        f"cpu stream/in turn {speedup:.2f}× (a stage ≈ {stage_ms:.2f} ms; the same pipeline as "
        f"the root: {sequential / at_root:.2f}×)"
    )
    row.verdict = verdict(speedup >= TARGET)
    row.data = {
        "stream_s": stream,
        "in_turn_s": sequential,
        "at_root_s": at_root,
        "items": count,
        "speedup": speedup,
        "stage_ms": stage_ms,
    }
    return [row]
