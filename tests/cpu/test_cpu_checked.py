"""Checked mode of the cpu back end (``hpvm.backends.cpu.configure(checked=True)``): an index
out of bounds in a Python leaf is an ``OutOfBoundsError`` naming the node, leaf, line and
array — negative ones too — where unchecked code reads other memory; valid programs give
the unchecked results; the two modes are compiled and cached apart."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
import hpvm.backends.cpu as cpu
from hpvm.backends import get_backend
from hpvm.errors import OutOfBoundsError
from markers import SourceMarkers, fails
from programs import PROGRAMS, assert_matches, run_program
from running import run_tracked

MARKS = SourceMarkers(__file__)
pytestmark = pytest.mark.usefixtures("hpvm_runtime")


# The offsets are run-time values: a constant one (``a[i + 1]``) makes the replication size
# itself the mistake, which every mode reports before the node runs (``bounds.py``).
@hpvm.leaf(ins=("a",), outs=("b",))
def shift(a: hpvm.i64[:], b: hpvm.i64[:], k: hpvm.i64) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i + k]  # @shift


@hpvm.leaf(ins=("a",), outs=("b",))
def transpose_off(a: hpvm.i64[:, :], b: hpvm.i64[:, :], k: hpvm.i64) -> None:
    n = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(n)
    j = hpvm.get_node_instance_id_y(n)
    b[j][i + k] = a[i, j]  # @transpose


@hpvm.leaf(ins=("bins",), outs=("bins",))
def count(bins: hpvm.i64[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_add(bins, i % 5, 1)  # @atomic


@hpvm.internal()
def shift_root(a: hpvm.i64[:], b: hpvm.i64[:], k: hpvm.i64, n: hpvm.i64):
    node = hpvm.create_node_1d(shift, n)
    for port in range(3):
        hpvm.bind_in(node, port, port)


@hpvm.internal()
def transpose_root(a: hpvm.i64[:, :], b: hpvm.i64[:, :], k: hpvm.i64, n: hpvm.i64):
    node = hpvm.create_node_2d(transpose_off, n, n)
    for port in range(3):
        hpvm.bind_in(node, port, port)


@hpvm.internal()
def count_root(bins: hpvm.i64[:], n: hpvm.i64):
    node = hpvm.create_node_1d(count, n)
    hpvm.bind_in(node, 0, 0)


def test_an_index_past_the_end_names_the_node_leaf_line_and_array(checked: None) -> None:
    a, b = np.arange(64, dtype=np.int64), np.zeros(64, np.int64)
    with fails(
        OutOfBoundsError,
        "node shift_root/shift[63] (leaf 'shift'",
        MARKS.at("shift"),
        "index 64 is out of bounds for axis 0 of 'a' with size 64",
    ) as raised:
        run_tracked(shift_root, (a, b, 1, 64), "cpu")
    assert "which instance" not in str(raised.value)


def test_the_same_leaf_within_bounds_runs(checked: None) -> None:
    a, b = np.arange(64, dtype=np.int64), np.zeros(64, np.int64)
    run_tracked(shift_root, (a, b, 1, 63), "cpu")
    np.testing.assert_array_equal(b[:63], a[1:])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 300), k=st.integers(-300, 300))
def test_the_named_instance_is_one_that_indexes_out_of_bounds(checked: None, n: int, k: int) -> None:
    """``b[i] = a[i + k]`` over ``n`` instances: in bounds exactly when ``k`` is 0, else the
    error names an instance ``i`` whose ``i + k`` is out of range, and that index."""
    a, b = np.arange(n, dtype=np.int64), np.zeros(n, np.int64)
    if k == 0:
        run_tracked(shift_root, (a, b, k, n), "cpu")
        np.testing.assert_array_equal(b, a)
        return
    with pytest.raises(OutOfBoundsError) as raised:
        run_tracked(shift_root, (a, b, k, n), "cpu")
    found = re.search(
        r"^node shift_root/shift\[(\d+)\] \(.*index (-?\d+) is out of bounds for axis 0 of 'a' with size (\d+)",
        str(raised.value),
    )
    assert found, raised.value
    i, index, size = (int(g) for g in found.groups())
    assert (size, index) == (n, i + k) and 0 <= i < n and not 0 <= index < n


def test_a_negative_index_is_out_of_bounds_in_checked_mode(checked: None) -> None:
    a, b = np.arange(8, dtype=np.int64), np.zeros(8, np.int64)
    with fails(
        OutOfBoundsError,
        MARKS.at("shift"),
        "index -1 is out of bounds",
        "'a'",
        "shift_root/shift[0] (",
        "negative",
    ):
        run_tracked(shift_root, (a, b, -1, 8), "cpu")


def test_a_negative_index_wraps_in_unchecked_mode() -> None:
    """What checked mode turns into an error (docs/backends/cpu.md, "What it does not check")."""
    assert cpu.configure() == {"checked": False}
    a, b = np.arange(8, dtype=np.int64), np.zeros(8, np.int64)
    run_tracked(shift_root, (a, b, -1, 8), "cpu")
    np.testing.assert_array_equal(b, np.roll(a, 1))


def test_chained_subscripts_check_the_axis_they_index(checked: None) -> None:
    """``b[j][i + k]`` indexes ``b``'s axis 1 with ``i + k``: 8 of 8, in a parallel 2-D loop."""
    a, b = np.zeros((8, 8), np.int64), np.zeros((8, 8), np.int64)
    with fails(
        OutOfBoundsError, MARKS.at("transpose"), "index 8 is out of bounds for axis 1 of 'b' with size 8"
    ) as raised:
        run_tracked(transpose_root, (a, b, 1, 8), "cpu")
    # (x = 7 fails in every row; which row's instance a thread reports first is the schedule's)
    assert re.search(r"node transpose_root/transpose_off\[7, [0-7]\] \(", str(raised.value)), raised.value


