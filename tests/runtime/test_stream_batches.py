"""Streaming stages run the items waiting for them as one batch (issue 10, item 12): one
back-end call per batch, a compiled loop per batch of scalars on ``cpu``, and the same
guarantees as item by item when an item in the middle of a batch fails."""

from __future__ import annotations

import threading
import time

import pytest

import hpvm
from hpvm.backends import get_backend
from hpvm.backends.base import Backend, RunContext, StageBatch
from hpvm.backends.interp import Interpreter
from hpvm.runtime import streaming
from hpvm.runtime.api import default_runtime
from hpvm.runtime.streaming import Stream
from streaming_programs import scratch_stages

pytestmark = pytest.mark.usefixtures("hpvm_runtime_stopped")


@pytest.fixture
def whole_batches(monkeypatch):
    """Batches bounded by the capacity only, not by how long the last one took: the tests
    below decide what is waiting, and a loaded machine must not split their batches."""
    monkeypatch.setattr(streaming, "BATCH_SECONDS", 1e9, raising=False)


@pytest.fixture
def stage_threads(monkeypatch):
    """Stage threads even where a stream of scalars on ``cpu`` would start fused on the host
    (``test_stream_fused.py``): the tests below are about the batches of stage threads."""
    monkeypatch.setattr(streaming, "FUSE", False)


class Gate:
    """Wraps a back end's ``run_stage_batch``: the first call waits until ``open`` (so the
    items pushed meanwhile are all waiting when it returns), and every call's items are
    recorded per stage (by its first node's name)."""

    def __init__(self, backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
        self.batches: dict[str, list[list[int]]] = {}
        self._open = threading.Event()
        self._first = True
        inner = backend.run_stage_batch

        def gated(root, args_list, nodes, upstream_list, ctx=None):  # type: ignore[no-untyped-def]
            if self._first:
                self._first = False
                assert self._open.wait(30), "the test never opened the gate"
            self.batches.setdefault(nodes[0].name, []).append([int(args[0]) for args in args_list])
            return inner(root, args_list, nodes, upstream_list, ctx)

        monkeypatch.setattr(backend, "run_stage_batch", gated)

    def open(self) -> None:
        self._open.set()


# ---------------------------------------------------------------------------------------
# One back-end call per batch


@hpvm.leaf
def add_one(x: hpvm.i64) -> hpvm.i64:
    return x + 1


@hpvm.leaf
def triple(x: hpvm.i64) -> hpvm.i64:
    return x * 3


@hpvm.internal
def two_stages(x: hpvm.i64):
    a = hpvm.create_node(add_one)
    b = hpvm.create_node(triple)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0)


class CountingCalls(Backend):
    """The interpreter, counting the calls the streaming runtime makes: ``run_stage`` per
    item, or ``run_stage_batch`` per batch (which runs its items without counting them)."""

    name = "counting"

    def __init__(self) -> None:
        self.inner = Interpreter()
        self.calls = 0
        self.first = threading.Event()  # the first call waits for it: the rest pile up

    def run(self, root, args, ctx=None):  # type: ignore[no-untyped-def]
        return self.inner.run(root, args, ctx)

    def run_stage(self, root, args, nodes, upstream, ctx=None):  # type: ignore[no-untyped-def]
        self._count()
        return self.inner.run_stage(root, args, nodes, upstream, ctx)

    def run_stage_batch(self, root, args_list, nodes, upstream_list, ctx=None):  # type: ignore[no-untyped-def]
        self._count()
        return self.inner.run_stage_batch(root, args_list, nodes, upstream_list, ctx)

    def _count(self) -> None:
        self.calls += 1
        if self.calls == 1:
            assert self.first.wait(30)


def test_a_stage_runs_the_items_waiting_for_it_in_one_call(whole_batches):
    backend = CountingCalls()
    stream = Stream(two_stages, backend, 64, default_runtime().tracker)
    for x in range(50):  # the first stage's first call waits until all are pushed
        stream.push([x])
    backend.first.set()
    assert [stream.pop() for _ in range(50)] == [((x + 1) * 3,) for x in range(50)]
    stream.wait()
    # Item by item that is 100 calls (50 per stage); in batches: the first item, then the
    # other 49 at once, in each stage.
    assert backend.calls == 4


