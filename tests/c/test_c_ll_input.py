"""``c.compile("prog.ll")``: clang's output for an HPVM-C program, before GenHPVM, goes
through GenHPVM like a C file's — LLVM 9 text (``tests/c/ll/vecadd_clang9_O1.ll``, hpvm's
own vector add written as clang 9 -O1 writes it with HPVM's hpvm.h) and LLVM 22 text alike.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hpvmc_helpers import EXAMPLES, needs_clang, needs_llvm_leaves

from hpvm import c
from hpvm.c import clang
from hpvm.cli import main as cli
from hpvm.ir.printer import print_program
from markers import fails

pytestmark = pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning")

VECADD = Path(__file__).parent / "ll" / "vecadd_clang9_O1.ll"

VECADD_GRAPH = """\
# hpvm IR v1
leaf @vecAdd(A: u8[:], B: u8[:], C: u8[:]) -> (i64) hint(cpu) ins(A, B) outs(C)
internal @root(A: u8[:], B: u8[:], C: u8[:], n: i64) hint(cpu) ins(A, B, C) outs(C) {  # -> (i64)
  %call = node @vecAdd[n]
  bind in 0 -> %call.0
  bind in 1 -> %call.1
  bind in 2 -> %call.2
  bind out %call.0 -> 0
}
"""


@pytest.fixture(scope="module")
def vecadd() -> c.CProgram:
    return c.compile(VECADD)


def test_clang_9_output_goes_through_genhpvm(vecadd: c.CProgram) -> None:
    assert "".join(print_program(r, bodies=False) for r in vecadd.roots) == VECADD_GRAPH


@needs_llvm_leaves
@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_clang_9_output_runs_and_checks_itself(vecadd: c.CProgram, target: str, capfd) -> None:  # type: ignore[no-untyped-def]
    assert vecadd.run(target=target) == 0  # (main returns 1 if any C[i] != A[i] + B[i])
    assert "vecadd: 0 errors" in capfd.readouterr().out


@needs_llvm_leaves
def test_hpvm_c_run_of_an_ll_file(capfd) -> None:  # type: ignore[no-untyped-def]
    assert cli(["c", "run", str(VECADD)]) == 0
    assert "vecadd: 0 errors" in capfd.readouterr().out


def test_hpvm_c_lower_of_an_ll_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["c", "lower", str(VECADD)]) == 0
    assert "%call = node @vecAdd[n]" in capsys.readouterr().out


@needs_clang
@needs_llvm_leaves
def test_clang_22_output_is_read_as_it_is(tmp_path: Path, capfd) -> None:  # type: ignore[no-untyped-def]
    source = EXAMPLES / "vector_add.c"
    ll = tmp_path / "vector_add.ll"
    ll.write_text(clang.to_llvm(source))
    assert clang.ll_to_llvm(ll) == ll.read_text()
    from_ll = c.compile(ll)
    assert [print_program(r) for r in from_ll.roots] == [print_program(r) for r in c.compile(source).roots]
    assert from_ll.run(["16"]) == 0
    assert "vector_add: 16 elements, 0 wrong" in capfd.readouterr().out


# -- mistakes --------------------------------------------------------------------------

WITH_DEBUG_INFO = """; ModuleID = 'bad.c'
source_filename = "bad.c"

define dso_local void @leaf(float* %A, i64 %bytesA) #0 !dbg !10 {
entry:
  call void @llvm.dbg.value(metadata float* %A, metadata !13, metadata !DIExpression()), !dbg !21
  tail call void @__hpvm__hint(i32 1) #1, !dbg !22
  tail call void (i32, ...) @__hpvm__attributes(i32 1, float* %A, i32 0) #1, !dbg !23
  tail call void (i32, ...) @__hpvm__return(i32 2, i64 %bytesA) #1, !dbg !20
  ret void, !dbg !24
}

define dso_local void @root(float* %A, i64 %bytesA) #0 !dbg !30 {
entry:
  %call = tail call i8* (i32, ...) @__hpvm__createNodeND(i32 0, void (float*, i64)* nonnull @leaf) #1, !dbg !31
  call void @llvm.dbg.value(metadata i8* %call, metadata !32, metadata !DIExpression()), !dbg !33
  tail call void @__hpvm__bindIn(i8* %call, i32 0, i32 0, i32 0) #1, !dbg !34
  tail call void @__hpvm__bindIn(i8* %call, i32 1, i32 1, i32 0) #1, !dbg !34
  ret void, !dbg !35
}

