"""The 3-D 7-point Jacobi stencil, written as parboil's stencil is for HPVM
(``programs/stencil``: four files — the graph in kernel.cc, a C++ host with the standard
library in main.cc, its starting grid and reference loop in grid.cc, the declarations in
include/stencil.h). Three levels under the root as HPVM builds them: the root creates the
grid node once (``__hpvm__createNodeND(0, …)``), which replicates a wrapper over the groups
in x, y and z, which replicates a DEVICE leaf (``hpvm::DEVICE``, as HPVM's C++ spells it)
over a block. The host tracks both grids, copies the start into the second after tracking
it, launches once per time step swapping its pointers, requests the last grid once and
checks every point against the same steps of a plain loop. Run on cpu and interp, at sizes
that are and are not multiples of a block, with one step and several."""

from __future__ import annotations

from pathlib import Path

import pytest
from hpvmc_helpers import needs_clang, needs_llvm_leaves

from hpvm import c

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "stencil"  # (fixed paths: zig's cache finds them)
PORTS = ["c0", "c1", "A0", "Anext", "nx", "ny", "nz"]  # each (pointer, bytes) pair is one array port
BLOCK = ["dim_X1", "dim_Y1", "dim_Z1"]
GRID = ["dim_X2", "dim_Y2", "dim_Z2"]


@pytest.fixture(scope="module")
def program():
    return c.compile(
        [FOLDER / "main.cc", FOLDER / "kernel.cc", FOLDER / "grid.cc"], include_dirs=[str(FOLDER / "include")]
    )


def test_the_graph_is_read_as_parboil_writes_it(program):
    (root,) = program.roots
    (grid,) = root.graph.nodes
    (group,) = grid.function.graph.nodes
    (leaf,) = group.function.graph.nodes
    assert [(n.name, n.function.name) for n in (grid, group, leaf)] == [
        ("stencil_node", "stencilLvl2"),
        ("stencil_node", "stencilLvl1"),
        ("stencil_node", "naive_kernel"),
    ]
    # the grid node is created once; the wrapper is replicated over the groups, the leaf over a block
    assert (grid.dims, group.dims, leaf.dims) == (0, 3, 3)
    assert [p.name for p in group.sizes] == GRID and [p.name for p in leaf.sizes] == BLOCK
    assert [p.name for p in root.params] == [p.name for p in grid.function.params] == PORTS + BLOCK + GRID
    # the wrapper takes the block's sizes but binds only the leaf's nine HPVM ports (seven here)
    assert [p.name for p in group.function.params] == PORTS + BLOCK
    assert [p.name for p in leaf.function.params] == PORTS
    assert len(group.function.graph.in_binds) == len(PORTS)
    assert (leaf.function.ins, leaf.function.outs) == (("A0", "Anext"), ("Anext",))
    # CPU_TARGET on the two upper levels, hpvm::DEVICE (the GPU) on the wrapper and the leaf
    assert [f.hint for f in (root, grid.function, group.function, leaf.function)] == [
        "cpu",
        "cpu",
        "gpu",
        "gpu",
    ]


@pytest.mark.parametrize(
    ("argv", "groups"),
    [
        (["66", "20", "10", "1"], "1x18x8"),  # parboil's block, 256 x 1 x 1: most of a group idle
        (["34", "6", "6", "4", "32", "1", "1"], "1x4x4"),  # the interior a multiple of the block
        (["40", "12", "9", "5", "8", "4", "2"], "5x3x4"),  # a 3-D block, no size a multiple of it
        (["3", "3", "3", "1"], "1x1x1"),  # one interior point
    ],
)
def test_the_program_runs_and_checks_itself(program, capfd, argv, groups):
    assert program.run(argv, target="cpu") == 0
    out = capfd.readouterr().out
    block = "x".join(argv[4:] or ["256", "1", "1"])
    head = f"stencil {'x'.join(argv[:3])}, {argv[3]} steps, block {block}, {groups} groups: 0 wrong, sum "
    assert out.startswith(head), out


def test_the_interpreter_agrees_with_cpu(program, capfd):
    argv = ["7", "6", "5", "2", "4", "2", "2"]  # 2 x 2 x 2 groups of 4 x 2 x 2, x and y not multiples
    lines = []
    for target in ("interp", "cpu"):
        assert program.run(argv, target=target) == 0
        lines.append(capfd.readouterr().out)
    assert lines[0].startswith("stencil 7x6x5, 2 steps, block 4x2x2, 2x2x2 groups: 0 wrong, sum "), lines[0]
    assert lines[0] == lines[1]  # the same grid, to the printed digit


@pytest.mark.parametrize("argv", [["2", "5", "5", "1"], ["5", "5", "5"], ["5", "5", "5", "1", "0"]])
def test_bad_arguments_print_the_usage(program, capfd, argv):
    assert program.run(argv, target="cpu") != 0
    assert capfd.readouterr().out.startswith("Usage: stencil nx ny nz t [bx [by [bz]]]\n")
