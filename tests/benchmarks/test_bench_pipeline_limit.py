"""The ``pipeline1`` row's limit (``benchmarks/kernels.py``, ``EdgePipeline.frames_on_threads``):
the sequential launches spread over host threads give the same edge maps as launched in
turn, frame by frame, whatever thread ran each."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import kernels  # noqa: E402 — benchmarks/kernels.py, found through the line above

import hpvm  # noqa: E402

pytestmark = pytest.mark.usefixtures("hpvm_runtime_stopped")


@pytest.mark.parametrize("threads", [2, 3])
def test_frames_on_threads_match_the_launches_in_turn(threads):
    hpvm.init()
    frames = kernels.synthetic_frames(5, 16)
    pipe = kernels.EdgePipeline(16, 16, in_flight=threads)
    expected = pipe.sequential(frames, "cpu")
    # (the frames' maps differ: one in the wrong place, or missed, would show)
    assert all((expected[k] != expected[k + 1]).any() for k in range(len(frames) - 1))
    np.testing.assert_array_equal(pipe.frames_on_threads(frames, "cpu", threads), expected)
