"""Barriers on the GPU back ends: every instance of one parent instance must reach the same
barriers, so a barrier under an instance-dependent condition is a ``CompileError`` naming
the barrier and the condition — on ``cuda`` (run on the simulator) and ``opencl`` (checked
in the shared schedule, which needs no device), as on ``cpu``."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.backends.gpu.schedule import schedule
from hpvm.passes import lower
from hpvm.passes.fuse_one_to_one import FuseOneToOne
from hpvm.passes.place_allocations import PlaceAllocations
from markers import SourceMarkers, fails

pytestmark = pytest.mark.gpu
SRC = SourceMarkers(__file__)


def run(root, args, target: str):  # type: ignore[no-untyped-def]
    hpvm.init()
    try:
        for a in args:
            if isinstance(a, np.ndarray):
                hpvm.track_memory(a)
        hpvm.wait(hpvm.launch(root, args, target=target))
        return [hpvm.request_memory(a).copy() for a in args if isinstance(a, np.ndarray)]
    finally:
        hpvm.cleanup()


def opencl_schedule(root) -> None:  # type: ignore[no-untyped-def]
    """What the opencl back end decides before it needs a device."""
    schedule(lower(root, (FuseOneToOne("kernel"), PlaceAllocations())), "opencl")


def wrap(leaf):  # type: ignore[no-untyped-def]
    @hpvm.internal
    def root(a: hpvm.i64[:], n: hpvm.i64):
        k = hpvm.create_node_1d(leaf, a.shape[0])
        hpvm.bind_in(k, 0, 0)
        hpvm.bind_in(k, 1, 1)

    return root


@hpvm.leaf(ins=("a",), outs=("a",))
def under_if(a: hpvm.i64[:], n: hpvm.i64):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    a[lid] = lid
    if lid < n:  # @under_if_cond
        hpvm.barrier()  # @under_if_barrier
    a[lid] += 1


@hpvm.leaf(ins=("a",), outs=("a",))
def id_in_condition(a: hpvm.i64[:], n: hpvm.i64):
    if hpvm.get_node_instance_id_x(hpvm.get_node()) % 2 == 0:  # @direct_cond
        hpvm.barrier()  # @direct_barrier


@hpvm.leaf(ins=("a",), outs=("a",))
def varying_break(a: hpvm.i64[:], n: hpvm.i64):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    for step in range(n):
        a[lid] += step
        hpvm.barrier()
        if a[lid] > 3:  # @break_cond
            break  # @break


@hpvm.leaf(ins=("a",), outs=("a",))
def early_return(a: hpvm.i64[:], n: hpvm.i64):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    if lid >= n:  # @return_cond
        return
    a[lid] = 1
    hpvm.barrier()  # @return_barrier


@pytest.mark.parametrize(
    ("leaf", "at", "cond", "what"),
    [
        (under_if, "under_if_barrier", "under_if_cond", "(through `lid`)"),
        (id_in_condition, "direct_barrier", "direct_cond", "hpvm.barrier() on line"),
        (varying_break, "break", "break_cond", "`break` on line"),
        (early_return, "return_barrier", "return_cond", "after the `return` on line"),
    ],
)
def test_barrier_some_instances_may_not_reach_is_a_compile_error(leaf, at, cond, what) -> None:  # type: ignore[no-untyped-def]
    root = wrap(leaf)
    expected = (SRC.at(at), f"line {SRC.line_of(cond)}", what, "depends on the instance id")
    with fails(hpvm.CompileError, *expected, "the cuda back end needs barriers under uniform conditions"):
        run(root, (np.zeros(8, np.int64), 4), "cuda")
    with fails(hpvm.CompileError, *expected, "the opencl back end needs barriers under uniform"):
        opencl_schedule(root)


@hpvm.leaf(ins=("a",), outs=("a",))
def uniform_control(a: hpvm.i64[:], n: hpvm.i64):
    node = hpvm.get_node()
    lid = hpvm.get_node_instance_id_x(node)
    count = hpvm.get_num_node_instances_x(node)
    stride = count // 2
    while stride > 0:  # a tree over a uniform stride
        if lid < stride:  # varying, but holds no barrier
            a[lid] += a[lid + stride]
        hpvm.barrier()
        stride //= 2
    if n > 0:  # a parameter: uniform
        hpvm.barrier()
    if lid == 0:
        a[0] += n  # a varying `if` after the last barrier is fine


def test_barriers_under_uniform_conditions_run_as_on_interp() -> None:
    root = wrap(uniform_control)
    opencl_schedule(root)  # no error
    data = np.arange(8, dtype=np.int64)
    (expected,) = run(root, (data.copy(), 5), "interp")
    (got,) = run(root, (data.copy(), 5), "cuda")
    np.testing.assert_array_equal(got, expected)
    assert got[0] == data.sum() + 5


@hpvm.leaf(ins=("a",), outs=("a",))
def parent_condition(a: hpvm.i64[:], n: hpvm.i64):
    node = hpvm.get_node()
    lid = hpvm.get_node_instance_id_x(node)
    block = hpvm.get_node_instance_id_x(hpvm.get_parent_node(node))
    if block % 2 == 0:  # the same for every instance of one block: rotate the block
        a[block * n + lid] = lid + 1
        hpvm.barrier()
        v = a[block * n + (lid + 1) % n]
        hpvm.barrier()
        a[block * n + lid] = v


@hpvm.internal(ins=("a",), outs=("a",))
def parent_block(a: hpvm.i64[:], n: hpvm.i64):
    k = hpvm.create_node_1d(parent_condition, n)
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_in(k, 1, 1)


@hpvm.internal
def r_parent_condition(a: hpvm.i64[:], n: hpvm.i64):
    b = hpvm.create_node_1d(parent_block, a.shape[0] // n)
    hpvm.bind_in(b, 0, 0)
    hpvm.bind_in(b, 1, 1)


def test_a_condition_on_the_parent_id_is_uniform_within_the_block() -> None:
    opencl_schedule(r_parent_condition)
    (got,) = run(r_parent_condition, (np.zeros(12, np.int64), 4), "cuda")
    np.testing.assert_array_equal(got, [2, 3, 4, 1, 0, 0, 0, 0, 2, 3, 4, 1])


@hpvm.leaf(ins=("a",), outs=("a",))
def outside_dialect(a: hpvm.i64[:], n: hpvm.i64):
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    a[lid:lid] = 0  # a slice: outside the leaf IR's dialect
    if lid < n:  # @outside_cond
        hpvm.barrier()  # @outside_barrier


def test_a_barrier_leaf_outside_the_leaf_ir_is_refused_naming_the_construct() -> None:
    # The check reads the leaf IR only (as cpu's phase split does): a leaf it does not cover
    # is refused, with the construct and its place, never compiled unchecked.
    with fails(hpvm.CompileError, "outside_dialect", "calls hpvm.barrier() and uses", "slice"):
        opencl_schedule(wrap(outside_dialect))
