"""Sparse matrix-vector product in the JDS format, written as parboil's spmv is for HPVM
(``programs/spmv_jds``: three files — the graph in kernel.cc, a C++ host with the standard
library in main.cc, the root's argument struct in include/spmv.h; a DEVICE leaf in the CUDA
convention with indirect reads and an indirect, permuted write, in a wrapper replicated
BLOCK times, itself replicated over the groups). The host builds the matrix, converts it
to JDS and checks the product against CSR itself; the tests run it on cpu and interp, at
sizes that are and are not multiples of a group, and with no nonzeros at all."""

from __future__ import annotations

from pathlib import Path

import pytest
from hpvmc_helpers import needs_clang, needs_llvm_leaves

from hpvm import c

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "spmv_jds"  # (fixed paths: zig's cache finds them)


@pytest.fixture(scope="module")
def program():
    return c.compile([FOLDER / "main.cc", FOLDER / "kernel.cc"], include_dirs=[str(FOLDER / "include")])


def test_the_graph_is_read_as_parboil_writes_it(program):
    (root,) = program.roots
    (wrapper,) = root.graph.nodes
    assert wrapper.function.name == "spmvLvl1"
    (leaf,) = wrapper.function.graph.nodes
    # each (pointer, bytes) pair is one array port; dim is a scalar
    names = [p.name for p in leaf.function.params]
    assert leaf.function.name == "spmv_jds"
    assert names == [
        "dst_vector",
        "d_data",
        "d_index",
        "d_perm",
        "x_vec",
        "dim",
        "jds_ptr_int",
        "sh_zcnt_int",
    ]
    assert [p.name for p in root.params][-1] == "dim_X1"


@pytest.mark.parametrize(
    ("argv", "target"),
    [
        (["1000", "12"], "cpu"),  # 16 groups, rows not a multiple of a warp
        (["64", "5"], "cpu"),  # one group exactly
        (["5", "0"], "cpu"),  # no nonzero: one empty diagonal list
        (["77", "3"], "interp"),
    ],
)
def test_the_program_runs_and_checks_itself(program, capfd, argv, target):
    assert program.run(argv, target=target) == 0
    out = capfd.readouterr().out
    assert out.startswith(f"spmv {argv[0]} rows, ") and out.endswith(": 0 wrong\n")