@hpvm.leaf
def slow_add(x: hpvm.i64) -> hpvm.i64:
    time.sleep(0.02)
    return x + 1


@hpvm.internal
def slow_then_fast(x: hpvm.i64):
    a = hpvm.create_node(slow_add)
    b = hpvm.create_node(triple)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0)


def test_slow_items_are_not_batched(monkeypatch):
    """A batch's outputs leave when the whole batch is done: items that take milliseconds go
    one at a time, so that the next stage starts on the first at once."""
    gate = Gate(get_backend("interp"), monkeypatch)
    h = hpvm.launch(slow_then_fast, None, stream=True, target="interp")
    for x in range(8):
        hpvm.push(h, (x,))
    gate.open()
    assert [hpvm.pop(h) for _ in range(8)] == [((x + 1) * 3,) for x in range(8)]
    hpvm.wait(h)
    assert all(len(batch) == 1 for batch in gate.batches["slow_add"])


# ---------------------------------------------------------------------------------------
# A failure in the middle of a batch


@hpvm.leaf
def fails_at_five(x: hpvm.i64) -> hpvm.i64:
    if x == 5:
        raise ValueError("five is not allowed")
    return 100 - x


@hpvm.internal
def failing_second(x: hpvm.i64):
    a = hpvm.create_node(add_one)
    b = hpvm.create_node(fails_at_five)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_a_failure_in_the_middle_of_a_batch_delivers_the_items_before_it(
    target, whole_batches, stage_threads, monkeypatch
):
    gate = Gate(get_backend(target), monkeypatch)
    h = hpvm.launch(failing_second, None, stream=True, target=target)
    for x in range(10):  # item 4 fails (add_one gives 5)
        hpvm.push(h, (x,))
    gate.open()
    assert [int(hpvm.pop(h)[0]) for _ in range(4)] == [100 - (x + 1) for x in range(4)]
    with pytest.raises(hpvm.NodeExecutionError, match="ValueError: five is not allowed") as info:
        hpvm.pop(h)
    assert isinstance(info.value.__cause__, ValueError)
    assert "failing_second/fails_at_five" in str(info.value)  # cpu names the node too
    with pytest.raises(hpvm.NodeExecutionError, match="five"):
        hpvm.pop(h)  # and every later pop
    with pytest.raises(hpvm.NodeExecutionError, match="five"):
        hpvm.push(h, (0,))
    with pytest.raises(hpvm.NodeExecutionError, match="five"):
        hpvm.wait(h)
    # The failing item was in the middle of the second stage's second batch.
    assert gate.batches["fails_at_five"] == [[0], list(range(1, 10))]


# ---------------------------------------------------------------------------------------
# cpu: scalar stages in a compiled loop


def count_item_runs(monkeypatch) -> list[int]:
    """The items the cpu back end runs one at a time (``run_stage``), recorded."""
    cpu = get_backend("cpu")
    single = cpu.run_stage
    seen: list[int] = []

    def run_stage(root, args, nodes, upstream, ctx=None):  # type: ignore[no-untyped-def]
        seen.append(int(args[0]))
        return single(root, args, nodes, upstream, ctx)

    monkeypatch.setattr(cpu, "run_stage", run_stage)
    return seen


def test_cpu_runs_a_batch_of_scalars_in_its_compiled_loop(whole_batches, stage_threads, monkeypatch):
    gate = Gate(get_backend("cpu"), monkeypatch)
    singles = count_item_runs(monkeypatch)
    h = hpvm.launch(failing_second, None, stream=True, target="cpu")
    for x in range(10):
        hpvm.push(h, (x,))
    gate.open()
    assert [int(hpvm.pop(h)[0]) for _ in range(4)] == [99, 98, 97, 96]
    with pytest.raises(hpvm.NodeExecutionError):
        hpvm.pop(h)
    # Alone: each stage's first item (a batch of one), and the failing item, run again for
    # its error; the items before it in its batch ran in the loop.
    assert sorted(singles) == [0, 0, 4]


