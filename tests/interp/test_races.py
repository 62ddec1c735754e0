"""The interpreter's data-race detector (``backends/interp/races.py``).

Each kind of race is found at its first occurrence, with the exact message: both instances,
both lines, the array, the root argument, the index, why the accesses are concurrent and
what to do. Each kind of non-race is not reported. The detector can be switched off. A
property ties it to its definition: on random small grids with random accesses, a race is
reported iff two distinct instances touch one element in one barrier phase, at least one
writing it and not both atomically — and the one reported is the first in the
interpreter's order.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
import hpvm.backends.interp as interp
from hpvm.backends.interp import Interpreter
from running import line_of, replicated_root, run_tracked, runs_from_its_ir

pytestmark = pytest.mark.usefixtures("hpvm_runtime")

LEAF_FIX = (
    "Make each instance touch its own elements, update shared elements with hpvm.atomic_*, "
    "or separate the accesses with hpvm.barrier()"
)
ATOMIC_FIX = (
    "An atomic is ordered only with other atomics: update the element with hpvm.atomic_* in "
    "both places, or order the accesses"
)


def at(fn, text):
    """``leaf 'name', file:line`` of the first line of ``fn`` containing ``text``."""
    return f"leaf '{fn.name}', {fn.code_file}:{line_of(fn, text)}"


def concurrent(path):
    return f"the instances of node {path} run concurrently, and no hpvm.barrier() separates these accesses"


def run_replicated(leaf, sizes, *arrays):
    return run_tracked(replicated_root(leaf, len(sizes)), (*arrays, *sizes), "interp")


def race(leaf, sizes, *arrays):
    with pytest.raises(hpvm.DataRaceError) as info:
        run_replicated(leaf, sizes, *arrays)
    return str(info.value)


# ---------------------------------------------------------------------------------------
# The kinds of race, with their messages


@hpvm.leaf(outs=("c",))
def halves(c: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    c[i // 2] = i  # instances 2k and 2k + 1 write one element


def test_write_write():
    message = race(halves, (8,), np.zeros(4, np.int64))
    assert message == (
        f"node root_of_halves/halves[1] ({at(halves, 'c[i // 2]')}): data race: writes array 'c' "
        f"(root argument 'c') at index [0], which node root_of_halves/halves[0] ({at(halves, 'c[i // 2]')}) "
        f"wrote; {concurrent('root_of_halves/halves')}. {LEAF_FIX}"
    )


def test_it_is_a_node_execution_error():
    assert issubclass(hpvm.DataRaceError, hpvm.NodeExecutionError)
    assert "DataRaceError" in hpvm.__all__


@hpvm.leaf(outs=("a", "b"))
def read_left(a: hpvm.i64[:], b: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    a[i] = i
    if i > 0:
        b[i] = a[i - 1]  # what instance i - 1 wrote


def test_write_then_read():
    message = race(read_left, (4,), np.zeros(4, np.int64), np.zeros(4, np.int64))
    assert message == (
        f"node root_of_read_left/read_left[1] ({at(read_left, 'b[i] = a[i - 1]')}): data race: reads "
        f"array 'a' (root argument 'a') at index [0], which node root_of_read_left/read_left[0] "
        f"({at(read_left, 'a[i] = i')}) wrote; {concurrent('root_of_read_left/read_left')}. {LEAF_FIX}"
    )


@hpvm.leaf(outs=("a", "b"))
def rotate_in_place(a: hpvm.i64[:], b: hpvm.i64[:]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    b[i] = a[(i + 1) % hpvm.get_num_node_instances_x(node)]
    a[i] = b[i]  # instance i - 1 has read it


def test_read_then_write():
    message = race(rotate_in_place, (4,), np.arange(4), np.zeros(4, np.int64))
    assert message == (
        f"node root_of_rotate_in_place/rotate_in_place[1] ({at(rotate_in_place, 'a[i] = b[i]')}): data "
        "race: writes array 'a' (root argument 'a') at index [1], which node "
        f"root_of_rotate_in_place/rotate_in_place[0] ({at(rotate_in_place, 'b[i] = a[(i + 1)')}) read; "
        f"{concurrent('root_of_rotate_in_place/rotate_in_place')}. {LEAF_FIX}"
    )


@hpvm.leaf(outs=("c",))
def row_sums(c: hpvm.i64[:, :]):
    node = hpvm.get_node()
    i, j = hpvm.get_node_instance_id_x(node), hpvm.get_node_instance_id_y(node)
    c[i, 0] += j  # every j of row i updates c[i, 0]: no atomic


def test_2d_grid_augmented_assignment():
    message = race(row_sums, (2, 3), np.zeros((2, 3), np.int64))
    line = at(row_sums, "c[i, 0] += j")
    assert message == (
        f"node root_of_row_sums/row_sums[0, 1] ({line}): data race: reads array 'c' (root argument "
        f"'c') at index [0, 0], which node root_of_row_sums/row_sums[0, 0] ({line}) wrote; "
        f"{concurrent('root_of_row_sums/row_sums')}. {LEAF_FIX}"
    )


@hpvm.leaf(outs=("c",))
def fold_z(c: hpvm.i64[:, :, :]):
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    z = hpvm.get_node_instance_id_z(node)
    c[x, y, z % 2] = z  # z and z + 2 write one element


def test_3d_grid():
    message = race(fold_z, (2, 2, 3), np.zeros((2, 2, 2), np.int64))
    line = at(fold_z, "c[x, y, z % 2]")
    assert message == (
        f"node root_of_fold_z/fold_z[0, 0, 2] ({line}): data race: writes array 'c' (root argument "
        f"'c') at index [0, 0, 0], which node root_of_fold_z/fold_z[0, 0, 0] ({line}) wrote; "
        f"{concurrent('root_of_fold_z/fold_z')}. {LEAF_FIX}"
    )


@hpvm.leaf(outs=("c",))
def into_c(c: hpvm.i64[:]):
    c[0] = hpvm.get_node_instance_id_x(hpvm.get_node())


@hpvm.internal()
def renamed(out: hpvm.i64[:], n: hpvm.i64):
    node = hpvm.create_node_1d(into_c, n)
    hpvm.bind_in(node, 0, 0)


def test_names_the_root_argument():
    out = np.zeros(3, np.int64)
    with pytest.raises(hpvm.DataRaceError, match=r"writes array 'c' \(root argument 'out'\) at index \[0\]"):
        run_tracked(renamed, (out, 2), "interp")


@hpvm.internal()
def interleaved(evens: hpvm.i64[:], odds: hpvm.i64[:], n: hpvm.i64):
    node = hpvm.create_node_1d(into_c, n)
    hpvm.bind_in(node, 1, 0)


def test_names_the_root_argument_among_interleaved_ones():
    memory = np.zeros(8, np.int64)  # odds[0] lies between evens[0] and evens[1]
    with pytest.raises(hpvm.DataRaceError, match=r"'c' \(root argument 'odds'\) at index \[0\]"):
        run_tracked(interleaved, (memory[::2], memory[1::2], 2), "interp")


@hpvm.leaf()
def allocate_two() -> hpvm.u8[:]:
    return hpvm.malloc(16)


@hpvm.leaf(outs=("buf",))
def into_buffer(buf: hpvm.u8[:]):
    buf.view(np.int64)[0] = hpvm.get_node_instance_id_x(hpvm.get_node())


@hpvm.internal()
def shared_buffer(n: hpvm.i64):
    alloc = hpvm.create_node(allocate_two)
    work = hpvm.create_node_1d(into_buffer, n)
    hpvm.edge(alloc, work, hpvm.ALL_TO_ALL, 0, 0)


def test_a_buffer_that_is_no_root_argument_and_a_typed_view_of_it():
    # A malloc buffer shared by the instances of one parent instance (GPU shared memory):
    # named as the leaf's array, indexed in it (bytes), no root argument to name.
    with pytest.raises(hpvm.DataRaceError) as info:
        run_tracked(shared_buffer, (2,), "interp")
    line = at(into_buffer, "buf.view")
    assert str(info.value) == (
        f"node shared_buffer/into_buffer[1] ({line}): data race: writes array 'buf' at index [0], "
        f"which node shared_buffer/into_buffer[0] ({line}) wrote; "
        f"{concurrent('shared_buffer/into_buffer')}. {LEAF_FIX}"
    )


# -- across the instances of a replicated internal node


@hpvm.leaf(ins=("data", "total"), outs=("total",))
def add_block(data: hpvm.i64[:], total: hpvm.i64[:]):
    b = hpvm.get_node_instance_id_x(hpvm.get_parent_node(hpvm.get_node()))
    total[0] += data[b]  # every block updates total[0]


@hpvm.internal()
def one_block(data: hpvm.i64[:], total: hpvm.i64[:]):
    node = hpvm.create_node(add_block)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


@hpvm.internal()
def blocks(data: hpvm.i64[:], total: hpvm.i64[:]):
    node = hpvm.create_node_1d(one_block, data.shape[0])
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


def parent_level(path, name):
    return (
        f"they are in different instances of node {path}, which run concurrently (hpvm.barrier() "
        f"orders only the instances of one leaf within one parent instance). Make each instance of "
        f"'{name}' touch its own elements, or update shared elements with hpvm.atomic_*"
    )


def test_across_instances_of_a_replicated_internal_node():
    with pytest.raises(hpvm.DataRaceError) as info:
        run_tracked(blocks, (np.arange(3), np.zeros(1, np.int64)), "interp")
    line = at(add_block, "total[0] +=")
    assert str(info.value) == (
        f"node blocks/one_block[1]/add_block ({line}): data race: reads array 'total' (root argument "
        f"'total') at index [0], which node blocks/one_block[0]/add_block ({line}) wrote; "
        f"{parent_level('blocks/one_block', 'one_block')}"
    )


@hpvm.leaf(outs=("shared",))
def block_swap(shared: hpvm.i64[:]) -> hpvm.i64:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    shared[i] = i  # the same elements in every parent instance
    hpvm.barrier()
    return shared[1 - i]


@hpvm.internal()
def swap_block(shared: hpvm.i64[:]):
    hpvm.bind_in(hpvm.create_node_1d(block_swap, 2), 0, 0)


@hpvm.internal()
def swap_blocks(shared: hpvm.i64[:], n: hpvm.i64):
    hpvm.bind_in(hpvm.create_node_1d(swap_block, n), 0, 0)


def test_a_barrier_does_not_order_different_parent_instances(interp_path):
    assert runs_from_its_ir(block_swap)
    run_tracked(swap_blocks, (np.zeros(2, np.int64), 1), "interp")  # one block: no race
    with pytest.raises(hpvm.DataRaceError) as info:
        run_tracked(swap_blocks, (np.zeros(2, np.int64), 2), "interp")
    line = at(block_swap, "shared[i] = i")
    assert str(info.value) == (
        f"node swap_blocks/swap_block[1]/block_swap[0] ({line}): data race: writes array 'shared' "
        "(root argument 'shared') at index [0], which node swap_blocks/swap_block[0]/block_swap[0] "
        f"({line}) wrote; {parent_level('swap_blocks/swap_block', 'swap_block')}"
    )


# -- across a one-to-one edge (docs/semantics.md §6)


@hpvm.leaf(outs=("a",))
def produce(a: hpvm.f64[:]) -> hpvm.f64[:]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    a[i] = i + 1.0
    return a


@hpvm.leaf(ins=("a",), outs=("b",))
def consume(a: hpvm.f64[:], b: hpvm.f64[:]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    n = hpvm.get_num_node_instances_x(node)
    b[i] = a[i] + a[(i + 1) % n]  # written by produce instance i + 1


@hpvm.leaf(ins=("a",), outs=("b",))
def consume_own(a: hpvm.f64[:], b: hpvm.f64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = 2 * a[i]  # written by produce instance i: ordered


def pipeline(consumer, repl, stream=False):
    @hpvm.internal()
    def root(a: hpvm.f64[:], b: hpvm.f64[:]):
        p = hpvm.create_node_1d(produce, a.shape[0])
        c = hpvm.create_node_1d(consumer, a.shape[0])
        hpvm.bind_in(p, 0, 0)
        hpvm.edge(p, c, repl, 0, 0, stream=stream)
        hpvm.bind_in(c, 1, 1)

    return root


def test_one_to_one_edge_race():
    with pytest.raises(hpvm.DataRaceError) as info:
        run_tracked(pipeline(consume, hpvm.ONE_TO_ONE), (np.zeros(4), np.zeros(4)), "interp")
    assert str(info.value) == (
        f"node root/consume[0] ({at(consume, 'b[i] = a[i]')}): data race: reads array 'a' (root "
        f"argument 'a') at index [1], which node root/produce[1] ({at(produce, 'a[i] = i')}) wrote; "
        "'consume' depends on 'produce' through one-to-one edges only, which order each instance of "
        "'consume' after the same instance of 'produce', not after its other instances "
        "(docs/semantics.md §6). Connect them with an all-to-all edge, which waits for every "
        "instance of 'produce', or make each instance of 'consume' touch only what the same "
        "instance of 'produce' touched"
    )


def test_one_to_one_edge_same_instance_and_all_to_all_edge_are_ordered():
    a, b = np.zeros(4), np.zeros(4)
    run_tracked(pipeline(consume_own, hpvm.ONE_TO_ONE), (a, b), "interp")
    assert b.tolist() == [2.0, 4.0, 6.0, 8.0]
    run_tracked(pipeline(consume, hpvm.ALL_TO_ALL), (a, b), "interp")
    assert b.tolist() == [3.0, 5.0, 7.0, 5.0]


def test_a_streaming_edge_between_root_children_is_a_pipeline_boundary():
    # The sink's stage gets an item once the source's stage has finished it: every instance.
    b = np.zeros(4)
    run_tracked(pipeline(consume, hpvm.ONE_TO_ONE, stream=True), (np.zeros(4), b), "interp")
    assert b.tolist() == [3.0, 5.0, 7.0, 5.0]


@hpvm.leaf(ins=("a",), outs=("a",))
def relay(a: hpvm.f64[:]) -> hpvm.f64[:]:
    return a


def test_one_to_one_path_through_a_node_between():
    @hpvm.internal()
    def root(a: hpvm.f64[:], b: hpvm.f64[:]):
        p = hpvm.create_node_1d(produce, a.shape[0])
        r = hpvm.create_node_1d(relay, a.shape[0])
        c = hpvm.create_node_1d(consume, a.shape[0])
        hpvm.bind_in(p, 0, 0)
        hpvm.edge(p, r, hpvm.ONE_TO_ONE, 0, 0)
        hpvm.edge(r, c, hpvm.ONE_TO_ONE, 0, 0)
        hpvm.bind_in(c, 1, 1)

    with pytest.raises(hpvm.DataRaceError, match="'consume' depends on 'produce' through one-to-one"):
        run_tracked(root, (np.zeros(3), np.zeros(3)), "interp")


@hpvm.leaf(outs=("a",))
def produce_one(a: hpvm.f64[:]) -> hpvm.f64[:]:
    i = hpvm.get_node_instance_id_x(hpvm.get_parent_node(hpvm.get_node()))
    a[i] = i + 1.0
    return a


@hpvm.internal()
def wrapped_produce(a: hpvm.f64[:]):
    node = hpvm.create_node(produce_one)  # in instance i of the wrapper: a[i]
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


def test_one_to_one_edge_from_a_replicated_internal_node():
    @hpvm.internal()
    def root(a: hpvm.f64[:], b: hpvm.f64[:]):
        w = hpvm.create_node_1d(wrapped_produce, a.shape[0])
        c = hpvm.create_node_1d(consume, a.shape[0])
        hpvm.bind_in(w, 0, 0)
        hpvm.edge(w, c, hpvm.ONE_TO_ONE, 0, 0)
        hpvm.bind_in(c, 1, 1)

    with pytest.raises(hpvm.DataRaceError) as info:
        run_tracked(root, (np.zeros(3), np.zeros(3)), "interp")
    assert str(info.value).startswith(
        f"node root/consume[0] ({at(consume, 'b[i] = a[i]')}): data race: reads array 'a' (root "
        f"argument 'a') at index [1], which node root/wrapped_produce[1]/produce_one "
        f"({at(produce_one, 'a[i] = i')}) "
        "wrote; 'consume' depends on 'wrapped_produce' through one-to-one edges only"
    )


# -- atomics and plain accesses


@hpvm.leaf(outs=("count", "seen"))
def count_and_peek(count: hpvm.i64[:], seen: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_add(count, 0, 1)
    if i == 1:
        seen[0] = count[0]  # a plain read of what instance 0 updated atomically


def test_atomic_and_plain_access_race():
    message = race(count_and_peek, (3,), np.zeros(1, np.int64), np.zeros(1, np.int64))
    assert message == (
        f"node root_of_count_and_peek/count_and_peek[1] ({at(count_and_peek, 'seen[0] = count[0]')}): "
        "data race: reads array 'count' (root argument 'count') at index [0], which node "
        f"root_of_count_and_peek/count_and_peek[0] ({at(count_and_peek, 'hpvm.atomic_add')}) "
        f"atomically updated; {concurrent('root_of_count_and_peek/count_and_peek')}. {ATOMIC_FIX}"
    )


@hpvm.leaf(outs=("count",))
def plain_then_atomic(count: hpvm.i64[:]):
    if hpvm.get_node_instance_id_x(hpvm.get_node()) == 0:
        count[0] = 5
    else:
        hpvm.atomic_add(count, 0, 1)


def test_plain_write_then_atomic_race():
    message = race(plain_then_atomic, (2,), np.zeros(1, np.int64))
    assert message.startswith(
        f"node root_of_plain_then_atomic/plain_then_atomic[1] ({at(plain_then_atomic, 'hpvm.atomic_add')}): "
        "data race: atomically updates array 'count' (root argument 'count') at index [0], which node "
        f"root_of_plain_then_atomic/plain_then_atomic[0] ({at(plain_then_atomic, 'count[0] = 5')}) wrote;"
    )
    assert message.endswith(ATOMIC_FIX)


# -- writes through NumPy


@hpvm.leaf(outs=("c",))
def fill_all(c: hpvm.i64[:]):
    c.fill(hpvm.get_node_instance_id_x(hpvm.get_node()))


@hpvm.leaf(outs=("c",))
def slice_write(c: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    c[i : i + 2] = i  # overlaps the next instance's slice


@hpvm.leaf(ins=("a",), outs=("c",))
def ufunc_out(a: hpvm.i64[:], c: hpvm.i64[:]):
    np.add(a, hpvm.get_node_instance_id_x(hpvm.get_node()), out=c)


@hpvm.leaf(outs=("c",))
def copy_into(c: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    np.copyto(c[1:], i)


@hpvm.leaf(outs=("a", "sums"))
def sum_after_write(a: hpvm.i64[:], sums: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if i == 0:
        a[2] = 7
    sums[i] = a.sum()  # reads every element, a[2] too


@pytest.mark.parametrize(
    "leaf, text, verb, index",
    [
        (fill_all, "c.fill", "writes", "[0]"),
        (slice_write, "c[i : i + 2]", "writes", "[1]"),
        (ufunc_out, "np.add", "writes", "[0]"),
        (copy_into, "np.copyto", "writes", "[1]"),
    ],
    ids=["fill", "slice", "ufunc out", "copyto"],
)
def test_writes_through_numpy_count_element_wise(leaf, text, verb, index):
    arrays = [np.zeros(4, np.int64) for _ in leaf.params]
    message = race(leaf, (3,), *arrays)
    root = f"root_of_{leaf.name}/{leaf.name}"
    assert message.startswith(
        f"node {root}[1] ({at(leaf, text)}): data race: {verb} array 'c' (root argument 'c') at index "
        f"{index}, which node {root}[0] ({at(leaf, text)}) wrote;"
    )


def test_reads_through_numpy_count_element_wise():
    message = race(sum_after_write, (3,), np.zeros(4, np.int64), np.zeros(3, np.int64))
    assert message.startswith(
        f"node root_of_sum_after_write/sum_after_write[1] ({at(sum_after_write, 'a.sum()')}): data race: "
        "reads array 'a' (root argument 'a') at index [2], which node "
        f"root_of_sum_after_write/sum_after_write[0] ({at(sum_after_write, 'a[2] = 7')}) wrote;"
    )


@hpvm.leaf(outs=("c",))
def own_rows(c: hpvm.i64[:, :]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    c[i].fill(i)
    c[i, 1:] += 1
    np.copyto(c[i, :1], c[i, 1:2])
    np.put(c, [i * c.shape[1] + 2], 7)  # flat index: this instance's own row


def test_numpy_writes_to_own_elements_are_no_race():
    c = np.zeros((3, 3), np.int64)
    run_replicated(own_rows, (3,), c)
    assert c.tolist() == [[1, 1, 7], [2, 2, 7], [3, 3, 7]]


# -- reported at pop for a streamed item


@hpvm.leaf(outs=("c",))
def stream_halves(c: hpvm.i64[:], k: hpvm.i64):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    c[i // k] = i


@hpvm.internal()
def streamed(c: hpvm.i64[:], k: hpvm.i64):
    node = hpvm.create_node_1d(stream_halves, c.shape[0])
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


def test_streamed_item_race_is_raised_by_pop():
    c = np.zeros(4, np.int64)
    hpvm.track_memory(c)
    handle = hpvm.launch(streamed, None, stream=True, target="interp")
    hpvm.push(handle, (c, 1))  # every instance its own element
    hpvm.push(handle, (c, 2))
    assert hpvm.pop(handle) == ()
    with pytest.raises(hpvm.DataRaceError, match=r"stream_halves\[1\].*writes array 'c'"):
        hpvm.pop(handle)
    with pytest.raises(hpvm.DataRaceError):
        hpvm.wait(handle)


# ---------------------------------------------------------------------------------------
# What is not a race


@hpvm.leaf(ins=("data",), outs=("bins",))
def histogram(data: hpvm.i64[:], bins: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_add(bins, data[i] % bins.shape[0], 1)


def test_atomics_do_not_race_with_each_other():
    bins = np.zeros(3, np.int64)
    run_replicated(histogram, (10,), np.arange(10), bins)
    assert bins.tolist() == [4, 3, 3]


@hpvm.leaf(ins=("a",), outs=("tmp", "out"))
def rotate_with_barrier(a: hpvm.i64[:], tmp: hpvm.i64[:], out: hpvm.i64[:]):
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    tmp[i] = a[i] * 10
    hpvm.barrier()  # every tmp[j] written before any is read
    out[i] = tmp[(i + 1) % hpvm.get_num_node_instances_x(node)]
    hpvm.barrier()
    tmp[i] = 0  # read by instance i - 1 in the phase before


def test_accesses_separated_by_a_barrier(interp_path):
    assert runs_from_its_ir(rotate_with_barrier)
    out = np.zeros(4, np.int64)
    run_replicated(rotate_with_barrier, (4,), np.arange(4), np.zeros(4, np.int64), out)
    assert out.tolist() == [10, 20, 30, 0]


@hpvm.leaf(ins=("a",), outs=("a", "b"))
def own_element(a: hpvm.i64[:, :], b: hpvm.i64[:, :]):
    node = hpvm.get_node()
    i, j = hpvm.get_node_instance_id_x(node), hpvm.get_node_instance_id_y(node)
    a[i, j] += 1
    b[i, j] = a[i, j] * 2  # reads what this instance itself wrote


def test_disjoint_elements_and_reading_ones_own_writes():
    a, b = np.ones((2, 3), np.int64), np.zeros((2, 3), np.int64)
    run_replicated(own_element, (2, 3), a, b)
    assert b.tolist() == [[4] * 3] * 2


@hpvm.leaf(ins=("a",), outs=("b",))
def read_shared(a: hpvm.i64[:], b: hpvm.i64[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[0] + a[1]  # every instance reads the same elements


def test_concurrent_reads():
    b = np.zeros(5, np.int64)
    run_replicated(read_shared, (5,), np.array([2, 3]), b)
    assert b.tolist() == [5] * 5


@hpvm.leaf()
def allocate(n: hpvm.i64) -> hpvm.u8[:]:
    return hpvm.malloc(n * 8)


@hpvm.leaf(ins=("data", "buf"), outs=("buf", "sums"))
def block_sum(data: hpvm.i64[:], buf: hpvm.u8[:], sums: hpvm.i64[:]):
    me = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(me)
    n = hpvm.get_num_node_instances_x(me)
    b = hpvm.get_node_instance_id_x(hpvm.get_parent_node(me))
    tmp = buf.view(np.int64)
    tmp[i] = data[b * n + i]  # the same elements of every block's own buffer
    hpvm.barrier()
    if i == 0:
        s = 0
        for j in range(n):
            s += tmp[j]
        sums[b] = s


@hpvm.internal()
def sum_block(data: hpvm.i64[:], sums: hpvm.i64[:], n: hpvm.i64):
    alloc = hpvm.create_node(allocate)
    work = hpvm.create_node_1d(block_sum, n)
    hpvm.bind_in(alloc, 2, 0)
    hpvm.bind_in(work, 0, 0)
    hpvm.edge(alloc, work, hpvm.ALL_TO_ALL, 0, 1)
    hpvm.bind_in(work, 1, 2)


@hpvm.internal()
def block_sums(data: hpvm.i64[:], sums: hpvm.i64[:], n: hpvm.i64):
    node = hpvm.create_node_1d(sum_block, data.shape[0] // n)
    for port in range(3):
        hpvm.bind_in(node, port, port)


def test_malloc_buffers_are_private_to_their_parent_instance():
    sums = np.zeros(4, np.int64)
    run_tracked(block_sums, (np.arange(16), sums, 4), "interp")
    assert sums.tolist() == [6, 22, 38, 54]


@hpvm.leaf(outs=("c",))
def set_all(c: hpvm.i64[:], v: hpvm.i64):
    if hpvm.get_node_instance_id_x(hpvm.get_node()) == 0:
        c[:] = v


@hpvm.internal()
def siblings(c: hpvm.i64[:], v: hpvm.i64, w: hpvm.i64):
    first = hpvm.create_node_1d(set_all, 2)
    second = hpvm.create_node_1d(set_all, 2)  # no edge: they run in creation order (semantics.md §6)
    hpvm.bind_in(first, 0, 0)
    hpvm.bind_in(first, 1, 1)
    hpvm.bind_in(second, 0, 0)
    hpvm.bind_in(second, 2, 1)


def test_children_no_edge_joins_are_ordered():
    c = np.zeros(2, np.int64)
    run_tracked(siblings, (c, 1, 2), "interp")
    assert c.tolist() == [2, 2]


# ---------------------------------------------------------------------------------------
# Switching it off


def test_configure_switches_it_off():
    previous = interp.configure(races=False)
    try:
        assert interp.configure() == {"strict": previous["strict"], "races": False}
        c = np.zeros(4, np.int64)
        run_replicated(halves, (8,), c)  # the race is hidden: instances run in order
        assert c.tolist() == [1, 3, 5, 7]
    finally:
        interp.configure(**previous)
    assert previous["races"] is True
    with pytest.raises(hpvm.OptionError, match="races must be a bool"):
        interp.configure(races="no")
    with pytest.raises(TypeError, match="strict must be a bool"):  # (a TypeError too)
        interp.configure(strict=1)


def test_environment_variable(monkeypatch):
    root = replicated_root(halves, 1)
    c = np.zeros(4, np.int64)
    monkeypatch.setenv("HPVM_INTERP_RACES", "0")
    Interpreter().run(root, (c, 8))  # no race reported
    assert c.tolist() == [1, 3, 5, 7]
    monkeypatch.setenv("HPVM_INTERP_RACES", "1")
    with pytest.raises(hpvm.DataRaceError):
        Interpreter().run(root, (c, 8))
    monkeypatch.setenv("HPVM_INTERP_RACES", "sometimes")
    with pytest.raises(hpvm.LaunchError, match="HPVM_INTERP_RACES='sometimes': set it to 0"):
        Interpreter()
    assert Interpreter(races=False).races is False


# ---------------------------------------------------------------------------------------
# The definition, as a property


@hpvm.leaf(ins=("plan", "data"), outs=("data",))
def planned(plan: hpvm.i64[:, :, :, :], data: hpvm.i64[:]):
    node = hpvm.get_node()
    flat = hpvm.get_node_instance_id_x(node) * hpvm.get_num_node_instances_y(node)
    flat += hpvm.get_node_instance_id_y(node)
    acc = 0
    for phase in range(plan.shape[1]):
        for k in range(plan.shape[2]):
            e = plan[flat, phase, k, 0]
            kind = plan[flat, phase, k, 1]
            if kind == 0:
                acc = acc + data[e]
            elif kind == 1:
                data[e] = flat
            else:
                hpvm.atomic_add(data, e, 1)
        hpvm.barrier()


def first_race(plan, ny):
    """The first access, in the interpreter's order, that conflicts with an earlier one in its
    barrier phase by another instance, and the earlier one it is reported with: writes before
    atomics before reads, the earliest instance of each kind."""
    conflicts = {0: (1, 2), 1: (1, 2, 0), 2: (1, 0)}
    for phase in range(plan.shape[1]):
        seen = {}  # element -> kind -> instances in order of their first access
        for flat in range(plan.shape[0]):
            for k in range(plan.shape[2]):
                e, kind = (int(v) for v in plan[flat, phase, k])
                kinds = seen.setdefault(e, {})
                for old_kind in conflicts[kind]:
                    others = [f for f in kinds.get(old_kind, []) if f != flat]
                    if others:
                        return divmod(flat, ny), e, kind, divmod(others[0], ny), old_kind
                actors = kinds.setdefault(kind, [])
                if flat not in actors:
                    actors.append(flat)
    return None


@st.composite
def plans(draw):
    """A grid and, per instance, barrier phase and access, an element of a 9-element array
    and a kind (0 read, 1 write, 2 atomic): random elements among the first 4 (collisions
    everywhere), or each instance its own element in each phase, another in the next."""
    nx, ny = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    phases, accesses = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    n = nx * ny
    cells = n * phases * accesses
    if draw(st.booleans()):
        owners = [draw(st.permutations(range(9)))[:n] for _ in range(phases)]
        elements = [owners[p][f] for f in range(n) for p in range(phases) for _ in range(accesses)]
    else:
        elements = draw(st.lists(st.integers(0, 3), min_size=cells, max_size=cells))
    kinds = draw(st.lists(st.integers(0, 2), min_size=cells, max_size=cells))
    plan = np.stack([elements, kinds], axis=-1).reshape(n, phases, accesses, 2)
    return nx, ny, plan.astype(np.int64)


def test_the_race_property_leaf_runs_from_its_ir() -> None:
    assert runs_from_its_ir(planned)  # so the property below runs on both paths


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plans())
def test_a_race_is_reported_iff_two_instances_conflict_in_one_phase(interp_path, case):
    nx, ny, plan = case
    expected = first_race(plan, ny)
    root = replicated_root(planned, 2)
    data = np.zeros(9, np.int64)
    if expected is None:
        run_tracked(root, (plan, data, nx, ny), "interp")
        return
    (x, y), e, kind, (ox, oy), old_kind = expected
    with pytest.raises(hpvm.DataRaceError) as info:
        run_tracked(root, (plan, data, nx, ny), "interp")
    verb = ("reads", "writes", "atomically updates")[kind]
    past = ("read", "wrote", "atomically updated")[old_kind]
    message = str(info.value)
    assert message.startswith(f"node root_of_planned/planned[{x}, {y}] (leaf 'planned', ")
    assert f"data race: {verb} array 'data' (root argument 'data') at index [{e}], which " in message
    assert f"which node root_of_planned/planned[{ox}, {oy}] (leaf 'planned', " in message
    assert f") {past}; " in message
