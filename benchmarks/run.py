"""``make bench``: what the available back ends cost, side by side with what users would pick.

Today only the reference interpreter exists, so this measures its costs — launch + wait
latency of a one-instance graph, per-instance throughput of vector add, streaming
throughput — against NumPy doing the same work. Medians of repeated runs; ratios, not
absolute times, are what to compare across machines. Compiled back ends (issue 3 onward)
add their rows here.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np
from rich.console import Console
from rich.table import Table

import hpvm


@hpvm.leaf(ins=("a", "b"), outs=("c",))
def vadd(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    c[i] = a[i] + b[i]


@hpvm.internal()
def vadd_root(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:], n: hpvm.i64):
    node = hpvm.create_node_1d(vadd, n)
    for port in range(3):
        hpvm.bind_in(node, port, port)


@hpvm.leaf()
def increment(x: hpvm.i64) -> hpvm.i64:
    return x + 1


@hpvm.internal()
def one_instance(x: hpvm.i64):
    node = hpvm.create_node(increment)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


@hpvm.internal()
def three_stages(x: hpvm.i64):
    first = hpvm.create_node(increment)
    second = hpvm.create_node(increment)
    third = hpvm.create_node(increment)
    hpvm.bind_in(first, 0, 0)
    hpvm.edge(first, second, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.edge(second, third, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(third, 0, 0)


def median_time(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="vector length")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--items", type=int, default=2_000, help="items streamed")
    ns = parser.parse_args(argv)

    hpvm.init()
    rng = np.random.default_rng(0)
    a, b = rng.random(ns.n, dtype=np.float32), rng.random(ns.n, dtype=np.float32)
    c = np.zeros_like(a)
    for arr in (a, b, c):
        hpvm.track_memory(arr)

    def interp_vadd() -> None:
        hpvm.wait(hpvm.launch(vadd_root, (a, b, c, ns.n), target="interp"))

    t_vadd = median_time(interp_vadd, ns.repeat)
    t_numpy = median_time(lambda: np.add(a, b, out=c), ns.repeat * 20)
    np.testing.assert_array_equal(c, a + b)

    t_launch = median_time(
        lambda: hpvm.wait(hpvm.launch(one_instance, (1,), target="interp")), ns.repeat * 20
    )

    def stream() -> None:
        handle = hpvm.launch(three_stages, None, stream=True, target="interp")
        for i in range(ns.items):
            hpvm.push(handle, (i,))
        for i in range(ns.items):
            assert hpvm.pop(handle) == (i + 3,)
        hpvm.wait(handle)

    t_stream = median_time(stream, 3)
    hpvm.cleanup()

    table = Table(
        title=f"hpvm benchmarks — {platform.processor() or platform.machine()}, {platform.python_version()}"
    )
    table.add_column("benchmark")
    table.add_column("interp", justify="right")
    table.add_column("NumPy", justify="right")
    table.add_column("interp / NumPy", justify="right")
    table.add_row(
        f"vector add, n={ns.n}",
        f"{t_vadd * 1e3:.1f} ms ({ns.n / t_vadd / 1e3:.0f}k inst/s)",
        f"{t_numpy * 1e6:.1f} µs",
        f"{t_vadd / t_numpy:,.0f}×",
    )
    table.add_row("launch + wait, one instance", f"{t_launch * 1e6:.0f} µs", "—", "—")
    table.add_row(f"stream, 3 stages, {ns.items} items", f"{ns.items / t_stream:,.0f} items/s", "—", "—")
    Console().print(table)
    print("The interpreter is the oracle, not a fast path: compiled back ends are planned (docs/backends/).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
