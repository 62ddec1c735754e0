"""Leaf bodies of every kind: what each runs as, how it prints and parses back (the text form
alone is the program), what the verifier checks, which back ends accept it, and how errors in
generated code name the foreign file's line."""

from __future__ import annotations

import math
import re
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.errors import CompileError, OutOfBoundsError, ParseError, VerificationError
from hpvm.ir.bodies import GeneratedBody, LLVMBody, OpCall, Operand, PythonBody, TensorBody
from hpvm.ir.graph import ChildGraph, InputBind, InternalFunction, LeafFunction, Node, OutputBind, Param
from hpvm.ir.parser import parse_program
from hpvm.ir.printer import print_program
from hpvm.ir.program_file import load_program, save_program
from hpvm.ir.pysource import generated_body
from hpvm.ir.tensorops import OPS
from hpvm.ir.types import ArrayType, f32
from markers import fails

A2 = ArrayType(f32, 2)
P = lambda i: Operand("param", i)  # noqa: E731
L = lambda i: Operand("local", i)  # noqa: E731
C = lambda v: Operand("const", v)  # noqa: E731


def _root_of(leaf: LeafFunction, name: str = "root") -> InternalFunction:
    """A root with one node of ``leaf``, its inputs bound in order, its outputs bound out."""
    graph = ChildGraph()
    node = Node(leaf.name, leaf, ())
    graph.nodes.append(node)
    graph.in_binds += [InputBind(i, node, i) for i in range(len(leaf.params))]
    graph.out_binds += [OutputBind(node, k, k) for k in range(len(leaf.out_types))]
    return InternalFunction(name, list(leaf.params), graph=graph)


def _run(root: InternalFunction, args: tuple, target: str) -> tuple:
    hpvm.init()
    for a in args:
        if isinstance(a, np.ndarray):
            hpvm.track_memory(a)
    try:
        return hpvm.wait(hpvm.launch(root, args, target=target))
    finally:
        hpvm.cleanup()


def _clip_leaf() -> LeafFunction:
    body = TensorBody(
        (OpCall("add", (P(0), P(1))), OpCall("clipped_relu", (L(0), C(-1.5), C(math.inf)))), (L(1),)
    )
    return LeafFunction(
        None,
        "clip",
        [Param("x", A2), Param("b", A2)],
        [A2],
        hint=hpvm.TENSOR_TARGET,
        ins=("x", "b"),
        body=body,
    )


# ---------------------------------------------------------------------------------------
# Tensor bodies


def test_tensor_body_runs_on_interp_and_tensor_and_is_refused_by_cpu() -> None:
    leaf = _clip_leaf()
    assert leaf.body_kind == "tensor"
    root = _root_of(leaf)
    x = np.linspace(-4, 4, 12, dtype=np.float32).reshape(3, 4)
    b = np.full((3, 4), 0.5, np.float32)
    expected = np.maximum(x + b, -1.5)
    np.testing.assert_allclose(_run(root, (x, b), "interp")[0], expected)
    pytest.importorskip("torch")
    np.testing.assert_allclose(_run(root, (x, b), "tensor")[0], expected)
    with fails(
        CompileError,
        "the cpu back end runs leaves with generated, llvm, python bodies",
        "leaf 'clip'",
        "tensor body",
    ):
        _run(root, (x, b), "cpu")


def test_tensor_body_renders_as_the_python_it_stands_for() -> None:
    source = _clip_leaf().source
    assert "t0 = hpvm.tensor.add(x, b)" in source
    assert 't1 = hpvm.tensor.clipped_relu(t0, -1.5, float("inf"))' in source


def test_tensor_body_prints_and_parses_back() -> None:
    root = _root_of(_clip_leaf())
    text = print_program(root, bodies=True)
    assert "  %1 = clipped_relu(%0, -1.5, inf)" in text and "  return %1" in text
    parsed = parse_program(text)
    assert parsed.graph.nodes[0].function.body == _clip_leaf().body
    assert print_program(parsed, bodies=True) == text
    assert print_program(root) == print_program(parsed)  # without bodies: the one-line form


