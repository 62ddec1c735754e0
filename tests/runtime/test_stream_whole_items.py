"""Whole items side by side (issue 24, item 2): a stream of more stages than cores whose
stages may each run several items at once runs as one stage, each item whole on a replica
thread (``streaming.whole_items``), with the interpreter's results in push order, items
that write a shared array one at a time, and failures in item order."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.backends import get_backend
from hpvm.runtime import replicas, streaming
from markers import fails
from stage_overlap import StageOverlap

N = 16  # elements per item


@hpvm.leaf(ins=("x", "scratch"), outs=("scratch", "y"))
def work(x: hpvm.f64[:], n: hpvm.i64, scratch: hpvm.f64[:], y: hpvm.f64[:]) -> hpvm.f64[:]:
    """``n`` steps of busy work into ``scratch[0]``, then ``y = 2 x + n % 5``; raises on a
    negative ``x[0]`` (after the work). ``y`` depends on ``n % 5`` only, so the
    interpreter's reference runs ``n % 5`` steps."""
    s = 0.0
    for k in range(n):
        s += (k % 7) * 1e-9
    if x[0] < 0:
        raise ValueError("negative input")
    scratch[0] = s
    for i in range(x.shape[0]):
        y[i] = x[i] * 2.0 + n % 5
    return y


@hpvm.leaf(ins=("y",), outs=("z",))
def shifted(y: hpvm.f64[:], z: hpvm.f64[:]) -> hpvm.f64[:]:
    """Replicated over the elements; reads its neighbour's value: the stage before must
    have finished the whole item."""
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    z[i] = y[(i + 1) % hpvm.get_num_node_instances_x(node)] + 1.0
    return z


@hpvm.leaf(ins=("z",), outs=("w",))
def squared(z: hpvm.f64[:], w: hpvm.f64[:]) -> hpvm.f64[:]:
    """Replicated over the elements."""
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    w[i] = z[i] * z[i]
    return w


def chained(x: Any) -> Any:
    """``work`` → ``shifted`` → ``squared`` joined by streaming edges that carry whole
    arrays, the last two replicated over the elements (their loops may fill the machine);
    called from a builder, which binds the last node's output. Returns that node."""
    a = hpvm.create_node(work)
    b = hpvm.create_node_1d(shifted, x.shape[0])
    c = hpvm.create_node_1d(squared, x.shape[0])
    for name in ("x", "n", "scratch", "y"):
        hpvm.bind_in(a, name, name, stream=True)
    hpvm.bind_in(b, "z", "z", stream=True)
    hpvm.bind_in(c, "w", "w", stream=True)
    hpvm.edge(a, b, hpvm.ALL_TO_ALL, 0, "y", stream=True)
    hpvm.edge(b, c, hpvm.ALL_TO_ALL, 0, "z", stream=True)
    return c


@hpvm.internal()
def three_stages(
    x: hpvm.f64[:], n: hpvm.i64, scratch: hpvm.f64[:], y: hpvm.f64[:], z: hpvm.f64[:], w: hpvm.f64[:]
):
    """The three stages of ``chained``."""
    hpvm.bind_out(chained(x), 0, 0, stream=True)


@hpvm.leaf(ins=("w",), outs=("w",))
def printed(w: hpvm.f64[:]) -> hpvm.f64[:]:
    print(w[0])
    return w


@hpvm.internal()
def printing_last(
    x: hpvm.f64[:], n: hpvm.i64, scratch: hpvm.f64[:], y: hpvm.f64[:], z: hpvm.f64[:], w: hpvm.f64[:]
):
    """``three_stages`` with a fourth stage that prints: output would interleave."""
    last = hpvm.create_node(printed)
    hpvm.edge(chained(x), last, hpvm.ALL_TO_ALL, 0, "w", stream=True)
    hpvm.bind_out(last, 0, 0, stream=True)


def expected(x: np.ndarray, n: int) -> np.ndarray:
    return (np.roll(x * 2.0 + n % 5, -1) + 1.0) ** 2


pytestmark = pytest.mark.usefixtures("hpvm_runtime_stopped")


