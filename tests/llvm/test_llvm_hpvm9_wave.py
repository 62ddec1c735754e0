"""A time-stepping program as HPVM's GenHPVM writes one (``hpvm9/wave_time_step.ll``, LLVM 9
text: a root replicating a straight-line 1-D leaf over the string's ``n`` points; point 0
driven by the time ``t`` the host passes, the last held, the inner points one leapfrog step
of the wave equation). The host runs it as a simulation does: three buffers tracked once
(byte views made once), rotated each step, and a launch + wait per step passing the step's
own ``t``.

Through this stop's change: ``t`` and ``c2`` reach only a leaf without loops, so they change
no work and stay out of the run key (``quick.work_params``; ``n`` sizes the node and stays
in). A new ``t`` each step then runs inside ``launch``: of 200 steps only the first of each
buffer rotation is queued (all 200 were, with every value in the key). The string is
NumPy's step for step, on ``cpu`` and ``interp``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import llvm
from hpvm.runtime import quick
from running import queued_launches

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]

WAVE = Path(__file__).parent / "hpvm9" / "wave_time_step.ll"
C2, DT = np.float32(0.25), np.float32(0.01)


@pytest.fixture(scope="module")
def root():
    return llvm.from_hpvm_ir(WAVE.read_text(), file=str(WAVE))


def _step(prev: np.ndarray, cur: np.ndarray, t: np.float32) -> np.ndarray:
    """The leaf's step in NumPy, operation for operation in float32."""
    nxt = np.empty_like(cur)
    nxt[0] = t * np.float32(0.5)
    nxt[-1] = np.float32(0.0)
    twoc = cur[1:-1] * np.float32(2.0)
    lap = (cur[:-2] + cur[2:]) - twoc
    nxt[1:-1] = (twoc - prev[1:-1]) + C2 * lap
    return nxt


def _simulate(root, n: int, steps: int, target: str) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """``steps`` launches over three rotated buffers (a small pluck to start); returns the
    string after them and NumPy's."""
    x = np.linspace(0.0, 1.0, n, dtype=np.float32)
    start = (np.float32(0.1) * np.exp(-((x - np.float32(0.5)) ** 2) * np.float32(200.0))).astype(np.float32)
    buffers = [start.copy(), start.copy(), np.zeros(n, np.float32)]
    for b in buffers:
        hpvm.track_memory(b)
    views = [b.view(np.uint8) for b in buffers]
    want_prev, want_cur = start.copy(), start.copy()
    try:
        for k in range(steps):
            prev, cur, nxt = k % 3, (k + 1) % 3, (k + 2) % 3
            t = np.float32(k) * DT
            hpvm.wait(hpvm.launch(root, (views[prev], views[cur], views[nxt], C2, t, n), target=target))
            want_prev, want_cur = want_cur, _step(want_prev, want_cur, t)
        last = buffers[(steps + 1) % 3]
        hpvm.request_memory(last)
        return last.copy(), want_cur
    finally:
        for b in buffers:
            hpvm.untrack_memory(b)


def test_the_time_and_the_coupling_change_no_work_and_the_size_does(root) -> None:  # type: ignore[no-untyped-def]
    assert [p.name for p in root.params] == ["prev", "cur", "next", "c2", "t", "n"]
    assert quick.bounded_graph(root) is None
    assert quick.work_params(root) == {5}


@pytest.mark.parametrize(("n", "steps"), [(257, 40), (3, 5), (1000, 7)])
def test_the_string_is_numpy_s_step_for_step(root, n: int, steps: int) -> None:  # type: ignore[no-untyped-def]
    got, want = _simulate(root, n, steps, "cpu")
    np.testing.assert_array_equal(got, want)


def test_on_interp_the_string_is_the_same(root) -> None:  # type: ignore[no-untyped-def]
    got, want = _simulate(root, 40, 6, "interp")
    np.testing.assert_array_equal(got, want)


def test_a_new_time_each_step_runs_inside_launch(root, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """200 steps, each with its own ``t``: the first launch of each of the three buffer
    rotations is queued (a new run key: the arrays' tracking entries), every other one runs
    inside ``launch``."""
    monkeypatch.setattr(quick, "QUICK_RUN_S", 60.0)  # (a loaded machine must not decide)
    queued = queued_launches(monkeypatch)
    got, want = _simulate(root, 513, 200, "cpu")
    np.testing.assert_array_equal(got, want)
    assert queued[0] <= 3, f"{queued[0]} of 200 steps were queued"
