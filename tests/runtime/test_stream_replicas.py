"""Stage replicas (issue 24, item 2): a stage that bounds a stream runs several items at
once on extra threads when no item in flight shares an array it writes (``replicas.py``),
with the interpreter's results, in push order, and failures in item order."""

from __future__ import annotations

import random
import threading
import time

import numpy as np
import pytest

import hpvm
from hpvm.backends import get_backend
from hpvm.runtime import replicas, streaming
from hpvm.runtime.replicas import Footprint, StagePolicy, allowed
from markers import fails
from stage_overlap import StageOverlap

N = 32  # elements per item


@hpvm.leaf(ins=("x", "coef", "scratch"), outs=("scratch", "y"))
def work(x: hpvm.f64[:], coef: hpvm.f64[:], n: hpvm.i64, scratch: hpvm.f64[:], y: hpvm.f64[:]) -> hpvm.f64[:]:
    """A slow stage: ``n`` steps of busy work into ``scratch[0]``, then ``y = x * coef[0] +
    n % 5``; raises on a negative ``x[0]`` (after the work). ``coef`` is only read.
    (``y`` depends on ``n % 5`` only, so the interpreter's reference runs ``n % 5`` steps.)"""
    s = 0.0
    for k in range(n):
        s += (k % 7) * 1e-9
    if x[0] < 0:
        raise ValueError("negative input")
    scratch[0] = s
    for i in range(x.shape[0]):
        y[i] = x[i] * coef[0] + n % 5
    return y


@hpvm.leaf(ins=("y",), outs=("z",))
def finish(y: hpvm.f64[:], z: hpvm.f64[:]) -> hpvm.f64[:]:
    """A fast stage."""
    for i in range(y.shape[0]):
        z[i] = y[i] + 1.0
    return z


@hpvm.internal()
def two_stages(
    x: hpvm.f64[:], coef: hpvm.f64[:], n: hpvm.i64, scratch: hpvm.f64[:], y: hpvm.f64[:], z: hpvm.f64[:]
):
    a = hpvm.create_node(work)
    b = hpvm.create_node(finish)
    for name in ("x", "coef", "n", "scratch", "y"):
        hpvm.bind_in(a, name, name, stream=True)
    hpvm.bind_in(b, "z", "z", stream=True)
    hpvm.edge(a, b, hpvm.ALL_TO_ALL, 0, "y", stream=True)
    hpvm.bind_out(b, 0, 0, stream=True)


@hpvm.internal()
def one_stage(x: hpvm.f64[:], coef: hpvm.f64[:], n: hpvm.i64, scratch: hpvm.f64[:], y: hpvm.f64[:]):
    """``work`` alone: its results go to the host, not to a stage whose inputs hold pushes back."""
    a = hpvm.create_node(work)
    for name in ("x", "coef", "n", "scratch", "y"):
        hpvm.bind_in(a, name, name, stream=True)
    hpvm.bind_out(a, 0, 0, stream=True)


@hpvm.leaf(ins=("x",), outs=("x",))
def prints(x: hpvm.f64[:]) -> hpvm.f64[:]:
    print(x[0])
    return x


@hpvm.leaf(ins=("x",), outs=("x",))
def spins(x: hpvm.f64[:]) -> hpvm.f64[:]:
    while x[0] < 1.0:
        x[0] += 0.5
    return x


@hpvm.internal()
def printing(x: hpvm.f64[:]):
    node = hpvm.create_node(prints)
    hpvm.bind_in(node, 0, 0, stream=True)


@hpvm.internal()
def spinning(x: hpvm.f64[:]):
    node = hpvm.create_node(spins)
    hpvm.bind_in(node, 0, 0, stream=True)


pytestmark = pytest.mark.usefixtures("hpvm_runtime_stopped")


@pytest.fixture
def eager(monkeypatch):
    """Replicas as soon as the times allow them, on a machine that looks 4 cores wide."""
    monkeypatch.setattr(replicas, "REPLICA_SECONDS", 0.0)
    monkeypatch.setattr(streaming, "machine_cores", lambda: 4)


