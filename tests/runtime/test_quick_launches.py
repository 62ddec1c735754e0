"""Quick launches (``runtime/quick.py``): a cpu launch whose last run with the same arguments
was quick, whose leaves cannot wait or run long, and which finds nothing else in flight runs
inside ``launch`` itself. That must change nothing but where it runs: other dtypes, shapes,
scalar values and tracking after such launches give correct results or the same error, at
the same call (``launch`` for what is checked before a run, ``wait`` for what a node raises),
and a launch that is not known to be quick — or whose leaf has a ``while`` loop on array
contents or left from inside, or that finds another launch or a stream in flight — still
runs on a worker. A ``while`` on scalars (a tree reduction's halving stride) is as quick as
a ``for`` over them, its scalars' values in the run key.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import hpvm
from hpvm.runtime import api, quick
from markers import needs_backend
from running import every_run_quick

pytestmark = [pytest.mark.usefixtures("hpvm_runtime", "each_replay"), needs_backend("cpu")]


@hpvm.leaf(ins=("a", "b"), outs=("c",))
def add(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    if a[i] < -1000.0:
        raise ValueError("an input below -1000")
    c[i] = a[i] + b[i]


@hpvm.internal
def add_root(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:], n: hpvm.i64):
    node = hpvm.create_node_1d(add, n)
    for i in range(3):
        hpvm.bind_in(node, i, i)


@hpvm.leaf
def count(n: hpvm.i64) -> hpvm.i64:
    s = 0
    for k in range(n):
        s += k
    return s


@hpvm.internal
def count_root(n: hpvm.i64):
    node = hpvm.create_node(count)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


@hpvm.leaf
def spin(n: hpvm.i64) -> hpvm.i64:
    k = 0
    while True:  # left from inside: could spin on another launch's write, never run on the caller
        if k >= n:
            break
        k += 1
    return k


@hpvm.internal
def spin_root(n: hpvm.i64):
    node = hpvm.create_node(spin)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


@hpvm.leaf
def halvings(n: hpvm.i64) -> hpvm.i64:
    steps = 0
    while n > 1:  # a test of a scalar: as many turns on every run with the same n
        n //= 2
        steps += 1
    return steps


@hpvm.internal
def halvings_root(n: hpvm.i64):
    node = hpvm.create_node(halvings)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


@hpvm.leaf(ins=("flag",), outs=("flag",))
def wait_for_flag(flag: hpvm.i64[:]) -> hpvm.i64:
    turns = 0
    while flag[0] < 3:  # (here: counts up; another launch's write would do it elsewhere)
        flag[0] += 1
        turns += 1
    return turns


@hpvm.internal
def flag_root(flag: hpvm.i64[:]):
    node = hpvm.create_node(wait_for_flag)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


@hpvm.leaf(ins=("flag",), outs=())
def read_flag(flag: hpvm.i64[:]) -> hpvm.i64:
    return flag[0]


@hpvm.internal
def halvings_of_a_read(flag: hpvm.i64[:]):
    """``halvings`` of a value an edge carries: read from an array at run time."""
    reader = hpvm.create_node(read_flag)
    halver = hpvm.create_node(halvings)
    hpvm.bind_in(reader, 0, 0)
    hpvm.edge(reader, halver, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_out(halver, 0, 0)


@hpvm.internal
def nested_halvings(flag: hpvm.i64[:]):
    """The same a level down: the edge feeds an internal node that binds it to the leaf."""
    reader = hpvm.create_node(read_flag)
    inner = hpvm.create_node(halvings_root)
    hpvm.bind_in(reader, 0, 0)
    hpvm.edge(reader, inner, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_out(inner, 0, 0)


GATE = threading.Event()


@hpvm.leaf
def gated(x: hpvm.i64) -> hpvm.i64:
    GATE.wait(10.0)  # (interp: a Python leaf may wait for the host)
    return x


@hpvm.internal
def gated_root(x: hpvm.i64):
    node = hpvm.create_node(gated)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


@pytest.fixture(autouse=True)
def generous_limit(monkeypatch):
    """Every run counts as quick here (a loaded machine must not decide where one runs);
    the durations recorded before a test are forgotten."""
    every_run_quick(
        monkeypatch,
        add_root,
        count_root,
        spin_root,
        halvings_root,
        flag_root,
        halvings_of_a_read,
        nested_halvings,
    )


def _ran_in_launch(handle) -> bool:
    """Whether ``launch`` ran it (done before it returned, never queued for a worker)."""
    return handle.slot is None and handle.done.is_set()


def _arrays(n: int, dtype=np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.arange(n, dtype=dtype)
    b = np.full(n, 2, dtype=dtype)
    c = np.zeros(n, dtype=dtype)
    for x in (a, b, c):
        hpvm.track_memory(x)
    return a, b, c


def _launch(args):
    return hpvm.launch(add_root, args, target="cpu")


def test_a_repeated_launch_runs_inside_launch_and_a_first_one_does_not():
    a, b, c = _arrays(8)
    first = _launch((a, b, c, 8))
    hpvm.wait(first)
    again = _launch((a, b, c, 8))
    assert again.done.is_set()  # ran before launch returned
    hpvm.wait(again)
    np.testing.assert_array_equal(c, a + b)
    c[:] = 0
    other = _launch((a, b, c, 4))  # a new scalar value: not known to be quick
    hpvm.wait(other)
    np.testing.assert_array_equal(c, np.r_[a[:4] + b[:4], np.zeros(4)])


def test_other_shapes_and_dtypes_after_quick_launches_give_correct_results():
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    a2, b2, c2 = _arrays(33)
    for _ in range(3):
        hpvm.wait(_launch((a2, b2, c2, 33)))
        np.testing.assert_array_equal(c2, a2 + b2)
    two = np.arange(16, dtype=np.float32).reshape(2, 8)  # a rank the port does not take
    hpvm.track_memory(two)
    with pytest.raises(hpvm.LaunchError, match=r"argument 0 \('a'\)"):
        _launch((two, b, c, 8))
    a64, b64, c64 = _arrays(8, np.float64)  # a dtype the port does not take
    with pytest.raises(hpvm.LaunchError, match=r"argument 0 \('a'\)"):
        _launch((a64, b, c, 8))
    hpvm.wait(_launch((a, b, c, 8)))  # the good arguments still run, quickly
    np.testing.assert_array_equal(c, a + b)


def test_tracking_and_writeability_are_checked_on_every_quick_launch():
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    hpvm.untrack_memory(c)
    with pytest.raises(hpvm.MemoryTrackingError, match="untracked"):
        _launch((a, b, c, 8))
    hpvm.track_memory(c)
    c.flags.writeable = False
    with pytest.raises(hpvm.LaunchError, match="read-only"):
        _launch((a, b, c, 8))
    c.flags.writeable = True
    handle = _launch((a, b, c, 9))  # one instance too many: refused by the run, as before
    with pytest.raises(hpvm.OutOfBoundsError, match="past its end"):
        hpvm.wait(handle)
    hpvm.wait(_launch((a, b, c, 8)))
    np.testing.assert_array_equal(c, a + b)


def test_a_node_error_in_a_quick_launch_surfaces_at_wait():
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    a[3] = -5000.0
    handle = _launch((a, b, c, 8))  # runs here, and fails: launch itself does not raise
    assert handle.done.is_set()
    with pytest.raises(hpvm.NodeExecutionError, match="below -1000"):
        hpvm.wait(handle)
    a[3] = 3.0
    hpvm.wait(_launch((a, b, c, 8)))
    np.testing.assert_array_equal(c, a + b)


def test_scalar_results_of_quick_launches_follow_their_arguments():
    for n in (0, 5, 1000, 5, 0, 1000):
        (total,) = hpvm.wait(hpvm.launch(count_root, (n,), target="cpu"))
        assert total == n * (n - 1) // 2
        assert isinstance(total, np.int64)


def test_a_slow_run_sends_the_next_launch_to_a_worker(monkeypatch):
    monkeypatch.setattr(quick, "QUICK_RUN_S", 0.0)  # nothing is quick
    monkeypatch.setattr(quick, "WAITED_AT_ONCE", 1 << 30)  # (nor made quick by a host that waits at once)
    a, b, c = _arrays(8)
    for _ in range(3):
        handle = _launch((a, b, c, 8))
        hpvm.wait(handle)
        assert handle.slot is not None  # queued for a worker
    np.testing.assert_array_equal(c, a + b)


def test_interp_launches_never_run_inside_launch():
    a, b, c = _arrays(8)
    for _ in range(3):
        handle = hpvm.launch(add_root, (a, b, c, 8), target="interp")
        assert handle.slot is not None
        hpvm.wait(handle)
    np.testing.assert_array_equal(c, a + b)


@pytest.mark.parametrize(
    "args",
    [
        [np.zeros(3, np.float32), 2],
        [np.zeros((2, 3), np.float64), np.float32(1.5), True],
    ],
)
def test_run_keys_tell_apart_what_the_work_depends_on(args):
    key = quick.run_key("cpu", args)
    assert key == quick.run_key("cpu", list(args))
    changed = [np.zeros(4, np.float32) if isinstance(v, np.ndarray) else v for v in args]
    assert quick.run_key("cpu", changed) != key or args[0].shape == (4,)
    assert quick.run_key("cpu", [*args[:-1], 7]) != key
    assert quick.run_key("interp", args) != key
    assert quick.run_key("cpu", [*args, object()]) is None


def test_a_leaf_with_a_while_loop_never_runs_inside_launch():
    assert "while loop" in quick.bounded_graph(spin_root)
    for _ in range(4):
        handle = hpvm.launch(spin_root, (7,), target="cpu")
        assert handle.slot is not None  # queued for a worker, however quick its last run
        assert hpvm.wait(handle) == (7,)
    assert not quick.durations(spin_root)  # no run key is even kept for it


def test_a_changed_scalar_does_not_reuse_the_quick_verdict():
    for _ in range(3):
        hpvm.wait(hpvm.launch(count_root, (5,), target="cpu"))
    assert _ran_in_launch(quick_one := hpvm.launch(count_root, (5,), target="cpu"))
    assert hpvm.wait(quick_one) == (10,)
    longer = hpvm.launch(count_root, (3_000_000,), target="cpu")  # a longer loop: not known
    assert longer.slot is not None
    assert hpvm.wait(longer) == (3_000_000 * 2_999_999 // 2,)
    assert _ran_in_launch(again := hpvm.launch(count_root, (5,), target="cpu"))  # 5 still is
    hpvm.wait(again)


def test_nothing_runs_inside_launch_while_another_launch_or_a_stream_is_in_flight():
    from streaming_programs import three_stages

    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    stream = hpvm.launch(three_stages, None, stream=True, target="cpu")
    queued = _launch((a, b, c, 8))  # quick last time, but a stream is open
    assert queued.slot is not None
    hpvm.wait(queued)
    hpvm.push(stream, (1,))
    assert hpvm.wait(stream) is None
    running = _launch((a, b, c, 8))  # the stream has ended: quick again
    assert _ran_in_launch(running)
    hpvm.wait(running)
    GATE.clear()
    first = hpvm.launch(gated_root, (3,), target="interp")  # on a worker, held at the gate
    try:
        second = _launch((a, b, c, 8))
        assert second.slot is not None  # a launch is in flight: to a worker too
    finally:
        GATE.set()
    assert hpvm.wait(first) == (3,)
    hpvm.wait(second)
    np.testing.assert_array_equal(c, a + b)


def test_run_keys_tell_tracking_apart():
    a, b, c = _arrays(8)
    entries = [hpvm.runtime.api.default_runtime().tracker.find(x) for x in (a, b, c)]
    key = quick.run_key("cpu", [a, b, c, 8], entries)
    hpvm.untrack_memory(c)
    hpvm.track_memory(c)
    entries2 = [hpvm.runtime.api.default_runtime().tracker.find(x) for x in (a, b, c)]
    assert quick.run_key("cpu", [a, b, c, 8], entries2) != key


def test_ctrl_c_during_a_quick_run_interrupts_launch_itself(monkeypatch):
    """Python delivers Ctrl-C on the main thread once the compiled code returns: inside a
    quick run, that is inside ``launch``, which raises it (a worker's run never sees it)."""
    a, b, c = _arrays(8)
    for _ in range(3):
        hpvm.wait(_launch((a, b, c, 8)))
    backend = hpvm.backends.get_backend("cpu")
    replays = api.default_runtime().tracker.replays
    assert len(replays) == 1  # (the third launch replayed the second's record: plan.Replay)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):  # a replayed run
        (record,) = replays.values()
        # (through the runner, or a compiled entry called directly — the parallel one, or the
        # one for a run on one thread: which one depends on the run key's timings —
        # ``Runs.plain``, ``Runs.threads`` —, so all of them raise)
        patched.setattr(record, "runner", interrupted)
        for direct in ("entry", "single"):
            if getattr(record, direct) is not None:
                patched.setattr(record, direct, interrupted)
        _launch((a, b, c, 8))
    replays.clear()
    with monkeypatch.context() as patched, pytest.raises(KeyboardInterrupt):  # a run through Backend.run
        patched.setattr(backend, "run", interrupted)
        _launch((a, b, c, 8))
    assert _ran_in_launch(handle := _launch((a, b, c, 8)))  # nothing left in flight
    hpvm.wait(handle)
    hpvm.untrack_memory(c)  # nor in use


def test_durations_keep_a_bounded_number_of_run_keys_per_root():
    times: dict = {}
    for k in range(quick._KEYS_PER_ROOT + 6):
        quick.entry(times, ("cpu", k)).add(1e-4)
    assert len(times) == quick._KEYS_PER_ROOT
    assert ("cpu", 0) not in times and ("cpu", quick._KEYS_PER_ROOT + 5) in times  # the oldest go
    assert times[("cpu", 10)].quick()


def test_a_run_stretched_by_load_keeps_its_key_quick_but_a_much_longer_one_does_not(monkeypatch):
    monkeypatch.setattr(quick, "QUICK_RUN_S", 2e-3)  # the real limits, not the fixture's
    times: dict = {}
    quick.entry(times, "k").add(0.5e-3)  # the work: short
    quick.entry(times, "k").add(5e-3)  # stretched on a busy machine
    assert times["k"].quick()
    quick.entry(times, "k").add(20e-3)  # one run held up past LOADED_RUN_S: preempted
    assert times["k"].quick()
    quick.entry(times, "k").add(20e-3)  # a second in a row: taken as more work
    assert not times["k"].quick()
    quick.entry(times, "k").add(1e-3)
    assert times["k"].quick()
    quick.entry(times, "k").add(quick.PREEMPTED_RUN_S * 2)  # longer than preemption explains
    assert not times["k"].quick()
    quick.entry(times, "slow").add(5e-3)  # never short: not quick, however loaded
    assert not times["slow"].quick()


def test_wait_runs_a_short_bounded_launch_no_worker_has_started_on_the_calling_thread(monkeypatch):
    from hpvm.runtime.api import default_runtime
    from hpvm.runtime.workers import Slot

    monkeypatch.setattr(quick, "QUICK_RUN_S", 0.0)  # nothing runs inside launch itself
    monkeypatch.setattr(quick, "WAITED_AT_ONCE", 1 << 30)
    a, b, c = _arrays(8)
    hpvm.wait(_launch((a, b, c, 8)))  # compiles; the run key's duration is recorded
    pool = default_runtime().workers
    queued: list[Slot] = []
    monkeypatch.setattr(pool, "submit", lambda job: queued.append(Slot(job)) or queued[-1])
    handle = _launch((a, b, c, 8))  # queued, and no worker will take it...
    ran_on: list[threading.Thread] = []
    job = handle.job
    handle.job = lambda *how: ran_on.append(threading.current_thread()) or job(*how)
    late = threading.Timer(10.0, lambda: handle.claim() and handle.job())  # (...a late worker)
    late.start()
    try:
        c[:] = 0
        hpvm.wait(handle)
    finally:
        late.cancel()
    assert ran_on == [threading.main_thread()]
    np.testing.assert_array_equal(c, a + b)


def test_a_host_that_waits_at_once_gets_its_longer_runs_inside_launch(monkeypatch):
    """Runs too long to be quick (``QUICK_RUN_S`` 0 here) whose host waited at once
    ``WAITED_AT_ONCE`` times in a row — whether ``wait`` or a worker that preempted the host
    ran them — run inside ``launch`` (and are replayed), but every ``WAIT_RECHECK_EVERY``-th
    is queued again: one its host does not wait for at once (here: from another thread)
    queues the next ones again."""
    from hpvm.runtime.api import default_runtime
    from hpvm.runtime.workers import Slot

    monkeypatch.setattr(quick, "QUICK_RUN_S", 0.0)  # no run is short enough by its time
    monkeypatch.setattr(quick, "WAIT_RECHECK_EVERY", 4)
    monkeypatch.setattr(quick, "AT_ONCE_FRACTION", 1e9)  # (this 8-element add's host path is most of it)
    a, b, c = _arrays(8)
    hpvm.wait(_launch((a, b, c, 8)))  # compiles, on a worker: the run key's duration recorded
    monkeypatch.setattr(default_runtime().workers, "submit", Slot)  # queued: no worker takes it

    def launched(at_once: bool = True, by_worker: bool = False) -> bool:
        """One launch + wait, ``c`` checked; whether it ran inside ``launch``."""
        c[:] = 0
        handle = _launch((a, b, c, 8))
        inside = _ran_in_launch(handle)
        if not inside and by_worker:  # a worker woken by the launch runs it first
            worker = threading.Thread(target=lambda: handle.claim() and handle.job())
            worker.start()
            worker.join()
        if at_once:
            hpvm.wait(handle)
        else:  # (waited for from another thread: not the host waiting at once)
            waiter = threading.Thread(target=hpvm.wait, args=(handle,))
            waiter.start()
            waiter.join()
        np.testing.assert_array_equal(c, a + b)
        return inside

    # (the compiling launch above, waited for at once, was the first)
    assert [launched() for _ in range(quick.WAITED_AT_ONCE - 1)] == [False] * (quick.WAITED_AT_ONCE - 1)
    assert [launched() for _ in range(4)] == [True, True, True, False]  # (the last a recheck)
    assert [launched() for _ in range(3)] == [True] * 3  # it waited at once again: inside again
    assert not launched(at_once=False)  # the next recheck, which the host does not wait for at once
    runs = [launched(by_worker=True) for _ in range(quick.WAITED_AT_ONCE)]
    assert runs == [False] * quick.WAITED_AT_ONCE
    assert launched()  # (the host waited at once, though a worker ran each of those)


def test_the_host_waits_at_once_when_its_thread_spent_little_cpu_time_since_the_launch():
    """``quick.waited_for``: at once on the launching thread under ``AT_ONCE_FRACTION`` of
    the key's last run of CPU time; not after burning more, nor from another thread."""

    class Handle:
        launched = None

    runs = quick.Runs()
    runs.add(0.01)  # (a 10 ms run: at once means under 1 ms of the host's CPU)

    def wait(busy_s: float = 0.0, elsewhere: bool = False) -> int:
        handle = Handle()
        handle.launched = (threading.get_ident(), time.thread_time(), runs)
        end = time.thread_time() + busy_s
        while time.thread_time() < end:
            pass
        if elsewhere:
            waiter = threading.Thread(target=quick.waited_for, args=(handle,))
            waiter.start()
            waiter.join()
        else:
            quick.waited_for(handle)
        assert handle.launched is None  # (once per handle)
        return runs.waited

    assert [wait(), wait()] == [1, 2]
    assert wait(busy_s=0.005) == 0
    assert wait() == 1
    assert wait(elsewhere=True) == 0


def test_a_while_on_scalars_runs_inside_launch_keyed_by_their_values():
    assert quick.bounded_graph(halvings_root) is None
    assert hpvm.wait(hpvm.launch(halvings_root, (1024,), target="cpu")) == (10,)  # (a worker's)
    handle = hpvm.launch(halvings_root, (1024,), target="cpu")
    assert _ran_in_launch(handle) and hpvm.wait(handle) == (10,)
    handle = hpvm.launch(halvings_root, (1 << 40,), target="cpu")  # another value: more turns
    assert handle.slot is not None  # not known to be quick: a worker runs it
    assert hpvm.wait(handle) == (40,)


@pytest.mark.parametrize("root", [halvings_of_a_read, nested_halvings], ids=["edge", "edge then bind"])
def test_a_while_on_a_scalar_an_edge_carries_never_runs_inside_launch(root):
    """The edge's value is computed at run time (here read from an array): in no run key,
    so the next run of the same key may loop far longer — a worker runs every one."""
    reason = quick.bounded_graph(root)
    assert "leaf 'halvings'" in reason and "scalar 'n' comes on an edge" in reason
    flag = np.full(1, 1024, np.int64)
    hpvm.track_memory(flag)
    for value, steps in ((1024, 10), (1024, 10), (1 << 40, 40)):
        flag[0] = value
        handle = hpvm.launch(root, (flag,), target="cpu")
        assert handle.slot is not None
        assert hpvm.wait(handle) == (steps,)


def test_a_while_on_array_contents_never_runs_inside_launch():
    assert "test depends on array contents" in quick.bounded_graph(flag_root)
    flag = np.zeros(1, np.int64)
    hpvm.track_memory(flag)
    for turns in (3, 0, 0):
        handle = hpvm.launch(flag_root, (flag,), target="cpu")
        assert handle.slot is not None  # queued for a worker, however quick its last run
        assert hpvm.wait(handle) == (turns,)


def test_wait_leaves_a_long_or_unbounded_launch_to_its_worker():
    times: dict = {}
    quick.entry(times, "short").add(0.004)
    quick.entry(times, "long").add(quick.WAIT_RUN_S * 2)
    assert quick.runs_in_wait(times, "short")
    assert not quick.runs_in_wait(times, "long")
    assert not quick.runs_in_wait(times, "never run")
    assert not quick.runs_in_wait(None, "short")  # an unbounded graph keeps no durations
    handle = hpvm.launch(spin_root, (3,), target="cpu")  # a while loop left early: no run key
    assert handle.quick is None
    hpvm.wait(handle)


def test_a_quick_run_reports_what_a_worker_s_run_reports():
    """A quick run shares one context between launches when nothing is on a device
    (``Runtime._run_quick``): its handle still says no bytes moved and nothing noted, each
    handle its own count, and the shared context keeps nothing from one run to the next."""
    a, b, c = _arrays(8)
    first = _launch((a, b, c, 8))
    hpvm.wait(first)
    handles = [_launch((a, b, c, 8)) for _ in range(2)]
    for h in handles:
        assert _ran_in_launch(h)
        assert hpvm.wait(h) == ()
        assert h.transfers.total == 0 and not h.notes and h.error is None
    assert first.transfers.total == 0 and not first.notes  # (the worker's run: the same)
    assert handles[0].transfers is not handles[1].transfers  # (a user may add to one)
    runtime = api.default_runtime()
    assert all(not ctx.notes and ctx.transfers.total == 0 for ctx in runtime._quick_ctx.values())


def test_a_quick_run_records_its_writes_once_versions_are_asked_for(monkeypatch):
    """With versions asked for (a back end deriving data from an argument), the tracker is
    no longer host-only: a quick run goes through residency and bumps the version of what it
    may write, as a worker's run does."""
    a, b, c = _arrays(8)
    hpvm.wait(_launch((a, b, c, 8)))
    tracker = api.default_runtime().tracker
    monkeypatch.setattr(tracker, "_versioned", tracker._versioned)  # (restored after the test)
    before = tracker.version(c)
    assert not tracker.host_only()
    h = _launch((a, b, c, 8))
    assert _ran_in_launch(h)
    hpvm.wait(h)
    assert tracker.version(c) != before
    np.testing.assert_array_equal(c, a + b)


def test_a_worker_s_launch_is_no_longer_in_flight_once_its_wait_returns(monkeypatch):
    """A worker's run leaves the runtime's launches in flight before it signals its handle:
    a host that launches again as soon as ``wait`` returns finds nothing in flight, and its
    launch may be quick (it was queued for a worker whenever the finished one was still
    counted). Checked at the moment the worker signals."""
    from hpvm.runtime import handle as handle_module

    runtime = api.default_runtime()
    still_in_flight: list[bool] = []
    signal = handle_module.Done.set

    def checked(self):  # type: ignore[no-untyped-def]
        still_in_flight.append(any(h.done is self for h in runtime.active))
        signal(self)

    monkeypatch.setattr(handle_module.Done, "set", checked)
    a, b, c = _arrays(8)
    quick.forget(add_root)
    first = _launch((a, b, c, 8))  # (no run known: a worker's)
    assert not _ran_in_launch(first)
    hpvm.wait(first)
    assert still_in_flight == [False]
    assert not runtime.active
