"""Barrier leaves on the cpu back end: the generated group function matches the interpreter.

Each case builds a leaf that calls ``hpvm.barrier()``, runs it in a root graph on the
reference interpreter, then runs the group function from ``hpvm.backends.cpu.barriers``
compiled with Numba directly (once per parent instance, as the graph code does) on copies
of the same inputs, and compares every array and the returned value exactly. The error
cases check that barriers under divergent control are refused at compile time, naming the
barrier's and the condition's lines.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

import hpvm
from hpvm.backends.cpu.barriers import group_function
from hpvm.backends.cpu.narrow import narrow_helpers
from hpvm.passes.clone_leaves import clone_leaf
from markers import SourceMarkers, fails

SRC = SourceMarkers(__file__)
ROOT_CTX = (0, 0, 0, 1, 1, 1, 0)  # the root's level of a context tuple


@njit
def _add(a, i, v):  # a non-atomic stand-in: a group function runs instances one by one
    old = a[i]
    a[i] = old + v
    return old


HELPERS = {
    "__hpvm_malloc": njit(lambda n: np.zeros(n, np.uint8)),
    "__hpvm_atomic_add": _add,
    **narrow_helpers(),
}


pytestmark = pytest.mark.usefixtures("hpvm_runtime")


def interp(root, *args):
    for a in args:
        if isinstance(a, np.ndarray):
            hpvm.track_memory(a)
    return hpvm.wait(hpvm.launch(root, args, target="interp"))


def group(leaf, ctx_levels=None, cache=False):
    """The leaf's group function compiled as the back end does: (dispatcher, source)."""
    clone = clone_leaf(leaf)
    levels = ctx_levels or max(1, clone.levels)
    symbol, source = group_function(clone, [p.type for p in leaf.params], levels)
    namespace = {**leaf.pyfunc.__globals__, **HELPERS}
    exec(compile(source, leaf.location.file, "exec"), namespace)
    return njit(nogil=True, cache=cache)(namespace[symbol]), source


def launch_group(fn, args, grid, parent=()):
    """Call a group function for one parent instance over ``grid`` (1 to 3 extents)."""
    extents = [*grid, *([1] * (3 - len(grid)))]
    return fn(*args, parent, *extents, len(grid))


def copies(*arrays):
    return [a.copy() for a in arrays]


# ---------------------------------------------------------------------------------------
# (1) two-phase exchange, with a privatized local crossing the barrier


@hpvm.leaf(ins=("x", "buf"), outs=("buf", "y"))
def exchange(x: hpvm.f32[:], buf: hpvm.f32[:], y: hpvm.f32[:]):
    node = hpvm.get_node()
    lid = hpvm.get_node_instance_id_x(node)
    n = hpvm.get_num_node_instances_x(node)
    mine = x[lid] * np.float32(3.0) + np.float32(1.0)  # differs per instance, lives across
    buf[lid] = x[lid]
    hpvm.barrier()
    y[lid] = buf[(lid + 1) % n] + mine


@hpvm.internal
def exchange_root(x: hpvm.f32[:], buf: hpvm.f32[:], y: hpvm.f32[:]):
    k = hpvm.create_node_1d(exchange, x.shape[0])
    for port in range(3):
        hpvm.bind_in(k, port, port)


@pytest.mark.parametrize("ctx_levels", [1, 2], ids=["empty-parent-ctx", "root-parent-ctx"])
def test_two_phase_exchange(ctx_levels):
    x = np.random.default_rng(0).standard_normal(9).astype(np.float32)
    want = copies(x, np.zeros(9, np.float32), np.zeros(9, np.float32))
    interp(exchange_root, *want)
    fn, source = group(exchange, ctx_levels)
    assert "__hpvm_p_mine" in source  # privatized: one float32 per instance
    assert "__hpvm_p_lid" not in source  # recomputed from the instance id instead
    got = copies(x, np.zeros(9, np.float32), np.zeros(9, np.float32))
    parent = ROOT_CTX * (ctx_levels - 1)
    assert launch_group(fn, got, [9], parent) is None
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------------------------------
# (2) tree reduction: a barrier in a uniform `while s > 0:` loop (examples/reduction.py)


@hpvm.leaf(ins=("data", "buf", "hits"), outs=("buf", "out", "hits"))
def tree(data: hpvm.i64[:], buf: hpvm.i64[:], out: hpvm.i64[:], hits: hpvm.i64[:]):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    buf[lid] = data[lid]
    hpvm.barrier()
    s = hpvm.get_num_node_instances_x(hpvm.get_node()) // 2
    while s > 0:
        if lid < s:
            buf[lid] += buf[lid + s]
        hpvm.barrier()
        s //= 2  # a uniform update in a region every instance runs: applied once
        hits[lid] += s
    if lid == 0:
        out[0] = buf[0]