def items(count: int, steps: list[int], scratch: np.ndarray | None = None) -> list[tuple]:
    """``count`` items with arrays of their own (``scratch`` shared when given) and one
    shared, read-only coefficient array."""
    coef = np.array([2.0])
    hpvm.track_memory(coef)
    made = []
    for k in range(count):
        x = np.arange(N, dtype=np.float64) + k
        arrays = [x, scratch if scratch is not None else np.zeros(1), np.zeros(N), np.zeros(N)]
        for a in arrays:
            hpvm.track_memory(a)
        made.append((x, coef, steps[k], arrays[1], arrays[2], arrays[3]))
    return made


def streamed(target: str, pushed: list[tuple]) -> list[np.ndarray]:
    """Push every item, then pop each result (a copy) in push order."""
    handle = hpvm.launch(two_stages, None, stream=True, target=target, capacity=len(pushed))
    for args in pushed:
        hpvm.push(handle, args)
    out = [hpvm.pop(handle)[0].copy() for _ in pushed]
    hpvm.wait(handle)
    return out


def reference(steps: list[int]) -> list[np.ndarray]:
    """The interpreter's results for items of ``steps`` (run with ``n % 5`` steps each)."""
    return streamed("interp", items(len(steps), [n % 5 for n in steps]))


def test_replicas_give_the_interpreters_results_in_push_order(eager, monkeypatch):
    """Random run times per item, so that replicas end them out of order: every result is
    the interpreter's, in push order, and the slow stage did run items at once."""
    rng = random.Random(7)
    steps = [rng.choice([10**6, 3 * 10**6 + 1, 10**7 + 2]) for _ in range(24)]  # (each taken alone)
    expected = reference(steps)
    streamed("cpu", items(2, [10, 10]))  # compiles (its two items, of arrays of their own, may overlap)
    overlap = StageOverlap(monkeypatch, first="work")
    got = streamed("cpu", items(len(steps), steps))
    for k, (a, b) in enumerate(zip(got, expected)):
        np.testing.assert_array_equal(a, b, err_msg=f"item {k}")
    assert overlap.most >= 2, "the slow stage never ran two items at once"


@pytest.mark.parametrize(
    ("case", "at_once"),
    [("own arrays", 2), ("a shared written array", 1), ("replicas off", 1)],
)
def test_items_run_at_once_only_when_allowed(eager, monkeypatch, case, at_once):
    """The same items: with arrays of their own, the slow stage runs two or more at once;
    when every item writes the same ``scratch``, or with ``REPLICAS = False`` (what the
    benchmark compares against), one at a time. The results are the interpreter's."""
    steps = [5 * 10**6] * 12  # (5-15 ms an item: a replica thread starts well within one, even under load)
    expected = reference(steps)
    if case == "replicas off":
        monkeypatch.setattr(replicas, "REPLICAS", False)
    streamed("cpu", items(2, [10, 10]))  # compiles (its two items, of arrays of their own, may overlap)
    overlap = StageOverlap(monkeypatch, first="work")
    shared = np.zeros(1) if case == "a shared written array" else None
    got = streamed("cpu", items(len(steps), steps, scratch=shared))
    for k, (a, b) in enumerate(zip(got, expected)):
        np.testing.assert_array_equal(a, b, err_msg=f"item {k}")
    assert overlap.most >= 2 if at_once == 2 else overlap.most == 1


def test_a_replica_goes_on_while_an_earlier_item_runs(eager, monkeypatch):
    """Item 2 is slow, the others short: the replicas that end items after it leave them
    parked and take the next ones, so more items start while item 2 runs than the three
    other threads a stage may have here (each would wait with its one item if ended items
    waited for their turn); the results are still the interpreter's, in push order."""
    slow = 6 * 10**7 + 3
    steps = [2 * 10**6] * 2 + [slow] + [2 * 10**6] * 20  # (2 ms items: taken one at a time)
    expected = reference(steps)
    backend = get_backend("cpu")
    inner = backend.run_stage_batch
    spans: list[tuple[float, float, bool]] = []  # (start, end, whether it held the slow item)

    def timed(root, args_list, nodes, upstream_list, ctx=None):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            return inner(root, args_list, nodes, upstream_list, ctx)
        finally:
            if nodes[0].name == "work":
                held = any(a[2] == slow for a in args_list)
                spans.extend([(start, time.perf_counter(), held)] * len(args_list))

    streamed("cpu", items(2, [10, 10]))  # compiles
    monkeypatch.setattr(backend, "run_stage_batch", timed)
    got = streamed("cpu", items(len(steps), steps))
    for k, (a, b) in enumerate(zip(got, expected)):
        np.testing.assert_array_equal(a, b, err_msg=f"item {k}")
    ((begin, end, _),) = [s for s in spans if s[2]]
    during = sum(1 for start, _, held in spans if not held and begin < start < end)
    assert during > 3, f"only {during} items started while the slow one ran"


