"""``hpvm verify`` and ``hpvm show`` (every form) look at a program file without running any of
its Python; ``hpvm run`` runs it (ir/moduletext.py, docs/text-format.md).

The program below writes a marker file from the module-level code of each piece of Python
it carries — a leaf's ``%%python`` section, a ``python`` body in the IR, a ``generated``
body (after its ``def``, as hpvm writes generated code), the host section — the line issue
22 reported (``import hpvm, os; open(...)``).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from hpvm.cli import main
from hpvm.ir.parser import parse_program

MARKERS = ("section", "body", "generated", "host")


def _program(tmp_path: Path) -> Path:
    def mark(name: str) -> str:
        return f'import hpvm, os; open({str(tmp_path / f"marker_{name}")!r}, "w").write("x")'

    text = textwrap.dedent(
        f"""\
        # hpvm program v1: each piece of Python writes a marker file when it runs
        %%hpvm
        # hpvm IR v1
        leaf @inc(x: f32[:]) -> () ins(x) outs(x)
        leaf @twice(y: f32[:]) -> () ins(y) outs(y) python {{
          | {mark("body")}
          |
          | def twice(y):
          |     i = hpvm.get_node_instance_id_x(hpvm.get_node())
          |     y[i] = y[i] * 2
        }}
        leaf @neg(z: f32[:]) -> () ins(z) outs(z) generated "neg.src" lines(1, 2, 3, 4) {{
          | def neg(z):
          |     z[hpvm.get_node_instance_id_x(hpvm.get_node())] *= -1
          |
          | {mark("generated")}
        }}
        internal @root(x: f32[:], y: f32[:], z: f32[:], n: i64) ins(x, y, z) outs(x, y, z) {{
          %inc = node @inc[n]
          %twice = node @twice[n]
          %neg = node @neg[n]
          bind in 0 -> %inc.0
          bind in 1 -> %twice.0
          bind in 2 -> %neg.0
        }}
        %%python leaf @inc
        {mark("section")}


        def inc(x):
            x[hpvm.get_node_instance_id_x(hpvm.get_node())] += 1
        %%python host
        {mark("host")}
        import numpy as np


        def main(root, target):
            a = [np.arange(3, dtype=np.float32) for _ in range(3)]
            for v in a:
                hpvm.track_memory(v)
            hpvm.wait(hpvm.launch(root, (*a, 3), target=target))
            print([hpvm.request_memory(v).tolist() for v in a])
        """
    )
    path = tmp_path / "marked.hpvm"
    path.write_text(text)
    return path


def _markers(tmp_path: Path) -> list[str]:
    return [name for name in MARKERS if (tmp_path / f"marker_{name}").exists()]


@pytest.mark.parametrize(
    "command",
    [
        ["verify"],
        ["show", "--text"],
        ["show", "-o", "{tmp}/x.svg", "--engine", "python"],
        ["show"],  # DOT on stdout
        ["show", "--fuse-tensors", "--text"],
    ],
    ids=["verify", "show-text", "show-svg", "show-dot", "show-fuse-tensors"],
)
def test_looking_runs_nothing(tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    path = _program(tmp_path)
    args = [a.format(tmp=tmp_path) for a in command]
    assert main([*args, str(path)]) == 0, capsys.readouterr().err
    assert _markers(tmp_path) == []
    if "--text" in command:  # the program as read, bodies included
        out = capsys.readouterr().out
        assert "marker_body" in out and "marker_section" in out and "marker_generated" in out


@pytest.mark.parametrize("form", [["--text"], []], ids=["text", "dot"])
def test_show_lowered_runs_nothing(
    tmp_path: Path, form: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("numba")
    path = _program(tmp_path)
    assert main(["show", "--lowered", "cpu", *form, str(path)]) == 0, capsys.readouterr().err
    assert _markers(tmp_path) == []
    if form:
        out = capsys.readouterr().out
        assert out.count("context(__hpvm_ctx) {") == 3 and "__hpvm_ctx[0]" in out  # three clones


def test_run_runs_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _program(tmp_path)
    assert main(["verify", str(path)]) == 0 and _markers(tmp_path) == []
    assert main(["run", str(path), "--target", "interp"]) == 0, capsys.readouterr().err
    assert _markers(tmp_path) == list(MARKERS)
    assert "[[1.0, 2.0, 3.0], [0.0, 2.0, 4.0], [-0.0, -1.0, -2.0]]" in capsys.readouterr().out


def test_run_with_args_runs_the_leaves_not_the_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _program(tmp_path)
    for name in "xyz":
        np.save(tmp_path / f"{name}.npy", np.ones(2, np.float32))
    args = [o for name in "xyz" for o in ("--arg", f"{name}={tmp_path / f'{name}.npy'}")]
    assert main(["run", str(path), "--target", "interp", *args, "--arg", "n=2"]) == 0, capsys.readouterr().err
    assert _markers(tmp_path) == ["section", "body", "generated"]


def test_a_section_that_raises_is_an_error_of_run_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _program(tmp_path)
    text = path.read_text().replace("def inc(x):", "LIMIT = 1 // 0\n\n\ndef inc(x):")
    path.write_text(text)
    assert main(["verify", str(path)]) == 0
    capsys.readouterr()
    assert main(["run", str(path), "--target", "interp"]) == 1
    line = text.split("\n").index("LIMIT = 1 // 0") + 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}:{line}:1: running the code of leaf @inc raised ZeroDivisionError")


def test_hbir_lower_output_parses_back_without_running(capsys: pytest.CaptureFixture[str]) -> None:
    """``hpvm hbir lower`` prints generated bodies; reading them back compiles, never runs."""
    examples = Path(__file__).resolve().parents[2] / "examples" / "hbir"
    assert main(["hbir", "lower", str(examples / "nested.hbir")]) == 0
    root = parse_program(capsys.readouterr().out, "nested.lowered")
    from hpvm.ir.graph import LeafFunction, functions

    leaves = [f for f in functions(root) if isinstance(f, LeafFunction)]
    assert leaves and all(leaf.pending_code is not None for leaf in leaves)
