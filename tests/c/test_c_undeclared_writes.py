"""A leaf writing an array its ``__hpvm__attributes`` do not list as an output
(``programs/undeclared_write.c``): a back end that copies back only a leaf's outputs would
lose the write, so checked code and the interpreter refuse it — an ``IllegalWriteError``
naming the node, the instance, the C line and the array, as they refuse a Python leaf's
write outside its ``outs`` — whether the write is a store, ``memset`` or an atomic. Declared
an output, the same leaf runs everywhere."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import line_of, needs_clang, needs_llvm_leaves

import hpvm
from hpvm import c
from markers import fails

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("hpvm_runtime")]

#: where the programs are: messages name C lines by absolute path (docs/hpvm-c.md)
PROGRAMS = Path(__file__).parent / "programs"

PROGRAM = Path(__file__).parent / "programs" / "undeclared_write.c"
SOURCE = PROGRAM.read_text()
N = 8


def _run(defines: list[str], target: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    root = c.compile(PROGRAM, defines=defines).roots[0]
    a, b, count = np.arange(N, dtype=np.float32) + 1, np.zeros(N, np.float32), np.zeros(1, np.int32)
    views = [x.view(np.uint8) for x in (a, b, count)]
    for v in views:
        hpvm.track_memory(v)
    try:
        hpvm.wait(hpvm.launch(root, (*views, N), target=target))
        for v in views:
            hpvm.request_memory(v)
    finally:
        for v in views:
            hpvm.untrack_memory(v)
    return a, b, count


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_declared_as_an_output_the_leaf_runs(target: str) -> None:
    a, b, count = _run(["DECLARED=1"], target)
    np.testing.assert_array_equal(a, 2 * (np.arange(N, dtype=np.float32) + 1))
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize(
    "via, marker, array, what",
    [
        (0, "store", "a", "a write of 4 bytes"),
        (1, "memset", "a", "llvm.memset"),
        (2, "atomic", "count", "an atomic update of 4 bytes"),
    ],
)
@pytest.mark.parametrize("mode", ["interp", "checked"])
def test_an_undeclared_write_is_refused_naming_its_line(
    via: int, marker: str, array: str, what: str, mode: str, request: pytest.FixtureRequest
) -> None:
    if mode == "checked":
        request.getfixturevalue("checked")
    with fails(
        hpvm.IllegalWriteError,
        "node root/s[",
        "(leaf 'scale', ",
        f"{what}",
        f"at {PROGRAMS}/undeclared_write.c:{line_of(SOURCE, marker)} writes '{array}', which the "
        "leaf's outs do not declare",
        "__hpvm__attributes' outputs",
    ):
        _run([f"VIA={via}"], "interp" if mode == "interp" else "cpu")
