"""HPVM IR as HPVM's GenHPVM writes it (LLVM 9 text, ``tests/llvm/hpvm9/*.ll``, hpvm's own
programs in that style) imports, runs on ``cpu`` and ``interp`` with the right results,
exports again (``to_hpvm_ir``: the leaves' named, packed return structs kept) and goes
through the command line. Named struct return types are node outputs like literal ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import llvm
from hpvm.cli import main
from hpvm.ir.printer import print_program
from markers import fails
from running import run_tracked

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]

HERE = Path(__file__).parent / "hpvm9"
SAXPY = HERE / "saxpy_two_level.ll"
SQUARE_SUM = HERE / "square_sum_three_level.ll"
TARGETS = ("cpu", "interp")

SAXPY_GRAPH = """\
# hpvm IR v1
leaf @saxpy_cloned(X: u8[:], Y: u8[:], Z: u8[:], a: f32) -> (f32, i64) hint(cpu) ins(X, Y) outs(Z)
internal @PipeRoot_cloned(X: u8[:], Y: u8[:], Z: u8[:], a: f32, n: i64) hint(cpu) ins(X, Y) outs(Z) {  # -> (f32, i64)
  %"saxpy_cloned.node" = node @saxpy_cloned[n]
  bind in 0 -> %"saxpy_cloned.node".0
  bind in 1 -> %"saxpy_cloned.node".1
  bind in 2 -> %"saxpy_cloned.node".2
  bind in 3 -> %"saxpy_cloned.node".3
  bind out %"saxpy_cloned.node".0 -> 0
  bind out %"saxpy_cloned.node".1 -> 1
}
"""

SQUARE_SUM_GRAPH = """\
# hpvm IR v1
leaf @square_cloned(A: u8[:], B: u8[:], cols: i64) -> (u8[:]) hint(cpu) ins(A) outs(B)
internal @Inner_cloned(A: u8[:], B: u8[:], rows: i64, cols: i64) hint(cpu) ins(A, B) outs(B) {  # -> (u8[:])
  %"square_cloned.node" = node @square_cloned[cols, rows]
  bind in 0 -> %"square_cloned.node".0
  bind in 1 -> %"square_cloned.node".1
  bind in 3 -> %"square_cloned.node".2
  bind out %"square_cloned.node".0 -> 0
}
leaf @sum_cloned(B: u8[:], C: u8[:]) -> () hint(cpu) ins(B) outs(C)
internal @PipeRoot_cloned(A: u8[:], B: u8[:], C: u8[:], rows: i64, cols: i64) hint(cpu) ins(A, B) outs(B, C) {
  %"Inner_cloned.node" = node @Inner_cloned
  %"sum_cloned.node" = node @sum_cloned
  edge %"Inner_cloned.node".0 -> %"sum_cloned.node".0 all_to_all
  bind in 0 -> %"Inner_cloned.node".0
  bind in 1 -> %"Inner_cloned.node".1
  bind in 3 -> %"Inner_cloned.node".2
  bind in 4 -> %"Inner_cloned.node".3
  bind in 2 -> %"sum_cloned.node".1
}
"""


@pytest.fixture(scope="module")
def roots() -> dict[str, object]:
    """Each program imported, exported then imported again (``.again``), and prepared,
    optimized at -O2 and extracted (``.par``: seed 004's LLVMPar round)."""
    made: dict[str, object] = {}
    for path in (SAXPY, SQUARE_SUM):
        root = llvm.from_hpvm_ir(path.read_text(), file=str(path))
        made[path.stem] = root
        made[path.stem + ".again"] = llvm.from_hpvm_ir(llvm.to_hpvm_ir(root))
        made[path.stem + ".par"] = llvm.extract(llvm.optimize(llvm.prepare(root), 2))
    return made


def test_the_two_level_program_imports_as_hpvm_wrote_it(roots) -> None:  # type: ignore[no-untyped-def]
    assert print_program(roots["saxpy_two_level"], bodies=False) == SAXPY_GRAPH


def test_the_three_level_program_imports_as_hpvm_wrote_it(roots) -> None:  # type: ignore[no-untyped-def]
    assert print_program(roots["square_sum_three_level"], bodies=False) == SQUARE_SUM_GRAPH


def test_node_functions_are_located_at_their_define_line(roots) -> None:  # type: ignore[no-untyped-def]
    root = roots["saxpy_two_level"]
    lines = SAXPY.read_text().splitlines()
    leaf = root.graph.nodes[0].function
    for f in (root, leaf):
        assert f.location.file == str(SAXPY)
        assert lines[f.location.line - 1].startswith("define") and f"@{f.name}(" in lines[f.location.line - 1]


def _saxpy(root, target: str) -> None:  # type: ignore[no-untyped-def]
    n = 8
    x = np.arange(4 * n, dtype=np.float32)
    y = np.full(4 * n, 0.5, dtype=np.float32)
    z = np.zeros(4 * n, dtype=np.float32)
    out = run_tracked(
        root, (x.view(np.uint8), y.view(np.uint8), z.view(np.uint8), np.float32(2.0), n), target
    )
    np.testing.assert_array_equal(z, 2 * x + y)
    # the last instance's outputs: its last element, and Z's size in bytes (a packed struct)
    assert out == (np.float32(2 * (4 * n - 1) + 0.5), 4 * 4 * n)


def _square_sum(root, target: str) -> None:  # type: ignore[no-untyped-def]
    rows, cols = 3, 5
    a = np.arange(1, rows * cols + 1, dtype=np.float32)
    b = np.zeros(rows * cols, dtype=np.float32)
    c = np.full(2, 7.0, dtype=np.float32)
    out = run_tracked(root, (a.view(np.uint8), b.view(np.uint8), c.view(np.uint8), rows, cols), target)
    assert out == ()
    np.testing.assert_array_equal(b, a * a)
    np.testing.assert_array_equal(c, [np.sum(a * a), 0.0])  # (memset through a bitcast, then the sum)


FORMS = pytest.mark.parametrize(
    "form", ["", ".again", ".par"], ids=["imported", "exported-and-imported", "prepared-optimized-extracted"]
)


@FORMS
@pytest.mark.parametrize("target", TARGETS)
def test_the_two_level_program_runs(roots, target: str, form: str) -> None:  # type: ignore[no-untyped-def]
    _saxpy(roots["saxpy_two_level" + form], target)


@FORMS
@pytest.mark.parametrize("target", TARGETS)
def test_the_three_level_program_runs(roots, target: str, form: str) -> None:  # type: ignore[no-untyped-def]
    _square_sum(roots["square_sum_three_level" + form], target)


def test_export_and_llvmpar_keep_the_graph_and_call_a_packed_body_with_its_own_struct(roots) -> None:  # type: ignore[no-untyped-def]
    for name in ("saxpy_two_level", "square_sum_three_level"):
        for form in (".again", ".par"):
            assert print_program(roots[name + form], bodies=False) == print_program(roots[name], bodies=False)
    text = llvm.to_hpvm_ir(roots["saxpy_two_level"])
    assert "= type <{ float, i64 }>" in text  # (the leaf's body returns HPVM's packed struct)
    assert "define { float, i64 } @saxpy_cloned(" in text  # (its node function, the ABI's literal one)


# -- named struct return types, directly -----------------------------------------------

NAMED = """%emptyStruct = type {}
%struct.out.leaf = type <{ i32, i64 }>
%struct.out.root = type { i32, i64 }

define %struct.out.leaf @leaf(i32 %k) {
  %r = insertvalue %struct.out.leaf undef, i32 %k, 0
  %s = insertvalue %struct.out.leaf %r, i64 7, 1
  ret %struct.out.leaf %s
}
define %emptyStruct @sink(i32 %k) {
  ret %emptyStruct undef
}
define %struct.out.root @root(i32 %k) {
  %l = call ptr @llvm.hpvm.createNode(ptr @leaf)
  %s = call ptr @llvm.hpvm.createNode(ptr @sink)
  call void @llvm.hpvm.bind.input(ptr %l, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %s, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.output(ptr %l, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.output(ptr %l, i32 1, i32 1, i1 false)
  ret %struct.out.root undef
}
declare ptr @llvm.hpvm.createNode(ptr)
declare void @llvm.hpvm.bind.input(ptr, i32, i32, i1)
declare void @llvm.hpvm.bind.output(ptr, i32, i32, i1)
"""


@pytest.mark.parametrize("target", TARGETS)
def test_named_packed_and_empty_struct_returns_are_outputs(target: str) -> None:
    root = llvm.from_hpvm_ir(NAMED)
    literal = NAMED.replace("%struct.out.root = type { i32, i64 }\n", "").replace(
        "%struct.out.root", "{ i32, i64 }"
    )
    assert root.out_types == llvm.from_hpvm_ir(literal).out_types
    leaf = root.graph.nodes[0].function
    assert [str(t) for t in leaf.out_types] == ["i32", "i64"]
    assert list(root.graph.nodes[1].function.out_types) == []
    assert hpvm.wait(hpvm.launch(root, (np.int32(5),), target=target)) == (5, 7)
    again = llvm.from_hpvm_ir(llvm.to_hpvm_ir(root))
    assert hpvm.wait(hpvm.launch(again, (np.int32(6),), target=target)) == (6, 7)


def test_a_struct_field_that_is_a_struct_is_an_error() -> None:
    text = NAMED.replace("%struct.out.root = type { i32, i64 }", "%struct.out.root = type { i32, { i64 } }")
    with fails(llvm.LLVMImportError, "@root: the fields of its return type %struct.out.root", "{ i64 }"):
        llvm.from_hpvm_ir(text)


def test_a_node_function_returning_no_struct_says_so() -> None:
    text = NAMED.replace(
        "define %emptyStruct @sink(i32 %k) {\n  ret %emptyStruct undef",
        "define i32 @sink(i32 %k) {\n  ret i32 0",
    )
    with fails(llvm.LLVMImportError, "@sink: a node function returns a struct", "not i32"):
        llvm.from_hpvm_ir(text)


def test_hpvm_c_before_genhpvm_is_refused_with_where_to_take_it() -> None:
    text = """define void @root(i32* %p) {
  %n = tail call i8* (i32, ...) @__hpvm__createNodeND(i32 0, void (i32*)* @root)
  ret void
}
declare i8* @__hpvm__createNodeND(i32, ...)
"""
    with fails(llvm.LLVMImportError, "no root node function", "HPVM-C before GenHPVM", "hpvm.c.compile"):
        llvm.from_hpvm_ir(text)


# -- the command line ----------------------------------------------------------------------


def test_llvm_import_reads_llvm_9_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["llvm", "import", str(SAXPY)]) == 0
    assert capsys.readouterr().out == SAXPY_GRAPH


