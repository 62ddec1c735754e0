"""Golden "IR in → IR out" tests of the lowering passes.

Each case reads a program in the text form with its bodies (``golden/<name>.in.hpvm``: the
text alone is the program), runs a pipeline of passes on it through the ``PassManager``
(which verifies after each pass), prints the result with its bodies and compares it with
``golden/<name>.<pipeline>.out.hpvm``. The expected files are reviewed by hand; after an
intended change, regenerate them with ``HPVM_UPDATE_GOLDEN=1 pytest tests/passes`` and read
the diff. Each output also parses back to itself (the pass output is a valid program text).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from hpvm.ir.parser import parse_program
from hpvm.ir.printer import print_program
from hpvm.passes import (
    FuseHPVMTensorNodes,
    FuseOneToOne,
    Pass,
    PassManager,
    PlaceAllocations,
    SplitByTarget,
)
from hpvm.passes.clone_leaves import CloneLeaves

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("HPVM_UPDATE_GOLDEN") == "1"

# Hints resolved as on a machine with every back end (the pass is given the resolver).
FIXED_TARGETS = {None: "cpu", "cpu": "cpu", "gpu": "cuda", "tensor": "tensor"}

CASES: dict[tuple[str, str], Callable[[], Sequence[Pass]]] = {
    ("fusion", "loop"): lambda: [FuseOneToOne("loop")],
    ("fusion", "kernel"): lambda: [FuseOneToOne("kernel")],
    ("allocation", "gpu"): lambda: [FuseOneToOne("kernel"), PlaceAllocations()],
    ("mixed", "split"): lambda: [SplitByTarget(FIXED_TARGETS.__getitem__)],
    ("mixed", "split-fuse"): lambda: [SplitByTarget(FIXED_TARGETS.__getitem__), FuseOneToOne("loop")],
    ("nested_mixed", "split"): lambda: [SplitByTarget(FIXED_TARGETS.__getitem__)],
    ("clone", "clone"): lambda: [CloneLeaves("cpu")],
    ("allocation", "cuda"): lambda: [FuseOneToOne("kernel"), PlaceAllocations(), CloneLeaves("cuda")],
    ("tensor", "fuse"): lambda: [FuseHPVMTensorNodes()],
}


def _relative(path: Path) -> str:
    """The file name the program is read under (what locations and clone origins print)."""
    return str(path.relative_to(GOLDEN.parents[2]))


@pytest.mark.parametrize(("name", "pipeline"), list(CASES), ids=lambda v: str(v))
def test_golden(name: str, pipeline: str) -> None:
    source = GOLDEN / f"{name}.in.hpvm"
    root = parse_program(source.read_text(), _relative(source))
    lowered = PassManager(CASES[name, pipeline]()).run(root)
    text = print_program(lowered, bodies=True)
    expected = GOLDEN / f"{name}.{pipeline}.out.hpvm"
    if UPDATE:
        expected.write_text(text)
    assert expected.exists(), f"no golden output {expected.name}: run with HPVM_UPDATE_GOLDEN=1 and review it"
    assert text == expected.read_text()
    out = _relative(expected)
    assert print_program(parse_program(text, out), bodies=True) == text


def test_passes_leave_their_input_intact() -> None:
    source = GOLDEN / "fusion.in.hpvm"
    root = parse_program(source.read_text(), _relative(source))
    before = print_program(root, bodies=True)
    PassManager([FuseOneToOne("kernel"), PlaceAllocations(), CloneLeaves("cuda")]).run(root)
    assert print_program(root, bodies=True) == before
