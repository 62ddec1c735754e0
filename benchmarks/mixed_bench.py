"""A CPU wrapper node around a GPU leaf beside the same leaf launched directly.

HPVM-C programs are written with CPU internal nodes around GPU leaves (seed 001's
DFG2LLVM_CPU generates the host code that launches each child on its device). hpvm runs such
a node on the host, instance by instance (``backends/mixed.py``): each instance runs its CPU
child, then launches its GPU child with its own arguments. This row measures what that costs
the host per wrapper instance.

- wrapped: one launch of ``wrapped`` — ``ids[W]`` (cpu) → ``wrapper[W]`` (mixed: a one-instance
  CPU leaf computing the tile's offset, then the GPU leaf over the tile's ``K`` elements);
- direct: the same GPU leaf launched by the host itself, ``W`` launch + wait calls of
  ``direct`` (root → the leaf over ``K``), each with its tile's offset: the same kernels;
- one kernel: the leaf over all ``W·K`` elements in one launch (what the wrapper splits up).

Samples are interleaved (one of each in turn) and the medians reported; the host overhead per
wrapper instance is (wrapped − direct) / W, and beside it (wrapped − one kernel) / W. Every
array is tracked and stays on the device between samples where nothing on the host needs it.
Part of ``run.py`` (``--only wrapper_gpu``); it runs on the first GPU back end of
``--targets`` (cuda, opencl), else on ``opencl`` when it is available here.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

import hpvm
from hpvm.backends import available_backends, base

WRAPPERS = 64  # instances of the CPU wrapper node
TILE = 1024  # float32 elements per tile (the GPU leaf's instances per wrapper instance)


@hpvm.leaf
def tile_id() -> hpvm.i64:
    return hpvm.get_node_instance_id_x(hpvm.get_node())


@hpvm.leaf
def offset(t: hpvm.i64, k: hpvm.i64) -> hpvm.i64:
    return t * k


@hpvm.leaf(hint=hpvm.GPU_TARGET, ins=("x",), outs=("y",))
def saxpy_tile(x: hpvm.f32[:], y: hpvm.f32[:], base: hpvm.i64, a: hpvm.f32):
    j = base + hpvm.get_node_instance_id_x(hpvm.get_node())
    y[j] = a * x[j] + y[j]


@hpvm.internal
def wrapper(x: hpvm.f32[:], y: hpvm.f32[:], a: hpvm.f32, t: hpvm.i64, k: hpvm.i64):
    o = hpvm.create_node(offset)  # cpu: the host's share of each instance
    g = hpvm.create_node_1d(saxpy_tile, k)  # gpu: one kernel per wrapper instance
    hpvm.bind_in(o, 3, 0)
    hpvm.bind_in(o, 4, 1)
    hpvm.bind_in(g, 0, 0)
    hpvm.bind_in(g, 1, 1)
    hpvm.edge(o, g, hpvm.ALL_TO_ALL, 0, 2)
    hpvm.bind_in(g, 2, 3)


@hpvm.internal
def wrapped(x: hpvm.f32[:], y: hpvm.f32[:], a: hpvm.f32, k: hpvm.i64, w: hpvm.i64):
    ids = hpvm.create_node_1d(tile_id, w)
    n = hpvm.create_node_1d(wrapper, w)
    hpvm.edge(ids, n, hpvm.ONE_TO_ONE, 0, 3)
    for i in range(3):
        hpvm.bind_in(n, i, i)
    hpvm.bind_in(n, 3, 4)


@hpvm.internal
def direct(x: hpvm.f32[:], y: hpvm.f32[:], base: hpvm.i64, a: hpvm.f32, k: hpvm.i64):
    g = hpvm.create_node_1d(saxpy_tile, k)
    for i in range(4):
        hpvm.bind_in(g, i, i)


@contextmanager
def gpu_hint_means(target: str) -> Iterator[None]:
    """Hints ``gpu`` select ``target`` inside the block (and launches choose again)."""
    launch = importlib.import_module("hpvm.runtime.launch")
    saved = base.HINT_PREFERENCES[hpvm.GPU_TARGET]
    base.HINT_PREFERENCES[hpvm.GPU_TARGET] = (target,)
    launch._CHOICES.clear()
    try:
        yield
    finally:
        base.HINT_PREFERENCES[hpvm.GPU_TARGET] = saved
        launch._CHOICES.clear()


def measure(
    target: str,
    medians: Callable[[dict[str, Callable[[], None]]], dict[str, float]],
    w: int = WRAPPERS,
    k: int = TILE,
) -> dict[str, float]:
    """Median seconds of the three ways (see the module doc): ``medians`` samples the runs in
    turn (``run.py``'s interleaved sampling)."""
    x = np.arange(w * k, dtype=np.float32) % 97
    y = np.zeros(w * k, dtype=np.float32)
    for a in (x, y):
        hpvm.track_memory(a)
    a = np.float32(2.0)
    whole_k = w * k

    def run_wrapped() -> None:
        handle = hpvm.launch(wrapped, (x, y, a, k, w))
        if handle.backend.name != f"cpu+{target}":
            raise AssertionError(f"the wrapper ran on {handle.backend.name}, not cpu+{target}")
        hpvm.wait(handle)

    def run_direct() -> None:
        for t in range(w):
            hpvm.wait(hpvm.launch(direct, (x, y, t * k, a, k)))

    def run_once() -> None:
        hpvm.wait(hpvm.launch(direct, (x, y, 0, a, whole_k)))

    runs: dict[str, Callable[[], None]] = {"wrapped": run_wrapped, "direct": run_direct, "once": run_once}
    for name, fn in runs.items():  # warm (compiles), and each computes y += 2x
        hpvm.request_memory(y)
        y[...] = 0
        hpvm.mark_host_modified(y)
        fn()
        if not np.array_equal(hpvm.request_memory(y), 2 * x):
            raise AssertionError(f"{name} computed a wrong result on {target}")
    found = medians(runs)
    for arr in (x, y):
        hpvm.untrack_memory(arr)
    return found


def bench_wrapper_gpu(ctx: Any) -> list[Any]:
    """``run.py``'s ``wrapper_gpu`` row."""
    harness = sys.modules[type(ctx).__module__]  # run.py, as __main__ or imported
    Row, fmt_time = harness.Row, harness.fmt_time
    row = Row(
        f"CPU wrapper[{WRAPPERS}] around a GPU leaf vs the leaf launched directly",
        f"{WRAPPERS} × {TILE} f32 saxpy",
    )
    gpus = [t for t in ctx.targets if t in ("cuda", "opencl")]
    if not gpus and "opencl" in available_backends():
        gpus = ["opencl"]
    if not gpus:
        row.measure = "not run: needs a GPU back end (--targets opencl or cuda)"
        return [row]
    target = gpus[0]
    with gpu_hint_means(target):
        m = measure(
            target, lambda runs: ctx.interleaved(runs, {n: harness.timed(fn) for n, fn in runs.items()})
        )
    per_direct = (m["wrapped"] - m["direct"]) / WRAPPERS
    per_once = (m["wrapped"] - m["once"]) / WRAPPERS
    row.hpvm = {target: fmt_time(m["wrapped"])}
    row.measure = (
        f"wrapped {fmt_time(m['wrapped'])}, {WRAPPERS} direct launches {fmt_time(m['direct'])}, "
        f"one kernel {fmt_time(m['once'])}; host overhead per wrapper instance "
        f"{fmt_time(per_direct)} over direct launches, {fmt_time(per_once)} over one kernel"
    )
    row.data = {**{f"{k}_s": v for k, v in m.items()}, "per_instance_vs_direct_s": per_direct}
    row.data["per_instance_vs_once_s"] = per_once
    return [row]
