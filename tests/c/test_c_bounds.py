"""The bounds pre-check (``backends/bounds.py``) on an HPVM-C leaf: LLVM code, which ``cpu``
does not check as it runs outside its checked mode (``interp`` runs the leaf's checked
clone, which also catches what the pre-check cannot see). ``programs/bounds.c``'s ``shift`` reads
``a[i + 1]`` and writes ``b[i]`` in every instance: with more instances than that allows,
``cpu`` and ``interp`` raise ``OutOfBoundsError`` naming the node, the array, the size and
the C lines before the node runs (before the check, both wrote past ``b``); its guarded
``clamp`` may have any number of instances."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import ROW_SUM_LEAF, compiled_program, line_of, needs_clang, needs_llvm_leaves

import hpvm
from markers import fails

pytestmark = [needs_clang, needs_llvm_leaves]

PROGRAM = Path(__file__).parent / "programs" / "bounds.c"
SOURCE = PROGRAM.read_text()
WHERE = "programs/bounds.c"  # (the end of the path the messages give)
TARGETS = ["cpu", "interp"]
GUARD = 3


program = compiled_program(PROGRAM)


@pytest.mark.parametrize("target", TARGETS)
def test_in_bounds_sizes_run_and_a_guarded_leaf_may_have_more_instances(program, target, capfd):
    assert program.run(["8", "64"], target=target) == 0
    assert capfd.readouterr().out.split() == "2 4 6 8 10 10 10 10".split()


@pytest.mark.parametrize("target", TARGETS)
def test_one_instance_too_many_is_refused_naming_the_c_lines(program, target):
    with fails(
        hpvm.OutOfBoundsError,
        "node 'step' (",
        f"{WHERE}:{line_of(SOURCE, 'node')}): replication size n is 9",
        "every instance of leaf 'shift' accesses bytes 4*x + 4 to 4*x + 7 of 'a' (input of 'root', 36 bytes long)",
        f"{WHERE}:{line_of(SOURCE, 'shift')}): the last instances would index past its end",
        "LLVM code checks no bounds as it runs",
    ):
        program.run(["9"], target=target)


@pytest.mark.usefixtures("hpvm_runtime")
@pytest.mark.parametrize("target", TARGETS)
def test_nothing_is_written_past_the_arrays(program, target):
    """The root launched from Python on arrays at the front of larger buffers (``b`` is a
    pointer-only port: its size reaches ``clamp`` over an edge, so it is an input of its own)."""
    (root,) = program.roots
    for count_a, n, refused in [(9, 8, None), (10, 9, "'b'"), (8, 8, "'a'"), (9, 100, "'a'")]:
        abuf = np.full(count_a + GUARD, -7, np.float32)
        abuf[:count_a] = np.arange(count_a)
        bbuf = np.full(8 + GUARD, -7, np.float32)
        a, b = abuf[:count_a].view(np.uint8), bbuf[:8].view(np.uint8)
        for array in (a, b):
            hpvm.track_memory(array)
        try:
            if refused is None:
                hpvm.wait(hpvm.launch(root, (a, b, b.nbytes, n, 8), target=target))
            else:
                with pytest.raises(
                    hpvm.OutOfBoundsError, match=f"replication size n is {n}, .* of {refused}"
                ):
                    hpvm.wait(hpvm.launch(root, (a, b, b.nbytes, n, 8), target=target))
            hpvm.request_memory(b)
        finally:
            for array in (a, b):
                hpvm.untrack_memory(array)
        assert (abuf[count_a:] == -7).all() and (bbuf[8:] == -7).all()
        want = [2, 4, 6, 8, 10, 10, 10, 10] if refused is None else [-7] * 8
        assert bbuf[:8].tolist() == want


# A 1-D leaf whose instance sums its row of `src` in a loop and then stores the sum at
# dst[y], with no guard: the store runs in every call (its block follows the loop on every
# path to the return), so the pre-check sees it.
ROW_SUM = (
    ROW_SUM_LEAF
    + """
void root(float *src, size_t bytes_src, float *dst, size_t bytes_dst, int w, long rows) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, src, 1, dst);
  void *n = __hpvm__createNodeND(1, row_sum, rows);
  for (int p = 0; p < 5; p++)
    __hpvm__bindIn(n, p, p, 0);
}
"""
)


@pytest.mark.usefixtures("hpvm_runtime")
@pytest.mark.parametrize("target", TARGETS)
def test_a_store_after_a_loop_is_checked_before_the_node_runs(write_c, target):
    """Rows past dst's end: refused naming dst and the leaf, nothing written past it (before,
    only the entry block's accesses were facts, and cpu wrote past dst)."""
    from hpvm import c

    (root,) = c.compile(write_c(ROW_SUM)).roots
    src = np.arange(12, dtype=np.float32)
    dbuf = np.full(3 + GUARD, -7, np.float32)
    views = [src.view(np.uint8), dbuf[:3].view(np.uint8)]
    for array in views:
        hpvm.track_memory(array)
    try:
        hpvm.wait(hpvm.launch(root, (*views, 4, 3), target=target))
        hpvm.request_memory(views[1])
        np.testing.assert_array_equal(dbuf[:3], src.reshape(3, 4).sum(axis=1))
        with fails(
            hpvm.OutOfBoundsError,
            "replication size rows is 4",
            "every instance of leaf 'row_sum' accesses bytes 4*x to 4*x + 3 of 'dst'",
            "the last instances would index past its end",
        ):
            hpvm.wait(hpvm.launch(root, (*views, 2, 4), target=target))
    finally:
        for array in views:
            hpvm.untrack_memory(array)
    assert (dbuf[3:] == -7).all()
