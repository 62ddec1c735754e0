"""The compiled replay (``runtime/fastpath.py``, the C extension ``hpvm.runtime._replay``):
a launch plan's replay in C must do exactly what the plan's generated Python replay does —
take and refuse the same arguments, find the same record, make the same handle, time the
run into the same ``Runs``, let go of every token, word an error the same way, raise
Ctrl-C from the launch — and hand every case it does not run itself to the Python one.

The replay tests (``test_replay.py``, ``test_replay_direct.py``, ``test_quick_launches.py``,
``test_launch_plan.py``) run once with each (the ``each_replay`` fixture); these test the
two side by side, on the same plan and records.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_launch_plan import _GOOD, _KIND_VALUES, every_kind_root
from test_replay_direct import scale_root
from test_root_freed import _make_root

import hpvm
from hpvm.errors import HPVMError
from hpvm.ir.weakid import WeakIdTable
from hpvm.runtime import api, fastpath, plan, quick
from hpvm.runtime.handle import LaunchHandle
from markers import needs_backend
from running import every_run_quick

pytestmark = [
    pytest.mark.usefixtures("hpvm_runtime"),
    needs_backend("cpu"),
    pytest.mark.skipif(not fastpath.built(), reason=fastpath.REASON or "the extension is not built"),
]


@pytest.fixture(autouse=True)
def compiled_plans(monkeypatch):
    """New plans get the compiled replay; every run counts as quick, on all threads."""
    monkeypatch.setattr(fastpath, "ENABLED", True)
    monkeypatch.setattr(plan, "_PLANS", WeakIdTable())
    every_run_quick(monkeypatch, every_kind_root, scale_root)
    monkeypatch.setattr(quick, "ONE_THREAD_PROBE_S", 0.0)


def _both(root):
    """The plan of ``root`` on cpu, its compiled replay and a Python replay of the same plan."""
    root_plan = plan.plan_for(root, "cpu")
    python = plan._accepting(root, root_plan)[2]
    return root_plan, root_plan.replay, python


def _fields(handle: LaunchHandle) -> dict:
    """Everything a handle holds: its slots and its ``__dict__``."""
    fields = {
        name: getattr(handle, name)
        for name in LaunchHandle.__slots__
        if name not in ("__dict__", "__weakref__")
    }
    return {**fields, "__dict__": dict(handle.__dict__)}


def _same_handles(one: LaunchHandle, other: LaunchHandle) -> None:
    a, b = _fields(one), _fields(other)
    assert a.keys() == b.keys()
    for name in a:
        if name == "error":
            assert type(a[name]) is type(b[name]) and str(a[name]) == str(b[name])
        elif name == "outputs":
            assert a[name] == b[name] or (a[name] is None and b[name] is None)
        else:
            assert a[name] is b[name] or a[name] == b[name], name


def _tokens() -> list[int]:
    return [len(entry.holds) for entry in api.default_runtime().tracker._direct.values()]


def _recorded(scale: float = 2.0):
    """Two tracked arrays and ``scale_root``'s arguments over them, launched twice: the
    second launch (quick) recorded a replay."""
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, np.float32)
    hpvm.track_memory(a)
    hpvm.track_memory(b)
    args = (a, b, np.float32(scale))
    for _ in range(2):
        hpvm.wait(hpvm.launch(scale_root, args, target="cpu"))
    return a, b, args


def test_the_extension_fits_this_version_of_the_classes():
    """Built, the compiled replay is what a new plan gets (its ``layout`` found every slot it
    reads and writes); a class it does not fit is refused, naming the attribute."""
    root_plan = plan.plan_for(scale_root, "cpu")
    assert fastpath.REASON is None
    assert type(root_plan.replay).__name__ == "builtin_function_or_method"

    class Unslotted:
        holds = runs = None

    with pytest.raises(TypeError, match=r"Unslotted\.holds is not a writable slot"):
        fastpath._extension.layout(Unslotted, quick.Runs, LaunchHandle)
    fastpath._extension.layout(plan.Replay, quick.Runs, LaunchHandle)  # (as it was)


def test_the_same_handle_and_runs_as_the_python_replay():
    a, b, args = _recorded(3.0)
    root_plan, compiled, python = _both(scale_root)
    (record,) = api.default_runtime().tracker.replays.values()
    runs = record.runs
    before = (runs.every, runs.one, runs.probes, runs.choices)
    one = compiled(args, api.default_runtime())
    after_compiled = (runs.before, runs.fast, runs.plain)
    other = python(args, api.default_runtime())
    assert one is not None and other is not None and one is not other
    _same_handles(one, other)
    assert one.outputs == () and one.error is None and one.quick == record.known
    assert (runs.fast, runs.plain) == after_compiled[1:] == (True, True)
    assert (runs.every, runs.one, runs.probes, runs.choices) == before or runs.every < before[0]
    assert _tokens() == [0, 0]
    np.testing.assert_array_equal(b, a * 3)
    assert hpvm.wait(one) == hpvm.wait(other) == ()


def test_a_run_is_timed_into_the_runs_of_its_key():
    a, b, args = _recorded()
    (record,) = api.default_runtime().tracker.replays.values()
    record.runs.last, record.runs.before, record.runs.every = 1e-3, 456.0, 1e-9
    assert plan.plan_for(scale_root, "cpu").replay(args, api.default_runtime()) is not None
    assert record.runs.before == 1e-3 and 0 < record.runs.last < 1.0  # (Runs.add's short path)
    record.runs.every = 10.0  # (a new fastest run: the method, not the short path)
    assert plan.plan_for(scale_root, "cpu").replay(args, api.default_runtime()) is not None
    assert record.runs.every < 1.0


def test_the_quick_limit_is_read_per_run(monkeypatch):
    """``QUICK_RUN_S`` as ``Runs.add`` reads it now: a run over it is not the short path's."""
    a, b, args = _recorded()
    (record,) = api.default_runtime().tracker.replays.values()
    monkeypatch.setattr(quick, "QUICK_RUN_S", 0.0)
    assert plan.plan_for(scale_root, "cpu").replay(args, api.default_runtime()) is not None
    assert record.runs.fast is False  # (no run is under 0 s: the next launch takes the full path)
    assert plan.plan_for(scale_root, "cpu").replay(args, api.default_runtime()) is None
    assert _tokens() == [0, 0]


