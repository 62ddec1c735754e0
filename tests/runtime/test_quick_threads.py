"""Quick launches on one thread (``quick.Runs.threads``): a tiny graph's run on all threads
is mostly the wake-up of the OpenMP team, so a quick launch whose run key's fastest run
took under ``ONE_THREAD_PROBE_S`` tries ``ONE_THREAD_PROBES`` runs on one thread, and
keeps to one thread while that is the faster (for good on all threads once one thread is
``ONE_THREAD_LOSS`` times slower). That changes only how many threads run it: the results, the
errors and the calling thread's own Numba thread count stay what they were.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.backends.base import RunContext
from hpvm.runtime import quick
from markers import needs_backend
from running import every_run_quick

pytestmark = [pytest.mark.usefixtures("hpvm_runtime"), needs_backend("cpu")]


from test_quick_launches import add_root  # noqa: E402  (the same small graph: a raising vector add)


@pytest.fixture(autouse=True)
def every_run_quick_and_tiny(monkeypatch):
    """Every run counts as quick and tiny here (a loaded machine must not decide)."""
    every_run_quick(monkeypatch, add_root)
    monkeypatch.setattr(quick, "ONE_THREAD_PROBE_S", 60.0)


def _arrays(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a, b, c = np.arange(n, dtype=np.float32), np.full(n, 2, dtype=np.float32), np.zeros(n, np.float32)
    for x in (a, b, c):
        hpvm.track_memory(x)
    return a, b, c


def _runs(root) -> list[quick.Runs]:
    return list(quick.durations(root).values())


def test_a_tiny_launch_is_tried_on_one_thread_and_computes_the_same():
    import numba

    threads = numba.get_num_threads()
    a, b, c = _arrays(64)
    for _ in range(4):
        c[:] = 0
        hpvm.wait(hpvm.launch(add_root, (a, b, c, 64), target="cpu"))
        np.testing.assert_array_equal(c, a + b)
        assert numba.get_num_threads() == threads  # the caller's own count, restored
    (runs,) = _runs(add_root)
    assert runs.every < quick._NEVER and runs.one < quick._NEVER  # both measured
    assert runs.probes == min(3, quick.ONE_THREAD_PROBES)  # (4 launches: the first on all threads)


def test_no_one_thread_run_for_a_launch_that_is_not_tiny(monkeypatch):
    monkeypatch.setattr(quick, "ONE_THREAD_PROBE_S", 0.0)
    a, b, c = _arrays(64)
    for _ in range(4):
        hpvm.wait(hpvm.launch(add_root, (a, b, c, 64), target="cpu"))
    (runs,) = _runs(add_root)
    assert runs.every < quick._NEVER and runs.one == quick._NEVER and runs.probes == 0
    np.testing.assert_array_equal(c, a + b)


def test_a_node_error_on_one_thread_surfaces_at_wait_and_restores_the_thread_count():
    import numba

    threads = numba.get_num_threads()
    a, b, c = _arrays(16)
    for _ in range(3):
        hpvm.wait(hpvm.launch(add_root, (a, b, c, 16), target="cpu"))
    a[3] = -5000.0  # (same run key: the same quick, one-thread run)
    handle = hpvm.launch(add_root, (a, b, c, 16), target="cpu")
    assert handle.done.is_set()  # ran inside launch
    with pytest.raises(hpvm.NodeExecutionError, match="below -1000"):
        hpvm.wait(handle)
    assert numba.get_num_threads() == threads
    (runs,) = _runs(add_root)
    assert runs.one < quick._NEVER


def test_the_cpu_back_end_runs_with_the_threads_its_context_allows():
    import numba

    cpu = hpvm.backends.get_backend("cpu")
    a, b, c = np.arange(8, dtype=np.float32), np.ones(8, np.float32), np.zeros(8, np.float32)
    threads = numba.get_num_threads()
    for allowed in (1, None, threads + 5):  # (more than there are: all of them)
        c[:] = 0
        cpu.run(add_root, (a, b, c, 8), RunContext(threads=allowed))
        np.testing.assert_array_equal(c, a + 1)
        assert numba.get_num_threads() == threads


_SECONDS = st.floats(1e-7, 1.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_SECONDS, st.sampled_from([None, 1])), min_size=1, max_size=12))
def test_recorded_runs_keep_the_fastest_of_each_kind_and_choose_by_them(runs):
    times: dict = {}
    for seconds, threads in runs:
        quick.entry(times, "k").add(seconds, threads)
    known = times["k"]
    last, every, one, probes = known.last, known.every, known.one, known.probes
    assert last == runs[-1][0]
    assert every == min([s for s, t in runs if t is None], default=quick._NEVER)
    assert one == min([s for s, t in runs if t == 1], default=quick._NEVER)
    assert probes == sum(t == 1 for _, t in runs)
    chosen = known.threads()
    if probes == 0:
        assert chosen == (1 if every < quick.ONE_THREAD_PROBE_S else None)
    elif probes < quick.ONE_THREAD_PROBES:
        assert chosen == 1  # (the probes go on)
    elif one >= quick.ONE_THREAD_LOSS * every:
        assert chosen is None and known.plain  # settled on all threads: far behind on one
    else:
        assert chosen == (1 if one < every else None)
    before = runs[-2][0] if len(runs) > 1 else quick._NEVER
    assert known.quick() == (
        last < quick.QUICK_RUN_S
        or (
            min(every, one) < quick.QUICK_RUN_S
            and (last < quick.LOADED_RUN_S or (last < quick.PREEMPTED_RUN_S and before < quick.LOADED_RUN_S))
        )
    )


def test_a_run_key_found_before_its_first_run_is_neither_quick_nor_given_a_thread_count():
    times: dict = {}
    runs = quick.entry(times, "k")  # (what a launch finds before its run adds to it)
    assert quick.entry(times, "k") is runs
    assert runs.threads() is None and not runs.quick() and not quick.runs_in_wait(times, "k")


@hpvm.leaf
def mixed(k: hpvm.i32, n: hpvm.i64, x: hpvm.f64, flag: bool) -> tuple[hpvm.i32, hpvm.i64, hpvm.f64, bool]:
    return k + 1, n + 1, x * 2.0, not flag


@hpvm.internal
def mixed_root(k: hpvm.i32, n: hpvm.i64, x: hpvm.f64, flag: bool):
    node = hpvm.create_node(mixed)
    for port in range(4):
        hpvm.bind_in(node, port, port)
        hpvm.bind_out(node, port, port)


def test_python_scalars_passed_as_they_are_share_the_compiled_signature_of_converted_ones():
    """``CPUBackend._runner`` passes a Python ``int`` / ``float`` / ``bool`` to an ``i64`` /
    ``f64`` / ``bool`` port unconverted (Numba types it as the port's type) and converts
    the rest (an ``int`` for ``i32``): the results are the port's types, and the NumPy
    scalars of the same types compile nothing more."""
    cpu = hpvm.backends.get_backend("cpu")
    first = cpu.run(mixed_root, (3, 4, 1.5, True))
    assert first == (4, 5, 3.0, False)
    assert [type(v) for v in first] == [np.int32, np.int64, np.float64, np.bool_]
    entry = cpu.prepare(mixed_root).entry
    signatures = len(entry.signatures)
    again = cpu.run(mixed_root, (np.int32(3), np.int64(4), np.float64(1.5), np.bool_(True)))
    assert again == first and len(entry.signatures) == signatures


def test_after_the_probes_every_recheck_th_run_tries_the_other_count_twice():
    """The first runs on all threads include the OpenMP team's creation: a verdict made on
    them alone kept one thread for ever. Every ``RECHECK_EVERY``-th choice and the
    ``RECHECK_RUNS`` - 1 after it take the other count — the first of them on all threads
    finds the team asleep, the next one awake —, so a faster warm run on all threads
    (recorded as any run is) changes it, and then a recheck tries one thread as often."""
    runs = quick.Runs()
    runs.add(56e-6)  # the first run on all threads: the team made
    for _ in range(quick.ONE_THREAD_PROBES):
        assert runs.threads() == 1
        runs.add(7.2e-6, 1)  # (7.8x faster: not ONE_THREAD_FAR)
    every, pair = quick.RECHECK_EVERY, quick.RECHECK_RUNS
    chosen = [runs.threads() for _ in range(2 * every)]
    rechecks = [i for i, c in enumerate(chosen) if c is None]
    assert rechecks == [every - 1 + k for k in range(pair)] + [2 * every - 1]  # (the last pair goes on)
    assert runs.threads() is None  # (... here: the second of the pair)
    assert all(runs.threads() == 1 for _ in range(every - pair))
    runs.add(56e-6)  # the recheck's first run: the team asleep
    runs.add(5e-6)  # its second: awake, faster than one thread by less than ONE_THREAD_LOSS
    chosen = [runs.threads() for _ in range(every)]
    assert chosen.count(1) == pair and chosen.count(None) == every - pair
    assert chosen[:pair] == [1] * pair  # (the count chosen before the pair, for the whole pair)


def test_a_key_far_faster_on_one_thread_rechecks_all_threads_rarely():
    """The 64-element vector add: 0.05 µs on one thread, 1.6 µs on all (warm): a recheck pair
    on all threads (20–60 µs each with the team's wake-up) every 32 runs cost a hot loop
    more than its runs; ``ONE_THREAD_FAR`` times faster, it rechecks every
    ``RECHECK_FAR_EVERY``-th run — and every ``RECHECK_EVERY``-th again once all threads
    come closer."""
    runs = quick.Runs()
    runs.add(1.6e-6)
    for _ in range(quick.ONE_THREAD_PROBES):
        assert runs.threads() == 1
        runs.add(0.05e-6, 1)
    far, pair = quick.RECHECK_FAR_EVERY, quick.RECHECK_RUNS
    chosen = [runs.threads() for _ in range(far + pair)]
    assert [i for i, c in enumerate(chosen) if c is None] == [far - 1 + k for k in range(pair)]
    runs.add(0.3e-6)  # all threads within ONE_THREAD_FAR: the short period again
    chosen = [runs.threads() for _ in range(2 * quick.RECHECK_EVERY)]
    assert chosen.count(None) == 2 * pair  # (a pair every 32 choices)


def test_a_key_far_faster_on_all_threads_settles_there_for_good():
    """The stencil's step on a quiet machine: 95 µs on all threads (under the probe limit),
    170–190 µs on one. After the probes it never runs on one thread again, and a replay
    reads ``plain`` (no thread count got and set per launch)."""
    runs = quick.Runs()
    runs.add(95e-6)
    for _ in range(quick.ONE_THREAD_PROBES):
        assert runs.threads() == 1 and not runs.plain
        runs.add(172e-6, 1)
    assert runs.plain
    assert [runs.threads() for _ in range(3 * quick.RECHECK_EVERY)] == [None] * (3 * quick.RECHECK_EVERY)
    runs.add(400e-6)  # a slow run later changes nothing: the fastest times stand
    assert runs.plain and runs.threads() is None


def test_a_key_never_probed_is_never_rechecked_on_one_thread():
    runs = quick.Runs()
    runs.add(2 * quick.ONE_THREAD_PROBE_S)  # (not tiny: no probes)
    assert [runs.threads() for _ in range(2 * quick.RECHECK_EVERY)] == [None] * (2 * quick.RECHECK_EVERY)
