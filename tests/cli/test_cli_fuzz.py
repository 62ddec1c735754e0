"""The CLI never ends in a traceback: malformed files of every kind given to every
subcommand end in ``error: ...`` and a nonzero status (never "internal error", the safety
net for hpvm's own bugs); a file given to the wrong subcommand says which one reads it;
text that ``hbir lower``, ``llvm import`` and ``c lower`` print loads back as printed."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpvm.cli import main

ROOT = Path(__file__).parents[2]

MALFORMED = {
    "binary.bin": bytes(range(256)) * 4,
    "latin1.ll": "define void @caf\xe9() {\n".encode("latin-1"),
    "empty.hpvm": b"",
    "nested.toml": b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",
    "garbage.ll": b"define @@@ {\n",
    "garbage.hbir": b"target { \x00\xff }",
    "garbage.hpvm": b"%%hpvm\n@@@\n",
    "raises.py": b"raise RuntimeError('boom')\n",
}


def commands(f: str) -> list[list[str]]:
    return [
        ["run", f], ["show", f], ["show", f, "--text"], ["verify", f],
        ["hbir", "check", f], ["hbir", "run", f], ["hbir", "show", f, "-o", "x.svg"], ["hbir", "lower", f],
        ["llvm", "import", f], ["llvm", "opt", f], ["llvm", "extract", f], ["llvm", "export", f],
        ["llvm", "prepare", f], ["svm", "machine", f], ["svm", "show", f, "-o", "x.svg"],
        ["svm", "map", f, "--machine", f],
    ]  # fmt: skip


def cli(args: list[str]) -> tuple[int, str, str]:
    """``hpvm ARGS`` in this process: its status, stdout and stderr; an exception escaping
    ``main`` fails the test (that is the traceback a user would see)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(args)
        except SystemExit as e:  # argparse's own usage errors
            status = int(e.code or 0)
    return status, out.getvalue(), err.getvalue()


def assert_clean_failure(args: list[str]) -> None:
    """It failed with hpvm's message, or (an empty file is an empty LLVM module) succeeded."""
    status, _, err = cli(args)
    assert "Traceback" not in err and "internal error" not in err, (args, err)
    if status != 0:
        assert status in (1, 2) and err.lstrip().startswith(("error:", "usage:")), (args, status, err)


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_files_to_every_subcommand_end_in_an_error(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_bytes(MALFORMED[name])
    for args in commands(name):
        assert_clean_failure(args)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300), suffix=st.sampled_from([".hpvm", ".ll", ".hbir", ".toml", ".txt"]))
def test_random_bytes_never_end_in_a_traceback(tmp_path, data, suffix):
    path = tmp_path / f"random{suffix}"
    path.write_bytes(data)
    for args in (["verify", str(path)], ["llvm", "import", str(path)], ["hbir", "check", str(path)],
                 ["svm", "machine", str(path)]):  # fmt: skip
        status, _, err = cli(args)
        assert "Traceback" not in err and "internal error" not in err, (args, err)
        assert status == 0 or err.lstrip().startswith("error:"), (args, err)


@pytest.mark.parametrize(
    ("file", "says"),
    [
        ("examples/hbir/vadd_group.hbir", "an HBIR program: use hpvm hbir run"),
        ("examples/c/vector_add.c", "an HPVM-C program: use hpvm c run"),
        ("examples/c/vector_add.cpp", "an HPVM-C program (C++): use hpvm c run"),
        ("src/hpvm/svm/machines/pca_tiled.toml", "a machine description: use hpvm svm machine"),
    ],
)
def test_a_file_given_to_the_wrong_subcommand_names_the_right_one(file, says):
    for command in ("run", "verify", "show"):
        status, _, err = cli([command, str(ROOT / file)])
        assert status == 1 and says in err, err


def test_a_picture_in_an_unknown_format_is_refused_before_drawing(tmp_path):
    status, _, err = cli(
        ["hbir", "show", str(ROOT / "examples/hbir/vadd_group.hbir"), "-o", str(tmp_path / "x.bogus")]
    )
    assert status == 1 and "cannot draw a picture in that format; name a .svg, .png or .pdf file" in err


def test_an_svm_program_that_raises_is_an_error_at_its_line(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text("from hpvm import svm\n\nsvm.init()\nraise ValueError('no stream')\n")
    status, _, err = cli(["svm", "show", str(program), "-o", str(tmp_path / "p.svg")])
    assert status == 1 and f"{program}:4: the SVM program raised ValueError: no stream" in err


def test_deeply_nested_toml_is_an_svm_error(tmp_path):
    path = tmp_path / "m.toml"
    path.write_bytes(MALFORMED["nested.toml"])
    status, _, err = cli(["svm", "machine", str(path)])
    assert status == 1 and "nested too deeply" in err


@pytest.mark.parametrize(
    "printer",
    [
        ["hbir", "lower", str(ROOT / "examples/hbir/vadd_group.hbir")],
        ["llvm", "import", str(ROOT / "tests/llvm/hpvm9/saxpy_two_level.ll")],
        ["llvm", "import", "--bodies", str(ROOT / "tests/llvm/hpvm9/saxpy_two_level.ll")],
    ],
)
def test_printed_text_loads_back(tmp_path, printer):
    status, text, err = cli(printer)
    assert status == 0, err
    path = tmp_path / "printed.txt"
    path.write_text(text)
    status, out, err = cli(["verify", str(path)])
    assert status == 0 and "OK" in out, err
    status, again, err = cli(["show", str(path), "--text"])
    assert status == 0, err


def test_a_bug_of_hpvms_is_one_line_not_a_traceback(monkeypatch, tmp_path):
    import hpvm.cli as cli_module

    def broken(ns):  # type: ignore[no-untyped-def]
        raise KeyError("oops")

    monkeypatch.setattr(cli_module, "cmd_verify", broken)
    monkeypatch.delenv("HPVM_DEBUG", raising=False)
    path = tmp_path / "p.hpvm"
    path.write_text("")
    status, _, err = cli(["verify", str(path)])
    assert status == 2 and err.startswith("error: internal error in hpvm (KeyError: 'oops')")
    assert "HPVM_DEBUG=1 shows the traceback" in err
