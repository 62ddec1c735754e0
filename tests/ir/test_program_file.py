"""Saved programs (.hpvm files): the IR text plus each leaf's Python, loaded back as modules.

The program below uses what real leaves use: numpy, math, hpvm intrinsics, helper
functions that call helpers, int/float/str/tuple/array constants, and source text that
tries to break the file format (triple quotes, lines starting with %%, odd line breaks).
"""

from __future__ import annotations

import math
import tempfile
import threading
import traceback
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm import f32, i64
from hpvm.errors import CompileError, ParseError, VerificationError
from hpvm.ir.graph import InternalFunction, LeafFunction, functions, materialize
from hpvm.ir.leafinfo import analyze_leaf
from hpvm.ir.parser import parse_program
from hpvm.ir.printer import print_program
from hpvm.ir.program_file import LoadedProgram, leaf_module_source, load_program, save_program
from hpvm.ir.verify import verify
from markers import fails

SCALE = 2.5
OFFSET = 4
LABEL = 'he said """hi""" and \'bye\''
WEIGHTS = (1.0, 2.0, 0.5)
TABLE = np.array([1, 2, 3], dtype=np.int32)
EPS = np.float32(0.25)
LOCK = threading.Lock()


def _square(x):
    return x * x


def helper(x):
    """Uses another helper, a constant and a module."""
    return _square(x) * SCALE + math.sqrt(OFFSET)


