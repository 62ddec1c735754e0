"""An iterative kernel as HPVM's GenHPVM writes one (``hpvm9/jacobi_two_level.ll``, LLVM 9
text: a root creating one internal node that replicates a 2-D leaf over a grid rounded up
to 8x8 blocks, the body under ``if (x < w && y < h)``, x the column). The host runs it as
HPVM's Parboil ports do: the two buffers tracked once, a launch + wait per sweep with them
swapped. Run through this stop's change — idle workers end after ``IDLE_RETIRE_S``, and
with them the OpenMP teams their runs made — with every launch queued to a worker and the
host pausing between bursts of sweeps for longer than an idle worker lives; the plate is
NumPy's sweep for sweep, and ``interp``'s."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import llvm
from running import queued_with_retiring_workers

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]

JACOBI = Path(__file__).parent / "hpvm9" / "jacobi_two_level.ll"


@pytest.fixture(scope="module")
def root():
    return llvm.from_hpvm_ir(JACOBI.read_text(), file=str(JACOBI))


def _sweep(src: np.ndarray) -> np.ndarray:
    """The leaf's sweep in NumPy: the border copied, each inner point 0.25 * (l + r + u + d)."""
    dst = src.copy()
    inner = ((src[1:-1, :-2] + src[1:-1, 2:]) + src[:-2, 1:-1]) + src[2:, 1:-1]
    dst[1:-1, 1:-1] = (inner * np.float32(0.25)).astype(np.float32)
    return dst


def _sweeps(root, plate: np.ndarray, sweeps: int, target: str, pause_every: int = 0, pause_s: float = 0.0):
    """``sweeps`` launches + waits of ``root``, the buffers swapped between them (each a
    byte view made once, as HPVM-C passes them); the plate after the last."""
    h, w = plate.shape
    a, b = plate.copy(), np.zeros_like(plate)
    for x in (a, b):
        hpvm.track_memory(x)
    views = (a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))
    gx, gy = (w + 7) // 8 * 8, (h + 7) // 8 * 8
    src, dst = 0, 1
    for s in range(sweeps):
        args = (views[src], views[dst], w, h, gx, gy)  # (the byte counts: the views' sizes)
        hpvm.wait(hpvm.launch(root, args, target=target))
        src, dst = dst, src
        if pause_every and s % pause_every == pause_every - 1:
            time.sleep(pause_s)  # (the host's own work: longer than an idle worker lives)
    out = (a, b)[src].copy()
    for x in (a, b):
        hpvm.untrack_memory(x)
    return out


@pytest.mark.parametrize(("w", "h", "sweeps"), [(37, 21, 9), (64, 40, 6), (5, 3, 4)])
def test_queued_sweeps_with_pauses_are_numpys_while_workers_end(root, monkeypatch, w, h, sweeps):
    ended = queued_with_retiring_workers(monkeypatch)
    plate = ((np.arange(h * w, dtype=np.int64).reshape(h, w) * 37 % 101) / 101).astype(np.float32)
    want = plate
    for _ in range(sweeps):
        want = _sweep(want)
    got = _sweeps(root, plate, sweeps, "cpu", pause_every=3, pause_s=0.03)
    np.testing.assert_array_equal(got, want)
    assert ended[0] >= (sweeps - 1) // 3  # a worker ended in each pause before a sweep


def test_on_interp_the_plate_is_the_same(root):
    plate = np.linspace(0, 1, 11 * 7, dtype=np.float32).reshape(7, 11)
    np.testing.assert_array_equal(_sweeps(root, plate, 3, "interp"), _sweeps(root, plate, 3, "cpu"))