@st.composite
def tensor_bodies(draw: st.DrawFn) -> tuple[list[Param], TensorBody]:
    """Random well-formed tensor bodies over two 2-D parameters (shapes are not checked by
    the text form: any operation with the right number of operands prints and parses)."""
    names = draw(st.sampled_from([["x", "y"], ["inf", "nan"], ["a b", "c"]]))
    params = [Param(n, A2) for n in names]
    calls: list[OpCall] = []
    numbers = st.one_of(
        st.integers(-5, 5), st.floats(allow_nan=False, width=32), st.sampled_from([math.inf, -math.inf])
    )
    for _ in range(draw(st.integers(0, 4))):
        op = OPS[draw(st.sampled_from(sorted(OPS)))]
        operands = []
        for _ in op.params:
            choices = [st.builds(P, st.integers(0, 1)), numbers.map(C)]
            if calls:
                choices.append(st.builds(L, st.integers(0, len(calls) - 1)))
            operands.append(draw(st.one_of(choices)))
        calls.append(OpCall(op.name, tuple(operands)))
    returns = tuple(draw(st.lists(st.builds(L, st.integers(0, len(calls) - 1)), max_size=2))) if calls else ()
    return params, TensorBody(tuple(calls), returns)


@settings(max_examples=60, deadline=None)
@given(tensor_bodies())
def test_any_tensor_body_round_trips(case: tuple[list[Param], TensorBody]) -> None:
    params, body = case
    leaf = LeafFunction(None, "k", params, [A2] * len(body.returns), body=body)
    text = print_program(_root_of(leaf), bodies=True)
    parsed = parse_program(text).graph.nodes[0].function
    assert parsed.body.returns == body.returns
    assert [(c.op, c.args) for c in parsed.body.calls] == [(c.op, c.args) for c in body.calls]
    assert print_program(parse_program(text), bodies=True) == text


@pytest.mark.parametrize(
    ("statement", "message", "column"),
    [
        ("%0 = frobnicate(x)", "unknown tensor operation frobnicate", 8),
        ("%0 = relu(x, x)", "relu takes 1 operands (x), 2 given", 8),
        ("%0 = relu(%3)", "%3 is used before it is computed", 13),
        ("%1 = relu(x)", "expected %0, not %1", 3),
        ("%0 = relu(q)", "operand 'q' is not a parameter of the leaf (x)", 13),
    ],
)
def test_tensor_body_parse_errors_are_located(statement: str, message: str, column: int) -> None:
    text = f"leaf @k(x: f32[:, :]) -> (f32[:, :]) tensor {{\n  {statement}\n  return %0\n}}\ninternal @r() {{}}\n"
    with pytest.raises(ParseError, match=re.escape(message)) as info:
        parse_program(text, "bad.hpvm")
    assert (info.value.line, info.value.column) == (2, column)


# ---------------------------------------------------------------------------------------
# Python bodies


@hpvm.leaf(ins=("a",), outs=("b",))
def double_plus(a: hpvm.f32[:], b: hpvm.f32[:], n: hpvm.i64):
    for i in range(n):
        b[i] = _twice(a[i]) + OFFSET


OFFSET = 0.25


def _twice(v):
    return 2 * v


@hpvm.internal
def double_root(a: hpvm.f32[:], b: hpvm.f32[:], n: hpvm.i64):
    node = hpvm.create_node(double_plus)
    for i in range(3):
        hpvm.bind_in(node, i, i)