@pytest.mark.parametrize("target", TARGETS)
def test_run_of_an_llvm_9_file(tmp_path: Path, target: str) -> None:
    n = 4
    x = np.arange(4 * n, dtype=np.float32)
    for name, array in (("X", x), ("Y", np.ones(4 * n, np.float32)), ("Z", np.zeros(4 * n, np.float32))):
        np.save(tmp_path / f"{name}.npy", array.view(np.uint8))
    args = [f"--arg={k}={tmp_path / k}.npy" for k in "XYZ"] + ["--arg", "a=3.0", "--arg", f"n={n}"]
    assert main(["run", str(SAXPY), "--target", target, *args, "--save-dir", str(tmp_path / "out")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "Z.npy").view(np.float32), 3 * x + 1)


def test_an_upgrade_error_names_the_file_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.ll"
    bad.write_text("define void @f() {\n  ret void\n}\n@g = global i32 7 * 3\n")
    assert main(["llvm", "import", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}:4 (@g = global i32 7 * 3): ") and err.count(str(bad)) == 1


BARRIER = """%struct.out.b = type <{ i32, i64 }>
%struct.out.root = type <{ i32, i64 }>

define %struct.out.b @b(i32* in out %p, i64 %bytes) {
entry:
  %n = call i8* @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(i8* %n)
  %c = call i64 @llvm.hpvm.getNumNodeInstances.x(i8* %n)
  %q = getelementptr inbounds i32, i32* %p, i64 %i
  store i32 1, i32* %q, align 4
  call void @llvm.hpvm.barrier()
  br label %loop
loop:
  %k = phi i64 [ 0, %entry ], [ %k.next, %loop ]
  %s = phi i32 [ 0, %entry ], [ %s.next, %loop ]
  %pk = getelementptr inbounds i32, i32* %p, i64 %k
  %v = load i32, i32* %pk, align 4
  %s.next = add i32 %s, %v
  %k.next = add i64 %k, 1
  %more = icmp ult i64 %k.next, %c
  br i1 %more, label %loop, label %done
done:
  %j = add i64 %i, 4
  %pj = getelementptr inbounds i32, i32* %p, i64 %j
  store i32 %s.next, i32* %pj, align 4
  %r0 = insertvalue %struct.out.b undef, i32 %s.next, 0
  %r1 = insertvalue %struct.out.b %r0, i64 %bytes, 1
  ret %struct.out.b %r1
}

define %struct.out.root @root(i32* in out %p, i64 %bytes) {
  %b = call i8* @llvm.hpvm.createNode1D(i8* bitcast (%struct.out.b (i32*, i64)* @b to i8*), i64 4)
  call void @llvm.hpvm.bind.input(i8* %b, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(i8* %b, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.output(i8* %b, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.output(i8* %b, i32 1, i32 1, i1 false)
  ret %struct.out.root undef
}

declare i8* @llvm.hpvm.getNode()
declare i64 @llvm.hpvm.getNodeInstanceID.x(i8*)
declare i64 @llvm.hpvm.getNumNodeInstances.x(i8*)
declare void @llvm.hpvm.barrier()
declare i8* @llvm.hpvm.createNode1D(i8*, i64)
declare void @llvm.hpvm.bind.input(i8*, i32, i32, i1)
declare void @llvm.hpvm.bind.output(i8*, i32, i32, i1)
"""


@pytest.mark.parametrize("target", TARGETS)
def test_a_barrier_leaf_returning_a_packed_named_struct_runs_as_coroutines(target: str) -> None:
    root = llvm.from_hpvm_ir(BARRIER)
    p = np.zeros(8, dtype=np.int32)
    # every instance stores 1, meets the barrier, then sums the four stores into p[4 + i]
    assert run_tracked(root, (p.view(np.uint8),), target) == (4, 32)
    np.testing.assert_array_equal(p, [1, 1, 1, 1, 4, 4, 4, 4])  # (instance 0 too: the barrier held)
