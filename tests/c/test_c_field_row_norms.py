"""Rows scaled by their norms, as HPVM's C++ benchmarks write a kernel with local memory
(``programs/row_norms/``: a header, the graphs in ``kernels.cc``, a ``std::vector`` host in
``main.cc``): a per-row block reduction with an allocation node and ``__hpvm__barrier``
between its rounds, then a 2-D scaling leaf in the GPU convention, both launched for every
frame and checked by the host against the plain loops. Integers: exact everywhere.

What it runs through: the reduction leaf reaches barriers, so on ``cpu`` its group runs as
work-item loops (an optimized clone and a group runner MCJIT compiles); checked mode
rewrites both leaves' modules; the launches take the quick path only for a bounded leaf.
All of that is built from the modules' text once and kept in hpvm's cache
(``ir/cache.stored_json``, ``llvm_native/jit.py``'s object cache): a later process —
each ``hpvm c run`` — builds none of it again.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import (
    STORED_FOLDERS,
    cache_with_the_suites_toolchain,
    needs_clang,
    needs_llvm_leaves,
    stored_runs,
)

from hpvm import c

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "row_norms"  # (a fixed path: zig's cache finds it)
SOURCES = [FOLDER / "kernels.cc", FOLDER / "main.cc"]
SAID = re.compile(r"row_norms (\d+)x(\d+), (\d+) frames: checksum (-?\d+), (\d+) wrong")


@pytest.fixture(scope="module")
def program():  # type: ignore[no-untyped-def]
    return c.compile(SOURCES)


def _checksum(rows: int, cols: int, frames: int) -> int:
    """What the host prints, from NumPy: C's division truncates toward zero."""
    total = 0
    i = np.arange(rows * cols, dtype=np.int64)
    for f in range(frames):
        a = ((i * 7 + f * 13) % 23 - 11).reshape(rows, cols)
        norms = (a * a).sum(axis=1, keepdims=True)
        scaled = np.abs(a) * 100000 // (norms + 1) * np.sign(a)
        total += int(scaled.sum())
    return total


@pytest.mark.parametrize("target", ["cpu", "interp"])
@pytest.mark.parametrize(("rows", "cols", "frames"), [(5, 70, 3), (1, 7, 1), (9, 32, 2), (3, 100, 1)])
def test_the_program_runs_and_checks_itself(program, capfd, target, rows, cols, frames):
    assert program.run([str(rows), str(cols), str(frames)], target=target) == 0
    said = SAID.search(capfd.readouterr().out)
    assert said is not None
    assert said.groups() == (str(rows), str(cols), str(frames), str(_checksum(rows, cols, frames)), "0")


def test_the_reduction_runs_as_work_item_loops(program):
    from hpvm.backends.llvm_native.native import native_leaf
    from hpvm.ir.graph import LeafFunction, functions

    leaves = {f.name: f for root in program.roots for f in functions(root) if isinstance(f, LeafFunction)}
    assert native_leaf(leaves["row_sum_of_squares"]).barrier_lowering == "workitem"
    assert native_leaf(leaves["scale"]).barrier_lowering == ""


def test_a_later_process_builds_nothing_again(tmp_path):
    """The first process stores what it built from the modules; a later one, whose builders
    all raise and which may not compile the graph's code, runs the program both ways from
    what was stored — from another working folder, given the sources by relative paths
    (the modules name files by absolute path: docs/hpvm-c.md, "Errors")."""
    cache = cache_with_the_suites_toolchain(tmp_path / "cache")
    argv = ["6", "40", "2"]
    first = stored_runs("first", SOURCES, argv, cache)
    for folder in STORED_FOLDERS:
        assert list((cache / folder).iterdir()), folder
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    later = stored_runs("later", SOURCES, argv, cache, cwd=elsewhere)
    said = SAID.findall(first + later)
    assert len(said) == 4 and len(set(said)) == 1, first + later
    assert said[0] == ("6", "40", "2", str(_checksum(6, 40, 2)), "0")
