"""How ``dask`` splits a launch: the ownership analysis, the chunks, what comes back.

Every result is compared with ``interp``'s on the same arguments.
"""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.backends.dask.ownership import slicing_problem
from markers import needs_backend

pytestmark = needs_backend("dask")


# -- leaves the analysis accepts -------------------------------------------------------


@hpvm.leaf(ins=("x", "y"), outs=("y",))
def axpy(x: hpvm.f64[:], y: hpvm.f64[:], a: hpvm.f64):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    y[i] = a * x[i] + y[i]


@hpvm.internal
def axpy_root(x: hpvm.f64[:], y: hpvm.f64[:], a: hpvm.f64, n: hpvm.i64):
    k = hpvm.create_node_1d(axpy, n)
    for port in range(3):
        hpvm.bind_in(k, port, port)


@hpvm.leaf(ins=("m",), outs=("out",))
def row_scale(m: hpvm.i64[:, :], out: hpvm.i64[:, :]) -> hpvm.i64:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    j = hpvm.get_node_instance_id_y(hpvm.get_node())
    out[i, j] = m[i, j] * (j + 1) + m.shape[1]
    return j


@hpvm.internal
def row_scale_root(m: hpvm.i64[:, :], out: hpvm.i64[:, :]):
    k = hpvm.create_node_2d(row_scale, m.shape[0], m.shape[1])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)
    hpvm.bind_out(k, 0, 0)


# -- leaves it refuses, one reason each --------------------------------------------------


@hpvm.leaf(outs=("out",))
def uses_id_as_value(out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = i


@hpvm.leaf(ins=("x",), outs=("out",))
def reads_neighbour(x: hpvm.i64[:], out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = x[i - 1]


@hpvm.leaf(outs=("out",))
def counts_instances(out: hpvm.i64[:]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    out[i] = hpvm.get_num_node_instances_x(node)


@hpvm.leaf(ins=("x",), outs=("out",))
def passes_array(x: hpvm.i64[:], out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = len(x)


@hpvm.leaf(ins=("x",), outs=("out",))
def first_extent(x: hpvm.i64[:], out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = x.shape[0]


from hpvm import get_num_node_instances_x as count_x  # noqa: E402


@hpvm.leaf(outs=("out",))
def counts_under_an_alias(out: hpvm.i64[:]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    out[i] = count_x(node)


def test_accepts_leaves_indexed_by_their_id_on_the_first_axis():
    assert slicing_problem(axpy) is None
    assert slicing_problem(row_scale) is None


@pytest.mark.parametrize(
    "leaf, fragment",
    [
        (uses_id_as_value, "uses its instance id x ('i') other than as the first index"),
        (reads_neighbour, "indexes 'x'"),
        (counts_instances, "calls get_num_node_instances_x"),
        (passes_array, "uses its array 'x' other than indexed"),
        (first_extent, "uses its array 'x' other than indexed"),
        (counts_under_an_alias, "calls get_num_node_instances_x"),  # (the leaf IR resolves the alias)
    ],
    ids=lambda v: getattr(v, "name", None),
)
def test_refuses_what_it_cannot_prove(leaf, fragment):
    problem = slicing_problem(leaf)
    assert problem is not None and fragment in problem, problem


# -- launches ----------------------------------------------------------------------------


def _run(root, args, target):
    arrays = list({id(a): a for a in args if isinstance(a, np.ndarray)}.values())
    for a in arrays:
        hpvm.track_memory(a)
    try:
        handle = hpvm.launch(root, args, target=target)
        outputs = hpvm.wait(handle)
    finally:
        for a in arrays:
            hpvm.untrack_memory(a)
    return outputs, handle


@pytest.mark.parametrize("n", [0, 1, 2, 3, 101])
def test_split_rows_match_interp(dask_runtime, n):
    rng = np.random.default_rng(n)
    x, y = rng.random(n + 2), rng.random(n + 2)  # two rows past the grid stay as they were
    want_y = y.copy()
    _run(axpy_root, (x.copy(), want_y, 1.5, n), "interp")
    _, handle = _run(axpy_root, (x, y, 1.5, n), "dask")
    np.testing.assert_array_equal(y, want_y)
    if n >= 2:
        assert "split into 2 chunk(s) of rows" in handle.notes[0], handle.notes
    else:
        assert "ran whole on one worker" in handle.notes[0], handle.notes


def test_split_2d_with_last_instance_output(dask_runtime):
    m = np.arange(35, dtype=np.int64).reshape(7, 5)
    out, want = np.zeros_like(m), np.zeros_like(m)
    (last,), handle = _run(row_scale_root, (m, out), "dask")
    with pytest.warns(hpvm.HPVMWarning, match="disagree"):  # (the interpreter checks the rule)
        (want_last,), _ = _run(row_scale_root, (m, want), "interp")
    np.testing.assert_array_equal(out, want)
    assert last == want_last == 4
    assert "rows [0, 3), [3, 7)" in handle.notes[0]
    assert handle.transfers is not None and handle.transfers.to_host == out.nbytes  # only `out` comes back


def test_chunks_compile_once_per_worker(dask_runtime):
    from hpvm.backends.dask import tasks

    x, y = np.ones(64), np.zeros(64)
    _run(axpy_root, (x, y, 2.0, 64), "dask")
    known = dict(tasks._ROOTS)
    for _ in range(3):
        _run(axpy_root, (x, y, 2.0, 64), "dask")
    assert tasks._ROOTS == known  # the same chunk root (same key, same object): cpu's cache hits
    np.testing.assert_array_equal(y, np.full(64, 8.0))


def test_a_short_array_runs_whole_and_fails_as_on_cpu(dask_runtime):
    x, y = np.ones(4), np.zeros(4)
    with pytest.raises(hpvm.OutOfBoundsError, match="axpy"):
        _run(axpy_root, (x, y, 1.0, 10), "dask")


@hpvm.leaf(ins=("x",), outs=("out",))
def fails_at_seven(x: hpvm.i64[:], out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if x[i] == 7:
        raise ValueError("seven is not allowed")
    out[i] = x[i]


@hpvm.internal
def fails_root(x: hpvm.i64[:], out: hpvm.i64[:]):
    k = hpvm.create_node_1d(fails_at_seven, x.shape[0])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


@hpvm.internal
def fails_whole_root(x: hpvm.i64[:], out: hpvm.i64[:]):
    k = hpvm.create_node_1d(fails_at_seven, x.shape[0])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)
    k2 = hpvm.create_node_1d(fails_at_seven, x.shape[0])
    hpvm.bind_in(k2, 0, 0)
    hpvm.bind_in(k2, 1, 1)


@pytest.mark.parametrize("root", [fails_root, fails_whole_root], ids=["split", "whole"])
def test_an_exception_in_a_leaf_names_the_node(dask_runtime, root):
    x = np.arange(20, dtype=np.int64)
    with pytest.raises(hpvm.NodeExecutionError) as info:
        _run(root, (x, np.zeros_like(x)), "dask")
    with pytest.raises(hpvm.NodeExecutionError) as on_cpu:
        _run(root, (x, np.zeros_like(x)), "cpu")
    assert "fails_at_seven" in str(info.value) and "seven is not allowed" in str(info.value)
    assert type(info.value) is type(on_cpu.value)
