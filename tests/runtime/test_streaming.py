"""Streaming launches: push/pop in order, pipeline stages running concurrently, failures
that reach the host instead of hanging, and the misuse errors of the streaming API."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import hpvm
from streaming_programs import (  # noqa: F401 (others import them from here)
    FAILING_ITEM,
    FAILING_NODE,
    NESTED,
    add_one,
    combine,
    double,
    expect,
    nested_failing,
    three_stages,
)

SLEEP = 0.05


pytestmark = pytest.mark.usefixtures("hpvm_runtime_stopped")


def test_three_stage_pipeline_pops_in_push_order():
    h = hpvm.launch(three_stages, None, stream=True, target="interp")
    for x in range(40):
        hpvm.push(h, (x,))
    assert [hpvm.pop(h) for _ in range(40)] == [expect(x) for x in range(40)]
    assert hpvm.wait(h) is None


def test_many_pushes_before_any_pop_do_not_deadlock():
    """More items than the bounded buffers hold, pushed by the only host thread."""
    h = hpvm.launch(three_stages, None, stream=True, target="interp", capacity=4)
    for x in range(200):
        hpvm.push(h, (x,))
    hpvm.wait(h)
    assert [hpvm.pop(h) for _ in range(200)] == [expect(x) for x in range(200)]


@pytest.mark.timeout(120)
def test_stress_ten_thousand_items_from_a_producer_thread():
    n = 10_000
    h = hpvm.launch(three_stages, None, stream=True, target="interp")
    errors = []

    def produce():
        try:
            for x in range(n):
                hpvm.push(h, (x,))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    t0 = time.perf_counter()
    producer = threading.Thread(target=produce, name="producer")
    producer.start()
    got = [hpvm.pop(h) for _ in range(n)]
    producer.join(60)
    hpvm.wait(h)
    elapsed = time.perf_counter() - t0
    print(f"\n10,000 items through 3 stages: {elapsed:.2f} s ({n / elapsed:,.0f} items/s)")
    assert not errors and not producer.is_alive()
    assert got == [expect(x) for x in range(n)]  # nothing lost, order kept


# ---------------------------------------------------------------------------------------
# Failures reach the host


@hpvm.leaf
def fragile(x: hpvm.i64) -> hpvm.i64:
    d = int(x) - 5
    if d == 0:  # (leaf division by zero does not raise: it gives 0)
        raise ZeroDivisionError("no divisor")
    return 100 // d


@hpvm.leaf
def slow_sink(x: hpvm.i64) -> hpvm.i64:
    time.sleep(0.01)
    return x


@hpvm.internal
def failing_middle(x: hpvm.i64):
    s1 = hpvm.create_node(add_one)
    s2 = hpvm.create_node(fragile)
    s3 = hpvm.create_node(slow_sink)
    hpvm.bind_in(s1, 0, 0)
    hpvm.edge(s1, s2, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.edge(s2, s3, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(s3, 0, 0)


def test_exception_in_a_middle_node_reaches_the_host():
    h = hpvm.launch(failing_middle, None, stream=True, target="interp")
    for x in range(5):  # item 4 fails (add_one gives 5); pushed last, as a push after the failure raises
        hpvm.push(h, (x,))
    # the items before the failing one still come out, even from the slow last stage
    assert [hpvm.pop(h) for _ in range(4)] == [(100 // (x + 1 - 5),) for x in range(4)]
    with pytest.raises(hpvm.NodeExecutionError) as info:
        hpvm.pop(h)
    msg = str(info.value)
    assert "failing_middle/fragile" in msg and "ZeroDivisionError" in msg and "test_streaming.py" in msg
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    with pytest.raises(hpvm.NodeExecutionError, match="fragile"):
        hpvm.pop(h)  # and every later pop
    t0 = time.monotonic()
    with pytest.raises(hpvm.NodeExecutionError, match="fragile"):
        for x in range(100):  # more than the buffers hold: must raise, not block
            hpvm.push(h, (x,))
    assert time.monotonic() - t0 < 5
    with pytest.raises(hpvm.NodeExecutionError, match="fragile"):
        hpvm.wait(h)


def test_exception_in_the_first_item_raises_at_wait():
    h = hpvm.launch(failing_middle, None, stream=True, target="interp")
    hpvm.push(h, (4,))
    with pytest.raises(hpvm.NodeExecutionError, match="fragile"):
        hpvm.wait(h)
    with pytest.raises(hpvm.NodeExecutionError, match="fragile"):
        hpvm.pop(h)


# ---------------------------------------------------------------------------------------
# Misuse


@hpvm.internal
def one_stage(x: hpvm.i64):
    k = hpvm.create_node(add_one)
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_out(k, 0, 0)


def test_pop_and_push_on_a_non_streaming_launch():
    h = hpvm.launch(one_stage, (1,), target="interp")
    with pytest.raises(hpvm.StreamError, match=r"pop.*'one_stage' is not streaming"):
        hpvm.pop(h)
    with pytest.raises(hpvm.StreamError, match=r"push.*'one_stage' is not streaming"):
        hpvm.push(h, (1,))
    assert hpvm.wait(h) == (2,)


def test_push_after_wait():
    h = hpvm.launch(one_stage, None, stream=True, target="interp")
    hpvm.push(h, (1,))
    hpvm.wait(h)
    with pytest.raises(hpvm.StreamError, match=r"push.*wait"):
        hpvm.push(h, (2,))


def test_pop_with_nothing_pushed_and_no_other_thread():
    h = hpvm.launch(one_stage, None, stream=True, target="interp")
    t0 = time.monotonic()
    with pytest.raises(hpvm.StreamError, match=r"wait forever"):
        hpvm.pop(h)
    hpvm.push(h, (1,))
    assert hpvm.pop(h) == (2,)
    with pytest.raises(hpvm.StreamError, match=r"all 1 pushed item\(s\) have been popped"):
        hpvm.pop(h)
    assert time.monotonic() - t0 < 2
    hpvm.wait(h)


def test_results_not_popped_before_wait_can_be_popped_after():
    h = hpvm.launch(three_stages, None, stream=True, target="interp")
    for x in range(5):
        hpvm.push(h, (x,))
    assert hpvm.pop(h) == expect(0)
    hpvm.wait(h)
    assert [hpvm.pop(h) for _ in range(4)] == [expect(x) for x in range(1, 5)]
    with pytest.raises(hpvm.StreamError, match="ended"):
        hpvm.pop(h)
    assert hpvm.wait(h) is None  # waiting again is harmless


def test_streaming_launch_takes_no_args():
    with pytest.raises(hpvm.LaunchError, match=r"args=None"):
        hpvm.launch(one_stage, (1,), stream=True, target="interp")
    arr = np.zeros(3)
    with pytest.raises(hpvm.LaunchError, match=r"args=None"):
        hpvm.launch(one_stage, arr, stream=True, target="interp")
    hpvm.wait(hpvm.launch(one_stage, (), stream=True, target="interp"))


def test_push_checks_its_arguments():
    h = hpvm.launch(one_stage, None, stream=True, target="interp")
    with pytest.raises(hpvm.LaunchError, match=r"push\(\): argument 0 \('x'\) of 'one_stage': expected i64"):
        hpvm.push(h, (1.5,))
    with pytest.raises(hpvm.LaunchError, match=r"push\(\).*takes 1 input"):
        hpvm.push(h, (1, 2))
    with pytest.raises(hpvm.LaunchError, match=r"push\(\): args must be a tuple"):
        hpvm.push(h, 1)
    hpvm.push(h, (1,))  # the stream is still usable
    assert hpvm.pop(h) == (2,)
    hpvm.wait(h)


# ---------------------------------------------------------------------------------------
# Replication and arrays in streams


@hpvm.leaf(ins=("src",), outs=("dst",))
def square_into(src: hpvm.f64[:], dst: hpvm.f64[:]) -> hpvm.i64:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    dst[i] = src[i] * src[i]
    return hpvm.get_num_node_instances_x(hpvm.get_node())


@hpvm.leaf(ins=("dst",))
def total(count: hpvm.i64, dst: hpvm.f64[:]) -> hpvm.f64:
    s = 0.0
    for k in range(count):
        s += dst[k]
    return s


@hpvm.internal
def array_stream(src: hpvm.f64[:], dst: hpvm.f64[:], n: hpvm.i64):
    sq = hpvm.create_node_1d(square_into, n)
    tot = hpvm.create_node(total)
    hpvm.bind_in(sq, 0, 0)
    hpvm.bind_in(sq, 1, 1)
    hpvm.edge(sq, tot, hpvm.ALL_TO_ALL, 0, 0, stream=True)
    hpvm.bind_in(tot, 1, 1)
    hpvm.bind_out(tot, 0, 0)


def test_sizes_and_arrays_per_push():
    h = hpvm.launch(array_stream, None, stream=True, target="interp")
    bufs = []
    for n in (1, 3, 5, 2):
        src, dst = np.arange(1.0, 6.0), np.zeros(5)
        hpvm.track_memory(src)
        hpvm.track_memory(dst)
        bufs.append(dst)
        hpvm.push(h, (src, dst, n))
    assert [hpvm.pop(h) for _ in range(4)] == [(1.0,), (14.0,), (55.0,), (5.0,)]
    hpvm.wait(h)
    np.testing.assert_array_equal(bufs[1], [1, 4, 9, 0, 0])


def test_push_checks_tracking_and_sizes():
    h = hpvm.launch(array_stream, None, stream=True, target="interp")
    src, dst = np.ones(3), np.zeros(3)
    hpvm.track_memory(src)
    with pytest.raises(hpvm.MemoryTrackingError, match=r"push\(\): argument 1 \('dst'\)"):
        hpvm.push(h, (src, dst, 3))
    hpvm.track_memory(dst)
    with pytest.raises(hpvm.LaunchError, match=r"push\(\): node 'square_into'.*is -1"):
        hpvm.push(h, (src, dst, -1))
    hpvm.push(h, (src, dst, 3))
    assert hpvm.pop(h) == (3.0,)
    hpvm.wait(h)


@hpvm.leaf
def disagreeing(x: hpvm.i64) -> hpvm.i64:
    return x + hpvm.get_node_instance_id_x(hpvm.get_node())


@hpvm.internal
def warn_stream(x: hpvm.i64):
    k = hpvm.create_node_1d(disagreeing, 2)
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_out(k, 0, 0)


def test_warnings_of_a_stream_reach_the_host_at_pop():
    h = hpvm.launch(warn_stream, None, stream=True, target="interp")
    hpvm.push(h, (10,))
    with pytest.warns(hpvm.HPVMWarning, match="disagreeing"):
        assert hpvm.pop(h) == (11,)
    hpvm.wait(h)


# ---------------------------------------------------------------------------------------
# Stages run concurrently


SPANS: list[tuple[str, float, float]] = []


@hpvm.leaf
def slow_a(x: hpvm.i64) -> hpvm.i64:
    t = time.perf_counter()
    time.sleep(SLEEP)
    SPANS.append(("a", t, time.perf_counter()))
    return x + 1


@hpvm.leaf
def slow_b(x: hpvm.i64) -> hpvm.i64:
    t = time.perf_counter()
    time.sleep(SLEEP)
    SPANS.append(("b", t, time.perf_counter()))
    return x * 3


@hpvm.internal
def slow_pipeline(x: hpvm.i64):
    a = hpvm.create_node(slow_a)
    b = hpvm.create_node(slow_b)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0)


def test_stages_run_concurrently():
    SPANS.clear()
    items = 20
    h = hpvm.launch(slow_pipeline, None, stream=True, target="interp")
    t0 = time.perf_counter()
    for x in range(items):
        hpvm.push(h, (x,))
    got = [hpvm.pop(h) for _ in range(items)]
    elapsed = time.perf_counter() - t0
    hpvm.wait(h)
    assert got == [((x + 1) * 3,) for x in range(items)]
    # the stages overlap in time (sequential would be 2 x 20 x 50 ms = 2 s; pipelined ~1.05 s)
    a_spans = [(s, e) for who, s, e in SPANS if who == "a"]
    b_spans = [(s, e) for who, s, e in SPANS if who == "b"]
    assert any(sa < eb and sb < ea for sa, ea in a_spans for sb, eb in b_spans)
    assert elapsed < 0.8 * 2 * items * SLEEP, f"{elapsed:.2f} s: the stages did not overlap"


@hpvm.internal
def childless(x: hpvm.i64):
    pass


def test_stream_of_a_graph_without_children_counts_its_items():
    h = hpvm.launch(childless, None, stream=True, target="interp")
    with pytest.raises(hpvm.StreamError, match="wait forever"):
        hpvm.pop(h)
    hpvm.push(h, (1,))
    hpvm.push(h, (2,))
    assert hpvm.pop(h) == () and hpvm.pop(h) == ()
    with pytest.raises(hpvm.StreamError, match=r"all 2 pushed"):
        hpvm.pop(h)
    hpvm.wait(h)


def test_pop_that_cannot_be_answered_raises_even_with_other_threads_alive():
    """Other threads (Jupyter's, Dask's, a timer) are not producers: only the threads that
    launched or pushed to the stream can push more (issue 10, item 11)."""
    stop = threading.Event()
    bystander = threading.Thread(target=stop.wait, name="not-a-producer", daemon=True)
    bystander.start()
    try:
        h = hpvm.launch(one_stage, None, stream=True, target="interp")
        hpvm.push(h, (1,))
        assert hpvm.pop(h) == (2,)
        t0 = time.monotonic()
        with pytest.raises(hpvm.StreamError, match=r"no other thread that launched or pushed"):
            hpvm.pop(h)
        assert time.monotonic() - t0 < 2
        hpvm.wait(h)
    finally:
        stop.set()


def test_pop_waits_for_a_producer_thread_and_raises_once_it_has_ended():
    h = hpvm.launch(one_stage, None, stream=True, target="interp")
    started = threading.Event()

    def produce() -> None:
        started.set()
        time.sleep(0.3)  # the consumer below pops before this push: it must wait for it
        hpvm.push(h, (5,))

    producer = threading.Thread(target=produce)
    producer.start()
    started.wait()
    hpvm.push(h, (1,))  # the launching thread pushes too
    assert hpvm.pop(h) == (2,)
    assert hpvm.pop(h) == (6,)  # waited for the producer thread's push
    producer.join()
    with pytest.raises(hpvm.StreamError, match=r"wait forever"):
        hpvm.pop(h)
    hpvm.wait(h)


# ---------------------------------------------------------------------------------------
# Pipelines inside internal nodes (the shared nested programs; docs/semantics.md §13)


def _stream_items(root, items, target):
    handle = hpvm.launch(root, None, stream=True, target=target, capacity=4)
    for item in items:
        hpvm.push(handle, item)
    got = [tuple(int(v) for v in hpvm.pop(handle)) for _ in items]
    hpvm.wait(handle)
    return got


@pytest.mark.parametrize("target", ["interp", "cpu"])
@pytest.mark.parametrize("name", sorted(NESTED))
def test_nested_pipelines_pop_every_item_once_in_push_order(name, target):
    root, expect_item, _ = NESTED[name]
    items = [(x,) for x in range(30)]  # more than capacity: back-pressure inside the nesting
    assert _stream_items(root, items, target) == [expect_item(x) for (x,) in items]


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_an_error_in_a_nested_stage_reaches_pop_naming_its_node_path(target):
    handle = hpvm.launch(nested_failing, None, stream=True, target=target)
    for x in range(8):
        hpvm.push(handle, (x,))
    assert [int(hpvm.pop(handle)[0]) for _ in range(FAILING_ITEM)] == [x + 2 for x in range(FAILING_ITEM)]
    with pytest.raises(hpvm.NodeExecutionError, match=f"{FAILING_NODE}.*five is refused"):
        hpvm.pop(handle)
    with pytest.raises(hpvm.NodeExecutionError, match=FAILING_NODE):
        hpvm.wait(handle)


@hpvm.internal
def slow_inside(x: hpvm.i64):
    inner = hpvm.create_node(slow_pipeline)
    hpvm.bind_in(inner, 0, 0)
    hpvm.bind_out(inner, 0, 0)


def test_nested_stages_run_concurrently():
    """``slow_pipeline`` one level down: its two stages overlap as they do at the root."""
    SPANS.clear()
    items = 20
    h = hpvm.launch(slow_inside, None, stream=True, target="interp")
    t0 = time.perf_counter()
    for x in range(items):
        hpvm.push(h, (x,))
    got = [hpvm.pop(h) for _ in range(items)]
    elapsed = time.perf_counter() - t0
    hpvm.wait(h)
    assert got == [((x + 1) * 3,) for x in range(items)]
    a_spans = [(s, e) for who, s, e in SPANS if who == "a"]
    b_spans = [(s, e) for who, s, e in SPANS if who == "b"]
    assert any(sa < eb and sb < ea for sa, ea in a_spans for sb, eb in b_spans)
    assert elapsed < 0.8 * 2 * items * SLEEP, f"{elapsed:.2f} s: the nested stages did not overlap"
