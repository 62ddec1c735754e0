"""MRI-Q written as parboil's HPVM version is (``programs/mriq.c``): two DEVICE leaves in
the CUDA convention, ComputePhiMag and ComputeQ (``sinf``/``cosf`` in a loop over every
sample), ordered by an all-to-all edge that carries phiMag's size from ``__hpvm__return``,
a packed argument struct and a C host that checks against a double-precision reference.
It runs and checks itself on cpu and interp, at sizes that are and are not
multiples of anything; the edge's replication type is HPVM's spelling (1: all-to-all)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

from hpvm.ir.graph import ALL_TO_ALL

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "mriq.c"  # (a fixed path: zig's cache finds it)

program = compiled_program(PROGRAM)


def test_the_graph_is_two_leaves_ordered_by_an_all_to_all_edge(program):
    (root,) = program.roots
    (edge,) = root.graph.edges
    assert [n.function.name for n in root.graph.nodes] == ["ComputePhiMag", "ComputeQ"]
    assert edge.src.function.name == "ComputePhiMag" and edge.repl == ALL_TO_ALL


@pytest.mark.parametrize(
    ("argv", "target"), [(["256", "1000"], "cpu"), (["37", "129"], "cpu"), (["64", "50"], "interp")]
)
def test_the_program_runs_and_checks_itself(program, capfd, argv, target):
    assert program.run(argv, target=target) == 0
    assert capfd.readouterr().out == f"mri-q {argv[0]} samples, {argv[1]} voxels: 0 wrong\n"
