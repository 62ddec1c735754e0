"""``llvm.upgrade``: HPVM's LLVM 9–16 text as LLVM 22 text, rule by rule; a Hypothesis
property over typed-pointer types of random nesting; LLVM 22 text passes unchanged; what the
rules do not cover is an ``LLVMImportError`` at the line of the original text.

Every rewritten text must keep its lines where they were (errors and node locations name
the original's lines), which each test checks through ``_up``.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

import llvmlite.binding as llvmlite
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm import llvm
from hpvm.llvm import lltokens

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared suite
from markers import fails  # noqa: E402
from programs import PROGRAMS  # noqa: E402

HERE = Path(__file__).parent / "hpvm9"


def _up(text: str, file: str | None = None) -> str:
    """``upgrade(text)``, checked to parse, to verify and to keep every line where it was."""
    out = llvm.upgrade(text, file)
    assert out.count("\n") == text.count("\n")
    llvmlite.parse_assembly(out).verify()
    return out


def _line(text: str, start: str) -> str:
    return next(ln.strip() for ln in text.splitlines() if ln.strip().startswith(start))


# -- rule 1: pointer types ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("i32*", "ptr"),
        ("i8**", "ptr"),
        ("float addrspace(1)*", "ptr addrspace(1)"),
        ("i8 addrspace(1)* addrspace(3)*", "ptr addrspace(3)"),
        ("i8 addrspace(0)*", "ptr"),
        ("%struct.Root*", "ptr"),
        ('%"struct.a b"*', "ptr"),
        ("[4 x float]*", "ptr"),
        ("[2 x i32*]", "[2 x ptr]"),
        ("{ i32, float* }*", "ptr"),
        ("{ i32, float* }", "{ i32, ptr }"),
        ("<{ i8*, i64 }>", "<{ ptr, i64 }>"),
        ("<4 x float>*", "ptr"),
        ("<2 x i32*>", "<2 x ptr>"),
        ("void (i8*)*", "ptr"),
        ("%struct.out.f (i32*, i64, ...)*", "ptr"),
        ("{ i32 } (i32 (i8*)*)*", "ptr"),
        ("x86_fp80*", "ptr"),
    ],
)
def test_typed_pointers_of_every_form_are_ptr(old: str, new: str) -> None:
    text = f'%"struct.a b" = type {{ i32 }}\n%struct.Root = type {{ i8 }}\n%struct.out.f = type {{}}\n%t = type {{ {old} }}\n'
    assert _line(_up(text), "%t = ") == f"%t = type {{ {new} }}"


def test_instructions_keep_the_element_types_llvm_9_wrote() -> None:
    text = """define float @f(float* %p, i64 %i) {
  %q = getelementptr inbounds float, float* %p, i64 %i
  %v = load float, float* %q, align 4
  %a = alloca [4 x i32*], align 8
  store float %v, float* %p, align 4
  %old = atomicrmw add i32* bitcast (i32** @g to i32*), i32 1 seq_cst
  ret float %v
}
@g = global i32* null
"""
    out = _up(text)
    assert "%q = getelementptr inbounds float, ptr %p, i64 %i" in out
    assert "%v = load float, ptr %q, align 4" in out
    assert "%a = alloca [4 x ptr], align 8" in out
    assert "atomicrmw add ptr @g, i32 1 seq_cst" in out
    assert "@g = global ptr null" in out


def test_byval_and_sret_get_the_pointee_type() -> None:
    text = """%struct.S = type { i32, float }
define void @f(%struct.S* noalias sret align 4 %out, %struct.S* byval align 8 %in, i32* inalloca %x) {
  ret void
}
define void @g(%struct.S* %s) {
  call void @f(%struct.S* sret align 4 %s, %struct.S* byval(%struct.S) align 8 %s, i32* inalloca %x)
  ret void
}
"""
    text = text.replace("i32* inalloca %x)\n  ret", "i32* null)\n  ret")
    out = _up(text)
    assert "ptr noalias sret(%struct.S) align 4 %out, ptr byval(%struct.S) align 8 %in" in out
    assert "ptr inalloca(i32) %x" in out
    assert "ptr sret(%struct.S) align 4 %s, ptr byval(%struct.S) align 8 %s" in out


# -- rule 2: manglings ----------------------------------------------------------------------


def test_intrinsic_manglings_of_pointer_types_are_p0() -> None:
    text = """declare void @llvm.memcpy.p0i8.p0i8.i64(i8*, i8*, i64, i1)