def test_an_atomics_index_is_checked(checked: None) -> None:
    bins = np.zeros(4, np.int64)  # i % 5 reaches 4
    with fails(
        OutOfBoundsError,
        MARKS.at("atomic"),
        "index 4 is out of bounds for axis 0 of 'bins' with size 4",
    ) as raised:
        run_tracked(count_root, (bins, 20), "cpu")
    assert re.search(r"node count_root/count\[(4|9|14|19)\] \(", str(raised.value)), raised.value
    bins = np.zeros(5, np.int64)
    run_tracked(count_root, (bins, 20), "cpu")
    np.testing.assert_array_equal(bins, [4] * 5)


@hpvm.leaf(ins=("x", "buf"), outs=("buf", "y"))
def rotate(x: hpvm.f32[:], buf: hpvm.f32[:], y: hpvm.f32[:], k: hpvm.i64) -> None:
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    buf[lid] = x[lid]
    hpvm.barrier()
    y[lid] = buf[lid + k]  # @rotate


@hpvm.internal()
def rotate_root(x: hpvm.f32[:], buf: hpvm.f32[:], y: hpvm.f32[:], k: hpvm.i64, n: hpvm.i64):
    node = hpvm.create_node_1d(rotate, n)
    for port in range(4):
        hpvm.bind_in(node, port, port)


def _rotate(k: int) -> np.ndarray:
    x, buf, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32), np.zeros(16, np.float32)
    run_tracked(rotate_root, (x, buf, y, k, 16), "cpu")
    return y


@pytest.mark.parametrize(("k", "index"), [(1, 16), (-1, -1)])
def test_a_barrier_leafs_index_names_the_node_leaf_line_and_array(checked: None, k: int, index: int) -> None:
    """A leaf with barriers runs as one group function per parent instance (``barriers.py``):
    its indices get the same compare as other leaves' (before: Numba's boundscheck, whose
    error named only the graph, and a negative index wrapped)."""
    with fails(
        OutOfBoundsError,
        "leaf 'rotate'",
        MARKS.at("rotate"),
        f"index {index} is out of bounds for axis 0 of 'buf' with size 16",
        f"node rotate_root/rotate[{15 if k > 0 else 0}] (",
    ):
        _rotate(k)


