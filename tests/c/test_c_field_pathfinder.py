"""Rodinia's path finder written as HPVM's ports of its CUDA benchmarks write one
(``programs/pathfinder``: the packed ``RootIn`` and the root's declaration in pathfinder.h,
the graph in pathfinder_graph.cpp — a CPU root replicating a block node over ``cols`` rounded
up to blocks of 256, each replicating the leaf over a block, the leaf finding its column from
its parent's id and its own and working under ``if (c < cols)`` —, the host in main.cpp with
``std::vector`` walls, ``std::stol``, ``std::min`` and ``std::swap``). The host launches one row
and waits for it at once, swapping the two cost buffers, then runs the same rows itself and
counts the columns whose costs differ: integers, so equal means exactly equal. Each launch
passes a new ``row``: a leaf without loops does the same work whatever it is, so the rows
run inside ``launch`` (``quick.work_params``) instead of each going to a worker.

With ``-D PATHFINDER_GUARD=0`` the leaf forgets its guard, as a port from CUDA does when the
grid is rounded up: the instances past the wall's edge read past ``src``. Checked mode, and
the interpreter, name the failing instance, the C line and the array, and now the byte offset
that instance read at and the array's size (``llvm_native/checked.py``'s error slots 2 and 3):
the offset is the named column's, four bytes a column."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hpvmc_helpers import compiled_program, line_of, needs_clang, needs_llvm_leaves

import hpvm
import hpvm.backends.cpu as cpu
from hpvm import c
from hpvm.runtime import quick
from markers import fails
from running import queued_launches

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

#: where the programs are: messages name C lines by absolute path (docs/hpvm-c.md)
PROGRAMS = Path(__file__).parent / "programs"

FOLDER = Path(__file__).parent / "programs" / "pathfinder"  # (a fixed path: zig's cache finds it)
SOURCES = [FOLDER / "main.cpp", FOLDER / "pathfinder_graph.cpp"]
GRAPH = (FOLDER / "pathfinder_graph.cpp").read_text()
BLOCK = 256

program = compiled_program(SOURCES)


@pytest.fixture(scope="module")
def unguarded():  # type: ignore[no-untyped-def]
    return c.compile(SOURCES, defines=["PATHFINDER_GUARD=0"])


@pytest.fixture(scope="module")
def past_the_edge():  # type: ignore[no-untyped-def]
    return c.compile(SOURCES, defines=["PATHFINDER_LAST=cols"])


def test_the_leaf_is_bounded_so_its_rows_can_run_inside_launch(program) -> None:  # type: ignore[no-untyped-def]
    assert quick.bounded_graph(program.roots[0]) is None


@pytest.mark.parametrize(
    ("cols", "rows"), [("10000", "100"), ("1000", "37"), ("256", "5"), ("257", "9"), ("1", "4"), ("3", "1")]
)
def test_the_costs_are_the_host_s_own(program, capfd, cols: str, rows: str) -> None:  # type: ignore[no-untyped-def]
    assert program.run([cols, rows]) == 0
    out = capfd.readouterr().out.strip()
    assert re.fullmatch(rf"pathfinder {rows}x{cols}: cheapest \d+, 0 wrong", out), out


def test_on_interp_the_costs_are_the_same(program, capfd) -> None:  # type: ignore[no-untyped-def]
    assert program.run(["300", "4"], target="interp") == 0
    assert capfd.readouterr().out.strip().endswith(", 0 wrong")


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_without_its_guard_the_launch_is_refused_before_it_runs(unguarded, target: str) -> None:  # type: ignore[no-untyped-def]
    """Unguarded, the read of ``src[c]`` is affine in the ids: the bounds pre-check sees the
    rounded-up grid reach bytes 0 to 4095 of the 4000 and refuses the launch."""
    with fails(
        hpvm.OutOfBoundsError,
        "every instance of leaf 'pathStep' accesses bytes 4*x + 1024*parent.x to 4*x + 1024*parent.x + 3 of 'src'",
        "(input of 'pathBlock', 4000 bytes long)",
        f"pathfinder_graph.cpp:{line_of(GRAPH, 'above')})",
        "that is bytes 0 to 4095",
    ):
        unguarded.run(["1000", "3"], target=target)


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_a_right_neighbour_read_one_column_too_far_names_its_offset(past_the_edge, target: str) -> None:  # type: ignore[no-untyped-def]
    """``c < cols`` for ``c < cols - 1``: the last column reads ``src[cols]``. Guarded, the
    pre-check cannot see it; the checked read names the instance, the line, and the offset
    it read at — the column after the named one, four bytes a column."""
    cols = 1000
    previous = cpu.configure(checked=True)
    try:
        with pytest.raises(hpvm.OutOfBoundsError) as raised:
            past_the_edge.run([str(cols), "3"], target=target)
    finally:
        cpu.configure(**previous)
    message = str(raised.value)
    found = re.search(r"node pathRoot/node\[(\d+)\]/node\[(\d+)\] \(leaf 'pathStep', ", message)
    assert found, message
    column = int(found.group(1)) * BLOCK + int(found.group(2))
    assert column == cols - 1, message
    # the read is std::min's, inlined: the leaf's line first, then the header's
    where = f"a read of 4 bytes at {PROGRAMS}/pathfinder/pathfinder_graph.cpp:{line_of(GRAPH, 'right')} (in "
    assert where in message, message
    inlined = re.search(r"\(in [^()]*/libcxx/include/[\w/]+\.h:\d+, inlined\) falls outside 'src'", message)
    assert inlined, message
    assert f"'src': at byte offset {4 * (column + 1)} of its {4 * cols} bytes" in message, message
    assert message.endswith("(checked mode)") == (target == "cpu"), message


def test_a_bad_command_line_is_the_program_s_usage(program) -> None:  # type: ignore[no-untyped-def]
    assert program.run(["0"]) == 2


def test_the_host_s_rows_run_inside_launch(program, monkeypatch, capfd) -> None:  # type: ignore[no-untyped-def]
    """99 launches, each with a new ``row`` (and the two cost buffers swapped): the leaf has
    no loop, so ``row`` and ``cols`` change no work and are not in the run key
    (``quick.work_params``; ``blocks``, a node's size, is) — after the first, compiling
    launch every row runs inside ``launch``. With every value in the key, all 99 were queued
    for a worker (0.2–0.4 ms each for a microsecond's work)."""
    monkeypatch.setattr(quick, "QUICK_RUN_S", 60.0)  # (a loaded machine must not decide)
    queued = queued_launches(monkeypatch)
    assert program.run(["1000", "100"]) == 0
    assert capfd.readouterr().out.strip().endswith(", 0 wrong")
    assert quick.work_params(program.roots[0]) == {5}  # (wall, src, dst, cols, row, blocks)
    assert queued[0] <= 2, f"{queued[0]} of 99 launches were queued"
