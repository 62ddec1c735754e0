"""Streams whose stages each fill the machine run as one stage (issue 24, item 2): when a
pipeline has more stages than cores and every stage runs a replicated node that ``cpu``
spreads over every core, the stages run per item one after the other on one stage thread
(``streaming.one_stage``), with the same results, order and errors as with a thread per
stage."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import hpvm
from hpvm.backends import get_backend
from hpvm.runtime import streaming
from markers import fails

N = 64  # instances per stage


@hpvm.leaf(ins=("x",), outs=("y",))
def tripled(x: hpvm.i64[:], y: hpvm.i64[:]) -> hpvm.i64[:]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    y[i] = x[i] * 3
    return y


@hpvm.leaf(ins=("y",), outs=("z",))
def rotated(y: hpvm.i64[:], z: hpvm.i64[:]) -> hpvm.i64[:]:
    """Reads its neighbour's value: the edge into it must be all-to-all (a whole frame)."""
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    z[i] = y[(i + 1) % hpvm.get_num_node_instances_x(node)] + 1
    return z


@hpvm.leaf(ins=("z",), outs=("w",))
def squared(z: hpvm.i64[:], w: hpvm.i64[:]) -> hpvm.i64[:]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if z[i] < 0:
        raise ValueError("negative value")
    w[i] = z[i] * z[i]
    return w


@hpvm.internal()
def three_stages(x: hpvm.i64[:], y: hpvm.i64[:], z: hpvm.i64[:], w: hpvm.i64[:]):
    """Three replicated stages joined by streaming edges that carry whole arrays."""
    a = hpvm.create_node_1d(tripled, x.shape[0])
    b = hpvm.create_node_1d(rotated, x.shape[0])
    c = hpvm.create_node_1d(squared, x.shape[0])
    for node, names in ((a, ("x", "y")), (b, ("z",)), (c, ("w",))):
        for name in names:
            hpvm.bind_in(node, name, name, stream=True)
    hpvm.edge(a, b, hpvm.ALL_TO_ALL, 0, "y", stream=True)
    hpvm.edge(b, c, hpvm.ALL_TO_ALL, 0, "z", stream=True)
    hpvm.bind_out(c, 0, 0, stream=True)


def expected(x: np.ndarray) -> np.ndarray:
    return (np.roll(x * 3, -1) + 1) ** 2


pytestmark = pytest.mark.usefixtures("hpvm_runtime_stopped")


def cores(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """Make the machine look ``count`` cores wide to the streaming runtime."""
    monkeypatch.setattr(streaming, "machine_cores", lambda: count)


def stage_threads() -> int:
    """How many stage threads are running now."""
    return sum(t.name.startswith(streaming.THREAD_PREFIX) for t in threading.enumerate())


def stream(target: str, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
    """Push every input (each item its own buffers), pop every result: (results, how many
    stage threads the stream started)."""
    items = [(x, np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)) for x in inputs]
    for item in items:
        for array in item:
            hpvm.track_memory(array)
    handle = hpvm.launch(three_stages, None, stream=True, target=target)
    threads = stage_threads()
    for item in items:
        hpvm.push(handle, item)
    results = [hpvm.request_memory(hpvm.pop(handle)[0]).copy() for _ in items]
    hpvm.wait(handle)
    return results, threads


def frames(count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [rng.integers(0, 1000, N, dtype=np.int64) for _ in range(count)]


def test_more_stages_than_cores_run_as_one_stage_thread_with_the_interpreters_results(monkeypatch):
    cores(monkeypatch, 1)
    inputs = frames(12)
    got, threads = stream("cpu", inputs)
    reference, interp_threads = stream("interp", inputs)
    assert threads == 1  # one stage: every node, per item in order
    assert interp_threads == 3  # the interpreter's instances run one after the other: a thread per stage
    for x, g, r in zip(inputs, got, reference):
        np.testing.assert_array_equal(g, expected(x))
        np.testing.assert_array_equal(g, r)


def test_as_many_cores_as_stages_keep_a_thread_per_stage(monkeypatch):
    cores(monkeypatch, 3)
    monkeypatch.setattr(type(get_backend("cpu")), "loop_threads", lambda self: 3)
    inputs = frames(5)
    got, threads = stream("cpu", inputs)
    assert threads == 3
    for x, g in zip(inputs, got):
        np.testing.assert_array_equal(g, expected(x))


def test_the_decision(monkeypatch):
    """More stages than cores, each with a replicated node, on a back end whose loops use
    every core: one stage. Not when its loops use fewer threads than there are cores (the
    stages overlapping is then what uses the other cores), nor with a stage of one
    instance, nor with ``FUSE_PARALLEL`` off."""
    plan = streaming.plan_stages(three_stages)
    cpu, interp = get_backend("cpu"), get_backend("interp")
    cores(monkeypatch, 2)
    monkeypatch.setattr(type(cpu), "loop_threads", lambda self: 2)
    assert streaming.one_stage(cpu, plan)
    assert not streaming.one_stage(interp, plan)  # loop_threads 1: stage threads overlap
    assert not streaming.one_stage(cpu, plan[:2])  # two stages on two cores
    single = type(plan[1][0])(plan[1][0].name, plan[1][0].function, ())
    assert not streaming.one_stage(cpu, [plan[0], [single], plan[2]])
    monkeypatch.setattr(type(cpu), "loop_threads", lambda self: 1)  # NUMBA_NUM_THREADS=1
    assert not streaming.one_stage(cpu, plan)
    monkeypatch.setattr(type(cpu), "loop_threads", lambda self: 2)
    monkeypatch.setattr(streaming, "FUSE_PARALLEL", False)
    assert not streaming.one_stage(cpu, plan)


def test_a_failing_item_fails_in_item_order(monkeypatch):
    """The items before the failing one are delivered; its pop raises naming the node, and
    so does every later call."""
    cores(monkeypatch, 1)
    inputs = frames(6)
    inputs[3][7] = -10  # squared raises for item 3 (z = -29)
    items = [(x, np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)) for x in inputs]
    for item in items:
        for array in item:
            hpvm.track_memory(array)
    handle = hpvm.launch(three_stages, None, stream=True, target="cpu")
    assert stage_threads() == 1
    for item in items:
        hpvm.push(handle, item)
    for x in inputs[:3]:
        np.testing.assert_array_equal(hpvm.request_memory(hpvm.pop(handle)[0]), expected(x))
    with fails(hpvm.NodeExecutionError, "three_stages/squared", "negative value"):
        hpvm.pop(handle)
    with fails(hpvm.NodeExecutionError, "three_stages/squared"):
        hpvm.push(handle, items[0])
    with fails(hpvm.NodeExecutionError, "three_stages/squared"):
        hpvm.wait(handle)
