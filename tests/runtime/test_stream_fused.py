"""Streams of scalars on ``cpu`` run fused on the host (issue 24, item 2;
docs/semantics.md §13, "Fused on the host"): every stage in one back-end call, run by the
push, pop or wait that needs it, with the guarantees of stage threads — push order under
concurrent producers, nothing lost when the stream ends with items in flight, errors in item
order naming the node — and stage threads again when its batches turn out slow."""

from __future__ import annotations

import threading
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.backends import get_backend
from hpvm.runtime import streaming
from streaming_programs import FAILING_ITEM, FAILING_NODE, nested_failing, scratch_stages


@pytest.fixture(autouse=True)
def runtime(monkeypatch):
    monkeypatch.setattr(streaming, "_SLOW", weakref.WeakSet())  # no root known slow yet
    hpvm.init()
    yield
    hpvm.cleanup()
    assert not [t for t in threading.enumerate() if t.name.startswith("hpvm-")]


def stage_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(streaming.THREAD_PREFIX)]


@hpvm.leaf
def add_one(x: hpvm.i64) -> hpvm.i64:
    return x + 1


@hpvm.leaf
def fails_at_five(x: hpvm.i64) -> hpvm.i64:
    if x == 5:
        raise ValueError("five is not allowed")
    return 100 - x


@hpvm.leaf
def tagged(tag: hpvm.i64, x: hpvm.i64) -> hpvm.i64:
    return tag * 1_000_000 + x


@hpvm.internal
def two_stages(x: hpvm.i64):
    a = hpvm.create_node(add_one)
    b = hpvm.create_node(fails_at_five)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0)


@hpvm.internal
def tag_then_add(tag: hpvm.i64, x: hpvm.i64):
    t = hpvm.create_node(tagged)
    a = hpvm.create_node(add_one)
    hpvm.bind_in(t, 0, 0)
    hpvm.bind_in(t, 1, 1)
    hpvm.edge(t, a, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(a, 0, 0)


def expect(x: int) -> int:
    return 100 - (x + 1)


def test_a_stream_of_scalars_on_cpu_runs_fused_without_threads():
    h = hpvm.launch(two_stages, None, stream=True, target="cpu", capacity=4)
    assert h.stream.fused is not None and [n.name for n in h.stream.fused.nodes] == [
        "add_one",
        "fails_at_five",
    ]
    xs = [x for x in range(30) if x != 4]  # add_one(4) = 5 fails
    for x in xs:  # more than capacity without a pop: push runs what waits, never blocks
        hpvm.push(h, (x,))
        assert len(h.stream.fused.args) <= 2 * 4  # capacity per stage, as with threads
    assert [int(hpvm.pop(h)[0]) for _ in xs] == [expect(x) for x in xs]
    assert not stage_threads()
    hpvm.wait(h)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_arrays_or_other_back_ends_keep_their_stage_threads(target):
    @hpvm.leaf(ins=("v",))
    def total(v: hpvm.i64[:]) -> hpvm.i64:
        s = 0
        for k in range(v.shape[0]):
            s += v[k]
        return s

    @hpvm.internal
    def sums(v: hpvm.i64[:]):
        a = hpvm.create_node(total)
        b = hpvm.create_node(add_one)
        hpvm.bind_in(a, 0, 0)
        hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
        hpvm.bind_out(b, 0, 0)

    arrays = hpvm.launch(sums, None, stream=True, target="cpu")
    scalars = hpvm.launch(two_stages, None, stream=True, target=target)
    assert arrays.stream.fused is None and (scalars.stream.fused is None) == (target == "interp")
    v = np.arange(4, dtype=np.int64)
    hpvm.track_memory(v)
    hpvm.push(arrays, (v,))
    assert int(hpvm.pop(arrays)[0]) == 7
    hpvm.wait(arrays)
    hpvm.wait(scalars)


@hpvm.leaf
def collatz_steps(x: hpvm.i64) -> hpvm.i64:
    steps = 0
    while x > 1:  # no bound the host can see: on the host thread Ctrl-C would wait for it
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        steps += 1
    return steps


@hpvm.internal
def steps_then_add(x: hpvm.i64):
    a = hpvm.create_node(collatz_steps)
    b = hpvm.create_node(add_one)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0)


def test_a_stage_with_an_unbounded_loop_keeps_its_thread():
    h = hpvm.launch(steps_then_add, None, stream=True, target="cpu")
    assert h.stream.fused is None and stage_threads()
    for x in (1, 6, 27):
        hpvm.push(h, (x,))
    assert [int(hpvm.pop(h)[0]) for _ in range(3)] == [1, 9, 112]
    hpvm.wait(h)


