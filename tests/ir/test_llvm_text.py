"""``hpvm.ir.llvm_text``: a global's name written as LLVM prints it and read back (a
Hypothesis property, checked against LLVM's own parser and printer), and functions marked
``alwaysinline`` with what forbade inlining dropped."""

from __future__ import annotations

import re

import llvmlite.binding as llvm
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm.ir.llvm_text import WRITTEN_NAME, global_name, mark_always_inline, name_of

names = st.text(
    st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), min_size=1, max_size=12
)


@settings(max_examples=200, deadline=None)
@given(names)
def test_a_name_as_llvm_writes_it_reads_back(name: str) -> None:
    written = global_name(name)
    assert re.fullmatch(WRITTEN_NAME, written[1:])
    assert name_of(written[1:]) == name
    module = llvm.parse_assembly(f"define void {written}() {{\n  ret void\n}}\n")
    (fn,) = list(module.functions)
    assert fn.name == name  # LLVM reads what we write ...
    assert f"define void {written}()" in str(module)  # ... and prints it the same way


def test_plain_and_quoted_names() -> None:
    assert global_name("h0.i") == "@h0.i"
    assert global_name("a b") == '@"a b"'
    assert global_name("0x") == '@"0x"'
    assert global_name("a$") == '@"a$"'  # LLVM reads a bare $, but prints it quoted
    assert global_name("größe") == '@"gr\\C3\\B6\\C3\\9Fe"'
    assert name_of('"gr\\C3\\B6\\C3\\9Fe"') == "größe"


TEXT = """
define internal i64 @helper() #0 {
  ret i64 1
}

define i64 @caller() #1 {
  %r = call i64 @helper()
  ret i64 %r
}

attributes #0 = { noinline optnone "x"="1" }
attributes #1 = { noinline "y"="2" }
"""


def _attributes(module: llvm.ModuleRef, name: str) -> str:
    return " ".join(a.decode() for a in module.get_function(name).attributes)


def test_marking_a_function_alwaysinline_drops_what_forbade_inlining() -> None:
    text, like = mark_always_inline(TEXT, {"@helper"}, like="@caller")
    module = llvm.parse_assembly(text)
    helper = _attributes(module, "helper")
    assert "alwaysinline" in helper and "noinline" not in helper and "optnone" not in helper
    assert '"x"="1"' in helper  # other attributes kept
    assert "noinline" in _attributes(module, "caller")  # the caller is not changed ...
    assert like is not None and re.search(
        rf"attributes #{like} = {{ \"y\"=\"2\" }}", text
    )  # ... its group is offered
    assert mark_always_inline(TEXT, {"@helper"})[1] is None
