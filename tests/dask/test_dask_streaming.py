"""Streaming launches on ``dask``: each pipeline stage a task per item on a worker of its
own, items in push order, results as ``interp`` gives them, arrays handed on between stages
included (a stage writing one it received writes the pushed array). Worker processes too (slow): a stage's array writes come back."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import hpvm
from markers import needs_backend
from streaming_programs import FAILING_ITEM, FAILING_NODE, NESTED, add_one, nested_failing, three_stages

pytestmark = needs_backend("dask")


@hpvm.leaf(ins=("row",), outs=("row",))
def scale_row(row: hpvm.f64[:], k: hpvm.f64) -> hpvm.f64:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    row[i] = row[i] * k
    return k


@hpvm.leaf
def plus_half(k: hpvm.f64) -> hpvm.f64:
    return k + 0.5


@hpvm.internal
def rows_then_scalar(row: hpvm.f64[:], k: hpvm.f64):
    s1 = hpvm.create_node_1d(scale_row, row.shape[0])
    s2 = hpvm.create_node(plus_half)
    hpvm.bind_in(s1, 0, 0, stream=True)
    hpvm.bind_in(s1, 1, 1, stream=True)
    hpvm.edge(s1, s2, hpvm.ALL_TO_ALL, 0, 0, stream=True)
    hpvm.bind_out(s2, 0, 0, stream=True)


@hpvm.leaf(ins=("a",))
def hand_on(a: hpvm.f64[:]) -> hpvm.f64[:]:
    return a


@hpvm.leaf(ins=("a",))
def total(a: hpvm.f64[:]) -> hpvm.f64:
    return a.sum()


@hpvm.internal
def array_edge(a: hpvm.f64[:]):
    s1 = hpvm.create_node(hand_on)
    s2 = hpvm.create_node(total)
    hpvm.bind_in(s1, 0, 0, stream=True)
    hpvm.edge(s1, s2, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(s2, 0, 0, stream=True)


def _stream(root, items, target):
    handle = hpvm.launch(root, None, stream=True, target=target)
    for item in items:
        hpvm.push(handle, item)
    results = [hpvm.pop(handle, timeout=60) for _ in items]
    hpvm.wait(handle)
    return results


def test_a_pipeline_pops_in_push_order(dask_runtime):
    items = [(x,) for x in range(30)]
    assert _stream(three_stages, items, "dask") == _stream(three_stages, items, "interp")


@pytest.mark.parametrize("name", sorted(NESTED))
def test_nested_pipelines_give_interps_results(dask_runtime, name):
    """A pipeline inside an internal node: its stages are root stages, a worker each."""
    root, expect_item, _ = NESTED[name]
    items = [(x,) for x in range(12)]
    got = _stream(root, items, "dask")
    assert got == _stream(root, items, "interp") == [expect_item(x) for (x,) in items]


def test_an_error_in_a_nested_stage_names_its_node_path(dask_runtime):
    handle = hpvm.launch(nested_failing, None, stream=True, target="dask")
    for x in range(FAILING_ITEM + 2):
        hpvm.push(handle, (x,))
    assert [hpvm.pop(handle, timeout=60) for _ in range(FAILING_ITEM)] == [
        (x + 2,) for x in range(FAILING_ITEM)
    ]
    with pytest.raises(hpvm.NodeExecutionError, match=FAILING_NODE):
        hpvm.pop(handle, timeout=60)


def _rows_items(count: int) -> list[tuple[np.ndarray, float]]:
    rng = np.random.default_rng(count)
    return [(rng.random(7), float(k)) for k in range(count)]


def _check_rows(target_runtime_ready: bool = True) -> None:
    got, want = _rows_items(6), _rows_items(6)
    for row, _ in got + want:
        hpvm.track_memory(row)
    assert _stream(rows_then_scalar, got, "dask") == _stream(rows_then_scalar, want, "interp")
    for (g, _), (w, _) in zip(got, want):
        np.testing.assert_array_equal(hpvm.request_memory(g), w)


def test_array_writes_of_a_stage_reach_the_pushed_arrays(dask_runtime):
    _check_rows()


def _tracked_items(count: int, size: int = 5) -> list[tuple[np.ndarray]]:
    items = [(np.arange(size, dtype=np.float64) + k,) for k in range(count)]
    for (a,) in items:
        hpvm.track_memory(a)
    return items


def test_stages_hand_on_arrays_in_order(dask_runtime):
    got, want = _tracked_items(8), _tracked_items(8)
    assert _stream(array_edge, got, "dask") == _stream(array_edge, want, "interp")


@hpvm.leaf(ins=("a",), outs=("a",))
def hand_on_writable(a: hpvm.f64[:]) -> hpvm.f64[:]:
    return a


@hpvm.leaf(ins=("a",), outs=("a",))
def doubles_received(a: hpvm.f64[:]) -> hpvm.f64:
    for k in range(a.shape[0]):
        a[k] = a[k] * 2.0
    return a.sum()


@hpvm.internal
def writes_downstream(a: hpvm.f64[:]):
    s1 = hpvm.create_node(hand_on_writable)
    s2 = hpvm.create_node(doubles_received)
    hpvm.bind_in(s1, 0, 0, stream=True)
    hpvm.edge(s1, s2, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(s2, 0, 0, stream=True)


def test_a_stage_writing_an_array_it_received_writes_the_pushed_array(dask_runtime):
    got, want = _tracked_items(6), _tracked_items(6)
    assert _stream(writes_downstream, got, "dask") == _stream(writes_downstream, want, "interp")
    for (g,), (w,) in zip(got, want):
        np.testing.assert_array_equal(hpvm.request_memory(g), w)
        np.testing.assert_array_equal(w, (np.arange(5) + w[0] / 2) * 2)


@pytest.mark.slow
def test_a_pipeline_on_worker_processes(process_cluster):
    import cloudpickle
    from distributed import Client

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    client = Client(process_cluster, set_as_default=False)
    hpvm.cleanup()
    hpvm.init(dask=client)
    try:
        items = [(x,) for x in range(20)]
        assert _stream(three_stages, items, "dask") == _stream(three_stages, items, "interp")
        _check_rows()
        got, want = _tracked_items(6), _tracked_items(6)
        assert _stream(writes_downstream, got, "dask") == _stream(writes_downstream, want, "interp")
        for (g,), (w,) in zip(got, want):
            np.testing.assert_array_equal(hpvm.request_memory(g), w)
    finally:
        hpvm.cleanup()
        client.close()


def test_a_batch_of_items_is_one_task(dask_runtime):
    """(The streaming scheduler sizes batches by how long items take; called directly here.)"""
    from distributed import get_task_stream

    from hpvm.backends import RunContext, get_backend

    first = three_stages.graph.nodes[0]
    ctx = RunContext(cluster=lambda: dask_runtime)
    items = [[x] for x in range(8)]
    with get_task_stream(dask_runtime) as stream:
        batch = get_backend("dask").run_stage_batch(three_stages, items, [first], [{}] * 8, ctx)
    want = get_backend("cpu").run_stage_batch(three_stages, items, [first], [{}] * 8)
    assert batch.error is None, batch.error
    assert [t["key"].split("-")[0] for t in stream.data] == ["run_stage_batch"]
    assert batch.produced == want.produced and batch.outputs == want.outputs


@hpvm.leaf
def fails_on_five(x: hpvm.i64) -> hpvm.i64:
    if x == 5:
        raise ValueError("five")
    return x


@hpvm.internal
def failing_stages(x: hpvm.i64):
    s1 = hpvm.create_node(add_one)
    s2 = hpvm.create_node(fails_on_five)
    hpvm.bind_in(s1, 0, 0, stream=True)
    hpvm.edge(s1, s2, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(s2, 0, 0, stream=True)


def test_an_item_failing_in_a_batch_delivers_the_ones_before_it(dask_runtime):
    handle = hpvm.launch(failing_stages, None, stream=True, target="dask", capacity=64)
    for x in range(10):
        hpvm.push(handle, (x,))
    assert [hpvm.pop(handle, timeout=60) for _ in range(4)] == [(x + 1,) for x in range(4)]
    with pytest.raises(hpvm.NodeExecutionError, match="fails_on_five"):
        hpvm.pop(handle, timeout=60)


@hpvm.leaf(ins=("a",))
def sum_a(a: hpvm.f64[:]) -> hpvm.f64:
    return a.sum()


@hpvm.leaf(ins=("b",))
def plus_sum_b(s: hpvm.f64, b: hpvm.f64[:]) -> hpvm.f64:
    return s + b.sum()


@hpvm.internal
def two_arrays(a: hpvm.f64[:], b: hpvm.f64[:]):
    s1 = hpvm.create_node(sum_a)
    s2 = hpvm.create_node(plus_sum_b)
    hpvm.bind_in(s1, 0, 0, stream=True)
    hpvm.bind_in(s2, 1, 1, stream=True)
    hpvm.edge(s1, s2, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(s2, 0, 0, stream=True)


def test_each_stage_gets_only_the_pushed_arrays_it_reads(dask_runtime):
    items = [(np.arange(100.0) + k, np.arange(300.0) * k) for k in range(4)]
    for a, b in items:
        hpvm.track_memory(a)
        hpvm.track_memory(b)
    before = hpvm.memory_stats()
    got = _stream(two_arrays, items, "dask")
    moved = hpvm.memory_stats().since(before)
    assert got == [(a.sum() + b.sum(),) for a, b in items]
    assert moved.to_device == sum(a.nbytes + b.nbytes for a, b in items)  # each array to one stage
    assert moved.to_host == 0  # nothing written; scalars are not counted
