"""Barrier group functions that view bytes as another type, and those compiled without NRT.

A group function types a ``malloc``'d or byte buffer with ``views.py``'s ``__hpvm_view``
(Numba's ``array.view`` without its calls), and one that holds no array of its own is
compiled without Numba's reference counting (``GroupSource.refcounted``). Each case runs
on ``cpu`` and ``interp`` and compares every array exactly; a view the byte count does not
allow raises NumPy's ``ValueError`` on both.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

import hpvm
from hpvm.backends.cpu.barriers import group_source
from hpvm.backends.cpu.views import INDIVISIBLE, view_helpers
from hpvm.passes.clone_leaves import clone_leaf

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


def run(root, target, *args):
    """Launch ``root`` on copies of ``args``' arrays; the copies after it ran."""
    args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    for a in arrays:
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(root, args, target=target))
    for a in arrays:
        hpvm.request_memory(a)
    return arrays


def refcounted(leaf) -> bool:
    clone = clone_leaf(leaf)
    return group_source(clone, [p.type for p in leaf.params], max(1, clone.levels)).refcounted()


# ---------------------------------------------------------------------------------------
# a block's bytes seen as float32, then as int32 and back: reversed within each block


@hpvm.leaf(ins=("data", "raw"), outs=("raw", "out"))
def reverse(data: hpvm.f32[:], raw: hpvm.u8[:], out: hpvm.f32[:]):
    node = hpvm.get_node()
    lid = hpvm.get_node_instance_id_x(node)
    n = hpvm.get_num_node_instances_x(node)
    bid = hpvm.get_node_instance_id_x(hpvm.get_parent_node(node))
    shared = raw.view(np.float32)
    shared[bid * n + lid] = data[bid * n + lid] * np.float32(2.0)
    hpvm.barrier()
    bits = raw.view(np.int32)
    out[bid * n + lid] = shared[bid * n + n - 1 - lid] + np.float32(bits[bid * n + lid] & 1)


@hpvm.internal
def reverse_block(data: hpvm.f32[:], raw: hpvm.u8[:], out: hpvm.f32[:], n: hpvm.i64):
    k = hpvm.create_node_1d(reverse, n)
    for port in range(3):
        hpvm.bind_in(k, port, port)


@hpvm.internal
def reverse_root(data: hpvm.f32[:], raw: hpvm.u8[:], out: hpvm.f32[:], n: hpvm.i64):
    blocks = hpvm.create_node_1d(reverse_block, data.shape[0] // n)
    for port in range(4):
        hpvm.bind_in(blocks, port, port)


def test_views_of_bytes_match_the_interpreter():
    data = np.random.default_rng(1).standard_normal(48).astype(np.float32)
    raw, out = np.zeros(48 * 4, np.uint8), np.zeros(48, np.float32)
    want = run(reverse_root, "interp", data, raw, out, 8)
    got = run(reverse_root, "cpu", data, raw, out, 8)
    for w, g in zip(want, got):
        np.testing.assert_array_equal(g, w)
    assert not refcounted(reverse)  # every array it holds is a parameter or a view of one


def test_a_view_the_byte_count_does_not_allow_raises_numpys_error():
    data = np.zeros(8, np.float32)
    raw, out = np.zeros(8 * 4 + 2, np.uint8), np.zeros(8, np.float32)  # 34 bytes: not float32s
    with pytest.raises(ValueError) as numpy_error:
        raw.view(np.float32)
    assert str(numpy_error.value) == INDIVISIBLE
    for target in ("interp", "cpu"):
        with pytest.raises(Exception, match="divisor of the total size in bytes") as e:
            run(reverse_root, target, data, raw, out, 8)
        assert isinstance(e.value, ValueError) or isinstance(e.value.__cause__, ValueError), target


def test_the_view_intrinsic_keeps_numbas_view_elsewhere():
    """A strided 1-D array, or booleans: ``array.view`` itself (the same result, or error)."""
    view = view_helpers()["__hpvm_view"]

    @njit
    def as_int(a):
        return view(a, np.int32)

    @njit
    def as_bytes(a):
        return view(a, np.uint8)

    x = np.arange(12, dtype=np.float32)
    np.testing.assert_array_equal(as_int(x), x.view(np.int32))
    np.testing.assert_array_equal(as_bytes(x), x.view(np.uint8))
    np.testing.assert_array_equal(as_int(x[::2]), x[::2].view(np.int32))  # same size: allowed
    flags = np.array([True, False, True, True])
    np.testing.assert_array_equal(as_bytes(flags), flags.view(np.uint8))
    with pytest.raises(ValueError, match="divisor"):
        as_int(np.zeros(6, np.uint8))


# ---------------------------------------------------------------------------------------
# which group functions keep Numba's reference counting


@hpvm.leaf(ins=("buf",), outs=("buf",))
def keeps(buf: hpvm.f32[:]):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    mine = buf[lid] + np.float32(1.0)  # varying, read after the barrier: a slot per instance
    hpvm.barrier()
    buf[lid] = mine


@hpvm.leaf(ins=("buf",), outs=("buf",))
def returns_array(buf: hpvm.f32[:]) -> hpvm.f32[:]:
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    buf[lid] = np.float32(lid)
    hpvm.barrier()
    return buf


@hpvm.leaf(ins=("buf",), outs=("buf",))
def allocates(buf: hpvm.f32[:]):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    tmp = hpvm.malloc(16).view(np.float32)  # used before the barrier only
    tmp[0] = buf[lid]
    buf[lid] = tmp[0] + np.float32(1.0)
    hpvm.barrier()
    buf[lid] = buf[lid] + buf[0]


@pytest.mark.parametrize("leaf", [keeps, returns_array, allocates], ids=lambda f: f.name)
def test_group_functions_that_make_or_return_arrays_keep_reference_counting(leaf):
    assert refcounted(leaf)
