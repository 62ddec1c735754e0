"""A leaf's clone without debug metadata (``backends/llvm_native/nodebug.py``).

Generated modules (functions whose instructions carry ``!dbg`` beside ``!tbaa`` and
``!llvm.loop``, loop metadata holding debug locations, a compile unit with retained types,
debug records, the metadata in any order) lose every debug node and
attachment and keep everything else: the result verifies, its code is the input's less the
debug attachments, each kept attachment points at a node of the same content, and stripping
twice changes nothing. The clones of a C++ program's leaves, compiled by clang with debug
info, are checked in ``tests/c/test_c_field_sad.py``.
"""

from __future__ import annotations

import re

import llvmlite.binding as llvm
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm.backends.llvm_native.nodebug import without_debug_info

_HEAD = 'source_filename = "leaf.c"\n'
_REF = re.compile(r"<(\w+)>")  # a reference to a node by name, in the generator's texts


@st.composite
def modules(draw: st.DrawFn) -> tuple[str, int]:
    """A module text with debug metadata, and its number of functions."""
    nfun = draw(st.integers(1, 3))
    nodes = {  # name -> definition, <name> for a reference to another node
        "file": '!DIFile(filename: "leaf.c", directory: "/src")',
        "cu": 'distinct !DICompileUnit(language: DW_LANG_C11, file: <file>, producer: "clang", '
        "isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug, retainedTypes: <types>)",
        "types": "!{<basic>}",  # a plain tuple reachable only from the unit
        "basic": '!DIBasicType(name: "long", size: 64, encoding: DW_ATE_signed)',
        "sty": "!DISubroutineType(types: !{null})",
        "tbaa_root": '!{!"Simple C/C++ TBAA"}',
        "tbaa_char": '!{!"omnipotent char", <tbaa_root>, i64 0}',
        "tbaa_long": '!{!"long", <tbaa_char>, i64 0}',
        "tbaa": "!{<tbaa_long>, <tbaa_long>, i64 0}",
        "must": '!{!"llvm.loop.mustprogress"}',
        "flag_dwarf": '!{i32 7, !"Dwarf Version", i32 5}',
        "flag_di": '!{i32 2, !"Debug Info Version", i32 3}',
    }
    functions = []
    for f in range(nfun):
        nodes[f"sp{f}"] = (
            f'distinct !DISubprogram(name: "f{f}", scope: <file>, file: <file>, line: {f + 1}, '
            "type: <sty>, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: <cu>)"
        )
        nodes[f"la{f}"] = f"!DILocation(line: {10 * f + 2}, column: 3, scope: <sp{f}>)"
        nodes[f"lb{f}"] = f"!DILocation(line: {10 * f + 4}, column: 5, scope: <sp{f}>)"
        nodes[f"loop{f}"] = f"distinct !{{<loop{f}>, <la{f}>, <lb{f}>, <must>}}"
        at = f", !dbg <la{f}>" if draw(st.booleans()) else ""
        mem = ", !tbaa <tbaa>" if draw(st.booleans()) else ""
        record = f"    #dbg_value(i64 %i, <sp{f}>, !DIExpression(), <la{f}>)\n" if draw(st.booleans()) else ""
        functions.append(
            f"define i64 @f{f}(ptr %p, i64 %n) !dbg <sp{f}> {{\n"
            "entry:\n"
            "  br label %loop\n"
            "loop:\n"
            f"  %i = phi i64 [ 0, %entry ], [ %next, %loop ]\n{record}"
            "  %q = getelementptr i64, ptr %p, i64 %i\n"
            f"  store i64 %i, ptr %q, align 8{mem}{at}\n"
            "  %next = add i64 %i, 1\n"
            "  %done = icmp sge i64 %next, %n\n"
            f"  br i1 %done, label %exit, label %loop, !llvm.loop <loop{f}>\n"
            "exit:\n"
            f"  ret i64 %next{at}\n"
            "}\n"
        )
    order = draw(st.permutations(list(nodes)))  # (node numbers and the order of their lines)
    number = {name: k for k, name in enumerate(order)}
    lines = [f"<{name}> = {nodes[name]}" for name in draw(st.permutations(list(nodes)))]
    named = ["!llvm.dbg.cu = !{<cu>}", "!llvm.module.flags = !{<flag_dwarf>, <flag_di>}"]
    text = _HEAD + "\n".join(functions) + "\n" + "\n".join(named + lines) + "\n"
    return _REF.sub(lambda m: f"!{number[m.group(1)]}", text), nfun


def _resolved(text: str, ref: str) -> str:
    """The content of node ``ref`` with every operand ``!k`` replaced by its content, for
    comparing attachments across renumbering (cycles stop at the node itself)."""
    defs = dict(re.findall(r"^(!\d+) = (?:distinct )?(.*)$", text, flags=re.M))

    def expand(r: str, seen: tuple[str, ...]) -> str:
        if r in seen:
            return "self"
        return re.sub(r"!\d+\b", lambda m: expand(m.group(0), (*seen, r)), defs[r])

    return expand(ref, ())


def _code(text: str) -> list[str]:
    """The instruction and header lines, less their debug attachments and records."""
    lines = [re.sub(r",? !dbg !\d+", "", line) for line in text.split("\n")]
    return [
        re.sub(r"!\d+", "!N", line)
        for line in lines
        if line and not line.startswith("!") and not line.lstrip().startswith("#dbg_")
    ]


@settings(max_examples=60, deadline=None)
@given(modules())
def test_generated_modules_lose_only_their_debug_metadata(case):
    text, nfun = case
    llvm.parse_assembly(text).verify()  # (the generated input is valid)
    out = without_debug_info(text)
    llvm.parse_assembly(out).verify()
    assert "!DI" not in out and "!dbg" not in out and "#dbg_" not in out and "llvm.dbg" not in out
    assert _code(out) == _code(text)
    tbaa = [_resolved(text, r) for r in re.findall(r"!tbaa (!\d+)", text)]
    assert [_resolved(out, r) for r in re.findall(r"!tbaa (!\d+)", out)] == tbaa
    loops = [_resolved(out, r) for r in re.findall(r"!llvm\.loop (!\d+)", out)]
    assert loops == ['!{self, !{!"llvm.loop.mustprogress"}}'] * nfun  # (less their locations)
    assert "Debug Info Version" in out  # (module flags stay: harmless without debug info)
    assert without_debug_info(out) == out


def test_a_module_without_debug_info_is_returned_as_it_is():
    text = "define i64 @f(i64 %x) {\n  ret i64 %x\n}\n"
    assert without_debug_info(text) is text


def test_a_debug_node_used_where_this_cannot_edit_keeps_the_text():
    """A loop property whose string holds a comma is not split: the text stays whole."""
    text = (
        "define void @f() !dbg !3 {\n  br label %l\nl:\n  br label %l, !llvm.loop !5\n}\n"
        "!llvm.dbg.cu = !{!1}\n"
        '!0 = !DIFile(filename: "a.c", directory: "/")\n'
        '!1 = distinct !DICompileUnit(language: DW_LANG_C11, file: !0, producer: "c", '
        "isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug)\n"
        "!2 = !DISubroutineType(types: !{null})\n"
        '!3 = distinct !DISubprogram(name: "f", scope: !0, file: !0, line: 1, type: !2, '
        "spFlags: DISPFlagDefinition, unit: !1)\n"
        "!4 = !DILocation(line: 2, column: 1, scope: !3)\n"
        '!5 = distinct !{!5, !4, !"a, b"}\n'
    )
    assert without_debug_info(text) is text