class Spy:
    """The Python replay, its calls counted."""

    def __init__(self, replay):
        self.replay, self.calls = replay, 0

    def __call__(self, args, runtime):
        self.calls += 1
        return self.replay(args, runtime)


def _replayer(root_plan, fallback):
    """A compiled replay of ``root_plan`` made here, with ``fallback`` as its Python replay."""
    return fastpath.compiled_replay(root_plan, root_plan.root, fallback)


@pytest.mark.parametrize("replay", ["compiled", "python"])
def test_the_thread_count_a_key_picks_chooses_the_call(replay):
    """Not ``plain`` (a tiny graph's runs pick a thread count): one thread goes through the
    record's function for runs on one thread (``single``) where it has one, else its runner
    with that count; all threads through the direct call (what the runner would call
    then); without a direct call, the runner with the count. Each timed with its count —
    in both replays, and the compiled one never calls the Python one."""
    a, b, args = _recorded()
    root_plan, _, python = _both(scale_root)
    spy = Spy(python)
    replayed = _replayer(root_plan, spy) if replay == "compiled" else python
    (record,) = api.default_runtime().tracker.replays.values()
    runs, runner, calls = record.runs, record.runner, []
    entry = record.entry
    single = record.single or hpvm.backends.get_backend("cpu").compiler.single(
        hpvm.backends.get_backend("cpu").prepare(scale_root)
    )
    assert entry is not None and single is not None

    def counted(values, threads):
        calls.append(threads)
        return runner(values, threads)

    def direct(*values):
        calls.append("direct")
        return entry(*values)

    def alone(*values):
        calls.append("single")
        return single(*values)

    def replays_once() -> bool:
        handle = replayed(args, api.default_runtime())
        return handle is not None and hpvm.wait(handle) == ()

    record.runner, record.entry, record.single = counted, direct, None
    runs.plain, runs.probes, runs.one = (
        False,
        0,
        quick._NEVER,
    )  # (``threads`` counts and picks: 1 for the probes)
    assert replays_once() and calls == [1]
    assert runs.probes == 1 and runs.one < 1.0
    record.single = alone
    assert replays_once() and calls == [1, "single"]
    assert runs.probes == 2
    runs.probes, runs.one, runs.every = quick.ONE_THREAD_PROBES, 1.0, 1e-9  # (all threads now)
    assert replays_once() and calls == [1, "single", "direct"]
    assert runs.choices == 1 and runs.every < 1.0 and runs.one == 1.0
    runs.plain, record.entry = True, None
    assert replays_once() and calls == [1, "single", "direct", None]
    assert spy.calls == 0 and _tokens() == [0, 0]
    np.testing.assert_array_equal(b, a * 2)


