"""Replication sizes that would index past an array are an ``OutOfBoundsError`` before the
node runs (compiled code checks no bounds: without this, the process crashed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hpvm
from markers import SourceMarkers, fails
from running import run_tracked

MARKS = SourceMarkers(__file__)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


pytestmark = pytest.mark.usefixtures("hpvm_runtime")


def run(root, *args):
    return run_tracked(root, args, "cpu")


def test_the_cli_names_the_argument_and_the_size_instead_of_crashing(tmp_path: Path):
    for name in "abc":
        np.save(tmp_path / f"{name}.npy", np.ones(4, np.float32))
    args = [f"--arg={name}={tmp_path / name}.npy" for name in "abc"]
    done = subprocess.run(
        [sys.executable, "-m", "hpvm.cli", "run", str(EXAMPLES / "vector_add.py"), *args, "--arg=n=100"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 1, (done.returncode, done.stderr)  # was 139: a segmentation fault
    assert "replication size n is 100" in done.stderr
    assert "indexes 'c' (input of 'root', 4 long on axis 0)" in done.stderr


@hpvm.leaf(ins=("a",), outs=("b",))
def shift(a: hpvm.f64[:], b: hpvm.f64[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i + 1] - a[i]  # @shift


@hpvm.leaf(outs=("b",))
def mark(b: hpvm.f64[:]) -> None:
    b[hpvm.get_node_instance_id_x(hpvm.get_node())] = 7.0


@hpvm.internal()
def differences(a: hpvm.f64[:], b: hpvm.f64[:], n: hpvm.i64):
    first = hpvm.create_node_1d(mark, b.shape[0])  # runs first, in bounds
    hpvm.bind_in(first, 1, 0)
    step = hpvm.create_node_1d(shift, n)
    hpvm.bind_in(step, 0, 0)
    hpvm.bind_in(step, 1, 1)


def test_an_offset_past_the_end_is_caught_before_any_node_runs():
    a, b = np.arange(5.0), np.zeros(5)
    run(differences, a, b, 4)  # a[i + 1] for i < 4: in bounds
    assert (b[:4] == 1.0).all()
    b[:] = 0
    with fails(hpvm.OutOfBoundsError, "node 'shift'") as info:
        run(differences, a, b, 5)
    message = str(info.value)
    assert "node 'shift'" in message and "replication size n is 5" in message
    assert "indexes 'a' (input of 'differences', 5 long on axis 0) with its instance id x + 1" in message
    assert MARKS.at("shift") in message
    assert (b == 0).all()  # not even the node before it ran


@hpvm.leaf(ins=("src",), outs=("dst",))
def interior(src: hpvm.f64[:], dst: hpvm.f64[:]) -> None:
    k = hpvm.get_node_instance_id_x(hpvm.get_node()) + 1  # the grid covers the interior
    dst[k] = src[k - 1] + src[k + 1]  # @interior


@hpvm.internal()
def smooth(src: hpvm.f64[:], dst: hpvm.f64[:], n: hpvm.i64):
    node = hpvm.create_node_1d(interior, n)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


def test_ids_kept_in_variables_with_offsets_are_followed():
    src, dst = np.arange(6.0), np.zeros(6)
    run(smooth, src, dst, 4)  # the interior: k = 1 .. 4, src[k + 1] up to src[5]
    np.testing.assert_array_equal(dst[1:5], src[:4] + src[2:])
    with fails(
        hpvm.OutOfBoundsError, "replication size n is 5", "with its instance id x + 2", MARKS.at("interior")
    ):
        run(smooth, src, dst, 5)


@hpvm.leaf(ins=("a",), outs=("a",))
def guarded(a: hpvm.f64[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if i < a.shape[0]:
        a[i] = 1.0


@hpvm.leaf(ins=("a",), outs=("a",))
def returns_early(a: hpvm.f64[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if i >= a.shape[0]:
        return
    a[i] = 2.0


@hpvm.internal()
def rounded_up(a: hpvm.f64[:], n: hpvm.i64):
    """Grids rounded up past the array, with leaves that test their id: legal."""
    one = hpvm.create_node_1d(guarded, n)
    hpvm.bind_in(one, 0, 0)
    two = hpvm.create_node_1d(returns_early, n)
    hpvm.bind_in(two, 0, 0)


def test_leaves_that_test_their_id_may_have_more_instances_than_elements():
    a = np.zeros(5)
    run(rounded_up, a, 64)
    assert (a == 2.0).all()


@hpvm.leaf(ins=("a",), outs=("a",))
def cell(a: hpvm.f64[:, :]) -> None:
    node = hpvm.get_node()
    row = hpvm.get_node_instance_id_x(node)
    col = hpvm.get_node_instance_id_y(node)
    a[row, col] += 1.0


@hpvm.internal()
def grid(a: hpvm.f64[:, :], rows: hpvm.i64, cols: hpvm.i64):
    node = hpvm.create_node_2d(cell, rows, cols)
    hpvm.bind_in(node, 0, 0)


@hpvm.internal()
def wrapped_grid(a: hpvm.f64[:, :], rows: hpvm.i64, cols: hpvm.i64):
    """The HPVM-C shape: a one-instance internal node around the replicated leaf."""
    node = hpvm.create_node(grid)
    for port in range(3):
        hpvm.bind_in(node, port, port)


def test_each_axis_is_checked_against_its_dimension():
    a = np.zeros((3, 4))
    run(grid, a, 3, 4)
    assert (a == 1).all()
    with pytest.raises(hpvm.OutOfBoundsError, match=r"replication size cols is 5.*4 long on axis 1.*id y"):
        run(grid, a, 3, 5)
    run(grid, a, 9, 0)  # no instances at all: nothing indexes anything
    with pytest.raises(hpvm.OutOfBoundsError, match=r"replication size rows is 4.*input of 'grid', 3 long"):
        run(wrapped_grid, a, 4, 4)  # one level down


@hpvm.internal()
def grid_per_tile(a: hpvm.f64[:, :], rows: hpvm.i64, cols: hpvm.i64):
    tiles = hpvm.create_node_1d(grid, 2)
    for port in range(3):
        hpvm.bind_in(tiles, port, port)


def test_inside_a_replicated_internal_node():
    a = np.zeros((3, 4))
    run(grid_per_tile, a, 3, 4)
    assert (a == 2).all()
    with pytest.raises(hpvm.OutOfBoundsError, match=r"replication size rows is 7"):
        run(grid_per_tile, a, 7, 4)


@hpvm.leaf(ins=("a",), outs=("b",))
def helper_caller(a: hpvm.f64[:], b: hpvm.f64[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    (n,) = a.shape  # unpacking a shape: outside the leaf IR's dialect, fine for Numba
    b[i] = a[i] * 2.0 + (n - n)  # @helper_caller


@hpvm.internal()
def with_helper(a: hpvm.f64[:], b: hpvm.f64[:], n: hpvm.i64):
    node = hpvm.create_node_1d(helper_caller, n)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


def test_a_leaf_outside_the_leaf_ir_dialect_is_still_checked_before_it_runs():
    """A leaf the leaf IR cannot hold yet (it unpacks a shape) gets its facts
    from its clone's syntax tree (``passes/clone_bounds.py``): one instance too many is an
    ``OutOfBoundsError`` naming the line, not a write past the array's end."""
    from hpvm.ir.leafir import LeafIRUnsupported, leaf_ir

    with pytest.raises(LeafIRUnsupported):
        leaf_ir(helper_caller)
    a, b = np.arange(4.0), np.zeros(4)
    run(with_helper, a, b, 4)
    np.testing.assert_array_equal(b, 2 * a)
    with fails(hpvm.OutOfBoundsError, "node 'helper_caller'") as info:
        run(with_helper, a, b, 5)
    assert MARKS.at("helper_caller") in str(info.value)


