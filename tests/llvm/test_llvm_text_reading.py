"""What the import and EXTRACT read from an instruction's text instead of asking llvmlite
operand by operand (each a call into LLVM; ``docs/llvm.md``, "How fast"): a call's
arguments (``importer.call_arguments``), the values an instruction uses
(``outline.FunctionIndex.operands``), the name it defines, and the naming of unnamed values
by the function's text (``extract.with_names``). Each is checked against what llvmlite says
on the same IR, on PREPARE's output for the shared suite (before and after -O2) and on
hand-written IR with the forms the text readers must not be fooled by."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm import llvm
from hpvm.llvm.extract import _region_function, with_names
from hpvm.llvm.importer import call_arguments, parse_verified
from hpvm.llvm.outline import FunctionIndex

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared suite
from programs import PROGRAMS  # noqa: E402

SAMPLE = ("saxpy_1d", "grid_3d", "two_level_parent_queries", "binds_two_levels", "atomics_int32")


@cache
def prepared(name: str, level: int | None) -> str:
    text = llvm.prepare(next(p for p in PROGRAMS if p.name == name).root)
    return text if level is None else llvm.optimize(text, level)


def _region_fn(parse: Callable[[str], Any], text: str) -> tuple[Any, Any]:
    module = parse_verified(parse, text, "")
    return with_names(parse, module, _region_function(module))


def _llvmlite_operands(ins: Any) -> list[str]:
    return [op.name for op in ins.operands if op.value_kind.name in ("instruction", "argument")]


@pytest.mark.parametrize("level", [None, 2])
@pytest.mark.parametrize("name", SAMPLE)
def test_operands_names_and_texts_agree_with_llvmlite(
    parse: Callable[[str], Any], name: str, level: int | None
) -> None:
    module, fn = _region_fn(parse, prepared(name, level))
    index = FunctionIndex(fn)
    checked = 0
    for block in index.blocks:
        for ins in index.instructions[block]:
            assert [v.name for v in index.operands(ins)] == _llvmlite_operands(ins), index.text[ins]
            assert index.name[ins] == ins.name
            # the text is the module's printing (its metadata numbers), not the instruction's own
            assert index.text[ins] in str(module)
            checked += 1
    assert checked > 10


def test_with_names_names_every_value_and_keeps_strings(parse: Callable[[str], Any]) -> None:
    text = """
declare void @use(i64, ptr)
define void @f(i64 %0, ptr %p) {
  %2 = add i64 %0, 1
  br label %3
3:
  %4 = phi i64 [ %2, %1 ], [ %5, %3 ]
  %5 = add i64 %4, 1
  call void @use(i64 %5, ptr %p) [ "tag %2 stays"(i64 %5) ]
  %6 = icmp ult i64 %5, 10
  br i1 %6, label %3, label %7
7:
  ret void
}
"""
    module = parse_verified(parse, text, "")
    renamed, fn = with_names(parse, module, module.get_function("f"))
    printed = str(fn)
    assert not re.search(r"%\d+\b(?![-\w.$])", printed.replace('"tag %2 stays"', ""))
    assert '"tag %2 stays"' in printed
    assert [a.name for a in fn.arguments] == [".u0", "p"]
    assert {b.name for b in fn.blocks} == {".u1", ".u3", ".u7"}
    # nothing to name: the same module back
    again, fn2 = with_names(parse, renamed, fn)
    assert again is renamed and fn2 is fn


_TYPES = st.sampled_from(["ptr", "i1", "i32", "i64", "{ i64, ptr }", "<2 x i32>", "[4 x i8]"])
_PLAIN = st.from_regex(r"[A-Za-z._$][-\w.$]{0,8}", fullmatch=True)
_QUOTED = st.text(
    st.characters(whitelist_categories=("L", "N"), whitelist_characters=" ,()[]{}<>"), min_size=1, max_size=8
).map(lambda s: f'"{s}"')
_VALUES = st.one_of(
    st.builds(lambda n: f"%{n}", st.one_of(_PLAIN, _QUOTED)),
    st.builds(lambda n: f"@{n}", _PLAIN),
    st.integers(-(2**40), 2**40).map(str),
    st.sampled_from(["true", "false", "null", "undef", "poison"]),
)
_ATTRS = st.sampled_from(["", "noundef ", "nonnull ", "noundef nonnull ", "align 8 "])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_TYPES, _ATTRS, _VALUES), max_size=7), st.booleans())
def test_call_arguments_reads_back_what_was_written(args: list[tuple[str, str, str]], named: bool) -> None:
    written = ", ".join(f"{t} {a}{v}" for t, a, v in args)
    text = f"{'%n1 = ' if named else ''}call ptr @llvm.hpvm.createEdge({written}), !dbg !7"
    assert call_arguments(text) == [(t.split(" ", 1)[0], v) for t, _, v in args]


def test_call_arguments_on_the_graph_intrinsics_prepare_exports() -> None:
    text = llvm.to_hpvm_ir(next(p for p in PROGRAMS if p.name == "binds_two_levels").root)
    calls = [
        ln.strip()
        for ln in text.splitlines()
        if ln.startswith("  call ") and ("@llvm.hpvm.createEdge(" in ln or "@llvm.hpvm.bind." in ln)
    ]
    assert calls
    for line in calls:
        read = call_arguments(line)
        assert all(t in ("ptr", "i1", "i32") for t, _ in read), line
        assert [v for t, v in read if t == "ptr"] == re.findall(r"ptr (%[-\w.$]+)", line)