def test_a_record_it_does_not_know_goes_to_the_python_replay():
    """A record of another class (one whose slots the extension was not told of): the
    Python replay does it all, after the compiled one let go of its tokens."""
    a, b, args = _recorded()
    root_plan, _, python = _both(scale_root)
    spy = Spy(python)
    compiled = _replayer(root_plan, spy)
    replays = api.default_runtime().tracker.replays
    ((key, record),) = replays.items()

    class Other(plan.Replay):
        __slots__ = ()

    other = Other.__new__(Other)
    for name in plan.Replay.__slots__:
        if name != "__weakref__":
            setattr(other, name, getattr(record, name))
    replays[key] = other
    handle = compiled(args, api.default_runtime())
    assert spy.calls == 1 and handle is not None and hpvm.wait(handle) == ()
    assert _tokens() == [0, 0]
    np.testing.assert_array_equal(b, a * 2)


def test_a_record_found_before_is_found_again_without_its_key():
    """The record found last for a key is found again by comparing the arguments with that
    key — while the tracker's table is unchanged (``replays_version``: the table changes
    only through ``keep_replay`` and ``_drop_replays``) and the record lives."""
    a, b, args = _recorded()
    runtime = api.default_runtime()
    tracker = runtime.tracker
    _, compiled, python = _both(scale_root)
    assert compiled(args, runtime) is not None  # (found by its key, and kept)
    (key, record), version = *tracker.replays.items(), tracker.replays_version
    del tracker.replays[key]  # (behind the tracker's back: no new version)
    assert python(args, runtime) is None  # the Python replay looks the key up
    assert compiled(args, runtime) is not None  # the compiled one found it without the key
    assert compiled((a, b, 3.0), runtime) is None  # a scalar of another type: another key
    assert compiled((a, b, np.float32(3.0)), runtime) is not None  # (a new value of no work: the same)
    np.testing.assert_array_equal(b, a * 3)
    assert compiled((b, a, np.float32(2.0)), runtime) is None  # other arrays: another key
    tracker.replays[key] = record
    with tracker._lock:
        tracker._drop_replays()  # (a new version: what was kept before is not found again)
    assert tracker.replays_version > version
    assert compiled(args, runtime) is None  # (looked up: nothing kept)
    for _ in range(2):
        hpvm.wait(hpvm.launch(scale_root, args, target="cpu"))
    assert tracker.replays[key] is not record  # (kept again, under its key)
    assert compiled(args, runtime) is not None
    assert _tokens() == [0, 0]
    np.testing.assert_array_equal(b, a * 2)


def test_a_record_found_before_is_not_found_once_it_is_gone_or_reshaped():
    a, b, args = _recorded()
    runtime = api.default_runtime()
    _, compiled, _ = _both(scale_root)
    assert compiled(args, runtime) is not None
    (key,) = runtime.tracker.replays
    del runtime.tracker.replays[key]  # (the only reference: the record is gone)
    gc.collect()
    assert compiled(args, runtime) is None
    for _ in range(3):
        hpvm.wait(hpvm.launch(scale_root, args, target="cpu"))
    assert compiled(args, runtime) is not None  # (kept again)
    a.shape = (2, 4)  # (in place: the same object, another shape — another key)
    assert compiled(args, runtime) is None


