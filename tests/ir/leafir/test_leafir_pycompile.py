"""Python emitted with operators as calls (``pyemit.OperatorCallsPython``), compiled at the
leaf's own lines (``pycompile.compile_emitted``): on every leaf of the suite in the dialect,
the code's lines are the lines of the leaf's statements (and its ``def``), and every name
the code reads is bound — what the interpreter relies on to name the user's lines."""

from __future__ import annotations

import pytest

import leaf_suite
from hpvm.ir.leafir import LeafIRUnsupported, leaf_ir, ops
from hpvm.ir.leafir.pycompile import compile_emitted
from hpvm.ir.leafir.pyemit import OperatorCallsPython, emit_problem, emit_python, namespace

IN_DIALECT = {}
for _key, _fn in sorted(leaf_suite.LEAVES.items()):
    try:
        _ir = leaf_ir(_fn)
    except LeafIRUnsupported:
        continue
    if emit_problem(_ir) is None:
        IN_DIALECT[f"{_key[0]}:{_key[1]}"] = _ir


def _code_lines(code) -> set[int]:
    lines = {line for _, _, line in code.co_lines() if line is not None}
    for const in code.co_consts:
        if hasattr(const, "co_lines"):
            lines |= _code_lines(const)
    return lines


@pytest.mark.parametrize("key", sorted(IN_DIALECT))
def test_emitted_code_carries_the_leafs_lines_and_binds_every_name(key: str) -> None:
    ir = IN_DIALECT[key]
    writer = OperatorCallsPython()
    text, lines = emit_python(ir, writer=writer)
    names = {name: object() for name in writer.needed}
    func = compile_emitted(text, lines, ir.file, ir.name, {**namespace(), **names})
    statement_lines = {s.line for s in ops.walk_stmts(ir.body)} | {ir.line}
    assert func.__code__.co_filename == ir.file
    assert func.__code__.co_firstlineno == ir.line
    assert _code_lines(func.__code__) <= statement_lines
    read = set(func.__code__.co_names)  # globals the code reads (and attributes: a superset)
    assert {n for n in read if n.startswith("__hpvm_")} <= set(writer.needed)
    assert {n for n in read if n in ("np", "math", "hpvm")} <= set(namespace())


def test_operators_casts_calls_and_constants_are_written_as_bound_names() -> None:
    from hpvm.ir.types import scalar_type

    f32, i64 = scalar_type("f32"), scalar_type("i64")
    x = ops.Var("x", f32)
    writer = OperatorCallsPython()
    e = ops.Binary(
        "*", ops.Cast(x, scalar_type("f64")), ops.Const(2.0, scalar_type("f64")), scalar_type("f64")
    )
    assert writer.expr(e) == "__hpvm_op_mul(__hpvm_cast_f32_f64(x), 2.0)"
    neg = ops.Unary("-", ops.Const(1, i64), i64)
    assert writer.expr(neg) == "__hpvm_k2"  # a constant expression: computed once by the runner
    assert writer.needed == {
        "__hpvm_op_mul": ("binary", "*"),
        "__hpvm_cast_f32_f64": ("cast", "f32", "f64"),
        "__hpvm_k2": ("value", neg),
    }
