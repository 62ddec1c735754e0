"""The ``hpvm`` command line: run, show, verify, --version, and its error paths."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import hpvm
from cli_program import PROGRAM, run_args
from hpvm.cli import main


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    return path


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert hpvm.__version__ in capsys.readouterr().out


def test_verify_python_file(program: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(program)]) == 0
    out = capsys.readouterr().out
    assert "OK" in out and "'root'" in out


def test_verify_reports_problems_with_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(PROGRAM.replace("    hpvm.bind_in(s, 2, 2)\n", ""))
    assert main(["verify", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "input 2 ('k') of node 'scale'" in err and f"{bad}:" in err


def test_run_with_args_and_save(program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = np.arange(6, dtype=np.float32)
    args = run_args(tmp_path, a, "2.5")
    code = main(["run", str(program), "--target", "interp", *args, "--save-dir", str(tmp_path / "out")])
    assert code == 0
    assert "output 0: 15.0" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "b.npy"), a * 2.5)


def test_run_missing_arg_names_it(program: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(program), "--target", "interp", "--arg", "k=1.0"]) == 1
    err = capsys.readouterr().err
    assert "missing: a, b, n" in err


def test_run_malformed_arg(program: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(program), "--arg", "k"]) == 1
    assert "NAME=VALUE" in capsys.readouterr().err


def test_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "/nonexistent/prog.hpvm"]) == 1
    assert "no such file" in capsys.readouterr().err


def test_unknown_root(program: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(program), "--root", "nope"]) == 1
    assert "no internal node function named 'nope'" in capsys.readouterr().err


def test_show_dot_to_stdout(program: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(program)]) == 0
    out = capsys.readouterr().out
    assert out.lstrip().startswith("digraph") and "scale" in out


def test_show_svg_without_graphviz(program: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.svg"
    assert main(["show", str(program), "-o", str(out), "--engine", "python"]) == 0
    assert out.read_text().lstrip().startswith(("<?xml", "<svg"))


def test_console_script_entry_point(program: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hpvm.cli", "verify", str(program)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "OK" in done.stdout


def test_run_and_verify_a_saved_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The virtual-ISA role: a saved .hpvm file (graph + leaf sources) runs without its module."""
    import importlib.util

    from hpvm.ir.program_file import save_program

    source = tmp_path / "prog_for_save.py"
    source.write_text(PROGRAM)
    spec = importlib.util.spec_from_file_location("prog_for_save", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    saved = tmp_path / "prog.hpvm"
    save_program(module.root, saved)
    source.unlink()  # the saved file must stand alone

    assert main(["verify", str(saved)]) == 0
    a = np.arange(4, dtype=np.float32)
    args = run_args(tmp_path, a, "3")
    assert main(["run", str(saved), "--target", "interp", *args, "--save-dir", str(tmp_path / "o")]) == 0
    assert "output 0: 12.0" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "b.npy"), a * 3)


