"""``quick.Runs.add``: what a run's time makes of its run key's record (the quick-run rules
of ``runtime/quick.py``), on its short path for a warm replayed launch as on its general
one — with the real limits (no fixture raises them here)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm.runtime import quick


def _expected(runs: list[tuple[float, int | None]]) -> tuple:
    """``Runs.add``'s rules as ``quick.py`` states them, applied one run at a time to a new
    record."""
    last = before = every = one = float("inf")
    probes, fast, plain = 0, False, True
    for seconds, threads in runs:
        before, last = last, seconds
        if threads == 1:
            one, probes = min(seconds, one), probes + 1
        else:
            every = min(seconds, every)
        fast = seconds < quick.QUICK_RUN_S or (
            min(every, one) < quick.QUICK_RUN_S
            and (
                seconds < quick.LOADED_RUN_S
                or (seconds < quick.PREEMPTED_RUN_S and before < quick.LOADED_RUN_S)
            )
        )
        plain = (not probes and not every < quick.ONE_THREAD_PROBE_S) or (
            probes >= quick.ONE_THREAD_PROBES and one >= quick.ONE_THREAD_LOSS * every
        )
    return last, before, every, one, probes, fast, plain


@settings(max_examples=300, deadline=None)
@given(
    runs=st.lists(
        st.tuples(
            st.sampled_from([1e-6, 5e-5, 1e-4, 1.5e-3, 2e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.2]),
            st.sampled_from([None, 1]),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_runs_add_keeps_its_rules_on_its_short_path(runs):
    """``Runs.add`` returns early for a run on all threads under ``QUICK_RUN_S`` that is no
    new fastest (most replayed launches): what it records must be what its rules give."""
    record = quick.Runs()
    for seconds, threads in runs:
        record.add(seconds, threads)
    got = (record.last, record.before, record.every, record.one, record.probes, record.fast, record.plain)
    assert got == _expected(runs)


@settings(max_examples=300, deadline=None)
@given(
    runs=st.lists(
        st.tuples(
            st.sampled_from([1e-4, 1.5e-3, 5e-3, 2e-2, 4.9e-2, 5e-2, 0.2]),
            st.sampled_from([None, True, False]),  # quick (in launch); queued, waited for at once or not
        ),
        min_size=1,
        max_size=40,
    ),
    recheck_every=st.sampled_from([2, 3, 32]),
)
def test_a_host_that_waits_at_once_makes_runs_quick_up_to_the_wait_limit(runs, recheck_every):
    """A run key's runs under ``WAIT_RUN_S`` are quick once its host waited at once for
    ``WAITED_AT_ONCE`` of its queued launches in a row (``Runs.waited_for``, here before the
    run's ``add``, as when ``wait`` runs it), but for every ``WAIT_RECHECK_EVERY``-th such
    run, after which the host must wait at once once more; a queued launch it did not wait
    for at once starts the count again. The rules ``quick.py`` states, one run at a time,
    beside the record's."""
    record = quick.Runs()
    waited = inline = 0
    for i, (seconds, at_once) in enumerate(runs):
        if at_once is not None:  # (a queued launch)
            record.waited_for(at_once)
            waited = waited + 1 if at_once else 0
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(quick, "WAIT_RECHECK_EVERY", recheck_every)
            record.add(seconds)
        fast = _expected([(s, None) for s, _ in runs[: i + 1]])[5]  # (quick by its times alone)
        if not fast and seconds < quick.WAIT_RUN_S and waited >= quick.WAITED_AT_ONCE:
            inline += 1
            fast = inline < recheck_every
            if not fast:
                inline, waited = 0, quick.WAITED_AT_ONCE - 1
        assert (record.fast, record.waited, record.inline) == (fast, waited, inline)


@pytest.mark.parametrize("seconds", [5e-3, 4.9e-2, 5e-2])
def test_a_wait_after_the_run_s_add_decides_the_next_launch_as_one_before_it(seconds):
    """A worker that preempted the host records the run before the host's ``wait`` notes how
    it waited (``Runs.waited_for`` after ``add``): the next launch is quick as in the other
    order — at once the ``WAITED_AT_ONCE``-th time under ``WAIT_RUN_S``; not at once, not."""
    first, then = quick.Runs(), quick.Runs()
    for at_once in [True] * quick.WAITED_AT_ONCE + [False, True]:
        first.waited_for(at_once)
        first.add(seconds)
        then.add(seconds)
        then.waited_for(at_once)
        assert (then.fast, then.waited) == (first.fast, first.waited)