@hpvm.internal
def tree_root(data: hpvm.i64[:], buf: hpvm.i64[:], out: hpvm.i64[:], hits: hpvm.i64[:]):
    k = hpvm.create_node_1d(tree, data.shape[0])
    for port in range(4):
        hpvm.bind_in(k, port, port)


def test_tree_reduction_in_uniform_while_loop():
    data = np.random.default_rng(1).integers(-1000, 1000, 16)
    arrays = (data, np.zeros(16, np.int64), np.zeros(1, np.int64), np.zeros(16, np.int64))
    want, got = copies(*arrays), copies(*arrays)
    interp(tree_root, *want)
    assert want[2][0] == data.sum()
    fn, _ = group(tree)
    launch_group(fn, got, [16])
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------------------------------
# (3) a barrier inside a uniform `for r in range(rounds):`, with per-instance state


@hpvm.leaf(ins=("buf",), outs=("buf", "out"))
def rounds_leaf(buf: hpvm.f64[:], out: hpvm.f64[:], rounds: hpvm.i64):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    n = hpvm.get_num_node_instances_x(hpvm.get_node())
    acc = 0.5 * lid
    for r in range(rounds):
        buf[lid] = acc + r
        hpvm.barrier()
        acc += buf[(lid + r + 1) % n]  # read another instance's value: acc is privatized
        hpvm.barrier()
    out[lid] = acc


@hpvm.internal
def rounds_root(buf: hpvm.f64[:], out: hpvm.f64[:], rounds: hpvm.i64):
    k = hpvm.create_node_1d(rounds_leaf, buf.shape[0])
    for port in range(3):
        hpvm.bind_in(k, port, port)


def test_barrier_in_uniform_for_loop():
    want, got = copies(np.zeros(7), np.zeros(7)), copies(np.zeros(7), np.zeros(7))
    interp(rounds_root, *want, 5)
    fn, source = group(rounds_leaf)
    assert "for r in range(rounds):" in source  # the loop runs once, in the driver
    launch_group(fn, [*got, 5], [7])
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------------------------------
# (4) 2-D instances


