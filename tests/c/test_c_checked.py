"""The cpu back end's checked mode on an HPVM-C leaf (``llvm_native/checked.py``):
``programs/checked.c``'s ``scale`` indexes ``(chan * rows + row) * cols + col`` with
parameter strides inside its loops, as CAVA's leaves do — what the bounds pre-check
(``affine.py``) cannot follow: an access inside a loop is in no block every call runs. With three instances more than the image has rows it read
and wrote past its arrays; checked, it is an ``OutOfBoundsError`` naming the node, the
array and the C line, and nothing is written outside the arrays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import compiled_program, line_of, needs_clang, needs_llvm_leaves

import hpvm
import hpvm.backends.cpu as cpu
from hpvm.backends.llvm_native.checked import checked_body
from markers import fails

pytestmark = [needs_clang, needs_llvm_leaves]

PROGRAM = Path(__file__).parent / "programs" / "checked.c"
SOURCE = PROGRAM.read_text()
WHERE = "programs/checked.c"
EXPECTED = " ".join(f"{v:g}" for v in np.arange(60) * 0.5)

program = compiled_program(PROGRAM)


def test_checked_and_unchecked_give_the_same_result(program, capfd) -> None:  # type: ignore[no-untyped-def]
    assert program.run(["4"], target="cpu") == 0
    unchecked = capfd.readouterr().out.split()
    previous = cpu.configure(checked=True)
    try:
        assert program.run(["4"], target="cpu") == 0
    finally:
        cpu.configure(**previous)
    assert capfd.readouterr().out.split() == unchecked == EXPECTED.split()


def test_rows_past_the_image_name_the_node_array_and_c_line(program, checked) -> None:  # type: ignore[no-untyped-def]
    with fails(
        hpvm.OutOfBoundsError,
        "node root/node[",  # (the instance a thread reported first: a row past the image)
        "] (leaf 'scale'",
        "a read of 4 bytes at ",
        f"{WHERE}:{line_of(SOURCE, 'scale')} falls outside 'in_'",
    ):
        program.run(["7"], target="cpu")


@pytest.mark.usefixtures("hpvm_runtime")
def test_nothing_is_written_past_the_arrays(program, checked) -> None:  # type: ignore[no-untyped-def]
    """The root launched from Python on arrays at the front of larger buffers: the bytes
    after them stay as they were, though the failing instances ran on (their accesses went
    to a scratch buffer)."""
    (root,) = program.roots
    guard = 16
    inbuf = np.arange(60 + guard, dtype=np.float32)
    outbuf = np.full(60 + guard, -7, np.float32)
    a, b = inbuf[:60].view(np.uint8), outbuf[:60].view(np.uint8)
    for x in (a, b):
        hpvm.track_memory(x)
    with fails(hpvm.OutOfBoundsError, "'in_'"):
        hpvm.wait(hpvm.launch(root, (a, b, 4, 5, 7), target="cpu"))
    np.testing.assert_array_equal(outbuf[60:], -7)


def test_every_access_of_the_array_arguments_is_checked(program) -> None:  # type: ignore[no-untyped-def]
    """The checked module guards each of the leaf's loads and stores of ``in_`` and ``out``
    (one check per access LLVM left after unrolling), and leaves the plain module alone."""
    (root,) = program.roots
    leaf = next(f for f in hpvm.ir.graph.functions(root) if isinstance(f, hpvm.ir.graph.LeafFunction))
    body = checked_body(leaf)
    assert body.module != leaf.body.module
    checks = body.module.count("call void @__hpvm_oob(")
    accesses = sum(
        line.lstrip().startswith(("store ", "%")) and (" load " in line or line.lstrip().startswith("store "))
        for line in leaf.body.module.splitlines()
    )
    assert checks >= 2 and checks == accesses
