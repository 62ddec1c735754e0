"""The cpu back end's speed-ups keep every program's meaning and every launch check.

* ``__hpvm_narrow`` (narrow.py): the innermost instance id of generated loops is the loop
  variable itself for every integer type and extent;
* barrier regions of the form ``if lid < u:`` run without the guard only when ``u`` reads
  nothing but names (barriers.py ``_x_bound``), and give the interpreter's results;
* repeated launches of one root (``runtime/launch.py``'s cached checks) still refuse a
  wrong type, an untracked array, an integer out of range and mismatched grids on any
  launch, after launches with good arguments.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

import hpvm
from hpvm.backends.cpu.barriers import group_function
from hpvm.backends.cpu.narrow import MASK, narrow, narrow_helpers
from hpvm.passes.clone_leaves import clone_leaf

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


# ---------------------------------------------------------------------------------------
# __hpvm_narrow


@njit
def _narrow_at(index, extent):
    return narrow(index, extent <= MASK)


narrow_helpers()  # registers the compiled implementation


@pytest.mark.parametrize("make", [np.int64, np.uint64, np.int32, np.uint32, int])
def test_narrow_returns_the_index_itself(make):
    for index, extent in [(0, 1), (5, 6), (MASK - 1, MASK), (MASK + 7, MASK + 8), (2**40, 2**41)]:
        if make in (np.int32, np.uint32) and index > 2**31 - 1:
            continue
        got = _narrow_at(make(index), extent)
        assert got == index
        assert narrow(index, extent <= MASK) == index


def test_narrow_keeps_the_index_type():
    assert _narrow_at(np.uint64(3), 10) == 3
    assert isinstance(_narrow_at(np.uint64(3), 10), int)  # Numba boxes integers as int
    sig = next(iter(_narrow_at.overloads))
    assert _narrow_at.overloads[sig].signature.return_type == sig[0]


# ---------------------------------------------------------------------------------------
# barrier regions: the guard of ``if lid < u`` dropped only when u reads only names


@hpvm.leaf(ins=("data", "buf", "lim"), outs=("buf", "out"))
def fold_le(data: hpvm.i64[:], buf: hpvm.i64[:], out: hpvm.i64[:], lim: hpvm.i64[:]):
    """Folds with ``lid <= stride - 1`` and a guard reading an array (which must stay)."""
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    buf[lid] = data[lid]
    hpvm.barrier()
    stride = data.shape[0] // 2
    while stride > 0:
        if lid <= stride - 1:
            buf[lid] += buf[lid + stride]
        hpvm.barrier()
        stride //= 2
    if lid < lim[0]:
        out[lid] = buf[0] + lid


@hpvm.internal
def fold_le_root(data: hpvm.i64[:], buf: hpvm.i64[:], out: hpvm.i64[:], lim: hpvm.i64[:]):
    k = hpvm.create_node_1d(fold_le, data.shape[0])
    for port in range(4):
        hpvm.bind_in(k, port, port)


def _group_source(leaf):
    clone = clone_leaf(leaf)
    return group_function(clone, [p.type for p in leaf.params], max(1, clone.levels))


def test_guard_dropped_for_names_kept_for_memory_reads():
    _, source = _group_source(fold_le)
    assert "if lid <= stride - 1:" not in source  # bound min(extent, stride - 1 + 1) implies it
    assert "min(__hpvm_s0, (stride - 1) + 1)" in source
    assert "if lid < lim[0]:" in source  # lim[0] is memory: the guard stays


@pytest.mark.parametrize("n", [1, 8, 16])
def test_unguarded_regions_match_the_interpreter(n):
    data = np.arange(1, n + 1, dtype=np.int64) * 3
    arrays = [data, np.zeros(n, np.int64), np.full(n, -1, np.int64), np.array([n // 2 + 1], np.int64)]
    want = [a.copy() for a in arrays]
    got = [a.copy() for a in arrays]
    for a in want + got:
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(fold_le_root, tuple(want), target="interp"))
    hpvm.wait(hpvm.launch(fold_le_root, tuple(got), target="cpu"))
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)


@hpvm.leaf(ins=("buf",), outs=("buf", "out"))
def rotate(buf: hpvm.i64[:], out: hpvm.i64[:]):
    """Each instance reads its right neighbour's value after the barrier: ``lid + 1``."""
    node = hpvm.get_node()
    lid = hpvm.get_node_instance_id_x(node)
    buf[lid] = lid * 3
    hpvm.barrier()
    out[lid] = buf[(lid + 1) % hpvm.get_num_node_instances_x(node)]


