"""Commutative atomics across chunks: each chunk updates a private copy, the host combines.

Under contention (many instances, few elements), every family against ``interp``: integers
exactly, floats within rounding. What cannot combine keeps the node on one worker.
"""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.backends.dask.ownership import analyse
from markers import needs_backend

pytestmark = needs_backend("dask")


@hpvm.leaf(
    ins=("data", "bins", "low", "high", "ands", "ors", "xors"),
    outs=("bins", "low", "high", "ands", "ors", "xors"),
)
def every_family(
    data: hpvm.i64[:],
    bins: hpvm.i64[:],
    low: hpvm.i32[:],
    high: hpvm.i32[:],
    ands: hpvm.i64[:],
    ors: hpvm.i64[:],
    xors: hpvm.i64[:],
):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    d = data[i]
    hpvm.atomic_add(bins, d % 4, 1)
    hpvm.atomic_sub(bins, (d + 1) % 4, d)
    hpvm.atomic_min(low, d % 3, d)
    hpvm.atomic_max(high, d % 3, d)
    hpvm.atomic_and(ands, d % 2, d)
    hpvm.atomic_or(ors, d % 2, d)
    hpvm.atomic_xor(xors, d % 2, d)


@hpvm.internal
def every_family_root(
    data: hpvm.i64[:],
    bins: hpvm.i64[:],
    low: hpvm.i32[:],
    high: hpvm.i32[:],
    ands: hpvm.i64[:],
    ors: hpvm.i64[:],
    xors: hpvm.i64[:],
):
    k = hpvm.create_node_1d(every_family, data.shape[0])
    for port in range(7):
        hpvm.bind_in(k, port, port)


@hpvm.leaf(ins=("vals", "total"), outs=("total",))
def float_sum(vals: hpvm.f64[:], total: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_add(total, 0, vals[i])


@hpvm.internal
def float_sum_root(vals: hpvm.f64[:], total: hpvm.f64[:]):
    k = hpvm.create_node_1d(float_sum, vals.shape[0])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


def _args(seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 1000, 257)
    return (
        data,
        rng.integers(-5, 5, 4),
        np.full(3, 500, np.int32),
        np.full(3, 10, np.int32),
        np.full(2, -1, np.int64),
        np.zeros(2, np.int64),
        rng.integers(0, 100, 2),
    )


def _run(root, args, target):
    for a in args:
        hpvm.track_memory(a)
    try:
        handle = hpvm.launch(root, args, target=target)
        hpvm.wait(handle)
    finally:
        for a in args:
            hpvm.untrack_memory(a)
    return handle


def test_every_commutative_family_combines_exactly(dask_runtime):
    got, want = _args(1), _args(1)
    handle = _run(every_family_root, got, "dask")
    _run(every_family_root, want, "interp")
    for name, g, w in zip(("data", "bins", "low", "high", "ands", "ors", "xors"), got, want):
        np.testing.assert_array_equal(g, w, err_msg=name)
    assert "split into 2 chunk(s)" in handle.notes[0]
    assert (
        "atomics on 'bins', 'low', 'high', 'ands', 'ors', 'xors' combined from 2 partial copies"
        in handle.notes[0]
    )


def test_float_sums_combine_within_rounding(dask_runtime):
    vals = np.random.default_rng(2).uniform(-10, 10, 1000)
    got, want = np.array([0.5]), np.array([0.5])
    _run(float_sum_root, (vals, got), "dask")
    _run(float_sum_root, (vals.copy(), want), "interp")
    np.testing.assert_allclose(got, want, rtol=1e-12)


@hpvm.leaf(ins=("acc",), outs=("acc",))
def swaps(acc: hpvm.i64[:], v: hpvm.i64):
    hpvm.atomic_xchg(acc, 0, v)


@hpvm.leaf(ins=("acc",), outs=("acc", "olds"))
def keeps_old(acc: hpvm.i64[:], olds: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    olds[i] = hpvm.atomic_add(acc, 0, 1)


@hpvm.leaf(ins=("acc",), outs=("acc",))
def reads_too(acc: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_add(acc, 0, 1)
    acc[i] = acc[i] + 1


@hpvm.leaf(ins=("acc",), outs=("acc",))
def two_kinds(acc: hpvm.i64[:], v: hpvm.i64):
    hpvm.atomic_add(acc, 0, v)
    hpvm.atomic_max(acc, 1, v)


@pytest.mark.parametrize(
    "leaf, fragment",
    [
        (swaps, "calls atomic_xchg (line"),
        (keeps_old, "uses the old value atomic_add returns"),
        (reads_too, "indexes 'acc'"),
        (two_kinds, "mixes atomics of different kinds on 'acc'"),
    ],
    ids=lambda v: getattr(v, "name", None),
)
def test_atomics_that_do_not_combine_keep_the_node_together(leaf, fragment):
    problem = analyse(leaf).problem
    assert problem is not None and fragment in problem, problem


@hpvm.internal
def keeps_old_root(acc: hpvm.i64[:], olds: hpvm.i64[:]):
    k = hpvm.create_node_1d(keeps_old, olds.shape[0])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


def test_a_node_using_old_values_runs_whole_with_right_totals(dask_runtime):
    acc, olds = np.zeros(1, np.int64), np.zeros(40, np.int64)
    handle = _run(keeps_old_root, (acc, olds), "dask")
    assert acc[0] == 40 and sorted(olds) == list(range(40))  # each old value exactly once
    assert "ran whole on one worker" in handle.notes[0] and "old value" in handle.notes[0]
