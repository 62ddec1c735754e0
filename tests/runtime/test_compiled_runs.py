"""The compiled replay's ``Runs.threads`` and ``Runs.add`` (``_replay.runs_threads``,
``_replay.runs_add``): the C makes the common choices and records itself — a thread count
once the probes are done, a warm run on all threads or on one — and must leave a key's
``Runs`` exactly as the methods would, answering the same; anything else it hands to the
methods. A property test runs the same sequence of choices and runs through both, on two
copies of one state.
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm.runtime import fastpath, quick
from hpvm.runtime.quick import Runs

pytestmark = pytest.mark.skipif(not fastpath.built(), reason=fastpath.REASON or "the extension is not built")

_NEVER = quick._NEVER
_SLOTS = Runs.__slots__


@pytest.fixture(scope="module")
def extension():
    from hpvm.runtime import _replay
    from hpvm.runtime.handle import LaunchHandle
    from hpvm.runtime.plan import Replay

    _replay.layout(Replay, Runs, LaunchHandle)
    return _replay


def _state(runs: Runs) -> dict:
    return {name: getattr(runs, name) for name in _SLOTS}


_seconds = st.one_of(
    st.sampled_from([1e-7, 5e-7, 1e-6, 4e-6, 1e-4, 1.9e-3, 2e-3, 5e-3, 2e-2, 0.2]),
    st.floats(min_value=1e-8, max_value=1.0),
)
_timing = st.one_of(st.just(_NEVER), _seconds)


@st.composite
def _runs(draw) -> Runs:
    """A ``Runs`` as runs leave one (its slots set by ``add``), or with any timings and
    counts, made consistent by one more ``add`` (the C keeps ``plain`` and ``fast`` where a
    warm run cannot change them, as the method would recompute them from slots ``add``
    wrote: only states ``add`` can reach are compared)."""
    runs = Runs()
    if draw(st.booleans()):
        for seconds, threads in draw(st.lists(st.tuples(_seconds, st.sampled_from([None, 1])), max_size=12)):
            runs.add(seconds, threads)
        runs.choices = draw(st.integers(0, 3 * quick.RECHECK_FAR_EVERY))
        return runs
    runs.last, runs.before, runs.every, runs.one = (draw(_timing) for _ in range(4))
    runs.probes = draw(st.integers(0, quick.ONE_THREAD_PROBES + 3))
    # (``fast`` and ``plain`` made as ``add`` makes them: a new fastest run on all threads
    # takes its long path, which recomputes both from the slots)
    runs.add(min(runs.every, runs.one, 1.0) / 2, None)
    runs.choices = draw(st.integers(0, 3 * quick.RECHECK_FAR_EVERY))
    runs.other = draw(st.booleans())
    return runs


_step = st.one_of(
    st.just(("threads",)),
    st.tuples(st.just("add"), _seconds, st.sampled_from([None, 1, 2])),
)


@settings(max_examples=400, deadline=None)
@given(runs=_runs(), steps=st.lists(_step, min_size=1, max_size=40))
def test_the_compiled_choices_and_records_leave_runs_as_the_methods_do(extension, runs, steps):
    limits = vars(quick)
    python, compiled = runs, copy.copy(runs)
    for step in steps:
        if step[0] == "threads":
            want = None if python.plain else python.threads()  # (as both replays ask)
            got = extension.runs_threads(compiled, limits)
            assert got == want and type(got) is type(want)
        else:
            _, seconds, threads = step
            python.add(seconds, threads)
            extension.runs_add(compiled, limits, seconds, threads)
        assert _state(compiled) == _state(python), step


def test_the_short_paths_are_taken_where_they_apply(extension, monkeypatch):
    """A warm run and a choice after the probes are made in C: the methods are not called
    (a spy on each) — else the test above would pass with the C calling them every time."""
    runs = Runs()
    for _ in range(quick.ONE_THREAD_PROBES):
        runs.add(1e-6, 1)
    runs.add(4e-6, None)
    assert not runs.plain and runs.probes == quick.ONE_THREAD_PROBES
    called: list[str] = []
    monkeypatch.setattr(Runs, "threads", lambda self: called.append("threads"))
    monkeypatch.setattr(Runs, "add", lambda self, seconds, threads=None: called.append("add"))
    limits = vars(quick)
    assert extension.runs_threads(runs, limits) == 1  # (one thread was faster)
    extension.runs_add(runs, limits, 2e-6, 1)  # (a warm run on one thread: no new fastest)
    extension.runs_add(runs, limits, 5e-6, None)  # (and on all threads)
    assert called == []
    assert runs.choices == 1 and runs.probes == quick.ONE_THREAD_PROBES + 1
    assert (runs.before, runs.last, runs.one, runs.every) == (2e-6, 5e-6, 1e-6, 4e-6)
    extension.runs_add(runs, limits, 5e-7, 1)  # (a new fastest: the method)
    extension.runs_add(runs, limits, 1e-6, 2)  # (another count: the method)
    assert called == ["add", "add"]


def test_limits_it_cannot_read_leave_the_choice_to_the_method(extension, monkeypatch):
    runs = Runs()
    for _ in range(quick.ONE_THREAD_PROBES):
        runs.add(1e-6, 1)
    runs.add(4e-6, None)
    called: list[str] = []
    monkeypatch.setattr(Runs, "threads", lambda self: called.append("threads") or 7)
    for odd in (
        dict(RECHECK_EVERY="32"),
        dict(RECHECK_FAR_EVERY=0),
        dict(ONE_THREAD_FAR=8),
    ):  # (not a count, not a float)
        called.clear()
        assert extension.runs_threads(runs, dict(vars(quick), **odd)) == 7 and called == ["threads"], odd
    with pytest.raises(TypeError, match="quick.Runs"):
        extension.runs_threads(object(), vars(quick))