def test_no_more_than_capacity_items_wait_parked(eager, monkeypatch):
    """A one-stage stream (its results go to the host, unbounded), capacity 2, item 2 slow:
    the items after it end on the three other threads and wait parked; a thread takes a
    next item only while fewer than 2 are (back-pressure), so at most 3 + 2 start while
    item 2 runs, though a thread pushes all of them (20 without the bound); the results
    come in push order."""
    slow = 6 * 10**7 + 3
    steps = [2 * 10**6] * 2 + [slow] + [2 * 10**6] * 20
    backend = get_backend("cpu")
    inner = backend.run_stage_batch
    spans: list[tuple[float, float, bool]] = []

    def timed(root, args_list, nodes, upstream_list, ctx=None):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        try:
            return inner(root, args_list, nodes, upstream_list, ctx)
        finally:
            spans.extend(
                [(start, time.perf_counter(), any(a[2] == slow for a in args_list))] * len(args_list)
            )

    def run(pushed: list[tuple], capacity: int) -> list[np.ndarray]:
        handle = hpvm.launch(one_stage, None, stream=True, target="cpu", capacity=capacity)
        pusher = threading.Thread(target=lambda: [hpvm.push(handle, [*args[:5]]) for args in pushed])
        pusher.start()
        out = [hpvm.pop(handle)[0].copy() for _ in pushed]
        pusher.join()
        hpvm.wait(handle)
        return out

    run(items(2, [10, 10]), 2)  # compiles
    monkeypatch.setattr(backend, "run_stage_batch", timed)
    pushed = items(len(steps), steps)
    got = run(pushed, 2)
    for k, y in enumerate(got):
        np.testing.assert_array_equal(y, pushed[k][0] * 2.0 + steps[k] % 5, err_msg=f"item {k}")
    ((begin, end, _),) = [s for s in spans if s[2]]
    during = sum(1 for start, _, held in spans if not held and begin < start < end)
    assert during <= 3 + 2, f"{during} items started while the slow one ran"


@pytest.mark.parametrize("again", [True, False])
def test_a_stream_launched_again_replicates_from_its_first_item(eager, monkeypatch, again):
    """Two slow items: a stream of a root whose last stream measured its stages runs both at
    once (the times are remembered per root); the first stream of a root cannot (its stage
    has no time before its first item ends, and then nothing is left to run beside it)."""
    steps = [10**8, 10**8 + 1]  # (100 ms or more an item: a replica starts well within one, under load too)
    expected = reference(steps)
    monkeypatch.setattr(replicas, "_LAST", replicas.weakref.WeakKeyDictionary())
    if again:
        # (20 ms an item: the remembered times must show ``work`` bounding the stream — a
        # preempted ``finish`` measured as long as 2 ms items would allow one at a time)
        streamed("cpu", items(3, [2 * 10**7] * 3))
    else:
        streamed("cpu", items(2, [10, 10]))  # compiles
        replicas._LAST.clear()
    overlap = StageOverlap(monkeypatch, first="work")
    got = streamed("cpu", items(len(steps), steps))
    for k, (a, b) in enumerate(zip(got, expected)):
        np.testing.assert_array_equal(a, b, err_msg=f"item {k}")
    assert overlap.most == (2 if again else 1)


