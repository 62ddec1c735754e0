"""Independent children of the root run as concurrent Dask tasks; dependent ones together.

Results always against ``interp``; the notes say which way each launch went.
"""

from __future__ import annotations

import numpy as np

import hpvm
from hpvm.backends.dask.parts import independent_parts
from markers import needs_backend

pytestmark = needs_backend("dask")


@hpvm.leaf(ins=("x",), outs=("out",))
def plus(x: hpvm.i64[:], out: hpvm.i64[:], k: hpvm.i64):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = x[i] + k


@hpvm.leaf()
def product(a: hpvm.i64, b: hpvm.i64) -> hpvm.i64:
    return a * b


@hpvm.internal
def two_groups(x: hpvm.i64[:], p: hpvm.i64[:], q: hpvm.i64[:], k: hpvm.i64):
    first = hpvm.create_node_1d(plus, x.shape[0])
    hpvm.bind_in(first, 0, 0)
    hpvm.bind_in(first, 1, 1)
    hpvm.bind_in(first, 3, 2)
    second = hpvm.create_node_1d(plus, x.shape[0])
    hpvm.bind_in(second, 0, 0)
    hpvm.bind_in(second, 2, 1)
    hpvm.bind_in(second, 3, 2)
    scalar = hpvm.create_node(product)
    hpvm.bind_in(scalar, 3, 0)
    hpvm.bind_in(scalar, 3, 1)
    hpvm.bind_out(scalar, 0, 0)


@hpvm.leaf(ins=("out",), outs=("out",))
def bump(out: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[i] = out[i] * 10


@hpvm.internal
def same_array(x: hpvm.i64[:], p: hpvm.i64[:], k: hpvm.i64):
    first = hpvm.create_node_1d(plus, x.shape[0])  # writes p
    hpvm.bind_in(first, 0, 0)
    hpvm.bind_in(first, 1, 1)
    hpvm.bind_in(first, 2, 2)
    second = hpvm.create_node_1d(bump, x.shape[0])  # reads and writes p: no edge, but not independent
    hpvm.bind_in(second, 1, 0)


def _run(root, args, target):
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    for a in {id(a): a for a in arrays}.values():
        hpvm.track_memory(a)
    try:
        handle = hpvm.launch(root, args, target=target)
        outputs = hpvm.wait(handle)
    finally:
        for a in {id(a): a for a in arrays}.values():
            hpvm.untrack_memory(a)
    return outputs, handle


def test_the_parts_of_a_root():
    parts = independent_parts(two_groups)
    assert [p.root.name for p in parts] == ["two_groups[plus]", "two_groups[plus_1]", "two_groups[product]"]
    assert [p.ops for p in parts] == [[], [], [0]]
    assert [sorted(p.writes) for p in parts] == [[1], [2], []]
    assert [p.root.name for p in independent_parts(same_array)] == ["same_array"]  # merged: they share p


def test_independent_children_run_as_concurrent_groups(dask_runtime):
    x = np.arange(50, dtype=np.int64)
    p, q = np.zeros_like(x), np.zeros_like(x)
    (out,), handle = _run(two_groups, (x, p, q, 7), "dask")
    want_p, want_q = np.zeros_like(x), np.zeros_like(x)
    (want,), _ = _run(two_groups, (x, want_p, want_q, 7), "interp")
    assert out == want == 49
    np.testing.assert_array_equal(p, want_p)
    np.testing.assert_array_equal(q, want_q)
    assert any("ran as 3 concurrent groups of children" in n for n in handle.notes), handle.notes
    assert any("node 'plus_1' of 'two_groups[plus_1]' split into 2 chunk(s)" in n for n in handle.notes)


def test_children_sharing_an_array_run_together(dask_runtime):
    x = np.arange(9, dtype=np.int64)
    p, want = np.zeros_like(x), np.zeros_like(x)
    _, handle = _run(same_array, (x, p, 1), "dask")
    _run(same_array, (x, want, 1), "interp")
    np.testing.assert_array_equal(p, want)
    assert "ran whole on one worker" in handle.notes[0] and "arrays they share" in handle.notes[0]


def test_one_array_passed_twice_keeps_the_groups_together(dask_runtime):
    x = np.arange(12, dtype=np.int64)
    shared = np.zeros_like(x)  # p and q are the same array: the two plus nodes both write it
    want = np.zeros_like(x)
    _, handle = _run(two_groups, (x, shared, shared, 3), "dask")
    _run(two_groups, (x, want, want, 3), "interp")
    np.testing.assert_array_equal(shared, want)
    assert "passed to several inputs" in handle.notes[0]
