"""``hpvm hbir check|run|show|lower FILE``: results, and every mistake as ``error: ...``
with exit status 1."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hpvm.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "hbir"
VADD = EXAMPLES / "vadd_one_tile.hbir"


def _inputs(tmp_path: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    a, b = np.arange(500), np.arange(500) * 7
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    return a, b, ["--in", f"A={tmp_path / 'a.npy'}", "--in", f"B={tmp_path / 'b.npy'}"]


def test_check_reports_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hbir", "check", str(EXAMPLES / "two_groups.hbir")]) == 0
    assert "OK — 2 groups of tiles, 2 arrays, 2 code blocks" in capsys.readouterr().out


def test_check_reports_every_problem_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.hbir"
    bad.write_text(VADD.read_text().replace("C[i] = A[i] + B[i];", "C[i] = A[i] + D[i] + q;"))
    assert main(["hbir", "check", str(bad)]) == 1
    err = capsys.readouterr().err
    line = next(i for i, t in enumerate(bad.read_text().splitlines(), 1) if "D[i]" in t)
    assert err.startswith("error: 2 problems") and f"bad.hbir:{line}:" in err and "'D' is not declared" in err


def test_check_of_malformed_text_is_a_located_parse_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.hbir"
    bad.write_text("target { tile t[2][2 }\n")
    assert main(["hbir", "check", str(bad)]) == 1
    assert capsys.readouterr().err.startswith(f"error: {bad}:1:22: unexpected '}}'")


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_run_with_inputs_and_save_dir(
    tmp_path: Path, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, args = _inputs(tmp_path)
    assert (
        main(["hbir", "run", str(VADD), *args, "--target", target, "--save-dir", str(tmp_path / "out")]) == 0
    )
    assert "C: int32[500]" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "C.npy"), a + b)


def test_run_prints_what_the_tiles_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = np.arange(1000)
    np.save(tmp_path / "a.npy", a)
    code = main(
        [
            "hbir",
            "run",
            str(EXAMPLES / "vadd_group.hbir"),
            "--in",
            f"A={tmp_path / 'a.npy'}",
            "--in",
            f"B={tmp_path / 'a.npy'}",
        ]
    )
    assert code == 0
    assert capsys.readouterr().out.startswith("done: 1\n")


def test_run_input_mistakes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, args = _inputs(tmp_path)
    assert main(["hbir", "run", str(VADD), *args[:2]]) == 1
    assert "input array 'B' (int[500]) is missing" in capsys.readouterr().err
    assert main(["hbir", "run", str(VADD), "--in", "A"]) == 1
    assert "write NAME=FILE.npy" in capsys.readouterr().err
    assert main(["hbir", "run", str(VADD), "--in", f"A={tmp_path / 'nope.npy'}"]) == 1
    assert "cannot be read as a .npy file" in capsys.readouterr().err


def test_lower_prints_the_hpvm_text_form(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hbir", "lower", str(EXAMPLES / "nested.hbir")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# hpvm IR v1") and "internal @grid_row_0" in out and 'generated "' in out


def test_show_draws_the_tile_map(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "map.svg"
    assert main(["hbir", "show", str(EXAMPLES / "two_groups.hbir"), "-o", str(out)]) == 0
    svg = out.read_text()
    assert "group tga" in svg and "group tgb" in svg and "tgb[1][3]" in svg


def test_show_into_a_missing_folder_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hbir", "show", str(VADD), "-o", str(tmp_path / "no" / "map.svg")]) == 1
    assert "cannot be written" in capsys.readouterr().err


def test_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hbir", "check", "/nonexistent/p.hbir"]) == 1
    assert capsys.readouterr().err.startswith("error: /nonexistent/p.hbir:1:1: cannot read the HBIR file")


def test_run_checked_reports_an_index_out_of_bounds_on_cpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--checked`` turns the cpu back end's checked mode on (docs/backends/cpu.md):
    the vector add's store one past ``C`` is an error naming the array, not a crash."""
    import hpvm.backends.cpu as cpu

    text = VADD.read_text()
    assert text.count("C[i] =") == 1
    bad = tmp_path / "vadd_off.hbir"
    bad.write_text(text.replace("C[i] =", "C[i + 1] ="))
    _, _, args = _inputs(tmp_path)
    try:
        assert main(["hbir", "run", str(bad), *args, "--target", "cpu", "--checked"]) == 1
    finally:
        assert cpu.configure(checked=False) == {"checked": True}
    err = capsys.readouterr().err
    assert "error: node " in err and "OutOfBounds" not in err  # (the message, not a traceback)
    assert "index 500 is out of bounds for axis 0 of 'C' with size 500" in err