def test_python_body_text_alone_is_the_program() -> None:
    text = print_program(double_root, bodies=True)
    assert "  | OFFSET = 0.25" in text and "  | def _twice(v):" in text and "  | def double_plus(" in text
    parsed = parse_program(text, "program.hpvm")
    leaf = parsed.graph.nodes[0].function
    assert isinstance(leaf.body, PythonBody)
    assert leaf.location.file == "program.hpvm"  # its code runs at the text's own lines
    assert text.splitlines()[leaf.location.line - 1].startswith("  | def double_plus(")
    a = np.arange(5, dtype=np.float32)
    b1, b2 = np.zeros(5, np.float32), np.zeros(5, np.float32)
    _run(double_root, (a, b1, 5), "interp")
    _run(parsed, (a, b2, 5), "interp")
    np.testing.assert_array_equal(b1, b2)
    assert print_program(parsed, bodies=True) == text


def test_python_body_errors_point_into_the_text() -> None:
    text = (
        "leaf @k(x: f32[:]) -> () ins(x) python {\n  | def k(x):\n  |     return x +\n}\ninternal @r() {}\n"
    )
    with pytest.raises(ParseError, match="invalid Python in the code of leaf @k") as info:
        parse_program(text, "bad.hpvm")
    assert info.value.line == 3
    wrong = "leaf @k(x: f32[:]) -> () ins(x) python {\n  | def k(y):\n  |     pass\n}\ninternal @r() {}\n"
    with pytest.raises(ParseError, match=r"takes \(y\) but the IR declares \(x\)") as info:
        parse_program(wrong, "bad.hpvm")
    assert info.value.line == 2


# ---------------------------------------------------------------------------------------
# LLVM bodies

LLVM_MODULE = "define void @scale(ptr %x, i64 %x.size, i64 %n) {\nentry:\n  ret void\n}\n"


def _llvm_leaf(module: str = LLVM_MODULE, function: str = "scale") -> LeafFunction:
    return LeafFunction(
        None,
        "scale",
        [Param("x", ArrayType(f32, 1)), Param("n", hpvm.i64)],
        [],
        ins=("x",),
        outs=("x",),
        body=LLVMBody(module, function),
    )


def test_llvm_body_prints_parses_and_verifies() -> None:
    root = _root_of(_llvm_leaf())
    hpvm.verify(root)
    text = print_program(root, bodies=True)
    assert "llvm @scale {" in text and "  | define void @scale(ptr %x, i64 %x.size, i64 %n) {" in text
    parsed = parse_program(text)
    assert parsed.graph.nodes[0].function.body == LLVMBody(LLVM_MODULE, "scale")
    assert print_program(parsed, bodies=True) == text


def test_llvm_body_must_define_its_function_with_the_ports_abi() -> None:
    with fails(VerificationError, "names function @other, which its module does not define"):
        hpvm.verify(_root_of(_llvm_leaf(function="other")))
    # x: f32[:] takes a pointer and its byte size, n: i64 one argument: three in all.
    with fails(VerificationError, "takes 2 argument(s) but the leaf's 2 port(s) take 3"):
        hpvm.verify(_root_of(_llvm_leaf("define void @scale(ptr %x, i64 %n) {\n  ret void\n}\n")))


def test_llvm_bodies_run_on_interp_and_cpu_and_have_no_python() -> None:
    doubling = (
        "define void @scale(ptr %x, i64 %x.size, i64 %n) {\nentry:\n"
        "  %h = call ptr @llvm.hpvm.getNode()\n"
        "  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %h)\n"
        "  %p = getelementptr float, ptr %x, i64 %i\n"
        "  %v = load float, ptr %p\n  %w = fmul float %v, 2.0\n  store float %w, ptr %p\n"
        "  ret void\n}\n"
        "declare ptr @llvm.hpvm.getNode()\ndeclare i64 @llvm.hpvm.getNodeInstanceID.x(ptr)\n"
    )
    for target in ("interp", "cpu"):
        x = np.arange(1, 4, dtype=np.float32)
        _run(_root_of(_llvm_leaf(doubling)), (x, 2), target)  # one instance: x[0] doubled
        np.testing.assert_array_equal(x, [2, 2, 3])
    leaf = _llvm_leaf()
    with pytest.raises(CompileError, match="has an llvm body and no Python"):
        leaf(np.zeros(2, np.float32), 2)
    with pytest.raises(OSError):
        _ = leaf.source


