"""How idle OpenMP threads wait in a process that imports hpvm (backends/__init__.py): a
bounded spin (active, 3,000 spins) unless the user chose, and idle workers end so that
their OpenMP teams do not throttle every team's spinning (runtime/workers.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

_PRINT_POLICY = (
    "import os, hpvm.backends; print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('GOMP_SPINCOUNT'))"
)


def _policy_after_import(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    done = subprocess.run(
        [sys.executable, "-c", _PRINT_POLICY],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize(
    ("env", "seen"),
    [
        ({}, "active 3000"),
        ({"OMP_WAIT_POLICY": "passive"}, "passive None"),
        ({"GOMP_SPINCOUNT": "0"}, "None 0"),
    ],
)
def test_the_wait_policy_is_a_bounded_spin_unless_the_user_chose(env: dict[str, str], seen: str) -> None:
    assert _policy_after_import(**env) == seen


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc (Linux)")
def test_a_retired_worker_takes_its_openmp_team_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that runs a parallel region starts an OpenMP team of its own (a thread
    beside it); once it has been idle for ``IDLE_RETIRE_S`` it ends, and the process has as
    many threads as before. The region runs as a job of the pool itself: a launch may run
    on the host instead (``wait`` runs a job no worker has started)."""
    numba = pytest.importorskip("numba", reason="the OpenMP team is Numba's")
    from hpvm.runtime import workers

    if numba.get_num_threads() < 2:
        pytest.skip("one thread: a parallel region starts no team")

    @numba.njit(parallel=True, cache=False)
    def double(a):
        for i in numba.prange(a.size):
            a[i] = a[i] * 2

    a = np.ones(1 << 16, np.float32)
    double(a)  # (compiled, and the calling thread's team made, before counting)
    monkeypatch.setattr(workers, "IDLE_RETIRE_S", 0.02)
    pool = workers.WorkerPool("test-team")
    try:
        before = len(os.listdir("/proc/self/task"))
        ran, hold = threading.Event(), threading.Event()

        def job() -> None:
            double(a)
            ran.set()
            hold.wait(5)  # (busy until counted: it cannot retire yet)

        pool.submit(job)
        assert ran.wait(10)
        during = len(os.listdir("/proc/self/task"))
        hold.set()
        deadline = time.monotonic() + 10
        while len(os.listdir("/proc/self/task")) > before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert during >= before + 2  # the worker and its team's thread
        assert len(os.listdir("/proc/self/task")) <= before
        assert pool.thread_count() == 0
        assert (a == 4).all()
    finally:
        pool.stop()
