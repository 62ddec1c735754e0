"""A four-stage edge pipeline streamed from ``main``, written as HPVM's pipeline benchmark
writes its stages (``programs/edge_stream.cc``, C++ with ``std::vector``): each stage a
wrapper node replicating a leaf 2-D over a grid rounded up to whole 8x8 blocks, the leaf's
body under ``if ((gx < n) && (gy < m))``, byte counts handed on over streaming edges, the
arrays bound as streamed inputs; the host pushes six frames, each with buffers of its own,
then pops them all and recomputes each. Run through this stop's change: the leaves are
straight-line code, so on a 2-core machine the four stages run as whole frames side by side
(``streaming.whole_items``); with ``WHOLE_ITEMS`` off, a thread per stage; on ``interp``,
instance by instance — the same pixels every time, for sizes with partial blocks."""

from __future__ import annotations

from pathlib import Path

import pytest
from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

from hpvm.backends import get_backend
from hpvm.runtime import replicas, streaming
from stage_overlap import StageOverlap

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "edge_stream.cc"  # (a fixed path: zig's cache finds it)

program = compiled_program(PROGRAM)

WRAPPERS = ("BNode", "GNode", "TNode", "MNode")


@pytest.fixture
def two_cores(monkeypatch):
    """A 2-core machine, replicas as soon as a time allows them (the frames are small)."""
    monkeypatch.setattr(streaming, "machine_cores", lambda: 2)
    monkeypatch.setattr(replicas, "REPLICA_SECONDS", 0.0)


def test_its_four_stages_may_run_whole_frames_side_by_side(program, two_cores):
    (root,) = program.roots
    plan = streaming.plan_stages(root)
    assert [[n.name for n in stage] for stage in plan] == [[w] for w in WRAPPERS]
    assert streaming.whole_items(get_backend("cpu"), root, plan)


@pytest.mark.parametrize("size", [[], ["64", "40"], ["9", "3"]])
def test_the_stream_runs_whole_frames_and_checks_itself(program, two_cores, monkeypatch, size):
    overlap = StageOverlap(monkeypatch)
    assert program.run(size) == 0
    assert overlap.stages == {WRAPPERS}


def test_with_a_thread_per_stage_and_on_interp_the_frames_are_the_same(program, two_cores, monkeypatch):
    monkeypatch.setattr(streaming, "WHOLE_ITEMS", False)
    overlap = StageOverlap(monkeypatch)
    assert program.run(["45", "21"]) == 0
    assert overlap.stages == {(w,) for w in WRAPPERS}
    assert program.run(["13", "5"], target="interp") == 0
