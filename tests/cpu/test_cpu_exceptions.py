"""Exceptions raised while compiled code runs: they reach ``wait`` / ``pop`` with their own
message, naming the node, from any depth of the graph and from any thread of a parallel loop."""

from __future__ import annotations

import warnings

import numba
import numpy as np
import pytest

import hpvm
from markers import fails
from raising_leaves import MARKS, picky, picky_root
from running import run_tracked

TWO_THREADS = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two Numba threads")


pytestmark = pytest.mark.usefixtures("hpvm_runtime")


def run(root, *args):
    return run_tracked(root, args, "cpu")


@hpvm.internal()
def picky_twice(a: hpvm.i64[:]):
    first = hpvm.create_node_1d(picky, a.shape[0])
    second = hpvm.create_node_1d(picky, a.shape[0])
    hpvm.bind_in(first, 0, 0)
    hpvm.bind_in(second, 0, 0)


@hpvm.internal()
def picky_rows(a: hpvm.i64[:]):
    node = hpvm.create_node_1d(picky, a.shape[0])
    hpvm.bind_in(node, 0, 0)


@hpvm.internal()
def picky_nested(a: hpvm.i64[:], parents: hpvm.i64):
    """Two levels down: ``parents`` instances of an internal node replicating the leaf (the
    two levels run as one parallel loop: ``flatten.py``)."""
    rows = hpvm.create_node_1d(picky_rows, parents)
    hpvm.bind_in(rows, 0, 0)


@hpvm.leaf(ins=("a",))
def length(a: hpvm.i64[:]) -> hpvm.i64:
    return a.shape[0]


@hpvm.internal()
def picky_rows_counted(a: hpvm.i64[:]) -> hpvm.i64:
    node = hpvm.create_node_1d(picky, a.shape[0])
    hpvm.bind_in(node, 0, 0)
    total = hpvm.create_node(length)
    hpvm.bind_in(total, 0, 0)
    hpvm.bind_out(total, 0, 0)


@hpvm.internal()
def picky_nested_called(a: hpvm.i64[:], parents: hpvm.i64):
    """The same, but the internal node has an output: its graph function runs per instance."""
    rows = hpvm.create_node_1d(picky_rows_counted, parents)
    hpvm.bind_in(rows, 0, 0)


NESTED = pytest.mark.parametrize(
    "root, path",
    [
        (picky_nested, "picky_nested/picky_rows/picky"),
        (picky_nested_called, "picky_nested_called/picky_rows_counted/picky"),
    ],
)


def test_a_leaf_exception_names_the_node_the_leaf_and_the_line():
    with fails(hpvm.NodeExecutionError, "node picky_root/picky", f"leaf 'picky', {MARKS.at('picky')}") as e:
        run(picky_root, np.array([1, -2, 3]))
    assert "ValueError: negative input" in str(e.value)
    assert "target='interp'" in str(e.value)


def test_a_leaf_used_by_several_nodes_names_them_all():
    with fails(hpvm.NodeExecutionError, "picky_twice/picky", "picky_twice/picky_1", "used by all 2"):
        run(picky_twice, np.array([1, -2, 3]))


def test_a_leaf_exception_while_streaming_names_the_node():
    @hpvm.internal()
    def streamed(a: hpvm.i64[:]):
        node = hpvm.create_node_1d(picky, a.shape[0])
        hpvm.bind_in(node, 0, 0, stream=True)

    a = np.array([1, -2, 3])
    hpvm.track_memory(a)
    handle = hpvm.launch(streamed, None, stream=True, target="cpu")
    hpvm.push(handle, (a,))
    with fails(hpvm.NodeExecutionError, "streamed/picky", f"leaf 'picky', {MARKS.at('picky')}", "negative"):
        hpvm.pop(handle)
        hpvm.wait(handle)


@NESTED
def test_a_leaf_exception_two_levels_down_keeps_its_message(root, path):
    with fails(hpvm.NodeExecutionError, f"node {path}", "ValueError: negative input"):
        run(root, np.array([1, -2, 3]), 2)


@TWO_THREADS
@NESTED
def test_an_exception_on_a_worker_thread_is_not_lost(root, path):
    # The failing instance is the last one: its chunk runs on a worker thread, where Numba's
    # own parallel loops drop exceptions.
    a = np.ones(100_000, np.int64)
    a[-1] = -1
    with fails(hpvm.NodeExecutionError, path, "negative input"):
        run(root, a, 4)
    with fails(hpvm.NodeExecutionError, "picky_root/picky", "negative input"):
        run(picky_root, a)


@hpvm.leaf()
def nothing(n: hpvm.i64) -> None:
    pass


@hpvm.internal()
def shrinking(n: hpvm.i64):
    hpvm.bind_in(hpvm.create_node_1d(nothing, n - 5), 0, 0)


@hpvm.internal()
def replicated_shrinking(n: hpvm.i64):
    node = hpvm.create_node_1d(shrinking, 3)
    hpvm.bind_in(node, 0, 0)


@hpvm.leaf()
def same(n: hpvm.i64) -> hpvm.i64:
    return n