declare void @llvm.lifetime.start.p0i8(i64, i8*)
declare <4 x float> @llvm.masked.load.v4f32.p0v4f32(<4 x float>*, i32, <4 x i1>, <4 x float>)
declare i8* @llvm.ptr.annotation.p1i8(i8 addrspace(1)*, i8*, i8*, i32, i8*)
define void @f(i8* %a, i8* %b) {
  %s = alloca i32
  %c = bitcast i32* %s to i8*
  call void @llvm.lifetime.start.p0i8(i64 4, i8* %c)
  call void @llvm.memcpy.p0i8.p0i8.i64(i8* %a, i8* %b, i64 4, i1 false)
  ret void
}
"""
    out = _up(text)
    assert "@llvm.memcpy.p0.p0.i64(" in out and "p0i8" not in out
    assert "@llvm.masked.load.v4f32.p0(" in out
    assert "@llvm.ptr.annotation.p1(" in out
    # LLVM's own upgrader reads the old lifetime marker (it dropped the size in LLVM 22)
    assert "call void @llvm.lifetime.start.p0(ptr %s)" in str(llvmlite.parse_assembly(out))


# -- rule 3: no-op casts ---------------------------------------------------------------


def test_constant_bitcasts_of_pointers_are_their_operand() -> None:
    text = """%struct.out.f = type <{ i32* }>
declare %struct.out.f @f(i32*)
@s = constant [3 x i8] c"ab\\00"
@p = global i8* bitcast (%struct.out.f (i32*)* @f to i8*)
@q = global i8* bitcast (i32* bitcast ([3 x i8]* @s to i32*) to i8*)
@r = global i8* bitcast (i8* getelementptr inbounds ([3 x i8], [3 x i8]* @s, i64 0, i64 1) to i8*)
@v = global i64 bitcast (<2 x i32> <i32 1, i32 2> to i64)
"""
    out = _up(text)
    assert "@p = global ptr @f" in out
    assert "@q = global ptr @s" in out
    assert "@r = global ptr getelementptr inbounds ([3 x i8], ptr @s, i64 0, i64 1)" in out
    assert "@v = global i64 bitcast (<2 x i32> <i32 1, i32 2> to i64)" in out  # (not a pointer cast)


def test_uses_of_a_pointer_bitcast_read_its_operand_and_the_cast_stays() -> None:
    text = """%struct.Root = type { float*, i64 }