def test_run_timings_report_compile_and_run_separately(
    program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = run_args(tmp_path, np.arange(4, dtype=np.float32), "2")
    assert main(["run", str(program), "--target", "cpu", *args, "--timings"]) == 0
    captured = capsys.readouterr()
    assert "output 0: 8.0" in captured.out
    assert re.search(r"load \d+\.\d+ s, compile \d+\.\d+ s, run \d+\.\d+ s", captured.err)


def test_show_text_prints_the_whole_program(program: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hpvm.ir.parser import parse_program
    from hpvm.ir.printer import print_program

    assert main(["show", "--text", str(program)]) == 0
    text = capsys.readouterr().out
    assert "leaf @scale(a: f32[:], b: f32[:], k: f32) -> () ins(a) outs(b) python {" in text
    assert "  |     b[i] = a[i] * k" in text
    assert print_program(parse_program(text), bodies=True) == text  # the text alone is the program


def test_show_lowered_prints_what_a_back_end_compiles(
    program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("numba")
    assert main(["show", "--text", "--lowered", "cpu", str(program)]) == 0
    text = capsys.readouterr().out
    assert "context(__hpvm_ctx) {" in text and "b[i] = a[i] * k" in text  # the clone, with its context
    assert "get_node_instance_id_x" not in text and "__hpvm_ctx[0]" in text
    assert main(["show", "--text", "--lowered", "no-such-backend", str(program)]) == 1
    assert "back end 'no-such-backend' is not available" in capsys.readouterr().err


NESTED_MIXED = """
import hpvm


@hpvm.leaf(hint=hpvm.GPU_TARGET, outs=("a",))
def on_gpu(a: hpvm.f32[:]):
    a[hpvm.get_node_instance_id_x(hpvm.get_node())] += 1


@hpvm.leaf(outs=("a",))
def on_cpu(a: hpvm.f32[:]):
    a[0] = a[0] * 2


@hpvm.internal
def wrapper(a: hpvm.f32[:], n: hpvm.i64):
    g = hpvm.create_node_1d(on_gpu, n)
    c = hpvm.create_node(on_cpu)
    hpvm.bind_in(g, 0, 0)
    hpvm.bind_in(c, 0, 0)


@hpvm.internal
def main(a: hpvm.f32[:], n: hpvm.i64):
    w = hpvm.create_node_1d(wrapper, 4)
    hpvm.bind_in(w, 0, 0)
    hpvm.bind_in(w, 1, 1)
"""


def test_show_lowered_auto_says_where_each_node_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hpvm.backends import backend_for_hint

    gpu = backend_for_hint(hpvm.GPU_TARGET)  # (this machine's first GPU back end)
    path = tmp_path / "nested.py"
    path.write_text(NESTED_MIXED)
    assert main(["show", "--text", "--lowered", "auto", str(path)]) == 0
    text = capsys.readouterr().out
    assert '%wrapper = node @wrapper[4] {target = "mixed"}' in text
    assert f'%on_gpu = node @on_gpu[n] {{target = "{gpu}"}}' in text
    assert '%on_cpu = node @on_cpu {target = "cpu"}' in text
    assert main(["show", "--lowered", "auto", str(path)]) == 0  # the picture says it too
    dot = capsys.readouterr().out
    assert "internal wrapper → host (mixed)" in dot and f"leaf on_gpu · gpu → {gpu}" in dot
    assert "leaf on_cpu → cpu" in dot


# ---------------------------------------------------------------------------------------
# Mistakes in the user's file or paths: `error: <message>` naming the file, exit status 1


@pytest.mark.parametrize("command", ["run", "verify", "show"])
def test_a_python_syntax_error_names_the_file_and_line(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.py"
    path.write_text("import hpvm\ndef f(:\n    pass\n")
    assert main([command, str(path)]) == 1  # was a SyntaxError traceback
    assert capsys.readouterr().err == f"error: {path}:2:7: invalid Python: invalid syntax\n"


def test_a_module_that_raises_on_import_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "boom.py"
    path.write_text('import hpvm\nraise RuntimeError("boom")\n')
    assert main(["run", str(path)]) == 1  # was a RuntimeError traceback
    assert capsys.readouterr().err == f"error: {path}:2: importing the file raised RuntimeError: boom\n"


def test_an_exception_in_a_module_it_imports_names_both_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "helper_mod.py").write_text('def f():\n    raise ValueError("inner")\n\n\nf()\n')
    path = tmp_path / "prog.py"
    path.write_text("import hpvm\nimport helper_mod\n")
    assert main(["verify", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:2 (raised in {tmp_path / 'helper_mod.py'}:2): ")
    assert "importing the file raised ValueError: inner" in err


def test_a_directory_is_not_a_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("dir", "dir.hpvm"):
        (tmp_path / name).mkdir()
        assert main(["run", str(tmp_path / name)]) == 1  # was IsADirectoryError
        assert f"error: {tmp_path / name}: is a directory" in capsys.readouterr().err


@pytest.mark.parametrize("output", ["x.svg", "x.dot", "x.png"])
def test_show_into_a_missing_folder(
    output: str, program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing" / output
    assert main(["show", str(program), "-o", str(target), "--engine", "python"]) == 1
    err = capsys.readouterr().err  # was FileNotFoundError from matplotlib or pathlib
    assert err == f"error: {target}: cannot be written: the folder {target.parent} does not exist\n"


def test_save_dir_that_is_a_file(program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    taken = tmp_path / "taken"
    taken.write_text("")
    args = run_args(tmp_path, np.arange(4, dtype=np.float32), "2.0")
    assert main(["run", str(program), *args, "--save-dir", str(taken), "--target", "interp"]) == 1
    assert f"error: {taken}: cannot be written" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("'text'", "is not a number"),
        ("[1, 2]", "is not a number"),
        ("99999999999999999999999", "does not fit the input's type i64"),
        ("True", "is not a number"),
        ("2.5", "is not an integer, and 'n' is i64"),
    ],
)
def test_bad_scalar_args(
    value: str, words: str, program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = run_args(tmp_path, np.arange(4, dtype=np.float32), "2.0")
    args[args.index("n=4")] = f"n={value}"
    assert main(["run", str(program), *args]) == 1
    err = capsys.readouterr().err  # were raw ValueError, OverflowError, a silent True -> 1
    assert err.startswith("error: --arg n: ") and words in err


def test_an_array_arg_that_is_not_an_npy_file(
    program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = run_args(tmp_path, np.arange(4, dtype=np.float32), "2.0")
    (tmp_path / "a.npy").write_bytes(b"not numpy")
    assert main(["run", str(program), *args]) == 1  # was ValueError from numpy
    assert f"error: --arg a: cannot read {tmp_path / 'a.npy'}" in capsys.readouterr().err


def test_a_host_function_that_raises_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    from hpvm.ir.program_file import save_program

    src = tmp_path / "prog.py"
    src.write_text(PROGRAM)
    spec = importlib.util.spec_from_file_location("cli_prog_host", src)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = tmp_path / "prog.hpvm"
    save_program(module.root, path, host='def main(root, target):\n    raise KeyError("no data")\n')
    assert main(["run", str(path)]) == 1
    line = path.read_text().split("\n").index('    raise KeyError("no data")') + 1
    assert capsys.readouterr().err == (
        f"error: {path}:{line}: the program's host function raised KeyError: 'no data'\n"
    )


def test_verify_counts_in_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "one.py"
    path.write_text(
        "import hpvm\n\n@hpvm.leaf()\ndef f(n: hpvm.i64):\n    pass\n\n"
        "@hpvm.internal\ndef r(n: hpvm.i64):\n    hpvm.bind_in(hpvm.create_node(f), 0, 0)\n"
    )
    assert main(["verify", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: OK — root 'r', 2 node functions, 1 node\n"  # was "1 nodes"


# ---------------------------------------------------------------------------------------
# Roots a module builds: program objects with a .root


PROGRAM_OBJECT = textwrap.dedent(
    """
    import hpvm

    @hpvm.leaf()
    def total(n: hpvm.i64) -> hpvm.i64:
        return n

    def make():
        @hpvm.internal()
        def made(n: hpvm.i64):
            t = hpvm.create_node(total)
            hpvm.bind_in(t, 0, 0)
            hpvm.bind_out(t, 0, 0)

        return made

    class Program:  # what hpvm.tensor.from_torch returns, reduced to what the command reads
        def __init__(self, root):
            self.root = root

    program = Program(make())
    """
)


def test_show_finds_a_program_object_at_the_top_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "made.py"
    path.write_text(PROGRAM_OBJECT)
    assert main(["verify", str(path)]) == 0  # was "no candidate root graphs (none)"
    assert "OK — root 'made'" in capsys.readouterr().out
    assert main(["verify", str(path), "--root", "program"]) == 0


def test_a_module_that_makes_its_root_inside_a_function_is_told_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "later.py"
    path.write_text(
        "import hpvm.tensor\n\n\ndef run(model, x):\n    return hpvm.tensor.from_torch(model, x)\n"
    )
    assert main(["show", str(path)]) == 1  # was "no candidate root graphs (none)"
    err = capsys.readouterr().err
    assert f"error: {path}: no root graph at its top level" in err
    assert "a graph made inside a function only exists once it runs" in err
    assert "program.save('prog.hpvm')" in err