@hpvm.internal
def rotate_root(buf: hpvm.i64[:], out: hpvm.i64[:]):
    k = hpvm.create_node_1d(rotate, buf.shape[0])
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


def test_group_loops_narrow_the_x_id_only_where_a_constant_is_added():
    _, source = _group_source(fold_le)  # buf[lid], buf[lid + stride]: no constant offset
    assert "__hpvm_narrow" not in source and "__hpvm_i = __hpvm_i_w" in source
    _, source = _group_source(rotate)  # buf[(lid + 1) % n]
    assert source.count("__hpvm_narrow(") == 1  # the phase after the barrier only
    want = [np.zeros(7, np.int64), np.zeros(7, np.int64)]
    got = [a.copy() for a in want]
    for a in want + got:
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(rotate_root, tuple(want), target="interp"))
    hpvm.wait(hpvm.launch(rotate_root, tuple(got), target="cpu"))
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[1], (np.arange(7) + 1) % 7 * 3)


# ---------------------------------------------------------------------------------------
# the generated loop nest: the innermost id goes through __hpvm_narrow


@hpvm.leaf(ins=("src",), outs=("dst",))
def shift_leaf(src: hpvm.f32[:, :], dst: hpvm.f32[:, :]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node) + 1
    j = hpvm.get_node_instance_id_y(node) + 1
    dst[i, j] = src[i - 1, j + 1] + src[i + 1, j - 1]


@hpvm.internal
def shift_root(src: hpvm.f32[:, :], dst: hpvm.f32[:, :], n: hpvm.i32):
    k = hpvm.create_node_2d(shift_leaf, src.shape[0] - 2, n)
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


def _shift_args(rows=6, cols=9, n=None, dtype=np.float32):
    src = np.arange(rows * cols, dtype=dtype).reshape(rows, cols)
    dst = np.zeros_like(src)
    hpvm.track_memory(src)
    hpvm.track_memory(dst)
    return src, dst, np.int32(cols - 2 if n is None else n)


def test_offset_indices_match_the_interpreter_and_bound_the_loop_below_2_32():
    from hpvm.backends import get_backend

    want, got = _shift_args(), _shift_args()
    hpvm.wait(hpvm.launch(shift_root, want, target="interp"))
    hpvm.wait(hpvm.launch(shift_root, got, target="cpu"))
    np.testing.assert_array_equal(got[1], want[1])
    source = "\n".join(get_backend("cpu").prepare(shift_root).gen.sources)
    assert "for __hg0_i1_w in range(min(__hn0_s1, 4294967295)):" in source  # the chunk for 32-bit extents
    assert "__hg0_i1_small = __hn0_s1 <= 4294967295" in source


# ---------------------------------------------------------------------------------------
# repeated launches: the cached checks still refuse bad arguments


def _launch(args):
    return hpvm.wait(hpvm.launch(shift_root, args, target="cpu"))


def test_repeated_launches_still_check_types_and_tracking():
    good = _shift_args()
    for _ in range(3):
        _launch(good)
    with pytest.raises(hpvm.LaunchError, match="argument 0 .'src'."):
        _launch((good[0].astype(np.float64), good[1], good[2]))
    with pytest.raises(hpvm.LaunchError, match="argument 2 .'n'.*does not fit in i32"):
        _launch((good[0], good[1], 2**31))
    with pytest.raises(hpvm.LaunchError, match="argument 2 .'n'.*float"):
        _launch((good[0], good[1], 7.0))
    with pytest.raises(hpvm.MemoryTrackingError, match="untracked"):
        _launch((good[0].copy(), good[1], good[2]))
    _launch(good)  # and good arguments still pass


def test_repeated_launches_still_check_sizes():
    good = _shift_args()
    _launch(good)
    with pytest.raises(hpvm.LaunchError, match="sizes must be >= 0"):
        _launch((good[0], good[1], np.int32(-1)))
    tiny = _shift_args(rows=1, cols=4)  # src.shape[0] - 2 < 0: checked for this new shape
    with pytest.raises(hpvm.LaunchError, match="sizes must be >= 0"):
        _launch(tiny)
    _launch(good)
