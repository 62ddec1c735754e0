"""An all-pairs n-body simulation written as HPVM's ports of CUDA benchmarks write one
(``programs/nbody``: the packed ``RootIn`` and the root's declaration in nbody.h, the graph
in nbody_graph.cpp — a CPU root, a wrapper replicating the leaf over ``n`` rounded up to
blocks of 64, the leaf's body under ``if (i < n)`` looping over every body —, the host in
main.cpp with ``std::vector`` buffers, ``std::stol`` and ``std::swap``). The host launches
one step and waits for it at once, swapping the two position buffers between steps, then
runs the same steps itself and counts the bodies that differ by more than a rounding.

Through this stop's change: a step of 2048 bodies takes milliseconds, past the quick limit
(``quick.QUICK_RUN_S``), so each launch was queued for a worker. A host that waits at once
is now seen doing so (``quick.WAITED_AT_ONCE``: little CPU time of its own between launch and
wait) and its steps run inside ``launch`` and are replayed. The test makes every step count as long (the limit at
0) and counts the launches that were queued."""

from __future__ import annotations

from pathlib import Path

import pytest
from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

from hpvm.runtime import quick
from running import queued_launches

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "nbody"  # (a fixed path: zig's cache finds it)

program = compiled_program([FOLDER / "main.cpp", FOLDER / "nbody_graph.cpp"])


def test_the_leaf_s_loop_over_every_body_is_bounded(program):
    assert quick.bounded_graph(program.roots[0]) is None  # (j < n: a scalar port)


def test_steps_the_host_waits_for_at_once_run_inside_launch(program, monkeypatch):
    """Every step counts as long (2048 bodies: milliseconds a step, of which the host's path
    between launch and wait is far under ``AT_ONCE_FRACTION``); the two buffer orders are two
    run keys, each queued until its host has waited for three of its launches at once, then
    inside ``launch`` and replayed: of 16 steps, at most half are queued (all 16 were,
    before). Whether ``wait`` or a worker that preempted the host ran a queued step does not
    change that (a fresh clone's suite, the machine loaded, had the worker win 22 of 24)."""
    monkeypatch.setattr(quick, "QUICK_RUN_S", 0.0)
    queued = queued_launches(monkeypatch)
    assert program.run(["2048", "16"]) == 0
    assert 0 < queued[0] <= 8, f"{queued[0]} of 16 steps were queued"


@pytest.mark.parametrize(("bodies", "steps"), [("1000", "6"), ("100", "9"), ("1", "3")])
def test_the_steps_are_the_host_s_own(program, bodies, steps):
    assert program.run([bodies, steps]) == 0


def test_on_interp_the_bodies_are_the_same(program):
    assert program.run(["40", "3"], target="interp") == 0


def test_a_bad_command_line_is_the_program_s_usage(program):
    assert program.run(["0"]) == 2