@hpvm.leaf(ins=("x", "buf"), outs=("buf", "y"))
def rotate_first(x: hpvm.f32[:], buf: hpvm.f32[:], y: hpvm.f32[:], k: hpvm.i64) -> None:
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    buf[lid] = x[lid]
    hpvm.barrier()
    first = buf[k]  # @hoisted
    hpvm.barrier()
    y[lid] = buf[lid] + first


@hpvm.internal()
def rotate_first_root(x: hpvm.f32[:], buf: hpvm.f32[:], y: hpvm.f32[:], k: hpvm.i64, n: hpvm.i64):
    node = hpvm.create_node_1d(rotate_first, n)
    for port in range(4):
        hpvm.bind_in(node, port, port)


def test_a_barrier_leafs_read_every_instance_makes_alike_names_no_instance(checked: None) -> None:
    """The phase between the barriers only reads ``buf[k]``, the same for every instance, so
    the group function runs it once, outside its work-item loops (``barrier_emit.py``): no
    instance is at fault more than another, and the message says the back end names none."""
    x, buf, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32), np.zeros(16, np.float32)
    with fails(
        OutOfBoundsError,
        "node rotate_first_root/rotate_first ",
        MARKS.at("hoisted"),
        "index 16 is out of bounds for axis 0 of 'buf' with size 16 (the cpu back end does not say which instance",
    ):
        run_tracked(rotate_first_root, (x, buf, y, 16, 16), "cpu")
    run_tracked(rotate_first_root, (x, buf, y, 2, 16), "cpu")
    np.testing.assert_array_equal(y, x + 2)


@hpvm.leaf(ins=("a",), outs=("b",))
def pick(a: hpvm.i64[:], b: hpvm.i64[:], k: hpvm.i64) -> None:
    b[0] = a[k]  # @pick


@hpvm.internal()
def pick_root(a: hpvm.i64[:], b: hpvm.i64[:], k: hpvm.i64):
    node = hpvm.create_node(pick)
    for port in range(3):
        hpvm.bind_in(node, port, port)


def test_a_node_of_one_instance_needs_no_instance_named(checked: None) -> None:
    a, b = np.arange(4, dtype=np.int64), np.zeros(1, np.int64)
    with fails(
        OutOfBoundsError, "node pick_root/pick ", MARKS.at("pick"), "index 9 is out of bounds"
    ) as raised:
        run_tracked(pick_root, (a, b, 9), "cpu")
    assert "instance" not in str(raised.value), raised.value


def test_a_barrier_leaf_within_bounds_gives_the_unchecked_result() -> None:
    unchecked = _rotate(0)
    previous = cpu.configure(checked=True)
    try:
        checked = _rotate(0)
    finally:
        cpu.configure(**previous)
    np.testing.assert_array_equal(checked, unchecked)
    np.testing.assert_array_equal(checked, np.arange(16, dtype=np.float32))


@pytest.mark.parametrize(
    "program",
    [
        p
        for p in PROGRAMS
        if p.name
        in {
            "saxpy_1d",
            "grid_3d",
            "atomics_int64",
            "malloc_per_parent_instance",
            "barrier_rotate_malloc",
            "fan_out",
        }
    ],
    ids=lambda p: p.name,
)
def test_checked_results_equal_unchecked_results(program) -> None:  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unchecked = run_program(program, "cpu")
        previous = cpu.configure(checked=True)
        try:
            got = run_program(program, "cpu")
        finally:
            cpu.configure(**previous)
    assert_matches(program, got, unchecked)


def test_configure_returns_the_previous_setting_and_checks_its_type() -> None:
    assert cpu.configure() == {"checked": False}
    assert cpu.configure(checked=True) == {"checked": False}
    try:
        assert cpu.configure() == {"checked": True}
        with pytest.raises(hpvm.OptionError, match="checked must be a bool"):
            cpu.configure(checked=1)  # type: ignore[arg-type]
    finally:
        assert cpu.configure(checked=False) == {"checked": True}
    assert get_backend("cpu").checked is False


