"""What the reference interpreter checks while a graph runs, and how it reports it.

Every error is an ``hpvm.HPVMError`` of the precise kind, raised at ``wait`` (errors inside
nodes) or by ``launch`` itself (what is known before anything runs), and its message names
the culprit: the node path and instance, the array, the edge, the file and line.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import hpvm
import hpvm.backends.interp as interp
from running import line_of, replicated_root, run_tracked, runs_from_its_ir

HERE = os.path.basename(__file__)


pytestmark = pytest.mark.usefixtures("hpvm_runtime")


@pytest.fixture
def strict():
    previous = interp.configure(strict=True)
    yield
    interp.configure(**previous)


def run(root, *args):
    return run_tracked(root, args, "interp")


def where(fn, text):
    return f"{HERE}:{line_of(fn, text)}"


def single(leaf, *sizes):
    """Run ``leaf`` replicated over ``sizes`` (``replicated_root``) with the given arrays."""
    root = replicated_root(leaf, len(sizes))
    return lambda *args: run(root, *args, *sizes)


# ---------------------------------------------------------------------------------------
# Out-of-bounds accesses


@hpvm.leaf(ins=("a",), outs=("b",))
def read_past_end(a: hpvm.i64[:], b: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i + 1]


def test_read_past_the_end():
    with pytest.raises(hpvm.OutOfBoundsError) as info:
        single(read_past_end, 4)(np.arange(4), np.zeros(4, np.int64))
    msg = str(info.value)
    assert "root_of_read_past_end/read_past_end[3]" in msg  # node path and instance ids
    assert "array 'a'" in msg and "index 4" in msg and "size 4" in msg
    assert where(read_past_end, "a[i + 1]") in msg


@hpvm.leaf(ins=("a",), outs=("b",))
def read_negative(a: hpvm.i64[:], b: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i - 1]


def test_negative_index_is_out_of_bounds():
    with pytest.raises(hpvm.OutOfBoundsError) as info:
        single(read_negative, 3)(np.arange(3), np.zeros(3, np.int64))
    msg = str(info.value)
    assert "read_negative[0]" in msg and "index -1" in msg and "array 'a'" in msg
    assert "negative" in msg and where(read_negative, "a[i - 1]") in msg


@hpvm.leaf(outs=("b",))
def write_past_end(b: hpvm.f32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[2 * i] = 1.0


def test_write_past_the_end():
    b = np.zeros(5, np.float32)
    with pytest.raises(hpvm.OutOfBoundsError) as info:
        single(write_past_end, 4)(b)
    msg = str(info.value)
    assert "write_past_end[3]" in msg and "array 'b'" in msg and "index 6" in msg
    assert where(write_past_end, "b[2 * i]") in msg
    np.testing.assert_array_equal(b, [1, 0, 1, 0, 1])  # the instances before it ran


@hpvm.leaf(outs=("b",))
def write_negative(b: hpvm.f32[:]):
    b[-1] = 1.0


def test_negative_write():
    b = np.zeros(5, np.float32)
    with pytest.raises(hpvm.OutOfBoundsError, match=r"index -1 .*array 'b'"):
        single(write_negative)(b)
    assert not b.any()


@hpvm.leaf(ins=("m",), outs=("out",))
def read_2d(m: hpvm.f64[:, :], out: hpvm.f64[:, :]):
    n = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(n)
    j = hpvm.get_node_instance_id_y(n)
    out[i, j] = m[i, j + 1]


def test_2d_index_names_the_axis():
    with pytest.raises(hpvm.OutOfBoundsError) as info:
        single(read_2d, 2, 3)(np.ones((2, 3)), np.zeros((2, 3)))
    msg = str(info.value)
    assert "read_2d[0, 2]" in msg and "axis 1" in msg and "array 'm'" in msg and "size 3" in msg
    assert where(read_2d, "m[i, j + 1]") in msg


@hpvm.leaf(ins=("m",), outs=("m",))
def write_2d_before_start(m: hpvm.f64[:, :]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    j = np.uint64(hpvm.get_node_instance_id_y(node))  # an unsigned index is checked the same
    m[i - 1, j] = 1.0


def test_2d_negative_write_names_axis_0_and_the_hint():
    """A tuple of integer indices (the interpreter's fast path) is checked axis by axis,
    negative indices included, whatever the integer type."""
    m = np.zeros((2, 3))
    with pytest.raises(hpvm.OutOfBoundsError) as info:
        single(write_2d_before_start, 2, 3)(m)
    msg = str(info.value)
    assert "index -1 is out of bounds for axis 0" in msg and "array 'm'" in msg and "size 2" in msg
    assert "negative indices are out of bounds" in msg
    assert where(write_2d_before_start, "m[i - 1, j] = 1.0") in msg
    assert not m.any()  # nothing was written


@hpvm.leaf(ins=("m",), outs=("out",))
def read_2d_chained(m: hpvm.f64[:, :], out: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = m[i][m.shape[1]]


def test_chained_index_still_names_the_array():
    with pytest.raises(hpvm.OutOfBoundsError, match=r"index 3 .*array 'm' with size 3"):
        single(read_2d_chained, 2)(np.ones((2, 3)), np.zeros(2))


@hpvm.leaf(ins=("a", "idx"), outs=("out",))
def gather(a: hpvm.f32[:], idx: hpvm.i64[:], out: hpvm.f32[:]):
    out[:] = a[idx]


@pytest.mark.parametrize("bad", [7, -2])
def test_fancy_index_array(bad):
    idx = np.array([0, 1, bad, 2], np.int64)
    with pytest.raises(hpvm.OutOfBoundsError) as info:
        single(gather)(np.ones(4, np.float32), idx, np.zeros(4, np.float32))
    msg = str(info.value)
    assert f"index {bad}" in msg and "array 'a'" in msg and where(gather, "a[idx]") in msg


@hpvm.leaf(ins=("a",), outs=("out",))
def gather_list(a: hpvm.f32[:], out: hpvm.f32[:]):
    out[0] = a[[0, -1]].sum()


def test_fancy_index_list_with_negative_entry():
    """An index list is checked like an index array (a negative entry would wrap silently)."""
    out = np.zeros(1, np.float32)
    with pytest.raises(hpvm.OutOfBoundsError, match=r"index -1 .*array 'a'"):
        single(gather_list)(np.ones(4, np.float32), out)
    assert out[0] == 0


@hpvm.leaf(ins=("idx",), outs=("out",))
def scatter(idx: hpvm.i64[:], out: hpvm.f32[:]):
    out[idx] = 1.0


def test_fancy_index_write():
    with pytest.raises(hpvm.OutOfBoundsError, match=r"index 9 .*array 'out'"):
        single(scatter)(np.array([1, 9]), np.zeros(4, np.float32))


@hpvm.leaf(outs=("acc",))
def atomic_oob(acc: hpvm.i32[:]):
    hpvm.atomic_add(acc, acc.shape[0], 1)


def test_atomic_out_of_bounds():
    with pytest.raises(hpvm.OutOfBoundsError) as info:
        single(atomic_oob, 2)(np.zeros(3, np.int32))
    msg = str(info.value)
    assert "atomic_oob[0]" in msg and "atomic_add" in msg and "'acc'" in msg
    assert where(atomic_oob, "hpvm.atomic_add") in msg


@hpvm.leaf
def malloc_oob() -> hpvm.i64:
    buf = hpvm.malloc(16).view(np.int64)
    buf[2] = 1
    return buf[0]


def test_malloc_buffer_is_bounds_checked():
    with pytest.raises(hpvm.OutOfBoundsError) as info:
        single(malloc_oob)()
    msg = str(info.value)
    assert "malloc(16)" in msg and "index 2" in msg and where(malloc_oob, "buf[2] = 1") in msg


@hpvm.leaf(ins=("a",), outs=("out",))
def oob_after_barrier(a: hpvm.i64[:], out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.barrier()
    out[i] = a[i + 2]


def test_out_of_bounds_in_a_barrier_leaf_names_the_real_line(interp_path):
    assert runs_from_its_ir(oob_after_barrier)
    with pytest.raises(hpvm.OutOfBoundsError) as info:
        single(oob_after_barrier, 3)(np.arange(3), np.zeros(3, np.int64))
    msg = str(info.value)
    assert "oob_after_barrier[1]" in msg and where(oob_after_barrier, "a[i + 2]") in msg


# ---------------------------------------------------------------------------------------
# Writes to arrays not declared in outs


@hpvm.leaf(ins=("a",), outs=("out",))
def write_through_alias(a: hpvm.i64[:], out: hpvm.i64[:]):
    b = a
    b[0] = 1
    out[0] = 2


def test_write_through_an_alias():
    a = np.zeros(2, np.int64)
    with pytest.raises(hpvm.IllegalWriteError) as info:
        single(write_through_alias)(a, np.zeros(1, np.int64))
    msg = str(info.value)
    assert "array 'a'" in msg and "outs" in msg and where(write_through_alias, "b[0] = 1") in msg
    assert "write_through_alias" in msg
    assert not a.any()


@hpvm.leaf(ins=("a", "x"), outs=("out",))
def ufunc_out(a: hpvm.f64[:], x: hpvm.f64[:], out: hpvm.f64[:]):
    np.add(x, x, out=a)


def test_ufunc_out_argument():
    a = np.zeros(3)
    with pytest.raises(hpvm.IllegalWriteError) as info:
        single(ufunc_out)(a, np.ones(3), np.zeros(3))
    msg = str(info.value)
    assert "array 'a'" in msg and where(ufunc_out, "np.add") in msg
    assert not a.any()


@hpvm.leaf(ins=("a", "x"), outs=("x",))
def ufunc_out_allowed(a: hpvm.f64[:], x: hpvm.f64[:]):
    np.add(a, a, out=x)
    y = x * 2.0
    x[0] = y[1]


def test_ufunc_out_argument_in_outs_is_fine():
    x = np.zeros(3)
    single(ufunc_out_allowed)(np.array([1.0, 2.0, 3.0]), x)
    np.testing.assert_array_equal(x, [8.0, 4.0, 6.0])


@hpvm.leaf(ins=("a", "x"), outs=("out",))
def copyto_readonly(a: hpvm.f64[:], x: hpvm.f64[:], out: hpvm.f64[:]):
    np.copyto(a, x)


def test_copyto_names_the_read_only_array():
    with pytest.raises(hpvm.IllegalWriteError) as info:
        single(copyto_readonly)(np.zeros(3), np.ones(3), np.zeros(3))
    msg = str(info.value)
    assert "array 'a'" in msg and "'x'" not in msg and where(copyto_readonly, "np.copyto") in msg


@hpvm.leaf(ins=("a", "x"), outs=("out",))
def sum_into_readonly(a: hpvm.f64[:, :], x: hpvm.f64[:], out: hpvm.f64[:]):
    np.sum(a, axis=0, out=x)


def test_function_out_argument_names_the_array():
    with pytest.raises(hpvm.IllegalWriteError) as info:
        single(sum_into_readonly)(np.ones((2, 3)), np.zeros(3), np.zeros(3))
    msg = str(info.value)
    assert "array 'x'" in msg and where(sum_into_readonly, "np.sum") in msg


@hpvm.leaf(ins=("acc",), outs=("out",))
def atomic_through_alias(acc: hpvm.i64[:], out: hpvm.i64[:]):
    c = acc
    hpvm.atomic_add(c, 0, 1)


def test_atomic_on_an_array_not_in_outs():
    acc = np.zeros(2, np.int64)
    with pytest.raises(hpvm.IllegalWriteError) as info:
        single(atomic_through_alias)(acc, np.zeros(1, np.int64))
    msg = str(info.value)
    assert "atomic_add" in msg and "'acc'" in msg and where(atomic_through_alias, "hpvm.atomic_add") in msg
    assert not acc.any()


def test_direct_writes_are_caught_statically():
    """What the verifier sees it reports at decoration, naming the array and the line."""
    with pytest.raises(hpvm.VerificationError) as info:

        @hpvm.leaf(ins=("a",))
        def direct(a: hpvm.i64[:]):
            a[0] = 1

    assert "'a'" in str(info.value) and "outs" in str(info.value)
    with pytest.raises(hpvm.VerificationError, match="'a'"):

        @hpvm.leaf(ins=("a",))
        def direct_atomic(a: hpvm.i64[:]):
            hpvm.atomic_or(a, 0, 1)

    with pytest.raises(hpvm.VerificationError, match="'a'"):

        @hpvm.leaf(ins=("a",))
        def direct_fill(a: hpvm.i64[:]):
            a.fill(0)


# ---------------------------------------------------------------------------------------
# Barriers


@hpvm.leaf
def diverging_barrier():
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    if lid < 2:
        hpvm.barrier()


def test_barrier_inside_a_branch(interp_path):
    assert runs_from_its_ir(diverging_barrier)
    with pytest.raises(hpvm.BarrierError) as info:
        single(diverging_barrier, 4)()
    msg = str(info.value)
    assert "leaf 'diverging_barrier'" in msg
    assert f"line {line_of(diverging_barrier, 'hpvm.barrier()')}" in msg
    assert "2 instance(s)" in msg and "finished" in msg


@hpvm.leaf
def two_barriers():
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    if lid % 2 == 0:
        hpvm.barrier()  # even
    else:
        hpvm.barrier()  # odd


def test_instances_at_different_barriers(interp_path):
    assert runs_from_its_ir(two_barriers)
    with pytest.raises(hpvm.BarrierError) as info:
        single(two_barriers, 4)()
    msg = str(info.value)
    assert "two_barriers" in msg
    assert (
        f"line {line_of(two_barriers, '# even')}" in msg and f"line {line_of(two_barriers, '# odd')}" in msg
    )


# ---------------------------------------------------------------------------------------
# Disagreeing instances: a warning by default, an error in strict mode


@hpvm.leaf
def instance_value() -> hpvm.i64:
    return hpvm.get_node_instance_id_x(hpvm.get_node())


@hpvm.leaf(outs=("out",))
def store(v: hpvm.i64, out: hpvm.i64[:]):
    out[0] = v


@hpvm.internal
def disagree_root(n: hpvm.i64, out: hpvm.i64[:]):
    src = hpvm.create_node_1d(instance_value, n)
    dst = hpvm.create_node(store)
    hpvm.edge(src, dst, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_in(dst, 1, 1)


def test_all_to_all_disagreement_warns_by_default():
    out = np.zeros(1, np.int64)
    with pytest.warns(hpvm.HPVMWarning, match=r"edge instance_value.0 -> store.0 .*disagree"):
        run(disagree_root, 3, out)
    assert out[0] == 2


def test_all_to_all_disagreement_raises_in_strict_mode(strict):
    out = np.zeros(1, np.int64)
    with pytest.raises(hpvm.DisagreementError) as info:
        run(disagree_root, 3, out)
    msg = str(info.value)
    assert "instance_value.0 -> store.0" in msg and "instance [0]" in msg
    assert out[0] == 0  # the consumer never ran


def test_agreement_is_fine_in_strict_mode(strict):
    out = np.zeros(1, np.int64)
    run(disagree_root, 1, out)
    assert out[0] == 0


def test_output_bind_disagreement_raises_in_strict_mode(strict):
    with pytest.raises(hpvm.DisagreementError, match=r"output bind instance_value.0 -> 0"):
        single(instance_value, 2)()


def test_configure_returns_and_restores():
    previous = interp.configure(strict=True)
    try:
        assert interp.configure() == {"strict": True, "races": previous["races"]}
    finally:
        interp.configure(**previous)
    assert interp.configure() == previous
    with pytest.raises(TypeError, match="strict"):
        interp.configure(strict="yes")


# ---------------------------------------------------------------------------------------
# Exceptions inside leaves, dynamic structure errors, bad results


@hpvm.leaf
def divide(k: hpvm.i64) -> hpvm.i64:
    d = int(k) - 3
    if d == 0:
        raise ValueError("no divisor")
    return 10 // d


def test_exception_in_a_leaf_surfaces_at_wait():
    root = hpvm.internal(_wrap_divide)
    handle = hpvm.launch(root, (3,), target="interp")  # launch itself succeeds
    with pytest.raises(hpvm.NodeExecutionError) as info:
        hpvm.wait(handle)
    msg = str(info.value)
    assert "_wrap_divide/divide" in msg and where(divide, 'raise ValueError("no divisor")') in msg
    assert "ValueError" in msg
    assert isinstance(info.value.__cause__, ValueError)
    assert hpvm.wait(hpvm.launch(root, (5,), target="interp")) == (5,)


def _wrap_divide(k: hpvm.i64):
    n = hpvm.create_node(divide)
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_out(n, 0, 0)


def _same(x):
    return x


@hpvm.leaf
def hidden_query() -> hpvm.i64:
    n = _same(hpvm.get_node())
    return hpvm.get_node_instance_id_y(n)


def test_query_of_an_unreplicated_dimension_at_run_time():
    with pytest.raises(hpvm.NodeExecutionError) as info:
        single(hidden_query, 3)()
    msg = str(info.value)
    assert "get_node_instance_id_y" in msg and "hidden_query" in msg and "1 dimension" in msg
    assert where(hidden_query, "get_node_instance_id_y") in msg


@hpvm.leaf
def visible_query() -> hpvm.i64:
    return hpvm.get_num_node_instances_z(hpvm.get_node())


def test_query_the_verifier_can_see_fails_at_launch():
    with pytest.raises(hpvm.VerificationError, match=r"get_num_node_instances_z.*2 dimension"):
        single(visible_query, 2, 2)()


@hpvm.leaf
def above_root() -> hpvm.i64:
    p = _same(hpvm.get_parent_node(hpvm.get_node()))
    return hpvm.get_num_dims(hpvm.get_parent_node(p))


def test_parent_of_the_root():
    with pytest.raises(hpvm.NodeExecutionError, match=r"above_root.*get_parent_node\(\).*root"):
        single(above_root)()


@hpvm.leaf
def too_many() -> tuple[hpvm.i64, hpvm.i64]:
    r = (1, 2, 3)
    return r


def test_wrong_number_of_returned_values():
    with pytest.raises(hpvm.NodeExecutionError) as info:
        single(too_many)()
    msg = str(info.value)
    assert "leaf 'too_many'" in msg and "2 outputs" in msg


@hpvm.leaf(ins=("a",))
def wrong_dtype(a: hpvm.f32[:]) -> hpvm.f32[:]:
    return a.astype(np.float64)


def test_wrong_array_type_returned():
    with pytest.raises(hpvm.NodeExecutionError) as info:
        single(wrong_dtype)(np.ones(3, np.float32))
    msg = str(info.value)
    assert "leaf 'wrong_dtype'" in msg and "output 0" in msg and "float64" in msg and "f32[:]" in msg


def test_value_returned_by_a_leaf_without_outputs_is_caught_statically():
    with pytest.raises(hpvm.VerificationError, match=r"returns_unexpectedly.*returns 1 value.*0 output"):

        @hpvm.leaf
        def returns_unexpectedly():
            x = 1
            return x


@hpvm.leaf
def count_me() -> hpvm.i64:
    return hpvm.get_node_instance_id_x(hpvm.get_node())


@hpvm.leaf
def receive(v: hpvm.i64) -> hpvm.i64:
    return v


@hpvm.internal
def mismatch_root(n: hpvm.i64, m: hpvm.i64):
    a = hpvm.create_node_1d(count_me, n)
    b = hpvm.create_node_1d(receive, m)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0)


def test_one_to_one_grid_mismatch_from_inputs_fails_at_launch():
    with pytest.raises(hpvm.LaunchError) as info:
        hpvm.launch(mismatch_root, (4, 5), target="interp")
    msg = str(info.value)
    assert "edge count_me.0 -> receive.0" in msg and "[4]" in msg and "[5]" in msg
    assert f"{HERE}:" in msg  # the line of the hpvm.edge call
    hpvm.wait(hpvm.launch(mismatch_root, (4, 4), target="interp"))


@hpvm.internal
def nested_mismatch(n: hpvm.i64, m: hpvm.i64):
    inner = hpvm.create_node(mismatch_root)
    hpvm.bind_in(inner, 0, 0)
    hpvm.bind_in(inner, 1, 1)


def test_one_to_one_grid_mismatch_deeper_fails_at_wait():
    handle = hpvm.launch(nested_mismatch, (2, 3), target="interp")
    with pytest.raises(hpvm.LaunchError, match=r"edge count_me.0 -> receive.0 .*\[2\].*\[3\]"):
        hpvm.wait(handle)


@hpvm.internal
def negative_root(n: hpvm.i64):
    hpvm.create_node_2d(count_me, 2, n - 3)


def test_negative_replication_size():
    with pytest.raises(hpvm.LaunchError) as info:
        hpvm.launch(negative_root, (1,), target="interp")
    msg = str(info.value)
    assert "count_me" in msg and "n - 3" in msg and "-2" in msg and "dimension y" in msg


@hpvm.internal
def nested_negative(n: hpvm.i64):
    inner = hpvm.create_node(negative_root)
    hpvm.bind_in(inner, 0, 0)


def test_negative_replication_size_deeper_fails_at_wait():
    handle = hpvm.launch(nested_negative, (0,), target="interp")
    with pytest.raises(hpvm.LaunchError, match=r"count_me.*'n - 3'.*-3"):
        hpvm.wait(handle)


@hpvm.internal
def empty_source_root(n: hpvm.i64):
    a = hpvm.create_node_1d(count_me, n)
    b = hpvm.create_node(receive)
    hpvm.edge(a, b, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_out(b, 0, 0)


def test_all_to_all_from_a_node_with_no_instances():
    with pytest.raises(hpvm.LaunchError, match=r"edge count_me.0 -> receive.0.*no instances"):
        run(empty_source_root, 0)
    assert run(empty_source_root, 1) == (0,)


@hpvm.leaf(ins=("a", "idx"), outs=("out",))
def add_at_readonly(a: hpvm.i64[:], idx: hpvm.i64[:], out: hpvm.i64[:]):
    np.add.at(a, idx, 1)


@hpvm.leaf(ins=("a", "idx"), outs=("a",))
def add_at_oob(a: hpvm.i64[:], idx: hpvm.i64[:]):
    np.add.at(a, idx, 1)


def test_ufunc_at_is_checked():
    a, idx = np.zeros(3, np.int64), np.array([0, 0, 2])
    with pytest.raises(hpvm.IllegalWriteError, match=r"array 'a'"):
        single(add_at_readonly)(a, idx, np.zeros(1, np.int64))
    with pytest.raises(hpvm.OutOfBoundsError, match=r"index 3 .*array 'a'"):
        single(add_at_oob)(a, np.array([0, 3]))
    assert not a.any()
    single(add_at_oob)(a, idx)
    np.testing.assert_array_equal(a, [2, 0, 1])


@hpvm.leaf
def local_oob() -> hpvm.f64:
    tmp = np.zeros(3)
    return tmp[5]


@hpvm.leaf(ins=("a",))
def float_index(a: hpvm.f64[:]) -> hpvm.f64:
    return a[1.5]


def test_index_errors_on_local_arrays_and_bad_index_types():
    with pytest.raises(hpvm.OutOfBoundsError, match=r"local_oob.*index 5 is out of bounds"):
        single(local_oob)()
    with pytest.raises(hpvm.NodeExecutionError) as info:
        single(float_index)(np.ones(3))
    assert not isinstance(info.value, hpvm.OutOfBoundsError)
    assert "IndexError" in str(info.value) and where(float_index, "a[1.5]") in str(info.value)


_helpers: dict = {}
exec(compile("\n\ndef read_far(a):\n    return a[10]\n", "/elsewhere/helper_mod.py", "exec"), _helpers)
read_far = _helpers["read_far"]


@hpvm.leaf(ins=("a",))
def uses_helper(a: hpvm.f64[:]) -> hpvm.f64:
    return read_far(a)


def test_access_in_a_helper_from_another_file_names_that_file():
    with pytest.raises(hpvm.OutOfBoundsError) as info:
        single(uses_helper)(np.ones(3))
    msg = str(info.value)
    assert "/elsewhere/helper_mod.py:4" in msg and "array 'a'" in msg and "uses_helper" in msg