def test_a_failure_is_raised_in_item_order_with_replicas(eager, monkeypatch):
    """Item 6 fails after a long run while item 7, short, has already ended on a replica:
    items 0–5 are popped, item 6's pop raises naming the node, item 7 is never delivered,
    and every later call raises the same error."""
    streamed("cpu", items(2, [10, 10]))  # compiles (its two items, of arrays of their own, may overlap)
    overlap = StageOverlap(monkeypatch, first="work")
    steps = [10**6] * 6 + [5 * 10**6, 10, 10, 10]  # (slow enough to be taken one at a time)
    pushed = items(len(steps), steps)
    pushed[6][0][0] = -1.0  # work raises for item 6, after its long run
    handle = hpvm.launch(two_stages, None, stream=True, target="cpu", capacity=len(pushed))
    for args in pushed:
        hpvm.push(handle, args)
    for k in range(6):
        (z,) = hpvm.pop(handle)
        np.testing.assert_array_equal(z, pushed[k][0] * 2.0 + steps[k] % 5 + 1.0)
    with fails(hpvm.NodeExecutionError, "work", "negative input"):
        hpvm.pop(handle)
    with fails(hpvm.NodeExecutionError, "work"):
        hpvm.pop(handle)
    with fails(hpvm.NodeExecutionError, "work"):
        hpvm.wait(handle)
    assert overlap.most >= 2


def test_policy_reads_and_writes():
    """``coef`` and ``x`` are only read by ``work``; ``scratch`` and ``y`` (outs) written."""
    stage = [n for n in two_stages.graph.nodes if n.name == "work"]
    policy = StagePolicy.of(two_stages, stage)
    assert policy is not None
    names = [p.name for p in two_stages.params]
    assert [names[i] for i in policy.read] == ["x", "coef"]
    assert [names[i] for i in policy.written] == ["scratch", "y"]


def test_a_stages_policy_is_made_once_per_root(monkeypatch):
    """Streaming launches of one root parse its stages' leaves once (``replicas.policy``),
    not at every launch: the same policy, and ``StagePolicy.of`` not called again."""
    monkeypatch.setattr(replicas, "_POLICIES", type(replicas._POLICIES)())
    made: list[str] = []
    of = StagePolicy.of

    def counted(root, nodes):  # type: ignore[no-untyped-def]
        made.append(nodes[0].name)
        return of(root, nodes)

    monkeypatch.setattr(StagePolicy, "of", staticmethod(counted))
    first = [streamed("cpu", items(2, [10, 10])) for _ in range(3)][0]
    assert sorted(made) == ["finish", "work"]
    np.testing.assert_array_equal(first[1], (np.arange(N) + 1.0) * 2.0 + 10 % 5 + 1.0)  # item 1
    stage = [n for n in two_stages.graph.nodes if n.name == "work"]
    assert replicas.policy(two_stages, stage) is replicas.policy(two_stages, stage)


@pytest.mark.parametrize("root", [printing, spinning])
def test_leaves_that_print_or_spin_never_run_two_items(root):
    assert StagePolicy.of(root, list(root.graph.nodes)) is None


def test_footprints_compare_memory_not_identity():
    base = np.zeros(8)
    read = Footprint([np.zeros(2)], [base[0:4]])
    assert read.overlaps(Footprint([], [base[2:6]]))  # overlapping views of one array
    assert read.overlaps(Footprint([base[3:5]], []))  # a view the other only reads
    assert not read.overlaps(Footprint([], [base[4:8]]))  # disjoint halves
    shared = np.ones(2)
    assert not Footprint([shared], []).overlaps(Footprint([shared], [np.zeros(1)]))  # read by both


def test_how_many_at_once():
    assert allowed(0.65, [0.65, 0.1, 0.1, 0.05, 0.05, 0.05], 2) == 2  # the bound: two at once
    assert allowed(0.2, [0.2] * 5, 2) == 1  # even stages: each within its share
    assert allowed(0.9, [0.9, 0.1], 4) == 4
    assert allowed(0.9, [0.9, None], 4) == 4  # a stage not measured yet takes no core yet
    assert allowed(None, [None, 0.1], 4) == 1  # this stage not measured yet
    assert allowed(1e-5, [1e-5, 1e-6], 2) == 1  # too short to hand off
    assert allowed(0.5, [0.5], 1) == 1  # one core
