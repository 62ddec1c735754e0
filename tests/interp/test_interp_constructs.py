"""The reference interpreter runs every construct of the shared program suite correctly.

``tests/programs.py`` is the differential suite every back end runs; here it runs on
``interp`` and is compared with its NumPy references (exactly for integers). The tests
below it pin down what only the interpreter defines: the order of dynamic instances, the
last-instance rule, barrier lock-step, and warnings delivered on the host thread.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import hpvm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared suite
from programs import PROGRAMS, assert_matches, expected, run_program  # noqa: E402
from running import run_tracked, runs_from_its_ir

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


def run(root, *args):
    return run_tracked(root, args, "interp")


# ---------------------------------------------------------------------------------------
# The shared suite


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_program_suite(program, seed):
    if program.disagrees:
        with pytest.warns(hpvm.HPVMWarning, match="disagree"):
            got = run_program(program, "interp", seed)
    else:
        got = run_program(program, "interp", seed)  # any HPVMWarning fails (pyproject)
    assert_matches(program, got, expected(program, seed))


def test_suite_covers_every_construct():
    names = {p.name for p in PROGRAMS}
    for needed in (
        "scalar_0d_outputs",
        "saxpy_1d",
        "matadd_2d",
        "grid_3d",
        "two_level_parent_queries",
        "three_level_grandparent_queries",
        "one_to_one_scalars_2d",
        "one_to_one_arrays",
        "all_to_all_scalar",
        "all_to_all_array",
        "binds_two_levels",
        "last_instance_same",
        "last_instance_differs",
        "atomics_int32",
        "atomics_int64",
        "atomics_float32",
        "atomics_float64",
        "barrier_rotate_malloc",
        "malloc_per_parent_instance",
        "size_expressions",
        "zero_instances",
    ):
        assert needed in names


def test_suite_programs_leave_runtime_clean():
    """run_program untracks what it tracked: the arrays can be tracked by the caller again."""
    program = PROGRAMS[1]
    _, arrays = run_program(program, "interp")
    for a in arrays.values():
        with pytest.raises(hpvm.MemoryTrackingError, match="not tracked"):
            hpvm.untrack_memory(a)


# ---------------------------------------------------------------------------------------
# Instance order: row-major, x outermost (seed 001's loop nest)


@hpvm.leaf(outs=("order", "counter"))
def record_order(order: hpvm.i64[:, :, :], counter: hpvm.i64[:]):
    n = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(n)
    j = hpvm.get_node_instance_id_y(n)
    k = hpvm.get_node_instance_id_z(n)
    order[i, j, k] = hpvm.atomic_add(counter, 0, 1)


@hpvm.internal
def order_root(order: hpvm.i64[:, :, :], counter: hpvm.i64[:]):
    k = hpvm.create_node_3d(record_order, order.shape[0], order.shape[1], order.shape[2])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


def test_instances_run_row_major_x_outermost():
    order = np.full((2, 3, 4), -1, np.int64)
    counter = np.zeros(1, np.int64)
    run(order_root, order, counter)
    np.testing.assert_array_equal(order, np.arange(24).reshape(2, 3, 4))
    assert counter[0] == 24


# ---------------------------------------------------------------------------------------
# The last-instance rule through replicated internal nodes and all-to-all edges


@hpvm.leaf
def parent_id() -> hpvm.i64:
    return hpvm.get_node_instance_id_x(hpvm.get_parent_node(hpvm.get_node()))


@hpvm.internal
def wrap_parent_id():
    k = hpvm.create_node(parent_id)
    hpvm.bind_out(k, 0, 0)


@hpvm.internal
def internal_last_root(n: hpvm.i64):
    rep = hpvm.create_node_1d(wrap_parent_id, n)
    hpvm.bind_out(rep, 0, 0)


def test_replicated_internal_node_output_is_last_instance():
    with pytest.warns(hpvm.HPVMWarning, match=r"wrap_parent_id.0 -> 0.*instance \[0\] sent"):
        assert run(internal_last_root, 5) == (4,)


@hpvm.leaf
def my_x() -> hpvm.i64:
    return hpvm.get_node_instance_id_x(hpvm.get_node())


@hpvm.leaf(outs=("out",))
def take(v: hpvm.i64, out: hpvm.i64[:]):
    out[hpvm.get_node_instance_id_x(hpvm.get_node())] = v


@hpvm.internal
def a2a_disagree_root(n: hpvm.i64, out: hpvm.i64[:]):
    src = hpvm.create_node_1d(my_x, n)
    dst = hpvm.create_node_1d(take, out.shape[0])
    hpvm.edge(src, dst, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_in(dst, 1, 1)


def test_all_to_all_takes_last_instance_and_warns():
    out = np.zeros(3, np.int64)
    with pytest.warns(hpvm.HPVMWarning, match=r"edge my_x.0 -> take.0 \(all_to_all"):
        run(a2a_disagree_root, 6, out)
    np.testing.assert_array_equal(out, [5, 5, 5])


def test_warning_is_issued_at_wait_on_the_host_thread():
    """The warning points at the user's wait() call and is issued once, however often
    the handle is waited for."""
    out = np.zeros(3, np.int64)
    hpvm.track_memory(out)
    handle = hpvm.launch(a2a_disagree_root, (4, out), target="interp")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hpvm.wait(handle)
        hpvm.wait(handle)
    assert len(caught) == 1
    assert caught[0].category is hpvm.HPVMWarning
    assert caught[0].filename == __file__


# ---------------------------------------------------------------------------------------
# Barriers, malloc, edges carrying arrays


@hpvm.leaf(ins=("buf",), outs=("buf", "seen"))
def lockstep(buf: hpvm.i64[:], seen: hpvm.i64[:]):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    n = hpvm.get_num_node_instances_x(hpvm.get_node())
    buf[lid] = lid + 1
    hpvm.barrier()
    s = 0
    for k in range(n):
        s += buf[k]
    seen[lid] = s  # every instance wrote before any reads


@hpvm.internal
def lockstep_root(buf: hpvm.i64[:], seen: hpvm.i64[:]):
    k = hpvm.create_node_1d(lockstep, buf.shape[0])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


def test_barrier_makes_every_write_visible_before_any_read(interp_path):
    assert runs_from_its_ir(lockstep)
    buf, seen = np.zeros(6, np.int64), np.zeros(6, np.int64)
    run(lockstep_root, buf, seen)
    np.testing.assert_array_equal(seen, [21] * 6)


@hpvm.leaf
def alloc_two() -> tuple[hpvm.u8[:], hpvm.u8[:]]:
    a = hpvm.malloc(8)
    b = hpvm.malloc(8)
    return a, b


@hpvm.leaf(ins=("a", "b"), outs=("a", "res"))
def alias_check(a: hpvm.u8[:], b: hpvm.u8[:], res: hpvm.i64[:]):
    a[0] = 1
    res[0] = b[0] + 10 * a.shape[0]


@hpvm.internal
def malloc_root(res: hpvm.i64[:]):
    al = hpvm.create_node(alloc_two)
    use = hpvm.create_node(alias_check)
    hpvm.edge(al, use, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.edge(al, use, hpvm.ALL_TO_ALL, 1, 1)
    hpvm.bind_in(use, 0, 2)


def test_malloc_returns_distinct_zeroed_uint8_buffers():
    res = np.zeros(1, np.int64)
    run(malloc_root, res)
    assert res[0] == 80


@hpvm.leaf(ins=("arr",), outs=("arr",))
def passthrough(arr: hpvm.f32[:]) -> hpvm.f32[:]:
    arr[0] = 42.0
    return arr


@hpvm.internal
def return_array_root(arr: hpvm.f32[:]):
    k = hpvm.create_node(passthrough)
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_out(k, 0, 0)


def test_root_output_array_is_the_callers_memory():
    arr = np.zeros(4, np.float32)
    (out,) = run(return_array_root, arr)
    assert type(out) is np.ndarray  # no checked view leaks out of the interpreter
    out[1] = 5.0
    np.testing.assert_array_equal(arr, [42.0, 5.0, 0.0, 0.0])


def test_sizes_are_evaluated_for_every_launch():
    program = next(p for p in PROGRAMS if p.name == "zero_instances")
    for n in (1, 4, 6):
        a = np.arange(6, dtype=np.int64)
        out = np.full(6, -1, np.int64)
        assert run(program.root, a, out, n) == (n,)
        np.testing.assert_array_equal(out[:n], a[:n] + 1)
        assert (out[n:] == -1).all()


OFFSET = 10


def _barrier_leaf_with_closure():
    k = 1

    @hpvm.leaf(outs=("out",))
    def live(out: hpvm.i64[:]):
        i = hpvm.get_node_instance_id_x(hpvm.get_node())
        hpvm.barrier()
        out[i] = OFFSET + k * i

    def set_k(value):
        nonlocal k
        k = value

    @hpvm.internal
    def root(out: hpvm.i64[:]):
        n = hpvm.create_node_1d(live, out.shape[0])
        hpvm.bind_in(n, 0, 0)

    return root, set_k


def test_barrier_leaves_see_live_globals_and_closures(monkeypatch, interp_path):
    """A barrier leaf is made into a generator once. From its syntax tree it still reads the
    module's current globals and its closure's current cells, like any other leaf run that
    way; from its leaf IR it reads the values they had when the IR was built, as Numba
    freezes globals when it compiles, like any other leaf run that way (docs/backends/interp.md)."""
    root, set_k = _barrier_leaf_with_closure()
    out = np.zeros(3, np.int64)
    run(root, out)
    np.testing.assert_array_equal(out, [10, 11, 12])
    monkeypatch.setattr(sys.modules[__name__], "OFFSET", 20)
    set_k(5)
    run(root, out)
    np.testing.assert_array_equal(out, [10, 11, 12] if interp_path else [20, 25, 30])
    assert "__hpvm_factory__" not in globals() and "live" not in globals()