def test_concurrent_producers_pop_in_push_order():
    """Three threads push while the host pops: each producer's items come out in its order,
    every item once, whichever thread ran the batch that held it."""
    h = hpvm.launch(tag_then_add, None, stream=True, target="cpu", capacity=3)
    count = 300

    def produce(tag: int) -> None:
        for x in range(count):
            hpvm.push(h, (tag, x))

    producers = [threading.Thread(target=produce, args=(tag,)) for tag in (1, 2, 3)]
    for p in producers:
        p.start()
    got = [int(hpvm.pop(h, timeout=60)[0]) for _ in range(3 * count)]
    for p in producers:
        p.join()
    hpvm.wait(h)
    for tag in (1, 2, 3):
        mine = [v - tag * 1_000_000 - 1 for v in got if v // 1_000_000 == tag]
        assert mine == list(range(count))


def test_wait_runs_the_items_in_flight_and_they_stay_poppable():
    h = hpvm.launch(tag_then_add, None, stream=True, target="cpu", capacity=8)
    for x in range(20):
        hpvm.push(h, (0, x))
    popped = [int(hpvm.pop(h)[0]) for _ in range(5)]
    hpvm.wait(h)  # 15 items in flight: run now, not dropped
    popped += [int(hpvm.pop(h)[0]) for _ in range(15)]
    assert popped == [x + 1 for x in range(20)]
    with pytest.raises(hpvm.StreamError, match="ended by hpvm.wait"):
        hpvm.push(h, (0, 1))
    with pytest.raises(hpvm.StreamError, match="all 20 pushed item"):
        hpvm.pop(h)


def test_wait_while_another_thread_pops_and_pushes():
    """wait from the host while a producer and a consumer thread still run batches: it
    returns once every item pushed before it is done, and none is lost or run twice."""
    h = hpvm.launch(tag_then_add, None, stream=True, target="cpu", capacity=2)
    count = 200
    got: list[int] = []
    ended: list[BaseException] = []

    def produce() -> None:
        try:
            for x in range(count):
                hpvm.push(h, (0, x))
        except hpvm.StreamError as e:  # the stream ended under it
            ended.append(e)

    def consume() -> None:
        try:
            while True:
                got.append(int(hpvm.pop(h, timeout=60)[0]))
        except hpvm.StreamError:
            pass

    producer, consumer = threading.Thread(target=produce), threading.Thread(target=consume)
    producer.start()
    consumer.start()
    producer.join()
    hpvm.wait(h)
    consumer.join()
    assert not ended and got == [x + 1 for x in range(count)]


def test_an_error_in_a_fused_stage_names_its_node_and_keeps_item_order():
    h = hpvm.launch(two_stages, None, stream=True, target="cpu", capacity=16)
    for x in range(10):  # item 4 fails, in the middle of the batch
        hpvm.push(h, (x,))
    assert [int(hpvm.pop(h)[0]) for _ in range(4)] == [expect(x) for x in range(4)]
    with pytest.raises(hpvm.NodeExecutionError, match="two_stages/fails_at_five.*five is not allowed"):
        hpvm.pop(h)
    with pytest.raises(hpvm.NodeExecutionError, match="five"):
        hpvm.push(h, (0,))
    with pytest.raises(hpvm.NodeExecutionError, match="five"):
        hpvm.wait(h)
    assert not stage_threads()


def test_an_error_in_a_fused_nested_stage_names_its_node_path():
    h = hpvm.launch(nested_failing, None, stream=True, target="cpu")
    assert h.stream.fused is not None
    for x in range(8):
        hpvm.push(h, (x,))
    assert [int(hpvm.pop(h)[0]) for _ in range(FAILING_ITEM)] == [x + 2 for x in range(FAILING_ITEM)]
    with pytest.raises(hpvm.NodeExecutionError, match=f"{FAILING_NODE}.*five is refused"):
        hpvm.pop(h)


def test_a_pop_nothing_can_answer_raises_instead_of_waiting():
    h = hpvm.launch(two_stages, None, stream=True, target="cpu")
    with pytest.raises(hpvm.StreamError, match="no other thread"):
        hpvm.pop(h)
    with pytest.raises(hpvm.StreamError, match="timed out"):
        hpvm.pop(h, timeout=0)
    hpvm.wait(h)


def test_slow_fused_batches_go_over_to_stage_threads(monkeypatch):
    """Every batch counts as slow here: after INLINE_SLOW_BATCHES in a row (the first, which
    may compile, does not count) the items still waiting go to stage threads, and the
    results come out in push order across the change; the next launch starts with them."""
    monkeypatch.setattr(streaming, "INLINE_SECONDS", -1.0)
    monkeypatch.setattr(streaming, "INLINE_ITEM_SECONDS", -1.0)
    h = hpvm.launch(tag_then_add, None, stream=True, target="cpu", capacity=2)
    for x in range(40):
        hpvm.push(h, (0, x))
    assert h.stream.fused is None and stage_threads()
    assert [int(hpvm.pop(h)[0]) for _ in range(40)] == [x + 1 for x in range(40)]
    hpvm.wait(h)
    again = hpvm.launch(tag_then_add, None, stream=True, target="cpu")
    assert again.stream.fused is None
    hpvm.wait(again)


@hpvm.leaf
def about_a_millisecond(x: hpvm.f64) -> hpvm.f64:
    acc = x
    for _ in range(400_000):  # dependent multiply-adds: not folded away
        acc = acc * 0.9999999 + 1e-7
    return acc


@hpvm.internal
def slow_stages(x: hpvm.f64):
    a = hpvm.create_node(about_a_millisecond)
    b = hpvm.create_node(about_a_millisecond)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0)


