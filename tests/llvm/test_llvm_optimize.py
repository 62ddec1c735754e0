"""``llvm.optimize``: LLVM's own pipeline on LLVM IR text. HPVM IR in LLVM form survives it:
the whole shared suite, optimized at -O2, imports to the same graph."""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from hpvm import llvm
from hpvm.ir.printer import print_program

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared suite
from markers import fails  # noqa: E402
from programs import PROGRAMS  # noqa: E402

REDUNDANT = """
define i64 @f(i64 %a) {
entry:
  %x = add i64 %a, 0
  %y = mul i64 %x, 1
  ret i64 %y
}
"""


@cache
def _exported(name: str) -> str:
    return llvm.to_hpvm_ir(next(p for p in PROGRAMS if p.name == name).root)


def test_o2_simplifies_and_o0_keeps_the_code():
    assert "mul i64" not in llvm.optimize(REDUNDANT, 2)
    assert "ret i64 %a" in llvm.optimize(REDUNDANT, 2)
    assert "mul i64 %x, 1" in llvm.optimize(REDUNDANT, 0)


def _sizes_masked(text: str) -> str:
    return re.sub(r"(= node @\w+)\[.*\]$", r"\1[...]", text, flags=re.M)


@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_the_suite_optimized_at_o2_imports_to_the_same_graph(program) -> None:
    """The same graph, up to replication sizes LLVM folded (``n - n`` is ``0``): those are
    compared by value, with the program's own arguments, for the root's children."""
    imported = llvm.from_hpvm_ir(llvm.optimize(_exported(program.name), 2))
    assert _sizes_masked(print_program(imported)) == _sizes_masked(print_program(program.root))
    args = program.make_args(np.random.default_rng(0))
    env = {p.name: a for p, a in zip(program.root.params, args)}
    for mine, theirs in zip(imported.graph.nodes, program.root.graph.nodes, strict=True):
        assert [e.evaluate(env) for e in mine.sizes] == [e.evaluate(env) for e in theirs.sizes]


@pytest.mark.parametrize("level", [-1, 4, True, "2"])
def test_a_level_outside_0_to_3_is_refused(level) -> None:
    with fails(llvm.LLVMError, "the level is one of 0, 1, 2, 3"):
        llvm.optimize(REDUNDANT, level)


def test_text_that_is_not_llvm_ir_is_an_import_error() -> None:
    with fails(llvm.LLVMImportError, "not valid LLVM IR"):
        llvm.optimize("define i64 @f( {")
