"""Which level runs in parallel: the outermost replicated one, wherever it is (below
one-instance internal nodes, the HPVM-C shape), and parents × children as one space."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import hpvm
from hpvm.backends import get_backend
from running import run_tracked

pytestmark = [
    pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two Numba threads"),
    pytest.mark.usefixtures("hpvm_runtime"),
]
N = 100_000


def run(root, *args, target="cpu"):
    return run_tracked(root, args, target)


@hpvm.leaf(outs=("threads",))
def record_thread(threads: hpvm.i64[:]) -> None:
    threads[hpvm.get_node_instance_id_x(hpvm.get_node())] = numba.get_thread_id()


@hpvm.internal()
def replicate(threads: hpvm.i64[:]):
    node = hpvm.create_node_1d(record_thread, threads.shape[0])
    hpvm.bind_in(node, 0, 0)


@hpvm.internal()
def wrapper(threads: hpvm.i64[:]):
    """root → one-instance internal node → replicated leaf: every Parboil port's shape."""
    node = hpvm.create_node(replicate)
    hpvm.bind_in(node, 0, 0)


@hpvm.internal()
def twice_wrapped(threads: hpvm.i64[:]):
    node = hpvm.create_node(wrapper)
    hpvm.bind_in(node, 0, 0)


@hpvm.internal()
def one_parent(threads: hpvm.i64[:]):
    """A replicated internal node with a single instance: parallel only if flattened."""
    node = hpvm.create_node_1d(replicate, 1)
    hpvm.bind_in(node, 0, 0)


@pytest.mark.parametrize("root", [wrapper, twice_wrapped, one_parent])
def test_the_replicated_leaf_runs_on_every_thread(root):
    threads = np.full(N, -1, np.int64)
    run(root, threads)
    assert set(np.unique(threads)) == {0, 1}


@hpvm.leaf(outs=("out",))
def place(out: hpvm.i64[:, :], base: hpvm.i64) -> None:
    """Writes where it is: its tile (the parent's ids and extents) and its own ids."""
    node = hpvm.get_node()
    tile = hpvm.get_parent_node(node)
    row = hpvm.get_node_instance_id_x(tile) * hpvm.get_num_node_instances_x(
        node
    ) + hpvm.get_node_instance_id_x(node)
    col = hpvm.get_node_instance_id_y(tile) * hpvm.get_num_node_instances_y(
        node
    ) + hpvm.get_node_instance_id_y(node)
    out[row, col] = (
        hpvm.get_node_instance_id_x(tile) * 1000
        + hpvm.get_node_instance_id_y(tile) * 100
        + hpvm.get_num_node_instances_y(tile) * 10
        + hpvm.get_node_instance_id_y(node)
        + base
    )


@hpvm.internal()
def tile(out: hpvm.i64[:, :], base: hpvm.i64, th: hpvm.i64, tw: hpvm.i64):
    node = hpvm.create_node_2d(place, th, tw)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


@hpvm.internal()
def tiles(out: hpvm.i64[:, :], base: hpvm.i64, th: hpvm.i64, tw: hpvm.i64):
    node = hpvm.create_node_2d(tile, out.shape[0] // th, out.shape[1] // tw)
    for port in range(4):
        hpvm.bind_in(node, port, port)


@pytest.mark.parametrize("shape, th, tw", [((15, 14), 5, 2), ((3, 8), 3, 8), ((1, 1), 1, 1), ((0, 4), 1, 2)])
def test_flattened_tiles_see_their_parent_and_cover_the_grid(shape, th, tw):
    # 3 x 7 parents of 5 x 2 children: chunks of the flat space end inside parents.
    expected, got = np.full(shape, -1, np.int64), np.full(shape, -1, np.int64)
    run(tiles, expected, 7, th, tw, target="interp")
    run(tiles, got, 7, th, tw)
    np.testing.assert_array_equal(got, expected)
    assert (got >= 0).all()


@hpvm.leaf()
def count(n: hpvm.i64) -> hpvm.i64:
    return n + hpvm.get_node_instance_id_x(hpvm.get_node())


@hpvm.leaf(outs=("out",))
def fill(out: hpvm.i64[:, :], row: hpvm.i64) -> None:
    out[row, hpvm.get_node_instance_id_x(hpvm.get_node())] = row


@hpvm.internal()
def fill_row(out: hpvm.i64[:, :], row: hpvm.i64):
    """Its child's size is a per-instance value: not flattened, still right."""
    node = hpvm.create_node_1d(fill, row + 1)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


@hpvm.internal()
def triangle(out: hpvm.i64[:, :], n: hpvm.i64):
    rows = hpvm.create_node_1d(count, out.shape[0])
    hpvm.bind_in(rows, 1, 0)
    fills = hpvm.create_node_1d(fill_row, out.shape[0])
    hpvm.bind_in(fills, 0, 0)
    hpvm.edge(rows, fills, hpvm.ONE_TO_ONE, 0, 1)


def test_per_instance_child_sizes_stay_per_instance():
    expected, got = np.full((6, 6), -1, np.int64), np.full((6, 6), -1, np.int64)
    run(triangle, expected, 0, target="interp")
    run(triangle, got, 0)
    np.testing.assert_array_equal(got, expected)
    assert got[5, 5] == 5 and got[0, 1] == -1


@hpvm.leaf()
def nothing(n: hpvm.i64) -> None:
    pass


@hpvm.internal()
def fill_rows(out: hpvm.i64[:, :], row: hpvm.i64):
    """A uniform child size, a per-instance value: flattened, the value read per parent."""
    node = hpvm.create_node_1d(fill, out.shape[1])
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


@hpvm.internal()
def square(out: hpvm.i64[:, :], n: hpvm.i64):
    rows = hpvm.create_node_1d(count, out.shape[0])
    hpvm.bind_in(rows, 1, 0)
    between = hpvm.create_node_1d(nothing, 3)  # keeps rows and fills in loops of their own
    hpvm.bind_in(between, 1, 0)
    fills = hpvm.create_node_1d(fill_rows, out.shape[0])
    hpvm.bind_in(fills, 0, 0)
    hpvm.edge(rows, fills, hpvm.ONE_TO_ONE, 0, 1)


def test_per_instance_inputs_of_a_flattened_node_are_read_per_instance():
    got = np.full((7, 300), -1, np.int64)
    run(square, got, 0)
    np.testing.assert_array_equal(got, np.repeat(np.arange(7)[:, None], 300, axis=1))


@hpvm.leaf(ins=("values",), outs=("bins",))
def bin_value(values: hpvm.u8[:], bins: hpvm.i32[:]) -> None:
    hpvm.atomic_add(bins, values[hpvm.get_node_instance_id_x(hpvm.get_node())] % bins.shape[0], 1)


@hpvm.internal()
def histogram(values: hpvm.u8[:], bins: hpvm.i32[:]):
    node = hpvm.create_node_1d(bin_value, values.shape[0])
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


@hpvm.internal()
def wrapped_histogram(values: hpvm.u8[:], bins: hpvm.i32[:]):
    node = hpvm.create_node(histogram)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


def test_atomics_below_a_wrapper_node_are_privatized():
    values = np.random.default_rng(0).integers(0, 256, N, dtype=np.uint8)
    bins = np.zeros(16, np.int32)
    run(wrapped_histogram, values, bins)
    np.testing.assert_array_equal(bins, np.bincount(values % 16, minlength=16))
    assert [p[1:3] for p in get_backend("cpu").prepare(wrapped_histogram).gen.privatized] == [("bins", "add")]