def test_checked_and_unchecked_code_are_compiled_and_cached_apart() -> None:
    backend = get_backend("cpu")
    unchecked = backend.prepare(shift_root)
    previous = cpu.configure(checked=True)
    try:
        checked_program = backend.prepare(shift_root)
    finally:
        cpu.configure(**previous)
    assert backend.prepare(shift_root) is unchecked  # (each mode keeps its own)
    assert checked_program is not unchecked
    files = [Path(p.module.__file__) for p in (unchecked, checked_program)]  # type: ignore[union-attr]
    assert files[0] != files[1]
    assert "checked" in files[1].read_text().splitlines()[0]
    assert "checked" not in files[0].read_text().splitlines()[0]
    assert checked_program.module.__name__.startswith("hpvm_checked.")  # type: ignore[union-attr]
    # the unchecked program, run after the checked one was compiled, is still unchecked
    a, b = np.arange(8, dtype=np.int64), np.zeros(8, np.int64)
    run_tracked(shift_root, (a, b, -1, 8), "cpu")
    np.testing.assert_array_equal(b, np.roll(a, 1))


@hpvm.leaf(ins=("a", "idx"), outs=("b",))
def gather(a: hpvm.i64[:], idx: hpvm.i64[:], b: hpvm.i64[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[idx[i]]  # @gather


@hpvm.internal()
def gather_root(a: hpvm.i64[:], idx: hpvm.i64[:], b: hpvm.i64[:], n: hpvm.i64):
    node = hpvm.create_node_1d(gather, n)
    for port in range(3):
        hpvm.bind_in(node, port, port)


def test_a_launch_recorded_unchecked_is_checked_once_the_mode_is_on() -> None:
    """A replayed launch (runtime/plan.py, ``Replay``) calls the runner it recorded: one
    recorded before ``configure(checked=True)`` must not run the unchecked code again (it
    did: the out-of-bounds index below passed silently)."""
    a, idx, b = np.arange(64, dtype=np.int64), np.zeros(64, np.int64), np.zeros(64, np.int64)
    for x in (a, idx, b):
        hpvm.track_memory(x)
    args = (a, idx, b, 64)
    for _ in range(3):  # the same arguments: recorded, then replayed
        hpvm.wait(hpvm.launch(gather_root, args))
    idx[5] = 64  # (a read one past the end: what the check must now catch)
    previous = cpu.configure(checked=True)
    try:
        with fails(OutOfBoundsError, "node gather_root/gather[5] (", MARKS.at("gather"), "'a' with size 64"):
            hpvm.wait(hpvm.launch(gather_root, args))
    finally:
        cpu.configure(**previous)
    idx[5] = 0
    hpvm.wait(hpvm.launch(gather_root, args))  # unchecked again, and replayed again
    np.testing.assert_array_equal(b, np.zeros(64, np.int64))


def test_the_environment_variable_turns_checked_mode_on() -> None:
    """In a process of its own, checked from the start: it compiles a program with barriers
    and ``malloc`` that this process may have cached unchecked (Numba's disk cache must not
    hand it the unchecked leaves, nor code naming their modules, which that process lacks)."""
    code = (
        "import hpvm.backends.cpu as cpu\n"
        "from programs import PROGRAMS, assert_matches, expected, run_program\n"
        "print(cpu.configure())\n"
        "program = next(p for p in PROGRAMS if p.name == 'barrier_rotate_malloc')\n"
        "assert_matches(program, run_program(program, 'cpu'), expected(program))\n"
        "print('same')\n"
    )
    tests = str(Path(__file__).parents[1])
    env = {**os.environ, "HPVM_CPU_CHECKED": "1", "PYTHONPATH": os.pathsep.join([tests, *sys.path])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_program(
            next(p for p in PROGRAMS if p.name == "barrier_rotate_malloc"), "cpu"
        )  # (cached unchecked)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split("\n")[:2] == ["{'checked': True}", "same"]