# --- guarded accesses: ``if i < n:`` with n past the array ------------------------------


@hpvm.leaf(ins=("a", "b"), outs=("c",))
def guarded_add(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:], n: hpvm.i64) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if i < n:  # the CUDA programmer's guard, against a count passed in
        c[i] = a[i] + b[i]  # @guarded_add


@hpvm.leaf(ins=("a",), outs=("b",))
def guarded_back(a: hpvm.f32[:], b: hpvm.f32[:], n: hpvm.i64) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if i < n:  # (i = 0 reads a[-1]: out of bounds, semantics.md)
        b[i] = a[i - 1]  # @guarded_back


@hpvm.internal()
def rounded_add(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:], n: hpvm.i64, blocks: hpvm.i64):
    """A grid rounded up to whole blocks of 8, as a GPU launch is: ``n`` bounds the work."""
    node = hpvm.create_node_1d(guarded_add, blocks * 8)
    for port in range(4):
        hpvm.bind_in(node, port, port)


@hpvm.internal()
def back_root(a: hpvm.f32[:], b: hpvm.f32[:], n: hpvm.i64):
    node = hpvm.create_node_1d(guarded_back, a.shape[0])
    for port in range(3):
        hpvm.bind_in(node, port, port)


def _vectors(count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.arange(count, dtype=np.float32), np.full(count, 2.0, np.float32), np.zeros(count, np.float32)


def test_a_guard_against_a_count_past_the_array_is_refused_before_the_node_runs():
    a, b, c = _vectors(10)
    with fails(
        hpvm.OutOfBoundsError,
        "node 'guarded_add'",
        "every instance of leaf 'guarded_add' that passes the test below indexes 'c'",
        "(input of 'rounded_add') along axis 0, 10 long, at x",
        MARKS.at("guarded_add"),
        "x < 16, n = 12; the test: x - n + 1 <= 0",
        "that is index 0 to 11",
        "past its end",
        "or correct the test that lets them through",
    ):
        run(rounded_add, a, b, c, 12, 2)
    assert not c.any()  # refused before anything ran


def test_a_guard_that_keeps_every_instance_in_bounds_runs():
    a, b, c = _vectors(10)
    for n, blocks in ((10, 2), (7, 2), (0, 2), (10, 1)):  # (10, 1): 8 instances, fewer than n
        c[:] = 0
        run(rounded_add, a, b, c, n, blocks)
        upto = min(n, blocks * 8)
        np.testing.assert_array_equal(c, np.where(np.arange(10) < upto, a + b, 0))


def test_a_replayed_launch_checks_the_new_count():
    """``n`` is no work (a leaf without loops): a new value replays the last launch, whose
    compiled graph function runs the check with the value given now."""
    a, b, c = _vectors(10)
    for _ in range(3):
        run(rounded_add, a, b, c, 10, 2)
    with fails(hpvm.OutOfBoundsError, "x < 16, n = 11"):
        run(rounded_add, a, b, c, 11, 2)


def test_a_guarded_index_before_the_start_is_refused_and_interp_agrees():
    a, b = np.ones(6, np.float32), np.zeros(6, np.float32)
    with fails(
        hpvm.OutOfBoundsError, "indexes 'a'", "at x - 1", MARKS.at("guarded_back"), "before its start"
    ):
        run(back_root, a, b, 6)
    with fails(hpvm.OutOfBoundsError, "index -1 is out of bounds"):  # the interpreter's own check
        run_tracked(back_root, (a, b, 6), "interp")
    run(back_root, a, b, 0)  # no instance passes the test: nothing to refuse


# --- the GPU programmer's 2-D kernel: an early exit, then ``d[y, x]`` --------------------


@hpvm.leaf(ins=("src",), outs=("dst",))
def exit_blur(src: hpvm.f32[:, :], dst: hpvm.f32[:, :], w: hpvm.i64, h: hpvm.i64) -> None:
    x = hpvm.get_node_instance_id_x(hpvm.get_node())
    y = hpvm.get_node_instance_id_y(hpvm.get_node())
    if x >= w or y >= h:
        return
    dst[y, x] = src[y, x] * 2.0  # @exit_blur
    if x > 0:
        dst[y, x] += src[y, x - 1]  # @exit_blur_left


@hpvm.internal()
def exit_root(src: hpvm.f32[:, :], dst: hpvm.f32[:, :], w: hpvm.i64, h: hpvm.i64, bx: hpvm.i64, by: hpvm.i64):
    """A grid rounded up to whole 8x8 blocks, as a GPU launch is: ``w`` and ``h`` bound the work."""
    node = hpvm.create_node_2d(exit_blur, bx * 8, by * 8)
    for port in range(4):
        hpvm.bind_in(node, port, port)


def test_an_early_exit_guards_a_2d_kernel_and_each_axis_is_checked():
    src = np.arange(60, dtype=np.float32).reshape(6, 10)  # 6 rows (y) of 10 (x)
    dst = np.zeros_like(src)
    run(exit_root, src, dst, 10, 6, 2, 1)  # 16 x 8 instances, the test keeps 10 x 6
    want = src * 2
    want[:, 1:] += src[:, :-1]
    np.testing.assert_array_equal(dst, want)
    dst[:] = 0
    with fails(
        hpvm.OutOfBoundsError,
        "every instance of leaf 'exit_blur' that passes the test below indexes 'dst'",
        "along axis 1, 10 long, at x",
        MARKS.at("exit_blur"),
        "x < 16, w = 12, h = 6; the test: x - w + 1 <= 0 and y - h + 1 <= 0",
        "that is index 0 to 11",
        "past its end",
    ):
        run(exit_root, src, dst, 12, 6, 2, 1)  # w past the columns
    with fails(hpvm.OutOfBoundsError, "along axis 0, 6 long, at y", "that is index 0 to 6"):
        run(exit_root, src, dst, 10, 7, 2, 1)  # h past the rows
    assert not dst.any()  # refused before anything ran
    with fails(hpvm.OutOfBoundsError, "index 10 is out of bounds"):  # the interpreter's own check
        run_tracked(exit_root, (src, dst, 11, 6, 2, 1), "interp")


# --- a guard on an array's length: ``if x < dst.shape[1] and y < dst.shape[0]`` -----------


@hpvm.leaf(ins=("src",), outs=("dst",))
def shape_copy(src: hpvm.f32[:, :], dst: hpvm.f32[:, :]) -> None:
    x = hpvm.get_node_instance_id_x(hpvm.get_node())
    y = hpvm.get_node_instance_id_y(hpvm.get_node())
    if x < dst.shape[1] and y < len(dst):  # the destination's extent bounds the work
        dst[y, x] = src[y, x] + 1.0  # @shape_copy


@hpvm.internal()
def shape_root(src: hpvm.f32[:, :], dst: hpvm.f32[:, :], bx: hpvm.i64, by: hpvm.i64):
    node = hpvm.create_node_2d(shape_copy, bx * 8, by * 8)
    for port in range(2):
        hpvm.bind_in(node, port, port)


def test_a_guard_on_the_destination_s_shape_checks_a_smaller_source():
    src, dst = np.arange(40, dtype=np.float32).reshape(4, 10), np.zeros((4, 10), np.float32)
    run(shape_root, src, dst, 2, 1)  # 16 x 8 instances, the test keeps dst's 10 x 4
    np.testing.assert_array_equal(dst, src + 1)
    dst = np.zeros((4, 12), np.float32)  # two columns more than src has
    with fails(
        hpvm.OutOfBoundsError,
        "indexes 'src' (input of 'shape_root') along axis 1, 10 long, at x",
        MARKS.at("shape_copy"),
        "dst.shape[1] = 12, dst.shape[0] = 4; the test: x - dst.shape[1] + 1 <= 0",
        "that is index 0 to 11",
    ):
        run(shape_root, src, dst, 2, 1)
    assert not dst.any()
