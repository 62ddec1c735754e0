"""Scratch buffers made once per chunk of parent instances (``backends/cpu/scratch.py``).

A parent whose allocation leaf only ``malloc``\\ s a size computed from the parent's inputs,
whose buffer never leaves the parent instance, gets its buffer once per chunk of instances
and zero-filled again for each instance — as interp's fresh buffer. The cases that must keep
one buffer per instance (the buffer leaves the parent, the size depends on the instance id,
the parent's inputs differ between instances) are not hoisted, and every case matches interp
exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from example_modules import load as load_example
from hpvm.backends import get_backend
from hpvm.ir.leafir import leaf_ir
from hpvm.ir.scratch import covering_store, plain_allocation, scratch_allocations
from programs import PROGRAMS, assert_matches, expected, run_program

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


def sources(root) -> str:
    return "".join(get_backend("cpu").prepare(root).gen.sources)


def hoisted(root) -> bool:
    return "_pre(" in sources(root)


# -- a parent reading its buffer before writing it: each instance must see zeros ---------------


@hpvm.leaf
def alloc_row(width: hpvm.i64) -> hpvm.i64[:]:
    return hpvm.malloc(width * 8).view(np.int64)


@hpvm.leaf(ins=("buf",), outs=("buf", "out"))
def accumulate(buf: hpvm.i64[:], out: hpvm.i64[:], width: hpvm.i64):
    # Reads buf before writing it: only a zero-filled buffer gives the right sums.
    b = hpvm.get_node_instance_id_x(hpvm.get_parent_node(hpvm.get_node()))
    for k in range(width):
        buf[k] += b + k
    s = 0
    for k in range(width):
        s += buf[k]
    out[b] = s


@hpvm.internal
def row(out: hpvm.i64[:], width: hpvm.i64):
    alloc = hpvm.create_node(alloc_row)
    work = hpvm.create_node(accumulate)
    hpvm.bind_in(alloc, 1, 0)
    hpvm.edge(alloc, work, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_in(work, 0, 1)
    hpvm.bind_in(work, 1, 2)


@hpvm.internal
def rows_root(out: hpvm.i64[:], n: hpvm.i64, width: hpvm.i64):
    node = hpvm.create_node_1d(row, n)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 2, 1)


@hpvm.internal
def rows_root_2d(out: hpvm.i64[:], n: hpvm.i64, m: hpvm.i64, width: hpvm.i64):
    node = hpvm.create_node_2d(row, n, m)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 3, 1)


def run(root, args, target):
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    for a in arrays:
        hpvm.track_memory(a)
    try:
        hpvm.wait(hpvm.launch(root, tuple(args), target=target))
        for a in arrays:
            hpvm.request_memory(a)
    finally:
        for a in arrays:
            hpvm.untrack_memory(a)
    return arrays


def both(root, make):
    """The root run on interp and on cpu (twice: the second run reuses the pool)."""
    want = run(root, make(), "interp")
    for _ in range(2):
        got = run(root, make(), "cpu")
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    return want


def test_each_instance_gets_a_zero_filled_buffer():
    n, width = 37, 5
    (out,) = both(rows_root, lambda: [np.zeros(n, np.int64), n, width])
    assert list(out) == [width * b + width * (width - 1) // 2 for b in range(n)]
    assert hoisted(rows_root)  # one buffer per chunk, zero-filled per instance


def test_a_2d_parent_with_no_inner_instances_makes_nothing():
    # A negative width would make malloc fail; with no instances nothing runs (interp agrees).
    both(rows_root_2d, lambda: [np.zeros(4, np.int64), 4, 0, -1])
    both(rows_root_2d, lambda: [np.zeros(3, np.int64), 3, 1, 3])  # (and with instances, right)
    assert hoisted(rows_root_2d)


def test_a_negative_malloc_size_is_still_an_error_naming_the_node():
    with pytest.raises(hpvm.HPVMError):
        run(rows_root, [np.zeros(3, np.int64), 3, -1], "cpu")


def test_the_block_reduction_matches_interp_exactly_and_is_hoisted():
    reduction = load_example("reduction")
    make_data, reference_partials, root = reduction.make_data, reduction.reference_partials, reduction.root
    n, block = 64 * 32, 32
    data = make_data(n, 3)
    (partials,) = [np.zeros(n // block, np.float32)]
    hpvm.track_memory(data)
    hpvm.track_memory(partials)
    try:
        hpvm.wait(hpvm.launch(root, (data, block, partials), target="cpu"))
        hpvm.request_memory(partials)
    finally:
        hpvm.untrack_memory(data)
        hpvm.untrack_memory(partials)
    np.testing.assert_array_equal(partials, reference_partials(data, block))
    assert hoisted(root)


def test_the_suite_s_barrier_program_with_malloc_is_hoisted_and_exact():
    program = next(p for p in PROGRAMS if p.name == "barrier_rotate_malloc")
    want = expected(program)
    for _ in range(2):
        assert_matches(program, run_program(program, "cpu"), want)
    assert hoisted(program.root)


# -- cases that keep one buffer per instance -----------------------------------------------------


def test_a_buffer_that_leaves_its_parent_is_not_hoisted():
    program = next(p for p in PROGRAMS if "malloc-escapes" in p.tags)
    assert_matches(program, run_program(program, "cpu"), expected(program))
    assert not hoisted(program.root)


@hpvm.leaf
def alloc_by_id(width: hpvm.i64) -> hpvm.i64[:]:
    b = hpvm.get_node_instance_id_x(hpvm.get_parent_node(hpvm.get_node()))
    return hpvm.malloc((width + b) * 8).view(np.int64)


@hpvm.leaf(ins=("buf",), outs=("buf", "out"))
def count_zeros(buf: hpvm.i64[:], out: hpvm.i64[:]):
    b = hpvm.get_node_instance_id_x(hpvm.get_parent_node(hpvm.get_node()))
    s = 0
    for k in range(buf.shape[0]):
        s += 1 if buf[k] == 0 else 0
        buf[k] = 7
    out[b] = s


@hpvm.internal
def row_by_id(out: hpvm.i64[:], width: hpvm.i64):
    alloc = hpvm.create_node(alloc_by_id)
    work = hpvm.create_node(count_zeros)
    hpvm.bind_in(alloc, 1, 0)
    hpvm.edge(alloc, work, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_in(work, 0, 1)


@hpvm.internal
def by_id_root(out: hpvm.i64[:], n: hpvm.i64, width: hpvm.i64):
    node = hpvm.create_node_1d(row_by_id, n)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 2, 1)


def test_a_size_that_depends_on_the_instance_id_is_not_hoisted():
    n, width = 9, 3
    (out,) = both(by_id_root, lambda: [np.zeros(n, np.int64), n, width])
    assert list(out) == [width + b for b in range(n)]
    assert not hoisted(by_id_root)


@hpvm.leaf(outs=("widths",))
def widths_of(widths: hpvm.i64[:]) -> hpvm.i64:
    b = hpvm.get_node_instance_id_x(hpvm.get_node())
    return widths[b]


@hpvm.internal
def varying_root(out: hpvm.i64[:], widths: hpvm.i64[:], n: hpvm.i64):
    # Each row's width arrives over a one-to-one edge: the parent's inputs differ by instance.
    w = hpvm.create_node_1d(widths_of, n)
    node = hpvm.create_node_1d(row, n)
    hpvm.bind_in(w, 1, 0)
    hpvm.edge(w, node, hpvm.ONE_TO_ONE, 0, 1)
    hpvm.bind_in(node, 0, 0)


def test_a_parent_whose_inputs_differ_by_instance_is_not_hoisted():
    n = 8
    widths = np.arange(1, n + 1, dtype=np.int64)
    (out, _) = both(varying_root, lambda: [np.zeros(n, np.int64), widths.copy(), n])
    assert list(out) == [w * b + w * (w - 1) // 2 for b, w in enumerate(widths)]
    assert not hoisted(varying_root)


# -- the rule, on the graph and the leaf IR ----------------------------------------------------


def test_plain_allocations_are_a_malloc_of_a_size_from_scalar_parameters():
    assert plain_allocation(leaf_ir(alloc_row))
    p_alloc = next(fn for p in PROGRAMS for fn in hpvm.ir.graph.functions(p.root) if fn.name == "p_alloc")
    assert plain_allocation(leaf_ir(p_alloc))  # (``buf = ...; return buf``)
    assert not plain_allocation(leaf_ir(alloc_by_id))  # reads its parent's id
    p_alloc2 = next(fn for p in PROGRAMS for fn in hpvm.ir.graph.functions(p.root) if fn.name == "p_alloc2")
    assert not plain_allocation(leaf_ir(p_alloc2))  # writes the buffer, returns it twice


def test_scratch_allocations_are_fed_by_binds_and_never_bound_out():
    def plain(leaf):
        return plain_allocation(leaf_ir(leaf))

    assert [n.function.name for n in scratch_allocations(row, plain)] == ["alloc_row"]
    stamp = next(fn for p in PROGRAMS for fn in hpvm.ir.graph.functions(p.root) if fn.name == "p_stamp_block")
    assert scratch_allocations(stamp, lambda leaf: True) == []  # bound out of its parent


# -- buffers a barrier leaf overwrites before reading: not zero-filled when covered ------------


@hpvm.leaf
def alloc_one_more(bs: hpvm.i64) -> hpvm.i64[:]:
    return hpvm.malloc((bs + 1) * 8).view(np.int64)


@hpvm.leaf(ins=("buf", "x"), outs=("buf", "out"))
def stale_tail(buf: hpvm.i64[:], x: hpvm.i64[:], out: hpvm.i64[:], bs: hpvm.i64):
    # Stores its own element first (a covering store), but the buffer has one element more,
    # which a block reads (0 in a fresh buffer) and then dirties: it must be zero-filled.
    node = hpvm.get_node()
    lid = hpvm.get_node_instance_id_x(node)
    base = hpvm.get_node_instance_id_x(hpvm.get_parent_node(node)) * bs
    buf[lid] = x[base + lid]
    hpvm.barrier()
    v = buf[bs]
    hpvm.barrier()
    if lid == 0:
        buf[bs] = 7
    out[base + lid] = buf[lid] + v


@hpvm.internal
def tail_block(x: hpvm.i64[:], out: hpvm.i64[:], bs: hpvm.i64):
    alloc = hpvm.create_node(alloc_one_more)
    work = hpvm.create_node_1d(stale_tail, bs)
    hpvm.bind_in(alloc, 2, 0)
    hpvm.edge(alloc, work, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_in(work, 0, 1)
    hpvm.bind_in(work, 1, 2)
    hpvm.bind_in(work, 2, 3)


@hpvm.internal
def tail_root(x: hpvm.i64[:], out: hpvm.i64[:], nb: hpvm.i64, bs: hpvm.i64):
    blocks = hpvm.create_node_1d(tail_block, nb)
    for port in (0, 1, 3):
        hpvm.bind_in(blocks, port, port if port < 3 else 2)


def test_a_covering_store_that_misses_bytes_still_gets_zeros():
    nb, bs = 24, 8
    x = np.arange(nb * bs, dtype=np.int64)
    (_, out) = both(tail_root, lambda: [x.copy(), np.zeros(nb * bs, np.int64), nb, bs])
    np.testing.assert_array_equal(out, x)  # v read 0 in every block
    program = get_backend("cpu").prepare(tail_root)
    plan = next(iter(program.gen.scratch.values()))
    assert plan.covers[0] is not None and plan.covers[0][1] == 8  # the store covers bs * 8 bytes only


def test_the_block_reduction_s_buffer_is_covered_by_its_first_store():
    reduction = load_example("reduction")
    program = get_backend("cpu").prepare(reduction.root)
    (plan,) = program.gen.scratch.values()
    assert plan.covers[0] is not None and plan.covers[0][1] == 4
    assert "_each_nz(" in sources(reduction.root)  # its chunks loop without the zero-fill


def test_covering_stores_on_the_leaf_ir():
    from hpvm.passes.clone_leaves import clone_leaf

    reduction = load_example("reduction")
    assert covering_store(clone_leaf(reduction.tree_sum).ir, "buffer") == 4
    assert covering_store(clone_leaf(stale_tail).ir, "buf") == 8
    rotate = next(fn for p in PROGRAMS for fn in hpvm.ir.graph.functions(p.root) if fn.name == "p_rotate")
    assert covering_store(clone_leaf(rotate).ir, "buf") is None  # writes buf[bs] first, under an if
    assert covering_store(clone_leaf(accumulate).ir, "buf") is None  # reads before it writes