define i8* @f(%struct.Root* %r, float* %x) {
entry:
  %0 = bitcast %struct.Root* %r to i8*
  %1 = bitcast i8* %0 to float**
  store float* %x, float** %1, align 8
  br label %next
next:
  %p = phi i8* [ %0, %entry ]
  ret i8* %0
}
"""
    out = _up(text)
    assert "%0 = bitcast ptr %r to ptr" in out and "%1 = bitcast ptr %r to ptr" in out  # (still defined)
    assert "store ptr %x, ptr %r, align 8" in out
    assert "%p = phi ptr [ %r, %entry ]" in out and "ret ptr %r" in out


# -- rule 4: HPVM's parameter attributes -------------------------------------------------


def test_hpvm_in_out_inout_become_string_attributes() -> None:
    text = """define { i32* } @f(i32* in %a, i64 %n, i32* out %b, i32* inout %c, i32* in out %d) {
  %r = insertvalue { i32* } undef, i32* %b, 0
  ret { i32* } %r
}
declare void @g(i8* in, i8* out nocapture)
"""
    out = _up(text)
    assert 'ptr "in" %a, i64 %n, ptr "out" %b, ptr "in" "out" %c, ptr "in" "out" %d' in out
    assert 'declare void @g(ptr "in", ptr "out" nocapture)' in out


# -- rule 5: hints -------------------------------------------------------------------------


HINTED = """define { } @a() #0 {
  ret { } undef
}
define { } @b() local_unnamed_addr #0 {
  ret { } undef
}
define { } @c() "hpvm.hint"="cpu" {
  ret { } undef
}
define { } @d() {
  ret { } undef
}
attributes #0 = { nounwind }
!hpvm_hint_gpu = !{!1, !3}
!hpvm_hint_cpu = !{!2}
!hpvm_hint_promise = !{!0}
!hpvm_hint_cudnn = !{}
!0 = !{{ } ()* @a}
!1 = !{{ } ()* @b}
!2 = !{{ } ()* @b}
!3 = !{{ } ()* @c}
"""


def test_hint_lists_become_hint_attributes_in_hpvms_order() -> None:
    out = _up(HINTED)
    assert 'define { } @a() "hpvm.hint"="tensor" #0 {' in out
    assert 'define { } @b() local_unnamed_addr "hpvm.hint"="cpu" #0 {' in out  # (cpu before gpu)
    assert 'define { } @c() "hpvm.hint"="cpu" {' in out  # (its own attribute stays)
    assert "define { } @d() {" in out
    assert "!hpvm_hint" not in out  # (the lists go: the attribute carries the hint)


@pytest.mark.parametrize(
    ("lists", "hint"),
    [("cpu", "cpu"), ("gpu", "gpu"), ("cpu_gpu", "gpu"), ("cudnn", "tensor"), ("promise", "tensor"),
     ("spir", "gpu"), ("cpu_spir", "gpu")],
)  # fmt: skip
def test_each_hint_list_maps_as_genhpvm_maps_hpvms_targets(lists: str, hint: str) -> None:
    text = f"define {{}} @f() {{\n  ret {{}} undef\n}}\n!hpvm_hint_{lists} = !{{!0}}\n!0 = !{{{{}} ()* @f}}\n"
    assert f'@f() "hpvm.hint"="{hint}" {{' in _up(text)


def test_an_unknown_hint_list_is_an_error_at_its_line() -> None:
    text = "define {} @f() {\n  ret {} undef\n}\n!hpvm_hint_fpga = !{!0}\n!0 = !{{} ()* @f}\n"
    with fails(llvm.LLVMImportError, "prog.ll:4 (!hpvm_hint_fpga = !{!0})", "no hint list HPVM writes"):
        llvm.upgrade(text, "prog.ll")


# -- LLVM 22 text ----------------------------------------------------------------------


@cache
def _exported() -> list[str]:
    return [llvm.to_hpvm_ir(p.root) for p in PROGRAMS[:6]]


def test_llvm_22_text_passes_through_unchanged() -> None:
    for text in _exported():
        assert llvm.upgrade(text) is text


def test_llvm_22_text_with_a_star_in_a_string_or_comment_passes_unchanged() -> None:
    text = '@s = constant [4 x i8] c"a*b\\00" ; a comment with i8* in it\n'
    assert llvm.upgrade(text) is text


def test_upgrading_the_upgraded_text_changes_nothing() -> None:
    for path in sorted(HERE.glob("*.ll")):
        once = _up(path.read_text())
        assert llvm.upgrade(once) is once


# -- the property --------------------------------------------------------------------------

_LEAF_TYPES = ["i1", "i8", "i32", "i64", "float", "double", "%struct.S"]


def _types() -> st.SearchStrategy[tuple[str, str]]:
    """(LLVM 9 spelling, LLVM 22 spelling) of random types, pointers nested in anything."""
    leaves = st.sampled_from([(t, t) for t in _LEAF_TYPES])

    def extend(inner: st.SearchStrategy[tuple[str, str]]) -> st.SearchStrategy[tuple[str, str]]:
        def pointer(t: tuple[str, str], space: int) -> tuple[str, str]:
            old = f"{t[0]} addrspace({space})*" if space else f"{t[0]}*"
            return old, f"ptr addrspace({space})" if space else "ptr"

        def struct(ts: list[tuple[str, str]], packed: bool) -> tuple[str, str]:
            old, new = ("{ " + ", ".join(x[k] for x in ts) + " }" if ts else "{}" for k in (0, 1))
            return (f"<{old}>", f"<{new}>") if packed else (old, new)

        def function(ret: tuple[str, str], ps: list[tuple[str, str]], varargs: bool) -> tuple[str, str]:
            params = [p[0] for p in ps] + (["..."] if varargs else [])
            return f"{ret[0]} ({', '.join(params)})*", "ptr"

        return st.one_of(
            st.builds(pointer, inner, st.sampled_from([0, 0, 0, 1, 5])),
            st.builds(struct, st.lists(inner, max_size=3), st.booleans()),
            st.builds(lambda n, t: (f"[{n} x {t[0]}]", f"[{n} x {t[1]}]"), st.integers(0, 9), inner),
            st.builds(function, st.one_of(inner, st.just(("void", "void"))), st.lists(inner, max_size=3), st.booleans()),
        )  # fmt: skip

    return st.recursive(leaves, extend, max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(_types(), _types())
def test_typed_pointer_types_of_any_nesting_upgrade_to_their_llvm_22_spelling(
    a: tuple[str, str], b: tuple[str, str]
) -> None:
    text = (
        "%struct.S = type { i32 }\n"
        f"%t = type {{ {a[0]}, {b[0]} }}\n"
        f"@g = external global {a[0]}\n"
        f"declare void @f({b[0]}, {a[0]})\n"
    )
    out = _up(text)
    assert _line(out, "%t = ") == f"%t = type {{ {a[1]}, {b[1]} }}"
    assert _line(out, "@g = ") == f"@g = external global {a[1]}"
    assert _line(out, "declare ") == f"declare void @f({b[1]}, {a[1]})"
    assert llvm.upgrade(out) is out  # (LLVM 22 text now: unchanged)


# -- what the rules do not cover -----------------------------------------------------------


def test_a_star_after_no_type_is_an_error_at_its_line() -> None:
    text = "define void @f() {\n  ret void\n}\n@g = global i32 7 * 3\n"
    with fails(
        llvm.LLVMImportError, "prog.ll:4 (@g = global i32 7 * 3)", "'*' after '7', which is not a type"
    ):
        llvm.upgrade(text, "prog.ll")


def test_a_constant_expression_llvm_22_removed_is_an_error_at_its_original_line() -> None:
    text = "@x = global i32 0\n\n@y = global i64 zext (i32 ptrtoint (i32* @x to i32) to i64)\n"
    with fails(
        llvm.LLVMImportError, "old.ll:3 (@y = global i64 zext", "not valid LLVM IR for LLVM 22", "zext"
    ):
        llvm.upgrade(text, "old.ll")


def test_text_that_does_not_verify_after_the_upgrade_names_the_line() -> None:
    text = """define i32* @f(i32* %p) {
entry:
  %a = getelementptr i32, i32* %b, i64 1
  %b = getelementptr i32, i32* %p, i64 1
  ret i32* %a
}
"""
    with fails(llvm.LLVMImportError, "line 4 (%b = getelementptr", "does not verify"):
        llvm.upgrade(text)


def test_from_hpvm_ir_names_the_file_and_line_of_an_upgrade_error() -> None:
    with fails(llvm.LLVMImportError, "mine.ll:1 (", "not a type"):
        llvm.from_hpvm_ir("@g = global i32 7 * 3\n", file="mine.ll")


def test_the_upgrade_keeps_each_line_of_hpvms_style_programs() -> None:
    for path in sorted(HERE.glob("*.ll")):
        text = path.read_text()
        out = _up(text)
        for old, new in zip(text.splitlines(), out.splitlines()):
            if old.startswith("define"):
                assert new.startswith("define") and re.search(r"@\w+\(", old).group(0) in new  # type: ignore[union-attr]


# -- the tokenizer -----------------------------------------------------------------------

_PIECES = st.sampled_from(
    ["i32", "*", " ", "\n", "%x", '%"a b"', "@f", "!0", "#1", '"s"', 'c"a*b\\00"', "; a * comment\n", "(",
     ")", "{", "}", "<", ">", "[", "]", ",", "=", "...", "-12", "0x7FF8", "1.5e3", "addrspace", "\t", "!"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(_PIECES, max_size=40))
def test_tokens_give_back_the_text_and_their_lines(pieces: list[str]) -> None:
    text = "".join(pieces)
    tokens, tail = lltokens.tokenize(text)
    assert lltokens.untokenize(tokens, tail) == text
    at = 0
    for t in tokens:
        at += len(t.ws)
        assert text.startswith(t.text, at) and t.line == 1 + text.count("\n", 0, at)
        at += len(t.text)


def test_trailing_whitespace_is_read_in_linear_time() -> None:
    text = "define void @f() {\n  ret void\n}\n" + "\n" * 200_000
    tokens, tail = lltokens.tokenize(text)
    assert len(tokens) == 9 and tail == "\n" * 200_001