@hpvm.leaf(ins=("a", "t"), outs=("t", "out"))
def stencil(a: hpvm.i64[:, :], t: hpvm.i64[:, :], out: hpvm.i64[:, :]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    j = hpvm.get_node_instance_id_y(node)
    ni = hpvm.get_num_node_instances_x(node)
    nj = hpvm.get_num_node_instances_y(node)
    v = a[i, j] * 2 + hpvm.get_num_dims(node)
    t[i, j] = v
    hpvm.barrier()
    out[i, j] = t[(i + 1) % ni, (j + 1) % nj] - v


@hpvm.internal
def stencil_root(a: hpvm.i64[:, :], t: hpvm.i64[:, :], out: hpvm.i64[:, :]):
    k = hpvm.create_node_2d(stencil, a.shape[0], a.shape[1])
    for port in range(3):
        hpvm.bind_in(k, port, port)


def test_two_dimensional_instances():
    a = np.random.default_rng(2).integers(0, 100, (3, 5))
    want, got = copies(a, 0 * a, 0 * a), copies(a, 0 * a, 0 * a)
    interp(stencil_root, *want)
    fn, _ = group(stencil)
    launch_group(fn, got, [3, 5])
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------------------------------
# (5) parent-level queries, one group per instance of a replicated parent (with malloc)


@hpvm.leaf
def scratch(n: hpvm.i64) -> hpvm.i64[:]:
    return hpvm.malloc(n * 8).view(np.int64)


@hpvm.leaf(ins=("x", "buf"), outs=("buf", "out"))
def rotate(x: hpvm.i64[:], buf: hpvm.i64[:], out: hpvm.i64[:], n: hpvm.i64):
    node = hpvm.get_node()
    lid = hpvm.get_node_instance_id_x(node)
    b = hpvm.get_node_instance_id_x(hpvm.get_parent_node(node))
    blocks = hpvm.get_num_node_instances_x(hpvm.get_parent_node(hpvm.get_node()))
    buf[lid] = x[b * n + lid]
    hpvm.barrier()
    out[b * n + lid] = buf[(lid + 1) % n] * blocks + b


@hpvm.internal
def rotate_block(x: hpvm.i64[:], out: hpvm.i64[:], n: hpvm.i64):
    alloc = hpvm.create_node(scratch)
    work = hpvm.create_node_1d(rotate, n)
    hpvm.bind_in(alloc, 2, 0)
    hpvm.edge(alloc, work, hpvm.ALL_TO_ALL, 0, 1)
    hpvm.bind_in(work, 0, 0)
    hpvm.bind_in(work, 1, 2)
    hpvm.bind_in(work, 2, 3)


@hpvm.internal
def rotate_root(x: hpvm.i64[:], out: hpvm.i64[:], n: hpvm.i64):
    blocks = hpvm.create_node_1d(rotate_block, x.shape[0] // n)
    for port in range(3):
        hpvm.bind_in(blocks, port, port)


@pytest.mark.parametrize("ctx_levels", [2, 3])
def test_parent_level_queries(ctx_levels):
    n, nb = 4, 3
    x = np.arange(n * nb) * 7
    want, got = np.zeros(n * nb, np.int64), np.zeros(n * nb, np.int64)
    interp(rotate_root, x, want, n)
    fn, _ = group(rotate, ctx_levels)
    for b in range(nb):  # a replicated parent: one call per parent instance
        parent = ((b, 0, 0, nb, 1, 1, 1) + ROOT_CTX)[: 7 * (ctx_levels - 1)]
        launch_group(fn, [x, np.zeros(n, np.int64), got, n], [n], parent)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------------
# A parameter reassigned per instance is privatized, starting from the caller's value


@hpvm.leaf(ins=("buf",), outs=("buf",))
def shifted(buf: hpvm.i64[:], k: hpvm.i64, m: hpvm.i64):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    base = m * 10
    idx = base + lid  # recomputed per region from uniform `base`, not privatized
    k = k + lid
    buf[idx] = k
    hpvm.barrier()
    v = k * buf[base + (lid + 1) % 3]  # another instance's element: read it before anyone writes
    hpvm.barrier()
    buf[idx] += v


@hpvm.internal
def shifted_root(buf: hpvm.i64[:], k: hpvm.i64, m: hpvm.i64):
    node = hpvm.create_node_1d(shifted, 3)
    for port in range(3):
        hpvm.bind_in(node, port, port)


def test_parameter_reassigned_per_instance():
    want, got = np.zeros(40, np.int64), np.zeros(40, np.int64)
    interp(shifted_root, want, 5, 2)
    fn, source = group(shifted)
    assert "__hpvm_p_k[:] = k" in source and "__hpvm_p_idx" not in source
    launch_group(fn, [got, 5, 2], [3])
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------------
# (8) the group returns what the last instance returns, also from a return in a loop


@hpvm.leaf(ins=("buf",), outs=("buf",))
def last_value(buf: hpvm.i64[:]) -> hpvm.i64:
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    j = hpvm.get_node_instance_id_y(node)
    f = i * hpvm.get_num_node_instances_y(node) + j
    buf[f] = f * f
    hpvm.barrier()
    for t in range(buf.shape[0]):
        if buf[t] > 2 * f + 3:
            return buf[t] + 1000 * f
    return -f


@hpvm.internal
def last_root(buf: hpvm.i64[:]) -> hpvm.i64:
    k = hpvm.create_node_2d(last_value, 2, 3)
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_out(k, 0, 0)


def test_returns_what_the_last_instance_returns():
    want, got = np.zeros(6, np.int64), np.zeros(6, np.int64)
    with pytest.warns(hpvm.HPVMWarning, match="disagree"):
        (value,) = interp(last_root, want)
    fn, _ = group(last_value)
    assert launch_group(fn, [got], [2, 3]) == value == 16 + 1000 * 5  # instance (1, 2): f = 5
    np.testing.assert_array_equal(got, want)


@hpvm.leaf(ins=("buf",), outs=("buf",))
def pair(buf: hpvm.i64[:]) -> tuple[hpvm.i64, hpvm.i64[:]]:
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    buf[lid] = lid
    hpvm.barrier()
    return buf[0] + lid, buf


def test_no_instances_runs_nothing_and_returns_zeros():
    fn, _ = group(pair)
    buf = np.full(4, 9, np.int64)
    value, arr = launch_group(fn, [buf], [0])
    assert value == 0 and arr.shape == (0,)
    np.testing.assert_array_equal(buf, 9)
    value, arr = launch_group(fn, [buf], [4])
    assert value == 3
    np.testing.assert_array_equal(arr, [0, 1, 2, 3])


@hpvm.leaf(ins=("buf",), outs=("buf",))
def converts(buf: hpvm.i64[:]) -> hpvm.f64[:]:
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    buf[lid] = lid
    hpvm.barrier()
    return buf.astype(np.float64)  # @astype


def test_a_barrier_leaf_outside_the_leaf_ir_is_refused_naming_the_construct():
    # The cpu back end splits barrier leaves on the leaf IR; no suite or example leaf is outside it.
    with fails(hpvm.CompileError, "converts", SRC.at("astype"), "astype", "target='interp'"):
        group(converts)


# ---------------------------------------------------------------------------------------
# A uniform `break` out of a loop holding barriers; cache=True compiles


@hpvm.leaf(ins=("buf",), outs=("buf", "out"))
def halve(buf: hpvm.i64[:], out: hpvm.i64[:], limit: hpvm.i64):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    total = 0
    while True:
        buf[lid] //= 2
        hpvm.barrier()
        total = buf[0] + buf[1]
        if total < limit:
            break
        hpvm.barrier()
    out[lid] = buf[lid] + total


@hpvm.internal
def halve_root(buf: hpvm.i64[:], out: hpvm.i64[:], limit: hpvm.i64):
    k = hpvm.create_node_1d(halve, buf.shape[0])
    for port in range(3):
        hpvm.bind_in(k, port, port)


def test_uniform_break_and_cached_compile():
    start = np.arange(5) * 100
    want, got = copies(start, 0 * start), copies(start, 0 * start)
    interp(halve_root, *want, 20)
    fn, _ = group(halve, cache=True)
    launch_group(fn, [*got, 20], [5])
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


# ---------------------------------------------------------------------------------------
# (6), (7) and other leaves the cpu back end refuses, with the lines to fix


@hpvm.leaf(ins=("buf",), outs=("buf",))
def divergent_if(buf: hpvm.i64[:]):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    buf[lid] = 1
    if lid < 2:  # @div_if
        hpvm.barrier()  # @div_barrier


@hpvm.leaf(ins=("buf",), outs=("buf",))
def divergent_loop(buf: hpvm.i64[:]):
    node = hpvm.get_node()
    lid = hpvm.get_node_instance_id_x(node)
    bound = lid + 1
    for t in range(bound):  # @div_for
        buf[lid] += t
        hpvm.barrier()  # @div_loop_barrier


@hpvm.leaf(ins=("buf",), outs=("buf",))
def divergent_break(buf: hpvm.i64[:]):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    for _ in range(4):
        hpvm.barrier()
        if buf[lid] > 2:  # @div_break_if
            break  # @div_break
        buf[lid] += 1


@hpvm.leaf(ins=("buf",), outs=("buf",))
def early_return(buf: hpvm.i64[:]):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    if buf[0] > 0:
        return  # @early_return
    hpvm.barrier()
    buf[lid] = 1


@hpvm.leaf(ins=("a",), outs=("a",))
def row_across(a: hpvm.i64[:, :]):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    row = a[lid]
    hpvm.barrier()
    row[0] = 1  # @row_use


@hpvm.leaf(ins=("a",), outs=("a",))
def scratch_across(a: hpvm.i64[:]):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    tmp = np.zeros(2, np.int64)
    tmp[0] = lid
    hpvm.barrier()
    a[lid] = tmp[0]  # @scratch_use


def test_divergent_barrier_names_both_lines():
    with fails(
        hpvm.CompileError, "divergent_if", SRC.at("div_barrier"), f"line {SRC.line_of('div_if')}", "`lid`"
    ):
        group(divergent_if)


def test_barrier_in_loop_with_instance_dependent_bound():
    with fails(
        hpvm.CompileError,
        "divergent_loop",
        SRC.at("div_loop_barrier"),
        f"line {SRC.line_of('div_for')}",
        "`bound`",
    ):
        group(divergent_loop)


def test_divergent_break_out_of_a_barrier_loop():
    with fails(hpvm.CompileError, SRC.at("div_break"), f"line {SRC.line_of('div_break_if')}", "`break`"):
        group(divergent_break)


def test_return_before_a_barrier():
    with fails(hpvm.CompileError, SRC.at("early_return"), "`return` before"):
        group(early_return)


def test_per_instance_objects_across_a_barrier():
    with fails(hpvm.CompileError, SRC.at("row_use"), "local 'row'", "differs between instances"):
        group(row_across)
    with fails(hpvm.CompileError, SRC.at("scratch_use"), "local 'tmp'", "created by every instance"):
        group(scratch_across)


@hpvm.leaf(ins=("buf",), outs=("buf",))
def named_math(buf: hpvm.i64[:]):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    math = lid * 2  # a name the clone's emitter cannot use (it keeps the syntax-tree clone)
    buf[lid] = math
    hpvm.barrier()
    v = buf[(lid + 1) % buf.shape[0]] + math
    hpvm.barrier()
    buf[lid] = v


@hpvm.internal
def named_math_root(buf: hpvm.i64[:]):
    k = hpvm.create_node_1d(named_math, buf.shape[0])
    hpvm.bind_in(k, 0, 0)


def test_a_leaf_without_an_emitted_clone_is_split_from_its_own_lowered_ir():
    assert clone_leaf(named_math).ir is None
    want, got = np.zeros(5, np.int64), np.zeros(5, np.int64)
    interp(named_math_root, want)
    fn, source = group(named_math)
    assert "math = lid * 2" in source  # recomputed where needed: the group function names math otherwise
    launch_group(fn, [got], [5])
    np.testing.assert_array_equal(got, want)