@hpvm.internal()
def shrinking_counted(n: hpvm.i64) -> hpvm.i64:
    hpvm.bind_in(hpvm.create_node_1d(nothing, n - 5), 0, 0)
    total = hpvm.create_node(same)
    hpvm.bind_in(total, 0, 0)
    hpvm.bind_out(total, 0, 0)


@hpvm.internal()
def replicated_shrinking_called(n: hpvm.i64):
    node = hpvm.create_node_1d(shrinking_counted, 3)
    hpvm.bind_in(node, 0, 0)


@pytest.mark.parametrize("root", [replicated_shrinking, replicated_shrinking_called])
def test_a_negative_size_two_levels_down_is_a_launch_error(root):
    with fails(hpvm.LaunchError, "node 'nothing'", "replication size n - 5 is negative"):
        run(root, 2)


@hpvm.leaf()
def source(n: hpvm.i64) -> hpvm.i64:
    return n


@hpvm.leaf()
def sink(x: hpvm.i64) -> None:
    pass


@hpvm.internal()
def mismatched(n: hpvm.i64):
    src = hpvm.create_node_1d(source, n)
    dst = hpvm.create_node_1d(sink, n + 1)
    hpvm.bind_in(src, 0, 0)
    hpvm.edge(src, dst, hpvm.ONE_TO_ONE, 0, 0)


@hpvm.internal()
def replicated_mismatched(n: hpvm.i64):
    node = hpvm.create_node_1d(mismatched, 2)
    hpvm.bind_in(node, 0, 0)


@hpvm.internal()
def mismatched_counted(n: hpvm.i64) -> hpvm.i64:
    src = hpvm.create_node_1d(source, n)
    dst = hpvm.create_node_1d(sink, n + 1)
    hpvm.bind_in(src, 0, 0)
    hpvm.edge(src, dst, hpvm.ONE_TO_ONE, 0, 0)
    total = hpvm.create_node(same)
    hpvm.bind_in(total, 0, 0)
    hpvm.bind_out(total, 0, 0)


@hpvm.internal()
def replicated_mismatched_called(n: hpvm.i64):
    node = hpvm.create_node_1d(mismatched_counted, 2)
    hpvm.bind_in(node, 0, 0)


@pytest.mark.parametrize("root", [replicated_mismatched, replicated_mismatched_called])
def test_a_grid_mismatch_two_levels_down_is_a_launch_error(root):
    with fails(hpvm.LaunchError, "node 'sink'", "one-to-one edge", "between grids of different extents"):
        run(root, 4)


@TWO_THREADS
def test_a_leaf_that_can_raise_runs_in_parallel_without_warnings():
    @hpvm.leaf(ins=("a",), outs=("threads",))
    def checked(a: hpvm.i64[:], threads: hpvm.i64[:]) -> None:
        i = hpvm.get_node_instance_id_x(hpvm.get_node())
        if a[i] < 0:
            raise ValueError("negative input")
        threads[i] = numba.get_thread_id()

    @hpvm.internal()
    def root(a: hpvm.i64[:], threads: hpvm.i64[:]):
        node = hpvm.create_node_1d(checked, a.shape[0])
        hpvm.bind_in(node, 0, 0)
        hpvm.bind_in(node, 1, 1)

    threads = np.full(100_000, -1, np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Numba's NumbaPerformanceWarning included
        run(root, np.ones(100_000, np.int64), threads)
    assert set(np.unique(threads)) == {0, 1}  # both threads ran instances


@numba.njit
def parse_if_negative(x):
    if x < 0:
        with numba.objmode():
            int("not a number")  # a Python exception, set on the thread that runs it
    return x


@hpvm.leaf(ins=("a",))
def calls_object_mode(a: hpvm.i64[:]) -> None:
    parse_if_negative(a[hpvm.get_node_instance_id_x(hpvm.get_node())])


@hpvm.internal()
def object_mode_root(a: hpvm.i64[:]):
    node = hpvm.create_node_1d(calls_object_mode, a.shape[0])
    hpvm.bind_in(node, 0, 0)


@TWO_THREADS
def test_a_python_exception_on_a_worker_thread_is_reported():
    a = np.ones(100_000, np.int64)
    a[-1] = -1
    with fails(hpvm.NodeExecutionError, "raised a Python exception (in object mode) in a parallel loop"):
        run(object_mode_root, a)


@hpvm.leaf()
def scratch_total(n: hpvm.i64) -> hpvm.f64:
    scratch = np.zeros(n)  # n < 0: Numba raises ValueError itself, with no line of ours
    return scratch.sum()


@hpvm.internal()
def scratch_root(n: hpvm.i64):
    node = hpvm.create_node(scratch_total)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


def test_an_exception_numba_raises_itself_names_the_graph_and_the_way_to_the_node():
    with pytest.raises(hpvm.NodeExecutionError) as info:
        run(scratch_root, -1)
    message = str(info.value)
    assert "graph 'scratch_root' on the cpu back end raised ValueError: negative dimensions" in message
    assert "target='interp'" in message
    assert isinstance(info.value.__cause__, ValueError)
    assert run(scratch_root, 3) == (0.0,)