def test_malloc_in_a_batched_stage_gives_each_item_a_fresh_buffer(whole_batches, stage_threads, monkeypatch):
    """The loop runs every item of a batch on one pool: what an item malloc'd is dropped
    after it, so the next item gets the same memory, zero-filled again."""
    gate = Gate(get_backend("cpu"), monkeypatch)
    root = hpvm.internal(scratch_stages)  # a root of its own: its malloc statistics start at zero
    h = hpvm.launch(root, None, stream=True, target="cpu", capacity=64)
    for x in range(40):
        hpvm.push(h, (x,))
    gate.open()
    assert [int(hpvm.pop(h)[0]) for _ in range(40)] == [8 * (x + 1) + 28 for x in range(40)]
    hpvm.wait(h)
    stats = get_backend("cpu").malloc_stats(root)
    assert stats.calls == 40 and stats.runs == 2 * 40  # a run: one item through one stage
    assert stats.fresh == 1  # the first item's: every later item reused its memory
    assert gate.batches["sum_of_scratch"][-1] == list(range(1, 40))


def test_run_stage_batch_by_default_runs_each_item_and_stops_at_the_failing_one():
    interp = Interpreter()
    nodes = failing_second.graph.nodes
    items = [[x] for x in range(2, 7)]  # the third item fails (add_one gives 5)
    batch = interp.run_stage_batch(failing_second, items, nodes, [{} for _ in items], RunContext())
    assert [o[0] for o in batch.outputs] == [97, 96] and len(batch.produced) == 2
    assert isinstance(batch.error, hpvm.NodeExecutionError) and "five" in str(batch.error)


class LosingItems(CountingCalls):
    """A broken back end: its batches come back empty, without an error."""

    def run_stage_batch(self, root, args_list, nodes, upstream_list, ctx=None):  # type: ignore[no-untyped-def]
        return StageBatch([], [])


def test_a_back_end_that_loses_items_fails_the_stream_instead_of_hanging():
    stream = Stream(two_stages, LosingItems(), 16, default_runtime().tracker)
    stream.push([1])
    with pytest.raises(
        hpvm.NodeExecutionError, match=r"returned 0 result\(s\), 0 output\(s\) and no error for 1"
    ):
        stream.pop(timeout=10)
    with pytest.raises(hpvm.NodeExecutionError):
        stream.wait()


@hpvm.leaf
def sleepy(x: hpvm.i64) -> hpvm.i64:
    time.sleep(0.2)
    return x


@hpvm.internal
def sleepy_stage(x: hpvm.i64):
    s = hpvm.create_node(sleepy)
    hpvm.bind_in(s, 0, 0)
    hpvm.bind_out(s, 0, 0)


def test_cleanup_drops_the_items_a_stage_has_not_started():
    h = hpvm.launch(sleepy_stage, None, stream=True, target="interp")
    for x in range(8):  # 1.6 s of work
        hpvm.push(h, (x,))
    start = time.monotonic()
    hpvm.cleanup()  # waits for the item being run, not for the other seven
    assert time.monotonic() - start < 1.0


def test_push_blocks_while_a_stage_holds_capacity_items(monkeypatch):
    gate = Gate(get_backend("interp"), monkeypatch)
    h = hpvm.launch(two_stages, None, stream=True, target="interp", capacity=4)
    for x in range(4):  # the first stage takes the first (and is held at the gate)
        hpvm.push(h, (x,))
    pushed = threading.Event()
    extra = threading.Thread(target=lambda: (hpvm.push(h, (4,)), pushed.set()))
    extra.start()
    assert not pushed.wait(0.3)  # the second stage holds 4 items waiting for the first
    gate.open()
    assert pushed.wait(10)
    extra.join()
    assert [hpvm.pop(h) for _ in range(5)] == [((x + 1) * 3,) for x in range(5)]
    hpvm.wait(h)