declare dso_local void @__hpvm__hint(i32) local_unnamed_addr
declare dso_local void @__hpvm__attributes(i32, ...) local_unnamed_addr
declare dso_local void @__hpvm__return(i32, ...) local_unnamed_addr
declare dso_local i8* @__hpvm__createNodeND(i32, ...) local_unnamed_addr
declare dso_local void @__hpvm__bindIn(i8*, i32, i32, i32) local_unnamed_addr
declare void @llvm.dbg.value(metadata, metadata, metadata) #2

attributes #0 = { nounwind uwtable "no-frame-pointer-elim"="false" }
attributes #1 = { nounwind }
attributes #2 = { nounwind readnone speculatable }

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}

!0 = distinct !DICompileUnit(language: DW_LANG_C99, file: !1, producer: "clang version 9.0.0", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug, enums: !2, nameTableKind: None)
!1 = !DIFile(filename: "bad.c", directory: "/tmp")
!2 = !{}
!3 = !{i32 2, !"Dwarf Version", i32 4}
!4 = !{i32 2, !"Debug Info Version", i32 3}
!10 = distinct !DISubprogram(name: "leaf", scope: !1, file: !1, line: 5, type: !11, scopeLine: 5, flags: DIFlagPrototyped, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !12)
!11 = !DISubroutineType(types: !2)
!12 = !{!13}
!13 = !DILocalVariable(name: "A", arg: 1, scope: !10, file: !1, line: 5, type: !14)
!14 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: !15, size: 64)
!15 = !DIBasicType(name: "float", size: 32, encoding: DW_ATE_float)
!20 = !DILocation(line: 9, column: 3, scope: !10)
!21 = !DILocation(line: 0, scope: !10)
!22 = !DILocation(line: 6, column: 3, scope: !10)
!23 = !DILocation(line: 7, column: 3, scope: !10)
!24 = !DILocation(line: 10, column: 1, scope: !10)
!30 = distinct !DISubprogram(name: "root", scope: !1, file: !1, line: 12, type: !11, scopeLine: 12, flags: DIFlagPrototyped, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !2)
!31 = !DILocation(line: 13, column: 16, scope: !30)
!32 = !DILocalVariable(name: "node", scope: !30, file: !1, line: 13, type: !14)
!33 = !DILocation(line: 0, scope: !30)
!34 = !DILocation(line: 14, column: 3, scope: !30)
!35 = !DILocation(line: 16, column: 1, scope: !30)
"""


def test_a_misuse_in_llvm_9_text_with_debug_info_names_its_c_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ll"
    bad.write_text(WITH_DEBUG_INFO)
    # (the C file and line the debug information records, and the .ll it was read from)
    with fails(c.HPVMCError, f"bad.c:9 (in {bad}): __hpvm__return(2, ...) gives 1 value(s)"):
        c.compile(bad)


def test_node_names_come_from_llvm_9_debug_info(tmp_path: Path) -> None:
    fixed = tmp_path / "fixed.ll"
    fixed.write_text(WITH_DEBUG_INFO.replace("@__hpvm__return(i32 2,", "@__hpvm__return(i32 1,"))
    text = print_program(c.compile(fixed).roots[0], bodies=False)
    assert "%node = node @leaf\n" in text  # (the C variable, from llvm.dbg.value's record)


def test_a_missing_ll_file_is_an_error_naming_it(tmp_path: Path) -> None:
    with fails(c.HPVMCError, f"{tmp_path / 'nope.ll'}: no such file"):
        c.compile(tmp_path / "nope.ll")


def test_an_ll_file_the_upgrade_cannot_read_is_an_error_at_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ll"
    bad.write_text(VECADD.read_text().replace("%add = fadd float %0, %1", "%add = fadd float %0 * %1"))
    line = 1 + next(k for k, s in enumerate(bad.read_text().splitlines()) if "%add = fadd" in s)
    with fails(c.HPVMCError, f"{bad}:{line} (%add = fadd float %0 * %1)", "not valid LLVM IR"):
        c.compile(bad)


def test_hpvm_ir_after_genhpvm_is_refused_with_where_to_take_it(tmp_path: Path) -> None:
    after = Path(__file__).parents[1] / "llvm" / "hpvm9" / "saxpy_two_level.ll"
    with fails(c.HPVMCError, "no dataflow graph", "HPVM IR after GenHPVM", "hpvm.llvm.from_hpvm_ir"):
        c.compile(after)
