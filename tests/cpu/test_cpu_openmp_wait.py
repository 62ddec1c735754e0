"""How idle OpenMP threads wait in a process that imports hpvm (backends/__init__.py): a
bounded spin (active, 3,000 spins) unless the user chose, and idle workers end so that
their OpenMP teams do not throttle every team's spinning (runtime/workers.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import hpvm
from hpvm.runtime import Runtime

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


@hpvm.leaf(ins=("a",), outs=("a",))
def _twice(a: hpvm.f32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    a[i] = a[i] * 2


@hpvm.internal
def _double(a: hpvm.f32[:], n: hpvm.i64):
    node = hpvm.create_node_1d(_twice, n)
    hpvm.bind_in(node, 0, 0)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc (Linux)")
def test_a_retired_worker_takes_its_openmp_team_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first launch runs on a worker, which starts an OpenMP team of its own for the
    replicated loop; once the worker has been idle for ``IDLE_RETIRE_S`` it ends, and the
    process has as many threads as before the launch."""
    if "cpu" not in hpvm.backends.available_backends():
        pytest.skip("the cpu back end (Numba) is not available here")
    from hpvm.runtime import workers

    monkeypatch.setattr(workers, "IDLE_RETIRE_S", 0.02)
    rt = Runtime()
    rt.init()
    try:
        a = np.ones(1 << 16, np.float32)
        rt.track_memory(a)
        before = len(os.listdir("/proc/self/task"))
        rt.wait(rt.launch(_double, (a, a.size), target="cpu"))
        assert (a == 2).all()
        during = len(os.listdir("/proc/self/task"))
        deadline = time.monotonic() + 10
        while len(os.listdir("/proc/self/task")) > before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert during > before
        assert len(os.listdir("/proc/self/task")) <= before
        assert rt.workers.thread_count() == 0
        rt.untrack_memory(a)
    finally:
        rt.cleanup()