@pytest.fixture(params=[1, 2], ids=["loops on 1 thread", "loops on 2 threads"])
def two_cores(request, monkeypatch):
    """A 2-core machine whose loops use one thread (``NUMBA_NUM_THREADS=1``) or both, and
    replicas as soon as a time allows them. (With both, a stage's loops fill the machine:
    whole items must still take every core, each replica's loops on one.)"""
    monkeypatch.setattr(streaming, "machine_cores", lambda: 2)
    monkeypatch.setattr(type(get_backend("cpu")), "loop_threads", lambda self: request.param)
    monkeypatch.setattr(replicas, "REPLICA_SECONDS", 0.0)


def items(steps: list[int], scratch: np.ndarray | None = None) -> list[tuple]:
    """An item per entry of ``steps``, each with arrays of its own (``scratch`` shared when given)."""
    made = []
    for k, n in enumerate(steps):
        x = np.arange(N, dtype=np.float64) + 3 * k
        arrays = [x, scratch if scratch is not None else np.zeros(1), np.zeros(N), np.zeros(N), np.zeros(N)]
        for a in arrays:
            hpvm.track_memory(a)
        made.append((arrays[0], n, *arrays[1:]))
    return made


def streamed(target: str, pushed: list[tuple], root=three_stages) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    """Push every item, then pop each result (a copy) in push order."""
    handle = hpvm.launch(root, None, stream=True, target=target, capacity=len(pushed))
    for args in pushed:
        hpvm.push(handle, args)
    out = [hpvm.request_memory(hpvm.pop(handle)[0]).copy() for _ in pushed]
    hpvm.wait(handle)
    return out


def test_the_decision(monkeypatch):
    """More stages than cores, every one of which may run items at once, on ``cpu``: whole
    items. Not on a back end without replicas (``interp``), nor with as many cores as
    stages, nor with a stage that prints, nor with ``WHOLE_ITEMS`` or replicas off."""
    plan = streaming.plan_stages(three_stages)
    cpu, interp = get_backend("cpu"), get_backend("interp")
    monkeypatch.setattr(streaming, "machine_cores", lambda: 2)
    assert len(plan) == 3
    assert streaming.whole_items(cpu, three_stages, plan)
    assert not streaming.whole_items(interp, three_stages, plan)
    assert not streaming.whole_items(cpu, three_stages, plan[:2])  # two stages on two cores
    assert not streaming.whole_items(cpu, printing_last, streaming.plan_stages(printing_last))
    monkeypatch.setattr(streaming, "machine_cores", lambda: 3)
    assert not streaming.whole_items(cpu, three_stages, plan)
    monkeypatch.setattr(streaming, "machine_cores", lambda: 2)
    monkeypatch.setattr(replicas, "REPLICAS", False)
    assert not streaming.whole_items(cpu, three_stages, plan)
    monkeypatch.setattr(replicas, "REPLICAS", True)
    monkeypatch.setattr(streaming, "WHOLE_ITEMS", False)
    assert not streaming.whole_items(cpu, three_stages, plan)


def test_whole_items_run_side_by_side_with_the_interpreters_results(two_cores, monkeypatch):
    """Random run times per item, so that items end out of order: every result is the
    interpreter's, in push order; the stream ran one stage of all three nodes, and ran
    two items of it at once."""
    rng = random.Random(11)
    steps = [rng.choice([10**6, 3 * 10**6 + 1, 10**7 + 2]) for _ in range(16)]
    expected_items = streamed("interp", items([n % 5 for n in steps]))
    streamed("cpu", items([10, 10]))  # compiles
    overlap = StageOverlap(monkeypatch)
    pushed = items(steps)
    got = streamed("cpu", pushed)
    for k, (g, r, item) in enumerate(zip(got, expected_items, pushed)):
        np.testing.assert_array_equal(g, r, err_msg=f"item {k}")
        np.testing.assert_array_equal(g, expected(item[0], steps[k]), err_msg=f"item {k}")
    assert overlap.stages == {("work", "shifted", "squared")}
    assert overlap.most == 2, "two cores: two whole items at once"