def test_stages_that_take_milliseconds_get_their_threads_within_a_few_items():
    h = hpvm.launch(slow_stages, None, stream=True, target="cpu", capacity=8)
    assert h.stream.fused is not None
    for x in range(16):
        hpvm.push(h, (float(x),))
    got = [float(hpvm.pop(h)[0]) for _ in range(16)]
    assert h.stream.fused is None and stage_threads()
    hpvm.wait(h)
    assert len(set(got)) == 16


@settings(max_examples=15, deadline=None)
@given(
    capacity=st.integers(1, 6),
    pops=st.lists(st.integers(0, 5), min_size=1, max_size=12),
    slow=st.booleans(),
)
def test_any_interleaving_of_pushes_and_pops_keeps_push_order(capacity, pops, slow):
    """Pushes and pops interleaved at random, fused or gone over to threads part way."""
    patch = pytest.MonkeyPatch()
    patch.setattr(streaming, "_SLOW", weakref.WeakSet())
    if slow:
        patch.setattr(streaming, "INLINE_SECONDS", -1.0)
        patch.setattr(streaming, "INLINE_ITEM_SECONDS", -1.0)
    try:
        h = hpvm.launch(tag_then_add, None, stream=True, target="cpu", capacity=capacity)
        got, pushed = [], 0
        for burst in pops:
            for _ in range(burst + 1):
                hpvm.push(h, (0, pushed))
                pushed += 1
            got += [int(hpvm.pop(h)[0]) for _ in range(min(burst, pushed - len(got)))]
        hpvm.wait(h)
        got += [int(hpvm.pop(h)[0]) for _ in range(pushed - len(got))]
        assert got == [x + 1 for x in range(pushed)]
    finally:
        patch.undo()


@hpvm.leaf
def negate(x: hpvm.i64) -> hpvm.i64:
    return -x


@hpvm.internal
def two_outputs(x: hpvm.i64):
    a = hpvm.create_node(add_one)
    b = hpvm.create_node(negate)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 1)  # the outputs of both stages, in the other order
    hpvm.bind_out(a, 0, 0)


def test_a_fused_stream_pops_every_root_output_in_port_order():
    h = hpvm.launch(two_outputs, None, stream=True, target="cpu", capacity=2)
    assert h.stream.fused is not None
    for x in range(9):
        hpvm.push(h, (x,))
    assert [tuple(int(v) for v in hpvm.pop(h)) for _ in range(9)] == [(x + 1, -(x + 1)) for x in range(9)]
    hpvm.wait(h)


def test_malloc_in_a_fused_stream_gives_each_item_a_zeroed_buffer():
    root = hpvm.internal(scratch_stages)  # a root of its own: its malloc statistics start at zero
    h = hpvm.launch(root, None, stream=True, target="cpu", capacity=4)
    assert h.stream.fused is not None
    for x in range(40):
        hpvm.push(h, (x,))
    assert [int(hpvm.pop(h)[0]) for _ in range(40)] == [8 * (x + 1) + 28 for x in range(40)]
    hpvm.wait(h)
    stats = get_backend("cpu").malloc_stats(root)
    assert stats.calls == 40 and stats.runs == 40  # a run: one item through every stage at once
    assert stats.fresh < 40  # later batches reuse the first batch's memory
