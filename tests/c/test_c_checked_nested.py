"""Checked mode names a failing LLVM leaf's instance in the node's path with its parent's,
as the interpreter names Python leaves' (``programs/checked_nested.c``: a gather in blocks,
one index past the input at block 2, lane 3) — and the interpreter, which runs an LLVM
leaf's checked clone, says the same."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import compiled_program, line_of, needs_clang, needs_llvm_leaves

import hpvm
from markers import fails

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("hpvm_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "checked_nested.c"
program = compiled_program(PROGRAM)


def _gather(program, bad: int | None, target: str = "cpu") -> np.ndarray:  # type: ignore[no-untyped-def]
    n, bs = 32, 8
    data, idx, out = (
        np.arange(n, dtype=np.float32),
        np.arange(n, dtype=np.int64)[::-1].copy(),
        np.zeros(n, np.float32),
    )
    if bad is not None:
        idx[bad] = n
    views = [x.view(np.uint8) for x in (data, idx, out)]
    for v in views:
        hpvm.track_memory(v)
    try:
        hpvm.wait(hpvm.launch(program.roots[0], (*views, bs, n // bs), target=target))
    finally:
        for v in views:
            hpvm.untrack_memory(v)
    return out


def test_the_gather_runs(program, checked) -> None:  # type: ignore[no-untyped-def]
    np.testing.assert_array_equal(_gather(program, None), np.arange(32, dtype=np.float32)[::-1])


def test_a_read_past_the_input_names_the_block_and_the_lane(program, checked) -> None:  # type: ignore[no-untyped-def]
    line = line_of(PROGRAM.read_text(), "gather")
    with fails(
        hpvm.OutOfBoundsError,
        "node root/b[2]/g[3] (leaf 'gather', ",
        f"checked_nested.c:{line} falls outside 'in_': at byte offset 128 of its 128 bytes (checked mode)",
    ):
        _gather(program, 2 * 8 + 3)


@pytest.mark.parametrize("races", [True, False], ids=["races", "no-races"])
def test_the_interpreter_names_the_same_instance_and_line(program, races: bool) -> None:  # type: ignore[no-untyped-def]
    from hpvm.backends import interp

    line = line_of(PROGRAM.read_text(), "gather")
    previous = interp.configure(races=races)
    try:
        with fails(
            hpvm.OutOfBoundsError,
            "node root/b[2]/g[3] (leaf 'gather', ",
            f"checked_nested.c:{line} falls outside 'in_': at byte offset 128 of its 128 bytes",
        ):
            _gather(program, 2 * 8 + 3, "interp")
        np.testing.assert_array_equal(_gather(program, None, "interp"), np.arange(32, dtype=np.float32)[::-1])
    finally:
        interp.configure(**previous)
