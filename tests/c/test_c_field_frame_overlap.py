"""A camera loop as HPVM's host programs overlap their own work with a launch
(``programs/frame_overlap.cc``, C++ with ``std::vector``): per frame a launch of a 2-D
smoothing-and-threshold graph (a wrapper node over 16x16 blocks, the GPU convention, a
bounds guard), the same filter on the host while it runs, then the wait and a check of
every pixel; after every third frame the host sleeps for the "camera", longer than an idle
worker lives. Run through this stop's change — idle workers end after ``IDLE_RETIRE_S`` and
free their OpenMP teams — with every launch queued to a worker (none runs inside
``launch``): the workers that ran the bursts end during the pauses, the next launch starts
a new one, and no frame is lost or wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

from running import queued_with_retiring_workers

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "frame_overlap.cc"  # (a fixed path: zig's cache finds it)

program = compiled_program(PROGRAM)


@pytest.fixture
def retired(monkeypatch):
    """How many workers ended idle; every launch queued to a worker, workers ending after
    5 ms idle."""
    return queued_with_retiring_workers(monkeypatch)


@pytest.mark.parametrize(("size", "frames"), [((53, 37), 9), ((130, 70), 6), ((7, 5), 4)])
def test_every_frame_is_right_while_workers_end_in_the_pauses(program, retired, size, frames):
    assert program.run([str(size[0]), str(size[1]), str(frames), "30"]) == 0
    pauses = (frames - 1) // 3  # (each pause but one after the last frame ends a worker before a launch)
    assert retired[0] >= pauses


def test_on_interp_the_frames_are_the_same(program):
    assert program.run(["19", "11", "3", "1"], target="interp") == 0
