"""Small items through a two-stage stream: hpvm beside two threads joined by ``queue.Queue``.

With scalar items a streaming launch costs what the runtime does around the back end's work,
per item (issue 10, item 12: 7,200–25,000 items/s on ``cpu``, depending on the machine's
load, when every item was a back-end call of its own). The row pushes N scalar items (``x → x + 1 → 2x``, i64) from a producer thread
through a two-stage pipeline and pops them on the main thread; the baseline does the same
with a hand-written pair of threads joined by bounded ``queue.Queue``s of the stream's
default capacity — about the least a Python pipeline can cost. Both run in this process,
sampled round-robin (one run of each in turn, medians), and every result is checked first.

Target (issue 24, item 2): ``cpu`` at ≥ 1.0× the queue pair's items/s — a ratio, since both
move with the machine's load; ≥ 100,000 items/s on a quiet 2-core machine is shown beside it
(issue 10). A stream of scalars on ``cpu`` runs fused on the host (docs/semantics.md §13):
no stage threads, one compiled call per batch. ``run.py --only stream`` (``--targets
cpu,interp`` adds the interpreter, on a tenth of the items).
"""

from __future__ import annotations

import queue
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import hpvm

TARGET = 100_000  # items/s through the two stages on cpu, on a quiet machine
TARGET_RATIO = 1.0  # cpu items/s over the queue pair's, sampled in turn (the verdict)
CAPACITY = 16  # the stream's default capacity, and the queue pair's bound
QUEUE = "queue.Queue pair"


@hpvm.leaf
def increment(x: hpvm.i64) -> hpvm.i64:
    return x + 1


@hpvm.leaf
def twice(x: hpvm.i64) -> hpvm.i64:
    return x * 2


@hpvm.internal
def two_stages(x: hpvm.i64):
    a = hpvm.create_node(increment)
    b = hpvm.create_node(twice)
    hpvm.bind_in(a, 0, 0, stream=True)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0, stream=True)


def through_hpvm(count: int, target: str) -> tuple[float, list[int]]:
    """Seconds from the first push to the last pop, and what was popped."""
    handle = hpvm.launch(two_stages, None, stream=True, target=target, capacity=CAPACITY)

    def produce() -> None:
        for i in range(count):
            hpvm.push(handle, (i,))

    start = time.perf_counter()
    producer = threading.Thread(target=produce)
    producer.start()
    got = [int(hpvm.pop(handle)[0]) for _ in range(count)]
    seconds = time.perf_counter() - start
    producer.join()
    hpvm.wait(handle)
    return seconds, got


def through_queues(count: int) -> tuple[float, list[int]]:
    """The same pipeline by hand: two stage threads between bounded queues."""
    first: queue.Queue = queue.Queue(CAPACITY)
    second: queue.Queue = queue.Queue(CAPACITY)
    results: queue.Queue = queue.Queue()

    def increments() -> None:
        while (x := first.get()) is not None:
            second.put(x + 1)
        second.put(None)

    def doubles() -> None:
        while (x := second.get()) is not None:
            results.put(x * 2)
        results.put(None)

    stages = [threading.Thread(target=f) for f in (increments, doubles)]
    for stage in stages:
        stage.start()

    def produce() -> None:
        for i in range(count):
            first.put(i)
        first.put(None)

    start = time.perf_counter()
    producer = threading.Thread(target=produce)
    producer.start()
    got = [results.get() for _ in range(count)]
    seconds = time.perf_counter() - start
    producer.join()
    results.get()
    for stage in stages:
        stage.join()
    return seconds, got


def bench_stream(ctx: Any) -> list[Any]:
    """``run.py``'s ``stream`` benchmark: items/s of each back end and of the queue pair."""
    harness = sys.modules[type(ctx).__module__]  # run.py, as __main__ or imported
    Row, verdict = harness.Row, harness.verdict
    tiny = ctx.sizes.vadd < (1 << 16)
    count = 2_000 if tiny else 20_000 if ctx.sizes.repeat < 5 else 50_000
    sizes = {t: count // 10 if t == "interp" else count for t in ctx.targets}
    runs: dict[str, Callable[[], tuple[float, list[int]]]] = {
        t: (lambda t=t: through_hpvm(sizes[t], t)) for t in ctx.targets
    }
    runs[QUEUE] = lambda: through_queues(count)
    for name, run in runs.items():  # compiles; checked before anything is timed
        n = sizes.get(name, count)
        if run()[1] != [2 * (i + 1) for i in range(n)]:
            raise AssertionError(f"{name}: the two-stage stream popped wrong results")
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(max(3, ctx.repeat)):
        for name, run in runs.items():
            rates[name].append(sizes.get(name, count) / run()[0])
    medians = {name: statistics.median(r) for name, r in rates.items()}

    row = Row(
        "stream, 2 scalar stages",
        f"{count:,} i64 items",
        target=f"≥ {TARGET_RATIO:.1f}× {QUEUE} (≥ {TARGET:,} items/s quiet)",
    )
    for t in ctx.targets:
        row.hpvm[t] = f"{medians[t]:,.0f} items/s"
    row.data = {f"{name}_items_per_s": rate for name, rate in medians.items()}
    row.data["items"] = count
    reference = medians[QUEUE]
    row.numba = f"{reference:,.0f} items/s ({QUEUE})"
    if "cpu" in medians:
        ratio = medians["cpu"] / reference
        row.measure = f"cpu {medians['cpu']:,.0f} items/s, {ratio:.2f}× the {QUEUE}"
        row.verdict = verdict(ratio >= TARGET_RATIO)
        row.data["ratio_to_queue"] = ratio
    return [row]
