"""The bounds pre-check (``backends/bounds.py``) on a leaf whose index combines its own
instance id with its parent's (``programs/bounds_parent.c``): ``flip`` reads
``a[r*COLS + x]`` and writes ``b[(ROWS - 1 - r)*COLS + x]``, ``x`` its own id and ``r`` its
parent's. The range of each index over every instance of the launch is known from the
two nodes' sizes; a launch that would write past ``b``'s end or before its start raises
``OutOfBoundsError`` naming the node, the array, the C line, the byte range and the
array's length, on ``cpu`` (with the parent flattened into the root's loop, and, built with
``-D KEEP_ROWS``, run as a graph function of its own: the check reads the parent's sizes
from a different place in each) and on ``interp``, before the leaf runs — nothing is
written, inside the arrays or past them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import line_of, needs_clang, needs_llvm_leaves

import hpvm
from hpvm import c
from markers import fails

pytestmark = [needs_clang, needs_llvm_leaves]

PROGRAM = Path(__file__).parent / "programs" / "bounds_parent.c"
SOURCE = PROGRAM.read_text()
WHERE = "programs/bounds_parent.c"
TARGETS = ["cpu", "interp"]
GUARD = 3  # floats after (and before) each array that nothing may write


@pytest.fixture(scope="module", params=["flattened", "kept"])
def program(request):
    return c.compile([PROGRAM], defines=["KEEP_ROWS"] if request.param == "kept" else [])


def launch(program, target: str, count_a: int, count_b: int, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The root launched from Python on arrays in the middle of larger buffers: ``count_a``
    and ``count_b`` floats, ``n`` rows of ``m`` columns. Returns b's buffer."""
    (root,) = program.roots
    abuf = np.full(count_a + 2 * GUARD, -7, np.float32)
    abuf[GUARD:-GUARD] = np.arange(count_a)
    bbuf = np.full(count_b + 2 * GUARD, -7, np.float32)
    bbuf[GUARD:-GUARD] = -1
    a, b = abuf[GUARD:-GUARD].view(np.uint8), bbuf[GUARD:-GUARD].view(np.uint8)
    for array in (a, b):
        hpvm.track_memory(array)
    try:
        hpvm.wait(hpvm.launch(root, (a, b, n, m), target=target))
        hpvm.request_memory(b)
    finally:
        for array in (a, b):
            hpvm.untrack_memory(array)
        assert (abuf[GUARD:-GUARD] == np.arange(count_a)).all()
        assert (abuf[:GUARD] == -7).all() and (abuf[-GUARD:] == -7).all()
        assert (bbuf[:GUARD] == -7).all() and (bbuf[-GUARD:] == -7).all()
    return bbuf[GUARD:-GUARD]


@pytest.mark.usefixtures("hpvm_runtime")
@pytest.mark.parametrize("target", TARGETS)
def test_in_range_launches_run_right(program, target):
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    assert (launch(program, target, 16, 16, 4, 4).reshape(4, 4) == a[::-1] + 1).all()
    want = np.full((4, 4), -1, np.float32)
    want[2:, :3] = a[1::-1, :3] + 1  # two rows of three columns, mirrored into the last rows
    assert (launch(program, target, 16, 16, 2, 3).reshape(4, 4) == want).all()


def fragments(side: str, count_b: int, ids: str, span: str) -> list[str]:
    return [
        "node 'cols' (",
        f"{WHERE}:{line_of(SOURCE, 'cols')}): every instance of leaf 'flip' accesses bytes",
        f"4*x - 16*parent.x + 48 to 4*x - 16*parent.x + 51 of 'b' (input of 'rows', {count_b} bytes long)",
        f"/{WHERE}:{line_of(SOURCE, 'flip')}); over this launch's instances ({ids}) that is bytes {span}",
        f"some instances would index {side} (LLVM code checks no bounds as it runs",
        "Launch fewer instances (the sizes of node 'cols' or of its parents) or pass a larger 'b'",
    ]


@pytest.mark.usefixtures("hpvm_runtime")
@pytest.mark.parametrize("target", TARGETS)
def test_one_byte_past_the_end_is_refused(program, target):
    """b one float short: the first row's last column would write its last 4 bytes."""
    with fails(hpvm.OutOfBoundsError, *fragments("past its end", 60, "x < 4, parent.x < 4", "0 to 63")):
        launch(program, target, 16, 15, 4, 4)


@pytest.mark.usefixtures("hpvm_runtime")
@pytest.mark.parametrize("target", TARGETS)
def test_a_row_too_many_is_refused_before_the_start(program, target):
    """Five rows (a holds them): the fifth row mirrors to row -1, before b."""
    with fails(hpvm.OutOfBoundsError, *fragments("before its start", 64, "x < 4, parent.x < 5", "-16 to 63")):
        launch(program, target, 20, 16, 5, 4)


@pytest.mark.parametrize("target", TARGETS)
def test_main_runs_and_a_column_too_many_is_refused(program, target, capfd):
    """Through main (the arrays as the program tracks them): a fifth column reads past a's
    end at the last row (a is checked first: the read comes first)."""
    assert program.run(["4", "4"], target=target) == 0
    assert capfd.readouterr().out.split() == [str(v) for v in range(13, 17)] + [
        str(v) for v in (9, 10, 11, 12, 5, 6, 7, 8, 1, 2, 3, 4)
    ]
    with fails(
        hpvm.OutOfBoundsError,
        "accesses bytes 4*x + 16*parent.x to 4*x + 16*parent.x + 3 of 'a' (input of 'rows', 64 bytes long)",
        f"/{WHERE}:{line_of(SOURCE, 'flip')}); over this launch's instances (x < 5, parent.x < 4) that is "
        "bytes 0 to 67: some instances would index past its end",
    ):
        program.run(["4", "5"], target=target)