def test_an_error_of_the_entry_is_worded_and_kept_for_wait():
    a, b, args = _recorded()
    root_plan, compiled, python = _both(scale_root)
    (record,) = api.default_runtime().tracker.replays.values()
    entry = record.entry

    def broken(*values):
        raise ZeroDivisionError("in the compiled code")

    record.entry = broken
    try:
        one, other = compiled(args, api.default_runtime()), python(args, api.default_runtime())
    finally:
        record.entry = entry
    _same_handles(one, other)
    assert isinstance(one.error, HPVMError) and "ZeroDivisionError" in str(one.error)
    with pytest.raises(HPVMError, match="ZeroDivisionError"):
        hpvm.wait(one)
    assert _tokens() == [0, 0]


def test_ctrl_c_in_the_entry_is_raised_by_the_replay_itself():
    a, b, args = _recorded()
    (record,) = api.default_runtime().tracker.replays.values()
    entry = record.entry

    def interrupted(*values):
        raise KeyboardInterrupt

    record.entry = interrupted
    try:
        with pytest.raises(KeyboardInterrupt):
            plan.plan_for(scale_root, "cpu").replay(args, api.default_runtime())
    finally:
        record.entry = entry
    assert _tokens() == [0, 0]
    hpvm.wait(hpvm.launch(scale_root, args, target="cpu"))  # (and the next launch runs)


def test_tokens_are_held_while_the_entry_runs():
    """``MemoryTracker.hold_replay``'s protocol: an untrack during the run is refused."""
    a, b, args = _recorded()
    (record,) = api.default_runtime().tracker.replays.values()
    entry, seen = record.entry, []

    def untracking(*values):
        seen.append(_tokens())
        with pytest.raises(HPVMError, match="in use"):
            hpvm.untrack_memory(a)
        return entry(*values)

    record.entry = untracking
    try:
        assert plan.plan_for(scale_root, "cpu").replay(args, api.default_runtime()) is not None
    finally:
        record.entry = entry
    assert seen == [[1, 1]] and _tokens() == [0, 0]


def test_a_dropped_root_and_its_plan_with_a_compiled_replay_are_collected():
    """The compiled replay holds its plan (the plan holds it): a cycle the collector frees
    with the root (``test_root_freed.py``, here with the compiled replay for sure)."""
    root = _make_root()
    a = np.zeros(8, np.float32)
    hpvm.track_memory(a)
    for _ in range(3):
        hpvm.wait(hpvm.launch(root, (a, 8), target="cpu"))
    assert type(plan.plan_for(root, "cpu").replay).__name__ == "builtin_function_or_method"
    hpvm.untrack_memory(a)
    alive = weakref.ref(root)
    del root
    gc.collect()
    assert alive() is None
    np.testing.assert_array_equal(a, 3)


def _tracked(values):
    out = []
    for v in values:
        if type(v) is np.ndarray and v.base is None and not any(v is t for t in out):
            hpvm.track_memory(v)
            out.append(v)
    return out


#: ``test_launch_plan``'s good values, more of them in range (its integers are mostly not).
_LIKELY = (
    *_GOOD[:3],
    st.one_of(st.integers(-128, 127), _GOOD[3]),
    *_GOOD[4:6],
    st.one_of(st.integers(-5, 5), st.just(np.int64(5)), _GOOD[6]),
)


def _mostly(good: st.SearchStrategy) -> st.SearchStrategy:
    """``good`` four times in five, else any kind of value."""
    return st.integers(0, 4).flatmap(lambda k: _KIND_VALUES if k == 0 else good)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.tuples(*(_mostly(good) for good in _LIKELY)), st.booleans())
