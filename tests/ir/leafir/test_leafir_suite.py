"""Every Python leaf of the shared programs either builds, verifies and reads back from its
text, or raises ``LeafIRUnsupported``; the unsupported ones are listed, so coverage is
visible and a change in it shows up here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import example_modules
import gpu_convention
import hpvm.hbir as hbir
import mixed_programs
import programs
import streaming_programs
from hpvm.ir.graph import LeafFunction, functions
from hpvm.ir.leafir import LeafIRUnsupported, leaf_ir
from hpvm.ir.leafir.parser import parse_leaf_ir
from hpvm.ir.leafir.printer import print_leaf
from hpvm.ir.leafir.verify import verify_leaf

EXAMPLES = ("vector_add", "histogram", "reduction", "stencil", "sgemm", "edge_detection")
HBIR = sorted((Path(example_modules.EXAMPLES) / "hbir").glob("*.hbir"))

#: Leaves outside today's dialect: (origin, leaf) -> what the refusal names.
UNSUPPORTED = {
    ("streaming_programs", "fails_on_five"): "a 'Raise' statement",
}


def _leaves() -> dict[tuple[str, str], LeafFunction]:
    found: dict[tuple[str, str], LeafFunction] = {}

    def add(origin: str, fn: object) -> None:
        if isinstance(fn, LeafFunction):
            found.setdefault((origin, fn.name), fn)

    for program in programs.PROGRAMS:
        for fn in functions(program.root):
            add("programs", fn)
    for module in (gpu_convention, mixed_programs, streaming_programs):
        for value in vars(module).values():
            add(module.__name__, value)
    for name in EXAMPLES:
        for value in vars(example_modules.load(name)).values():
            add(name, value)
    for path in HBIR:
        for fn in functions(hbir.load(path).to_hpvm()):
            add(path.name, fn)
    return found


LEAVES = _leaves()


def test_the_suite_has_leaves_of_every_origin() -> None:
    origins = {origin for origin, _ in LEAVES}
    assert {"programs", "gpu_convention", "histogram", "reduction", "matmul.hbir"} <= origins
    assert len(LEAVES) > 80


@pytest.mark.parametrize("key", sorted(LEAVES), ids=lambda k: f"{k[0]}:{k[1]}")
def test_leaf_builds_verifies_and_reads_back_or_is_listed(key: tuple[str, str]) -> None:
    fn = LEAVES[key]
    if key in UNSUPPORTED:
        with pytest.raises(
            LeafIRUnsupported, match=rf"leaf '{fn.name}' \(.+:\d+\): .*{re.escape(UNSUPPORTED[key])}"
        ):
            leaf_ir(fn)
        return
    ir = leaf_ir(fn)
    verify_leaf(ir)
    assert parse_leaf_ir(print_leaf(ir)) == ir
    assert leaf_ir(fn) is ir  # built once


def test_the_unsupported_list_names_only_leaves_of_the_suite() -> None:
    assert set(UNSUPPORTED) <= set(LEAVES)
