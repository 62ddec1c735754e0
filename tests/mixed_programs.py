"""Programs whose leaves carry different hints (the GPU hint on the middle one), shared by
the mixed-graph tests of the runtime (GPU hint mapped to ``interp``) and of the GPU back ends
(``cpu`` + ``opencl``, ``cpu`` + ``cuda``); the nested ones (``NESTED``) mix devices inside
internal nodes, at two and three levels and in a replicated parent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import hpvm


@hpvm.leaf(ins=("x",))
def scaled(x: hpvm.f64[:], k: hpvm.f64) -> tuple[hpvm.f64, hpvm.i64]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    return x[i] * k, i


@hpvm.leaf(hint=hpvm.GPU_TARGET, outs=("out",))
def shifted(v: hpvm.f64, i: hpvm.i64, out: hpvm.f64[:]) -> hpvm.f64[:]:
    out[i] = v + 1.0
    return out


@hpvm.leaf(ins=("arr",), outs=("total",))
def summed(arr: hpvm.f64[:], total: hpvm.f64[:]) -> hpvm.f64:
    s = 0.0
    for j in range(arr.shape[0]):
        s += arr[j]
    total[0] = s
    return s


@hpvm.internal
def cpu_gpu_cpu(x: hpvm.f64[:], out: hpvm.f64[:], total: hpvm.f64[:], k: hpvm.f64, n: hpvm.i64):
    a = hpvm.create_node_1d(scaled, n)
    b = hpvm.create_node_1d(shifted, n)
    c = hpvm.create_node(summed)
    hpvm.bind_in(a, 0, 0)
    hpvm.bind_in(a, 3, 1)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0)  # per-instance scalars cpu -> interp
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 1, 1)
    hpvm.bind_in(b, 1, 2)
    hpvm.edge(b, c, hpvm.ALL_TO_ALL, 0, 0)  # an array interp -> cpu
    hpvm.bind_in(c, 2, 1)
    hpvm.bind_out(c, 0, 0)
    hpvm.bind_out(a, 1, 1)  # the last instance's id, from cpu


@hpvm.internal
def streamed(x: hpvm.f64[:], out: hpvm.f64[:], total: hpvm.f64[:], k: hpvm.f64, n: hpvm.i64):
    a = hpvm.create_node_1d(scaled, n)
    b = hpvm.create_node_1d(shifted, n)
    c = hpvm.create_node(summed)
    hpvm.bind_in(a, 0, 0)
    hpvm.bind_in(a, 3, 1)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 1, 1)
    hpvm.bind_in(b, 1, 2)
    hpvm.edge(b, c, hpvm.ALL_TO_ALL, 0, 0, stream=True)  # a pipeline stage boundary
    hpvm.bind_in(c, 2, 1)
    hpvm.bind_out(c, 0, 0)


# -- nested mixed-device programs: internal nodes whose children select different back ends --
#
# Integers throughout, so every back end's result must equal interp's exactly. ``NESTED`` lists
# them with their arguments; ``check_nested`` runs one on interp (the reference) and as the
# hints split it (a ``MixedBackend``), and compares every output and every array.

I64 = hpvm.i64[:]


@hpvm.leaf(hint=hpvm.GPU_TARGET, ins=("x",), outs=("sq",))
def gpu_square(x: I64, sq: I64) -> I64:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    sq[i] = x[i] * x[i]
    return sq


@hpvm.leaf(ins=("sq",), outs=("y",))
def cpu_plus(sq: I64, y: I64, c: hpvm.i64) -> hpvm.i64:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    y[i] = sq[i] + c
    return sq[sq.shape[0] - 1] + c  # the same in every instance (the last-instance rule)


@hpvm.internal
def stage(x: I64, sq: I64, y: I64, c: hpvm.i64, n: hpvm.i64):
    """A GPU leaf and a CPU leaf in one internal node (the issue's 'stage')."""
    g = hpvm.create_node_1d(gpu_square, n)
    p = hpvm.create_node_1d(cpu_plus, n)
    hpvm.bind_in(g, 0, 0)
    hpvm.bind_in(g, 1, 1)
    hpvm.edge(g, p, hpvm.ALL_TO_ALL, 0, 0)  # an array: gpu -> cpu inside the node
    hpvm.bind_in(p, 2, 1)
    hpvm.bind_in(p, 3, 2)
    hpvm.bind_out(p, 0, 0)  # the last instance's value


@hpvm.internal
def two_level(x: I64, sq: I64, y: I64, c: hpvm.i64, n: hpvm.i64):
    """Two levels: a child of the root mixes devices."""
    s = hpvm.create_node(stage)
    for i in range(5):
        hpvm.bind_in(s, i, i)
    hpvm.bind_out(s, 0, 0)


@hpvm.leaf
def tile_id() -> hpvm.i64:
    return hpvm.get_node_instance_id_x(hpvm.get_node())


@hpvm.leaf(hint=hpvm.GPU_TARGET, ins=("x",), outs=("y",))
def gpu_tile(x: I64, y: I64, t: hpvm.i64, k: hpvm.i64) -> I64:
    j = hpvm.get_node_instance_id_x(hpvm.get_node())
    y[t * k + j] = x[t * k + j] * 3 + t
    return y


@hpvm.leaf(ins=("y",), outs=("sums",))
def cpu_tile_sum(y: I64, sums: I64, t: hpvm.i64, k: hpvm.i64) -> hpvm.i64:
    s = 0
    for j in range(k):
        s += y[t * k + j]
    sums[t] = s
    return s


@hpvm.internal
def tile(x: I64, y: I64, sums: I64, t: hpvm.i64, k: hpvm.i64):
    """One tile: k GPU instances write it, one CPU instance sums it; outputs (sum, y)."""
    g = hpvm.create_node_1d(gpu_tile, k)
    s = hpvm.create_node(cpu_tile_sum)
    for ip, ic in ((0, 0), (1, 1), (3, 2), (4, 3)):
        hpvm.bind_in(g, ip, ic)
    hpvm.edge(g, s, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_in(s, 2, 1)
    hpvm.bind_in(s, 3, 2)
    hpvm.bind_in(s, 4, 3)
    hpvm.bind_out(s, 0, 0)
    hpvm.bind_out(g, 0, 1)


@hpvm.leaf(outs=("doubled",))
def collect(s: hpvm.i64, doubled: I64):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    doubled[i] = 2 * s


@hpvm.internal
def replicated_parent(x: I64, y: I64, sums: I64, doubled: I64, k: hpvm.i64, m: hpvm.i64):
    """m instances of a node holding a GPU leaf and a CPU leaf; each gets its tile id over a
    one-to-one edge and hands its sum on over another."""
    ids = hpvm.create_node_1d(tile_id, m)
    t = hpvm.create_node_1d(tile, m)
    c = hpvm.create_node_1d(collect, m)
    hpvm.edge(ids, t, hpvm.ONE_TO_ONE, 0, 3)
    for i in (0, 1, 2, 4):
        hpvm.bind_in(t, i, i)
    hpvm.edge(t, c, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_in(c, 3, 1)


@hpvm.leaf(ins=("y",), outs=("z",))
def bump_tile(y: I64, z: I64, t: hpvm.i64, k: hpvm.i64) -> I64:
    j = hpvm.get_node_instance_id_x(hpvm.get_node())
    z[t * k + j] = y[t * k + j] - t
    return z


@hpvm.internal(hint=hpvm.GPU_TARGET)
def gpu_block(y: I64, z: I64, t: hpvm.i64, k: hpvm.i64):
    """All GPU below (the leaf inherits the hint): one back-end call, not split."""
    b = hpvm.create_node_1d(bump_tile, k)
    for i in range(4):
        hpvm.bind_in(b, i, i)
    hpvm.bind_out(b, 0, 0)


@hpvm.internal
def outer(x: I64, y: I64, sums: I64, z: I64, t: hpvm.i64, k: hpvm.i64):
    """The middle of three levels: a mixed node (tile) and a GPU-only node (gpu_block)."""
    m = hpvm.create_node(tile)
    g = hpvm.create_node(gpu_block)
    for i in (0, 1, 2):
        hpvm.bind_in(m, i, i)
    hpvm.bind_in(m, 4, 3)
    hpvm.bind_in(m, 5, 4)
    hpvm.edge(m, g, hpvm.ALL_TO_ALL, 1, 0)  # y, written by the GPU leaf of tile, read on the GPU
    hpvm.bind_in(g, 3, 1)
    hpvm.bind_in(g, 4, 2)
    hpvm.bind_in(g, 5, 3)
    hpvm.bind_out(m, 0, 0)


@hpvm.internal
def three_level(x: I64, y: I64, sums: I64, z: I64, doubled: I64, k: hpvm.i64, m: hpvm.i64):
    """root -> outer[m] (mixed) -> tile (mixed) -> gpu_tile[k] + cpu_tile_sum; and
    outer -> gpu_block (GPU) -> bump_tile[k]."""
    ids = hpvm.create_node_1d(tile_id, m)
    o = hpvm.create_node_1d(outer, m)
    c = hpvm.create_node_1d(collect, m)
    hpvm.edge(ids, o, hpvm.ONE_TO_ONE, 0, 4)
    for i in range(4):
        hpvm.bind_in(o, i, i)
    hpvm.bind_in(o, 5, 5)
    hpvm.edge(o, c, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_in(c, 4, 1)


@hpvm.leaf(hint=hpvm.GPU_TARGET, ins=("x",), outs=("y",))
def gpu_tile_of_parent(x: I64, y: I64, k: hpvm.i64) -> I64:
    j = hpvm.get_node_instance_id_x(hpvm.get_node())
    t = hpvm.get_node_instance_id_x(hpvm.get_parent_node(hpvm.get_node()))  # the wrapper's
    y[t * k + j] = x[t * k + j] * 5 - t
    return y


@hpvm.leaf(ins=("y",), outs=("sums",))
def cpu_tile_sum_of_parent(y: I64, sums: I64, k: hpvm.i64) -> hpvm.i64:
    t = hpvm.get_node_instance_id_x(hpvm.get_parent_node(hpvm.get_node()))
    s = 0
    for j in range(k):
        s += y[t * k + j]
    sums[t] = s
    return s


@hpvm.internal
def tile_of_parent(x: I64, y: I64, sums: I64, k: hpvm.i64):
    """A tile whose leaves find their tile from their parent's instance id."""
    g = hpvm.create_node_1d(gpu_tile_of_parent, k)
    s = hpvm.create_node(cpu_tile_sum_of_parent)
    hpvm.bind_in(g, 0, 0)
    hpvm.bind_in(g, 1, 1)
    hpvm.bind_in(g, 3, 2)
    hpvm.edge(g, s, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_in(s, 2, 1)
    hpvm.bind_in(s, 3, 2)
    hpvm.bind_out(s, 0, 0)


@hpvm.internal
def parent_ids(x: I64, y: I64, sums: I64, doubled: I64, k: hpvm.i64, m: hpvm.i64):
    """m instances of a CPU wrapper whose GPU leaf and CPU leaf query the wrapper's instance."""
    t = hpvm.create_node_1d(tile_of_parent, m)
    c = hpvm.create_node_1d(collect, m)
    for i in (0, 1, 2, 4):
        hpvm.bind_in(t, i, min(i, 3))
    hpvm.edge(t, c, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_in(c, 3, 1)


def _ints(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-50, 50, n).astype(np.int64)


@dataclass(frozen=True)
class NestedCase:
    """A nested mixed-device program and a way to make its arguments (fresh arrays each call)."""

    name: str
    root: hpvm.InternalFunction
    make_args: Callable[[], tuple]

    def __str__(self) -> str:
        return self.name


NESTED = [
    NestedCase("two_level", two_level, lambda: (_ints(16, 1), _zeros(16), _zeros(16), 7, 16)),
    NestedCase(
        "replicated_parent",
        replicated_parent,
        lambda: (_ints(4 * 8, 2), _zeros(32), _zeros(4), _zeros(4), 8, 4),
    ),
    NestedCase(
        "parent_ids",
        parent_ids,
        lambda: (_ints(3 * 8, 4), _zeros(24), _zeros(3), _zeros(3), 8, 3),
    ),
    NestedCase(
        "three_level",
        three_level,
        lambda: (_ints(3 * 4, 3), _zeros(12), _zeros(3), _zeros(12), _zeros(3), 4, 3),
    ),
]


def _zeros(n: int) -> np.ndarray:
    return np.zeros(n, dtype=np.int64)


def run_nested(case: NestedCase, target: str | None = None) -> tuple[Any, tuple, list[np.ndarray]]:
    """(the launch handle, the outputs, the arrays after the run) of one run of ``case``."""
    args = case.make_args()
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    for a in arrays:
        hpvm.track_memory(a)
    handle = hpvm.launch(case.root, args, target=target)
    outputs = hpvm.wait(handle)
    return handle, outputs, [hpvm.request_memory(a).copy() for a in arrays]


def check_nested(case: NestedCase, backends: str) -> Any:
    """Run ``case`` on interp and as its hints split it; the split must run on ``backends``
    (such as ``"cpu+opencl"``) and agree exactly. Returns the mixed run's handle."""
    _, want, want_arrays = run_nested(case, "interp")
    handle, got, got_arrays = run_nested(case)
    assert handle.backend.name == backends
    assert got == want
    for g, w in zip(got_arrays, want_arrays):
        np.testing.assert_array_equal(g, w)
    return handle