def test_both_replays_take_and_refuse_the_same_arguments(values, as_list):
    """Every kind of port — written and read arrays, a pointer-only array, a ranged integer,
    a float, a bool — with good and bad values: after the launches that record them, the
    compiled replay runs exactly when the Python one does, with the same handle."""
    tracked = _tracked(values)
    try:
        try:
            for _ in range(2):
                hpvm.wait(hpvm.launch(every_kind_root, values, target="cpu"))
        except HPVMError:
            pass  # (refused: nothing recorded, and neither replay may run it)
        _, compiled, python = _both(every_kind_root)
        given_args = list(values) if as_list else values
        one = compiled(given_args, api.default_runtime())
        other = python(given_args, api.default_runtime())
        assert (one is None) == (other is None)
        event("replayed" if one is not None else "not replayed")
        if one is not None:
            _same_handles(one, other)
        assert not any(_tokens())
    finally:
        for v in tracked:
            hpvm.untrack_memory(v)


#: Per scalar port of ``every_kind_root`` (``small``, ``x``, ``flag``, ``n``), the types a host
#: may pass, each with its values: a replay's key holds the type, not the value (none of them
#: changes ``every_kind``'s work: ``LaunchPlan.neutral``).
_SCALARS = (
    (st.integers(-128, 127), st.integers(-128, 127).map(np.int8)),
    (st.floats(-1e6, 1e6), st.integers(-5, 5), st.floats(-1e3, 1e3).map(np.float32), st.just(-0.0)),
    (st.booleans(), st.booleans().map(np.bool_)),
    (st.integers(-(2**63), 2**63 - 1), st.integers(-3, 3).map(np.int64)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_a_new_value_of_a_scalar_that_is_no_work_is_replayed_with_that_value(monkeypatch, data):
    """Every scalar of ``every_kind_root`` is no work, so a launch with new values (of the same
    types) replays the record made with the first ones: both replays run it, with the same
    handle, and each run computes with the values given now — through the compiled entry,
    the runner (a type it converts), and past two hot replays the native call, whose block
    gets every scalar's bits per call."""
    monkeypatch.setattr(plan, "HOT_REPLAYS", 2)
    root_plan = plan.plan_for(every_kind_root, "cpu")
    assert root_plan.neutral == {3, 4, 5, 6}
    kinds = [data.draw(st.sampled_from(choices)) for choices in _SCALARS]
    w, r, p = np.zeros((2, 3), np.float32), np.full(3, 0.25), np.full(4, 7, np.uint8)
    tracked = _tracked((w, r, p))
    try:
        for _ in range(2):  # (the first compiles on a worker, the second is recorded)
            hpvm.wait(hpvm.launch(every_kind_root, (w, r, p, *[data.draw(k) for k in kinds]), target="cpu"))
        (record,) = api.default_runtime().tracker.replays.values()
        _, compiled, python = _both(every_kind_root)
        for turn in range(6):
            small, x, flag, n = (data.draw(k) for k in kinds)
            for replayed in (compiled, python):
                w[0, 0] = -1
                handle = replayed((w, r, p, small, x, flag, n), api.default_runtime())
                assert handle is not None and handle.error is None, (turn, handle and handle.error)
                want = np.float32(float(r[0]) + float(x) + int(small) + int(p[0])) if flag and n > 0 else -1
                assert w[0, 0] == want, (small, x, flag, n)
            assert not any(_tokens())
        event(
            "native" if record.native is not None else "dispatcher" if record.entry is not None else "runner"
        )
    finally:
        for v in tracked:
            hpvm.untrack_memory(v)


def test_hpvm_pure_python_keeps_plans_on_the_python_replay():
    """``HPVM_PURE_PYTHON=1``: the reason is given, and a plan's replay is the Python one."""
    code = (
        "import numpy as np, hpvm\n"
        "from hpvm.runtime import fastpath, plan\n"
        "@hpvm.leaf\n"
        "def one(a: hpvm.f32[:]):\n"
        "    a[0] = 1.0\n"
        "@hpvm.internal\n"
        "def root(a: hpvm.f32[:]):\n"
        "    hpvm.bind_in(hpvm.create_node(one), 0, 0)\n"
        "print(type(plan.plan_for(root, 'cpu').replay).__name__, fastpath.ENABLED, fastpath.REASON)\n"
    )
    env = {**os.environ, "HPVM_PURE_PYTHON": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(maxsplit=2) == ["function", "False", "HPVM_PURE_PYTHON is set\n"]
