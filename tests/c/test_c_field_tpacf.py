"""Two-point angular correlation, written as parboil's tpacf is for HPVM
(``programs/tpacf``: four files — the graph in kernel.cc, a C++ host with the standard
library in main.cc, its model of the sky in model.cc, the declarations in
include/tpacf.h). A DEVICE leaf in the CUDA convention loops over a second point set,
bins each pair by a binary search over descending boundaries and counts it with
``__hpvm__atomic_add`` into a shared histogram, under a wrapper replicated BLOCK times in a
root over the groups; the host launches it once per histogram (DD, then DR and RR per
random set) and checks every bin against pairs counted in double precision. Run on cpu
and interp, at sizes that are and are not multiples of a group, with one point (no pair of
a set with itself) and with pairs only in the outer bins."""

from __future__ import annotations

from pathlib import Path

import pytest
from hpvmc_helpers import needs_clang, needs_llvm_leaves

from hpvm import c

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "tpacf"  # (fixed paths: zig's cache finds them)


@pytest.fixture(scope="module")
def program():
    return c.compile(
        [FOLDER / "main.cc", FOLDER / "kernel.cc", FOLDER / "model.cc"],
        include_dirs=[str(FOLDER / "include")],
    )


def test_the_graph_is_read_as_parboil_writes_it(program):
    (root,) = program.roots
    (wrapper,) = root.graph.nodes
    assert (root.name, wrapper.function.name) == ("tpacfRoot", "tpacfLvl1")
    (leaf,) = wrapper.function.graph.nodes
    assert leaf.function.name == "genHists"
    # each (pointer, bytes) pair is one array port; counts, bins and the self flag are scalars
    assert [p.name for p in leaf.function.params] == [
        "x1", "y1", "z1", "n1", "x2", "y2", "z2", "n2", "binb", "nbins", "histo", "self",
    ]  # fmt: skip
    assert [p.name for p in root.params][-1] == "dim_X1"


@pytest.mark.parametrize(
    ("argv", "target"),
    [
        (["300", "2", "20"], "cpu"),  # 5 groups, the last one partly empty
        (["64", "1", "10"], "cpu"),  # one group exactly
        (["1", "1", "5"], "cpu"),  # one point: DD and RR count nothing, DR one pair
        (["40", "1", "2"], "cpu"),  # two narrow bins: nearly every pair beyond the last boundary
        (["70", "1", "8"], "interp"),
    ],
)
def test_the_program_runs_and_checks_itself(program, capfd, argv, target):
    assert program.run(argv, target=target) == 0
    out = capfd.readouterr().out
    assert out.startswith(f"tpacf {argv[0]} points, {argv[1]} random sets, {argv[2]} bins: 0 wrong, "), out
    n, sets = int(argv[0]), int(argv[1])
    pairs = out.split("wrong, ")[1].split()
    assert pairs == [
        "DD",
        str(n * (n - 1) // 2),
        "DR",
        str(sets * n * n),
        "RR",
        str(sets * n * (n - 1) // 2),
        "pairs",
    ]
