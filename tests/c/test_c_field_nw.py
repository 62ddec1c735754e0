"""Needleman-Wunsch global alignment in the shape of Rodinia's nw, written for HPVM
(``programs/nw``: the graph in needle_kernel.cpp, a C++ host with ``std::vector`` and
``<chrono>`` in main.cpp, the packed ``RootIn`` and ``BLOCK_SIZE`` in needle.h). The host
launches the graph once per anti-diagonal of the score matrix: each launch's diagonal, first
row, length and block count differ from the last. The graph: the root creates the grid node
once, which replicates a block over the diagonal's blocks, which replicates a ``hpvm::DEVICE``
leaf over 16 instances; the leaf finds its cell from its block's id and its own, and tests
it against the diagonal's length (the last block runs past the end), reads three neighbours
in the matrix it writes, and returns the matrix's size, bound up to ``RootIn``'s return
struct. The program aligns several pairs one after the other in the same tracked matrices,
and checks every cell against its own row-by-row loop; the tests also check each pair's
final score against a plain Python alignment.

Replays. A launch is replayed when its key has a record (``runtime/plan.py``): a key's
first launch is timed, its second (known quick now) is recorded, the rest replayed. The key
holds the arrays and the values of the scalars that are work (``LaunchPlan.neutral``): here
only ``blocks``, the grid node's size — the leaf has no loop, so the diagonal, its first row,
its length, the width and the penalty are not work, and a new diagonal with as many blocks
as one before is replayed with its own values. An alignment takes the full path twice per
block count, whatever its length and number of pairs. (Before, with every value in the key:
every diagonal its own key, the first two pairs on the full path, and an alignment of more
than 64 diagonals — past the tracker's 64 records and the quick table's 64 run keys — on the
full path at every launch.)

A forgotten edge guard (the leaf without ``if (k < cells)``) indexes ``i * width`` with
``i = firstRow + k`` past the matrices: the bounds pre-check reads the form with the
launch's ``width`` and ``firstRow`` and refuses it before it runs, on every target (before
it read run-time widths, unchecked ``cpu`` wrote past the matrices and glibc killed the
process)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hpvmc_helpers import line_of, needs_clang, needs_llvm_leaves, run_apart

from hpvm import c

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "nw"  # (fixed paths: zig's cache finds them)
SOURCES = [FOLDER / "main.cpp", FOLDER / "needle_kernel.cpp"]
KERNEL = (FOLDER / "needle_kernel.cpp").read_text()


@pytest.fixture(scope="module")
def program():
    return c.compile(SOURCES)


# --- the reference: the program's sequences and a plain alignment -------------------------


def sequences(rows: int, cols: int, pairs: int) -> list[tuple[list[int], list[int]]]:
    """The program's pairs: its LCG from seed 2026, 20 letters, a then b for each pair."""
    seed = 2026

    def draw(n: int) -> list[int]:
        nonlocal seed
        letters = []
        for _ in range(n):
            seed = (seed * 1103515245 + 12345) & 0xFFFFFFFF
            letters.append((seed >> 16) % 20)
        return letters

    return [(draw(rows), draw(cols)) for _ in range(pairs)]


def substitution(x: int, y: int) -> int:
    return 5 + x % 4 if x == y else -1 - (x + y) % 5


def alignment_score(a: list[int], b: list[int], penalty: int) -> int:
    """The best global alignment's score, one row of the matrix at a time."""
    previous = [-j * penalty for j in range(len(b) + 1)]
    for i, x in enumerate(a, 1):
        row = [-i * penalty]
        for j, y in enumerate(b, 1):
            row.append(max(previous[j - 1] + substitution(x, y), previous[j] - penalty, row[j - 1] - penalty))
        previous = row
    return previous[-1]


def expected_output(rows: int, cols: int, penalty: int, pairs: int) -> str:
    diagonals = rows + cols - 1
    widest = (min(rows, cols) + 15) // 16
    lines = [
        f"pair {p}: score {alignment_score(a, b, penalty)}, 0 wrong\n"
        for p, (a, b) in enumerate(sequences(rows, cols, pairs))
    ]
    lines.append(
        f"nw {rows}x{cols}, penalty {penalty}, {pairs} pairs, {pairs * diagonals} launches of at most "
        f"{widest} blocks: 0 wrong, 0 wrong returns\n"
    )
    return "".join(lines)


def run(program, capfd, rows, cols, penalty, pairs, target):
    assert program.run([str(rows), str(cols), str(penalty), str(pairs)], target=target) == 0
    out = capfd.readouterr().out
    want = re.escape(expected_output(rows, cols, penalty, pairs)) + r"time: [\d.]+ ms\n"
    assert re.fullmatch(want, out), out


# --- tests --------------------------------------------------------------------------------