@hpvm.leaf(ins=("a",), outs=("b",))
def transform(a: f32[:], b: f32[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = helper(a[i]) + WEIGHTS[i % 3] + TABLE[i % 3] + EPS


@hpvm.leaf(ins=("b",))
def total(b: f32[:], n: i64) -> f32:
    text = """a string with "quotes", a line that looks like a section:
%%python host
%%%and one with three percent signs
and odd breaks:     (U+2028, U+000C, U+001C)
"""
    return np.float32(np.sum(b[:n]) + len(text) - len(text) + len(LABEL) * 0)


def _make_total():
    @hpvm.leaf()
    def total(n: i64) -> i64:  # a second leaf named 'total'
        return n * 2

    return total


other_total = _make_total()


@hpvm.internal(ins=("a",), outs=("b",))
def root(a: f32[:], b: f32[:], n: i64) -> tuple[f32, i64]:
    t = hpvm.create_node_1d(transform, n)
    hpvm.bind_in(t, 0, 0)
    hpvm.bind_in(t, 1, 1)
    s = hpvm.create_node(total)
    hpvm.bind_in(s, 1, 0)
    hpvm.bind_in(s, 2, 1)
    o = hpvm.create_node(other_total)
    hpvm.bind_in(o, 2, 0)
    hpvm.bind_out(s, 0, 0)
    hpvm.bind_out(o, 0, 1)


def main(root, target):
    """The host: run the graph once on 8 elements."""
    a = np.arange(8, dtype=np.float32)
    b = np.zeros(8, dtype=np.float32)
    hpvm.track_memory(a)
    hpvm.track_memory(b)
    out = hpvm.wait(hpvm.launch(root, (a, b, 8), target=target))
    return out, hpvm.request_memory(b)


def run(program: InternalFunction) -> tuple[tuple, np.ndarray]:
    hpvm.init()
    try:
        return main(program, "interp")
    finally:
        hpvm.cleanup()


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, LoadedProgram]:
    path = tmp_path / "prog.hpvm"
    save_program(root, path, host=main)
    return path, load_program(path)


def _line_of(path: Path, text: str) -> int:
    lines = path.read_text().split("\n")
    hits = [i for i, line in enumerate(lines, 1) if line.startswith(text)]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def test_file_is_readable(saved: tuple[Path, LoadedProgram]) -> None:
    path, _ = saved
    text = path.read_text()
    assert text.startswith("# hpvm program v1")
    assert "%%hpvm\n# hpvm IR v1\n" in text
    assert "\n%%python leaf @transform\n" in text
    assert "\n%%python leaf @total\n" in text and "\n%%python leaf @total.1\n" in text
    assert "\n%%python host\n" in text
    for line in [
        "import hpvm",
        "import math",
        "import numpy as np",
        "SCALE = 2.5",
        "OFFSET = 4",
        "WEIGHTS = (1.0, 2.0, 0.5)",
        "def helper(x):",
        "def _square(x):",
    ]:
        assert f"\n{line}\n" in text, line
    assert 'TABLE = __import__("numpy").array([1, 2, 3], dtype="int32")' in text
    assert "%%%%and one with three percent signs" in text and "\n%%%python host\n" in text


def test_structure_survives(saved: tuple[Path, LoadedProgram]) -> None:
    _, loaded = saved
    assert print_program(loaded.root) == print_program(root)
    assert [f.kind for f in functions(loaded.root)] == [f.kind for f in functions(root)]
    verify(loaded.root)
    assert set(loaded.leaves) == {"@transform", "@total", "@total.1"}


def test_leaves_run_the_same(saved: tuple[Path, LoadedProgram]) -> None:
    _, loaded = saved
    leaves = {ref: leaf for ref, leaf in loaded.leaves.items()}
    b = np.arange(5, dtype=np.float32)
    assert leaves["@total"].pyfunc(b, 4) == total.pyfunc(b, 4)
    assert leaves["@total.1"].pyfunc(21) == 42
    assert leaves["@total"].source == total.source  # every character survived


def test_launch_gives_the_same_results(saved: tuple[Path, LoadedProgram]) -> None:
    _, loaded = saved
    expected_out, expected_b = run(root)
    out, b = run(loaded.root)
    np.testing.assert_array_equal(b, expected_b)
    assert out == expected_out


def test_host_is_loaded_and_runs(saved: tuple[Path, LoadedProgram]) -> None:
    _, loaded = saved
    assert loaded.host is not None and loaded.host.__name__ == "main"
    hpvm.init()
    try:
        out, b = loaded.host(loaded.root, "interp")
    finally:
        hpvm.cleanup()
    assert out == run(root)[0]


def test_lines_point_into_the_file(saved: tuple[Path, LoadedProgram]) -> None:
    path, loaded = saved
    leaf = loaded.leaves["@transform"]
    def_line = _line_of(path, "def transform(")
    assert leaf.location.file == str(path) and leaf.location.line == def_line
    assert leaf.source_line == def_line and leaf.source == transform.source
    assert leaf.pyfunc.__code__.co_filename == str(path)
    info = analyze_leaf(leaf)
    assert info.parsed and info.writes == {"b": def_line + 2}
    ir_root_line = _line_of(path, "internal @root(")
    assert loaded.root.location.line == ir_root_line
    # A failing helper names the saved file and the line of the failing statement.
    with pytest.raises(TypeError) as err:
        loaded.leaves["@total"].pyfunc(None, 1)
    frames = traceback.extract_tb(err.value.__traceback__)
    assert frames[-1].filename == str(path)
    assert path.read_text().split("\n")[frames[-1].lineno - 1].lstrip().startswith("return np.float32")


def test_verifier_messages_name_lines_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.hpvm"
    save_program(root, path)
    first = "    i = hpvm.get_node_instance_id_x(hpvm.get_node())\n"
    text = path.read_text().replace(first, "    a[0] = 1\n" + first)
    assert text != path.read_text()
    path.write_text(text)
    loaded = load_program(path)
    with pytest.raises(VerificationError) as err:
        verify(loaded.root)
    assert f"{path}:{_line_of(path, 'def transform(') + 1}" in str(err.value)
    assert "writes array 'a'" in str(err.value)


def test_resaving_a_loaded_program_gives_the_same_file(
    saved: tuple[Path, LoadedProgram], tmp_path: Path
) -> None:
    path, loaded = saved
    again = tmp_path / "again.hpvm"
    save_program(loaded.root, again, host=loaded.host)
    assert again.read_text() == path.read_text()


def test_leaf_module_source_is_self_contained() -> None:
    source = leaf_module_source(transform)
    namespace: dict = {}
    exec(compile(source, "<leaf>", "exec"), namespace)
    assert namespace["helper"](2.0) == helper(2.0)
    assert source.rstrip().endswith("b[i] = helper(a[i]) + WEIGHTS[i % 3] + TABLE[i % 3] + EPS")


# ---------------------------------------------------------------------------------------
# What cannot be saved


def _program_with(leaf: LeafFunction) -> InternalFunction:
    @hpvm.internal()
    def wrapper(n: i64):
        node = hpvm.create_node(leaf)
        hpvm.bind_in(node, 0, 0)

    return wrapper


def test_closure_variable_is_an_error(tmp_path: Path) -> None:
    k = 3

    @hpvm.leaf()
    def add_k(n: i64) -> i64:
        return n + k

    with pytest.raises(VerificationError, match=r"leaf 'add_k' .*closure variable\(s\) k\b"):
        save_program(_program_with(add_k), tmp_path / "x.hpvm")
    assert not (tmp_path / "x.hpvm").exists()


@hpvm.leaf()
def locked(n: i64) -> i64:
    with LOCK:
        return n


def test_unsupported_global_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(VerificationError, match=r"leaf 'locked' .*global 'LOCK' \(lock\)"):
        save_program(_program_with(locked), tmp_path / "x.hpvm")


def test_leaf_without_code_is_an_error(tmp_path: Path) -> None:
    parsed = parse_program(
        "leaf @l(n: i64) -> ()\ninternal @r(n: i64) {\n  %l = node @l\n  bind in 0 -> %l.0\n}\n"
    )
    with pytest.raises(VerificationError, match="leaf 'l' .* has no Python source"):
        save_program(parsed, tmp_path / "x.hpvm")


# ---------------------------------------------------------------------------------------
# Malformed files


def _save_and_edit(tmp_path: Path, old: str, new: str) -> Path:
    path = tmp_path / "p.hpvm"
    save_program(root, path)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


def test_python_syntax_error_points_at_the_line(tmp_path: Path) -> None:
    path = _save_and_edit(tmp_path, "    return n * 2\n", "    return n * * 2\n")
    with pytest.raises(ParseError, match="invalid Python in the code of leaf @total.1") as err:
        load_program(path)
    assert err.value.line == _line_of(path, "    return n * * 2")


def test_missing_leaf_section(tmp_path: Path) -> None:
    path = _save_and_edit(tmp_path, "%%python leaf @total.1\n", "%%python leaf @nothing\n")
    with pytest.raises(ParseError, match=r"leaf @total.1 has no '%%python leaf @total.1' section") as err:
        load_program(path)
    assert err.value.line == _line_of(path, "leaf @total.1(")


def test_signature_mismatch(tmp_path: Path) -> None:
    path = _save_and_edit(tmp_path, "def total(n: i64)", "def total(m: i64)")
    with pytest.raises(ParseError, match=r"takes \(m\) but the IR declares \(n\)") as err:
        load_program(path)
    assert err.value.line == _line_of(path, "def total(m")


def test_ir_error_names_the_file_line(tmp_path: Path) -> None:
    path = _save_and_edit(tmp_path, "%transform = node @transform[n]", "%transform = node @transfrom[n]")
    with pytest.raises(ParseError, match="unknown function @transfrom; did you mean @transform?") as err:
        load_program(path)
    assert err.value.file == str(path) and err.value.line == _line_of(path, "  %transform = node")


def test_error_while_running_a_section_is_raised_at_launch(tmp_path: Path) -> None:
    """Loading runs no section; launching runs them, and an exception a section raises is a
    ParseError at its line (the original exception chained)."""
    path = _save_and_edit(tmp_path, "import math\n", "import math_does_not_exist\n")
    loaded = load_program(path)
    verify(loaded.root)  # looking needs no section to run
    with pytest.raises(
        ParseError, match="running the code of leaf @transform raised ModuleNotFoundError"
    ) as err:
        run(loaded.root)
    assert err.value.file == str(path) and err.value.line == _line_of(path, "import math_does_not_exist")
    assert isinstance(err.value.__cause__, ModuleNotFoundError)


def test_unknown_section(tmp_path: Path) -> None:
    path = _save_and_edit(tmp_path, "%%python leaf @transform", "%%pyhton leaf @transform")
    with pytest.raises(ParseError, match="unknown section header"):
        load_program(path)


def test_calling_a_parsed_leaf_without_code() -> None:
    parsed = parse_program(print_program(root))
    with pytest.raises(CompileError):
        next(f for f in functions(parsed) if isinstance(f, LeafFunction)).pyfunc()


def test_section_for_an_undeclared_leaf(tmp_path: Path) -> None:
    path = tmp_path / "p.hpvm"
    save_program(root, path)
    path.write_text(path.read_text() + "\n%%python leaf @ghost\ndef ghost():\n    pass\n")
    with pytest.raises(ParseError, match="for a leaf the IR does not declare") as err:
        load_program(path)
    assert err.value.line == _line_of(path, "%%python leaf @ghost")


def test_text_before_the_first_section(tmp_path: Path) -> None:
    path = tmp_path / "p.hpvm"
    path.write_text("# a comment is fine\n\nleaf @l() -> ()\n%%hpvm\n")
    with pytest.raises(ParseError, match="text before the first section") as err:
        load_program(path)
    assert err.value.line == 3


def test_a_file_without_sections_is_the_text_form_alone(tmp_path: Path) -> None:
    """What ``print_program`` writes (``hpvm show --text``, ``hbir lower``, ``llvm import``,
    ``c lower``) loads as it is: the text form, its leaves without code."""
    path = tmp_path / "p.txt"
    path.write_text(
        "# hpvm IR v1\nleaf @l(x: i64) -> (i64)\ninternal @r(x: i64) {\n  %n = node @l\n  bind in 0 -> %n.0\n}\n"
    )
    loaded = load_program(path)
    assert loaded.root.name == "r" and [n.function.name for n in loaded.root.graph.nodes] == ["l"]
    assert loaded.host is None
    with pytest.raises(ParseError, match="the last function is the root and must be internal"):
        (tmp_path / "leaf.txt").write_text("leaf @l() -> ()\n")
        load_program(tmp_path / "leaf.txt")


@hpvm.leaf(ins=("x",), outs=("x",))
def rotate(x: f32[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    n = hpvm.get_num_node_instances_x(hpvm.get_node())
    v = x[(i + 1) % n]
    hpvm.barrier()
    x[i] = v


@hpvm.internal(ins=("x",), outs=("x",))
def rotate_root(x: f32[:], n: i64):
    r = hpvm.create_node_1d(rotate, n)
    hpvm.bind_in(r, 0, 0)


def test_loaded_leaf_with_a_barrier_runs(tmp_path: Path) -> None:
    """The interpreter rewrites barriers from the leaf's source: loaded leaves have it."""
    path = tmp_path / "rotate.hpvm"
    save_program(rotate_root, path)
    loaded = load_program(path)
    hpvm.init()
    try:
        x = np.arange(5, dtype=np.float32)
        hpvm.track_memory(x)
        hpvm.wait(hpvm.launch(loaded.root, (x, 5), target="interp"))
        result = hpvm.request_memory(x)
    finally:
        hpvm.cleanup()
    np.testing.assert_array_equal(result, [1, 2, 3, 4, 0])


def test_a_section_python_cannot_compile_is_a_parse_error(tmp_path: Path) -> None:
    deep = "    return " + " + ".join(["n"] * 100_000) + "\n"
    path = _save_and_edit(tmp_path, "    return n * 2\n", deep)
    with fails(ParseError, "Python cannot compile the code of leaf @total.1"):  # was RecursionError
        load_program(path)


def _saved_text() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.hpvm"
        save_program(root, path, host=main)
        return path.read_text()


# A fuzzed leaf body may be valid Python that Python's compiler warns about ("'int' object is
# not callable"): the warning is the compiler's, about text the fuzzer wrote, not a finding.
@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzzed_files_load_or_are_a_parse_error(data: st.DataObject) -> None:
    """Random edits of a saved program: each loads or raises ParseError, never another
    exception from the loader, the parser or Python — and so does running its sections."""
    text = _saved_text()
    tokens = ["%%python leaf @", "%%python host", "%%hpvm", "\n", "@", "%", "(", ")", "9" * 5000, "|", "\x00"]
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text)))
        edit = data.draw(st.sampled_from(["insert", "delete", "text"]))
        if edit == "insert":
            text = text[:at] + data.draw(st.sampled_from(tokens)) + text[at:]
        elif edit == "delete":
            text = text[:at] + text[at + data.draw(st.integers(1, 12)) :]
        else:
            text = text[:at] + data.draw(st.text(max_size=6)) + text[at:]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzzed.hpvm"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            materialize(load_program(path).root)
        except ParseError:
            pass