# ---------------------------------------------------------------------------------------
# Generated bodies: errors name the foreign file's lines

GENERATED = textwrap.dedent(
    """\
    def kernel(a, b, n):
        for i in range(n):
            b[i] = a[i] * 2
        b[n] = 0
    """
)


def _generated_leaf() -> LeafFunction:
    body = generated_body("kernel", GENERATED, "vadd.hbir", (12, 13, 14, 20))
    return LeafFunction(
        None,
        "kernel",
        [Param("a", ArrayType(f32, 1)), Param("b", ArrayType(f32, 1)), Param("n", hpvm.i64)],
        [],
        ins=("a",),
        outs=("b",),
        location=body.origin_of(1),
        body=body,
    )


def test_an_error_in_generated_code_names_the_foreign_line() -> None:
    leaf = _generated_leaf()
    a, b = np.ones(4, np.float32), np.zeros(4, np.float32)
    with fails(OutOfBoundsError, "vadd.hbir:20", "index 4 is out of bounds") as info:  # line 4 is line 20
        _run(_root_of(leaf), (a, b, 4), "interp")
    assert "<generated" not in str(info.value)
    b = np.zeros(4, np.float32)
    _run(_root_of(leaf), (a, b, 3), "interp")  # in bounds: b[:3] doubled, b[3] zeroed
    np.testing.assert_array_equal(b, [2, 2, 2, 0])


def test_verifier_messages_about_generated_code_name_the_foreign_line() -> None:
    body = generated_body("kernel", GENERATED, "vadd.hbir", (12, 13, 14, 20))
    leaf = LeafFunction(
        None,
        "kernel",
        [Param("a", ArrayType(f32, 1)), Param("b", ArrayType(f32, 1)), Param("n", hpvm.i64)],
        [],
        ins=("a", "b"),  # b is written but not declared in outs
        body=body,
    )
    with fails(VerificationError, "(vadd.hbir:20) writes array 'b', which its outs does not declare"):
        hpvm.verify(_root_of(leaf))


def test_generated_body_prints_parses_and_keeps_its_source_map() -> None:
    root = _root_of(_generated_leaf())
    text = print_program(root, bodies=True)
    assert 'generated "vadd.hbir" lines(12, 13, 14, 20) {' in text
    parsed = parse_program(text).graph.nodes[0].function
    assert isinstance(parsed.body, GeneratedBody)
    assert parsed.body.lines == (12, 13, 14, 20) and parsed.where(4).line == 20
    assert print_program(_root_of(parsed), bodies=True) == text
    bad = text.replace("lines(12, 13, 14, 20)", "lines(12, 13)")
    with pytest.raises(ParseError, match="it has 4 code line"):
        parse_program(bad)


# ---------------------------------------------------------------------------------------
# Saved programs carry non-Python bodies in the IR section


def test_saved_program_inlines_tensor_bodies(tmp_path) -> None:
    root = _root_of(_clip_leaf())
    path = tmp_path / "clip.hpvm"
    save_program(root, path)
    text = path.read_text()
    assert "%%python leaf" not in text and "clipped_relu(%0, -1.5, inf)" in text
    loaded = load_program(path)
    x = np.ones((2, 2), np.float32)
    np.testing.assert_array_equal(_run(loaded.root, (x, x), "interp")[0], _run(root, (x, x), "interp")[0])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=12), st.integers(0, 8))
def test_the_generated_line_of_a_foreign_line_maps_back_to_it(lines: list[int], origin_line: int) -> None:
    """``GeneratedBody.generated_line`` inverts the source map where it can: the first
    generated line a foreign line made maps back to it (``origin_of``); 0 for a line that
    made none, and for 0 (no line)."""
    body = GeneratedBody(None, "", "f.hbir", tuple(lines))
    g = body.generated_line(origin_line)
    if origin_line and origin_line in lines:
        assert body.origin_of(g).line == origin_line and origin_line not in lines[: g - 1]
    else:
        assert g == 0