def test_the_graph_is_read_as_the_program_writes_it(program):
    (root,) = program.roots
    (grid,) = root.graph.nodes
    (block,) = grid.function.graph.nodes
    (cell,) = block.function.graph.nodes
    functions = (root, grid.function, block.function, cell.function)
    assert [f.name for f in functions] == ["needleRoot", "needleLvl2", "needleLvl1", "needle_cell"]
    assert [f.hint for f in functions] == ["cpu", "cpu", "gpu", "gpu"]
    # created once; over the diagonal's blocks; over a block
    assert (grid.dims, block.dims, cell.dims) == (0, 1, 1)
    assert [p.name for p in block.sizes] == ["blocks"] and [p.name for p in cell.sizes] == ["blockSize"]
    # each (pointer, bytes) pair is one array port; the matrix read and written, in place
    assert [(p.name, str(p.type)) for p in cell.function.params] == [
        ("score", "u8[:]"),
        ("ref", "u8[:]"),
        ("penalty", "i32"),
        ("width", "i64"),
        ("diag", "i64"),
        ("firstRow", "i64"),
        ("cells", "i64"),
    ]
    assert (cell.function.ins, cell.function.outs) == (("score", "ref"), ("score",))


@pytest.mark.parametrize(
    ("rows", "cols", "penalty", "pairs", "full"),
    [
        (9, 8, 10, 4, 2),  # 16 diagonals of one block: 62 of 64 launches replayed
        (5, 4, 10, 6, 2),
        (16, 1, 3, 5, 2),  # one column: each diagonal one cell
        (1, 1, 10, 4, 2),  # one cell: one launch a pair
        (33, 17, 4, 3, 2 * 2),  # 49 diagonals of one or two blocks
        (40, 40, 10, 3, 2 * 3),  # 79 diagonals (more than the tables' 64 keys), three block counts
    ],
)
def test_every_pair_is_aligned_and_repeated_diagonals_are_replayed(
    program, full_path, capfd, rows, cols, penalty, pairs, full
):
    run(program, capfd, rows, cols, penalty, pairs, "cpu")
    assert full_path[0] == full


def test_on_interp_the_alignments_are_the_same(program, capfd):
    run(program, capfd, 5, 4, 10, 2, "interp")


def test_checked_mode_changes_no_score(program, checked, capfd):
    run(program, capfd, 20, 37, 10, 2, "cpu")


def test_a_forgotten_edge_guard_is_refused_before_it_runs(tmp_path):
    """The leaf written without its guard: a diagonal's last block runs past the diagonal's
    end, its cells' rows past the matrix. Its reads are ``(firstRow + k) * width + diag -
    (firstRow + k) + c``, ``k`` the global id: scaled terms of ``width`` and ``firstRow *
    width`` (``affine.py``), which the bounds pre-check reads with the launch's values and
    refuses on ``interp`` and ``cpu``, checked or not, before the leaf runs. In a process of
    its own all the same, as a write a check missed would corrupt it. (Before the pre-check
    read run-time widths, unchecked ``cpu`` wrote past the matrices and glibc killed the
    process; ``interp`` and checked mode named the first instance that read past ``ref``.)"""
    guard = "  if (k < cells) {  // @guard\n"
    assert guard in KERNEL
    kernel = tmp_path / "needle_kernel.cpp"
    kernel.write_text(KERNEL.replace(guard, "  {  // (the guard forgotten)\n"))
    (tmp_path / "needle.h").write_text((FOLDER / "needle.h").read_text())
    script = (
        "import sys, hpvm, hpvm.backends.cpu as cpu\n"
        "from hpvm import c\n"
        "program = c.compile(sys.argv[1:3])\n"
        "for target, checked in [('interp', False), ('cpu', False), ('cpu', True)]:\n"
        "    cpu.configure(checked=checked)\n"
        "    try:\n"
        "        print(target, 'returned', program.run(['5', '4'], target=target))\n"
        "    except hpvm.OutOfBoundsError as e:\n"
        "        print(target, 'raised:', e)\n"
    )
    out = run_apart(script, str(SOURCES[0]), str(kernel), timeout=300)
    cell = line_of(KERNEL, "cell")
    raised = [line.split(" raised: ", 1) for line in out.splitlines() if " raised: " in line]
    assert [target for target, _ in raised] == ["interp", "cpu", "cpu"], out
    assert raised[0][1] == raised[1][1] == raised[2][1], out  # (the same check, the same words)
    message = raised[0][1]
    assert (
        "node 'cellNode' (" in message and "every instance of leaf 'needle_cell' accesses bytes " in message
    )
    assert "4*width*firstRow" in message and "4*width*(parent.x*instances.x + x)" in message, message
    # (the diagonal's one block of 16 cells over a 6 x 5 matrix of ints: 120 bytes)
    at = re.search(
        rf"of '(score|ref)' \(input of 'needleLvl1', 120 bytes long\) \({re.escape(str(kernel))}:(\d+)\)",
        message,
    )
    assert at is not None and int(at[2]) in (cell, cell + 1, cell + 2), message
    assert "((parent.x*instances.x + x) < 16, width = 5, firstRow = 1, diag = 2)" in message, message
    assert "some instances would index past its end" in message, message


def test_bad_command_lines_are_refused(program, capfd):
    for argv in (["5"], ["0", "4"], ["5", "4", "-1"], ["5", "4", "10", "0"], ["1", "2", "3", "4", "5"]):
        assert program.run(argv, target="cpu") == 1
        assert capfd.readouterr().err.startswith("Usage: nw rows cols [penalty [pairs]]\n")
