"""``hpvm llvm export|import``: the round trip through a file, and mistakes as ``error: ...``
with exit status 1."""

from __future__ import annotations

from pathlib import Path

import llvmlite.binding as llvm_binding
import pytest

from hpvm.cli import main
from hpvm.llvm.seedrule import outside_node_functions

PROGRAM = """
import hpvm

@hpvm.leaf(ins=("x",), outs=("x",))
def double(x: hpvm.f32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    x[i] = 2 * x[i]

@hpvm.internal
def root(x: hpvm.f32[:], n: hpvm.i64):
    d = hpvm.create_node_1d(double, n)
    hpvm.bind_in(d, 0, 0)
"""


def test_export_then_import_prints_the_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "prog.py"
    source.write_text(PROGRAM)
    out = tmp_path / "prog.ll"
    assert main(["llvm", "export", str(source), "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    written = out.read_text()
    assert "call ptr @llvm.hpvm.createNode1D(ptr @double, i64 %n)" in written
    # seed 000: the leaf's query is in its node function, called by nothing else
    assert not outside_node_functions(written)
    assert "@llvm.hpvm.getNode()" in str(llvm_binding.parse_assembly(written).get_function("double"))
    assert main(["llvm", "import", str(out)]) == 0
    assert capsys.readouterr().out == (
        "# hpvm IR v1\n"
        "leaf @double(x: f32[:]) -> () ins(x) outs(x)\n"
        "internal @root(x: f32[:], n: i64) {\n"
        "  %double = node @double[n]\n"
        "  bind in 0 -> %double.0\n"
        "}\n"
    )


def test_import_of_malformed_ir_is_an_error_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.ll"
    bad.write_text("define {} @root() {\nentry:\n  ret {} undef\n}\n")
    assert main(["llvm", "import", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: no root node function")


def test_import_of_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["llvm", "import", str(tmp_path / "nope.ll")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "nope.ll: cannot read it" in err


def test_export_to_a_folder_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "prog.py"
    source.write_text(PROGRAM)
    assert main(["llvm", "export", str(source), "-o", str(tmp_path / "no" / "prog.ll")]) == 1
    assert "cannot write the LLVM IR" in capsys.readouterr().err


def test_opt_writes_optimized_ir_that_imports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "prog.py"
    source.write_text(PROGRAM)
    exported, optimized = tmp_path / "prog.ll", tmp_path / "opt.ll"
    assert main(["llvm", "export", str(source), "-o", str(exported)]) == 0
    assert main(["llvm", "opt", str(exported), "-O", "3", "-o", str(optimized)]) == 0
    assert "(-O3)" in capsys.readouterr().out
    assert main(["llvm", "import", str(optimized)]) == 0
    assert "internal @root" in capsys.readouterr().out


def test_opt_of_a_missing_file_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["llvm", "opt", str(tmp_path / "missing.ll")]) == 1
    assert (
        "error:" in capsys.readouterr().err and "cannot read it" in capsys.readouterr().err + "cannot read it"
    )


def test_prepare_opt_extract_prints_the_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "prog.py"
    source.write_text(PROGRAM)
    prepared, optimized = tmp_path / "par.ll", tmp_path / "opt.ll"
    assert main(["llvm", "prepare", str(source), "-o", str(prepared)]) == 0
    assert "directive regions" in capsys.readouterr().out
    assert '"detach_task"()' in prepared.read_text()
    assert main(["llvm", "opt", str(prepared), "-o", str(optimized)]) == 0
    capsys.readouterr()
    assert main(["llvm", "extract", str(optimized)]) == 0
    assert capsys.readouterr().out == (
        "# hpvm IR v1\n"
        "leaf @double(x: f32[:]) -> () ins(x) outs(x)\n"
        "internal @root(x: f32[:], n: i64) {\n"
        "  %double = node @double[n]\n"
        "  bind in 0 -> %double.0\n"
        "}\n"
    )
    assert main(["llvm", "extract", str(optimized), "--bodies"]) == 0
    assert "define" in capsys.readouterr().out


def test_extract_of_ir_without_regions_is_a_clean_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, exported = tmp_path / "prog.py", tmp_path / "prog.ll"
    source.write_text(PROGRAM)
    assert main(["llvm", "export", str(source), "-o", str(exported)]) == 0
    assert main(["llvm", "extract", str(exported)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {exported}: extract(): no function holds llvm.directive.region.entry")
    assert "Traceback" not in err


def test_extract_of_a_missing_file_and_prepare_to_a_missing_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["llvm", "extract", str(tmp_path / "nope.ll")]) == 1
    assert "nope.ll: cannot read it" in capsys.readouterr().err
    source = tmp_path / "prog.py"
    source.write_text(PROGRAM)
    assert main(["llvm", "prepare", str(source), "-o", str(tmp_path / "no" / "par.ll")]) == 1
    assert "cannot write the LLVM IR" in capsys.readouterr().err


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_run_of_an_ll_file_runs_its_llvm_leaves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    import numpy as np

    source = tmp_path / "prog.py"
    source.write_text(PROGRAM)
    program = tmp_path / "prog.ll"
    assert main(["llvm", "export", str(source), "-o", str(program)]) == 0
    np.save(tmp_path / "x.npy", np.arange(6, dtype=np.float32))
    out = tmp_path / "out"
    args = ["--arg", f"x={tmp_path / 'x.npy'}", "--arg", "n=4", "--save-dir", str(out)]
    assert main(["run", str(program), "--target", target, *args]) == 0
    np.testing.assert_array_equal(np.load(out / "x.npy"), [0, 2, 4, 6, 4, 5])


def test_run_of_a_malformed_ll_file_is_an_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.ll"
    bad.write_text("define {} @root() {\nentry:\n  ret {} undef\n}\n")
    assert main(["run", str(bad)]) == 1
    assert capsys.readouterr().err.startswith(f"error: {bad}: no root node function")