def test_items_that_write_a_shared_array_run_one_at_a_time(two_cores, monkeypatch):
    """Every item writes the same ``scratch``: still one stage, but one item at a time, with
    the interpreter's results."""
    steps = [3 * 10**6] * 8
    streamed("cpu", items([10, 10]))  # compiles
    overlap = StageOverlap(monkeypatch)
    pushed = items(steps, scratch=np.zeros(1))
    got = streamed("cpu", pushed)
    for k, (g, item) in enumerate(zip(got, pushed)):
        np.testing.assert_array_equal(g, expected(item[0], steps[k]), err_msg=f"item {k}")
    assert overlap.stages == {("work", "shifted", "squared")}
    assert overlap.most == 1


def test_without_whole_items_each_stage_keeps_its_thread(two_cores, monkeypatch):
    """``WHOLE_ITEMS = False``: a thread per stage, as before, with the same results."""
    monkeypatch.setattr(streaming, "WHOLE_ITEMS", False)
    steps = [10**5 + k for k in range(6)]
    streamed("cpu", items([10, 10]))  # compiles
    overlap = StageOverlap(monkeypatch)
    pushed = items(steps)
    got = streamed("cpu", pushed)
    for k, (g, item) in enumerate(zip(got, pushed)):
        np.testing.assert_array_equal(g, expected(item[0], steps[k]), err_msg=f"item {k}")
    assert overlap.stages == {("work",), ("shifted",), ("squared",)}


def test_a_failure_is_raised_in_item_order(two_cores, monkeypatch):
    """Item 4 fails after a long run while item 5, short, may already have ended on the
    other replica: items 0–3 are popped, item 4's pop raises naming the node, and every
    later call raises the same error."""
    steps = [10**6] * 4 + [5 * 10**6, 10, 10, 10]
    streamed("cpu", items([10, 10]))  # compiles
    pushed = items(steps)
    pushed[4][0][0] = -1.0  # work raises for item 4, after its long run
    handle = hpvm.launch(three_stages, None, stream=True, target="cpu", capacity=len(pushed))
    for args in pushed:
        hpvm.push(handle, args)
    for k in range(4):
        (w,) = hpvm.pop(handle)
        np.testing.assert_array_equal(hpvm.request_memory(w), expected(pushed[k][0], steps[k]))
    with fails(hpvm.NodeExecutionError, "three_stages/work", "negative input"):
        hpvm.pop(handle)
    with fails(hpvm.NodeExecutionError, "three_stages/work"):
        hpvm.push(handle, pushed[0])
    with fails(hpvm.NodeExecutionError, "three_stages/work"):
        hpvm.wait(handle)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cores=st.integers(1, 4),
    loop_threads=st.sampled_from([1, 2]),
    steps=st.lists(st.integers(0, 3 * 10**5), min_size=1, max_size=10),
    shared=st.booleans(),
    capacity=st.integers(1, 4),
)
def test_any_machine_and_items_give_the_models_results_in_push_order(
    monkeypatch, cores, loop_threads, steps, shared, capacity
):
    """Whatever the machine looks like (1–4 cores, loops on one thread or two), the items
    (how long each works, whether all write one ``scratch``) and the stream's capacity: the
    stages run as whole items exactly when there are more of them than cores, and every
    item pops the model's result, in push order."""
    with monkeypatch.context() as m:
        m.setattr(streaming, "machine_cores", lambda: cores)
        m.setattr(type(get_backend("cpu")), "loop_threads", lambda self: loop_threads)
        m.setattr(replicas, "REPLICA_SECONDS", 0.0)
        overlap = StageOverlap(m)  # (every stage)
        working = StageOverlap(m, first="work")  # (the stage that writes scratch)
        pushed = items(steps, scratch=np.zeros(1) if shared else None)
        handle = hpvm.launch(three_stages, None, stream=True, target="cpu", capacity=capacity)
        got = []
        for k, args in enumerate(pushed):
            if k >= capacity:  # (pop as we go: push would wait for room anyway)
                got.append(hpvm.request_memory(hpvm.pop(handle)[0]).copy())
            hpvm.push(handle, args)
        while len(got) < len(pushed):
            got.append(hpvm.request_memory(hpvm.pop(handle)[0]).copy())
        hpvm.wait(handle)
    for k, (g, item) in enumerate(zip(got, pushed)):
        np.testing.assert_array_equal(g, expected(item[0], steps[k]), err_msg=f"item {k}")
    whole = {("work", "shifted", "squared")}
    assert (overlap.stages == whole) == (cores < 3), overlap.stages
    if shared:
        assert working.most == 1
