"""The query lowering as a pass on the leaf IR (``ir/leafir/lowering.py``): golden text of
the lowered IR of suite leaves (2-D/3-D queries, parent queries, a barrier, atomics,
malloc), its errors (the same ``CompileError`` messages as the syntax-tree cloner's), the
``CtxRead`` op in the text form and the verifier, and the clone ``pyemit`` makes of it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import hpvm
import leaf_suite
from golden_text import check_golden, relative
from hpvm.errors import CompileError, ParseError
from hpvm.ir import instance_context as ictx
from hpvm.ir.intrinsics import INTRINSICS
from hpvm.ir.leafir import LeafIRUnsupported, leaf_ir, ops, rules
from hpvm.ir.leafir.lowering import lower_queries
from hpvm.ir.leafir.parser import parse_leaf_ir
from hpvm.ir.leafir.printer import print_leaf
from hpvm.ir.leafir.pyemit import emit_python
from hpvm.ir.leafir.verify import leaf_problems, verify_leaf
from hpvm.passes.clone_leaves import clone_leaf

GOLDEN = Path(__file__).parent / "golden"

#: Leaves showing each part of the lowering.
GOLDEN_LEAVES = {
    ("programs", "p_cell"): "four levels: parent chains, 2-D ids and counts, get_num_dims",
    ("gpu_convention", "stencil3"): "3-D ids through a handle variable",
    ("reduction", "tree_sum"): "a parent query and barriers (kept, in a loop)",
    ("histogram", "bin_value"): "an atomic whose old value is unused",
    ("programs", "p_atomics_int"): "atomics whose old values are used",
    ("programs", "p_alloc"): "malloc (kept) and no query: no level",
    ("programs", "p_rotate"): "a barrier between phases over a malloc'd buffer",
}


@pytest.mark.parametrize("key", sorted(GOLDEN_LEAVES), ids=":".join)
def test_lowered_golden(key: tuple[str, str]) -> None:
    lowered = lower_queries(leaf_ir(leaf_suite.LEAVES[key]))
    verify_leaf(lowered.ir)
    header = f"# {GOLDEN_LEAVES[key]}: levels {lowered.levels}, barriers {list(lowered.barrier_lines)}\n"
    text = header + print_leaf(relative(lowered.ir))
    check_golden(GOLDEN / f"lowered.{key[0]}.{key[1]}.leafir", text)
    assert parse_leaf_ir(text.split("\n", 1)[1]) == relative(lowered.ir)


IN_DIALECT = {}
for _key, _fn in sorted(leaf_suite.LEAVES.items()):
    try:
        IN_DIALECT[":".join(_key)] = (_fn, leaf_ir(_fn))
    except LeafIRUnsupported:
        pass


@pytest.mark.parametrize("key", sorted(IN_DIALECT))
def test_lowering_agrees_with_the_syntax_tree_cloner(key: str) -> None:
    """Every suite leaf in the dialect: no handle left, the same levels and barrier lines as
    the syntax-tree clone, the result verifies, reads back from its text and emits as a
    clone that compiles."""
    fn, ir = IN_DIALECT[key]
    lowered = lower_queries(ir)
    clone = clone_leaf(fn)
    assert (lowered.levels, list(lowered.barrier_lines)) == (clone.levels, clone.barrier_lines)
    for stmt in ops.walk_stmts(lowered.ir.body):
        for e in ops.stmt_exprs(stmt):
            for sub in ops.walk_expr(e):
                assert sub.type != ops.NodeHandleType() and not (
                    isinstance(sub, ops.IntrinsicOp) and sub.intrinsic.kind in ("handle", "query", "dims")
                )
    verify_leaf(lowered.ir)
    assert parse_leaf_ir(print_leaf(lowered.ir)) == lowered.ir
    text, lines = emit_python(lowered.ir, "clone", clone=True)
    compile(text, "<clone>", "exec")
    assert len(lines) == len(text.splitlines())


def test_the_clone_spelling() -> None:
    lowered = lower_queries(leaf_ir(leaf_suite.LEAVES["reduction", "tree_sum"]))
    text, lines = emit_python(lowered.ir, "c", clone=True)
    assert text.splitlines()[0] == "def c(data, block, buffer, partials, __hpvm_ctx):"
    assert "bid = __hpvm_ctx[7]" in text  # the parent's id x: level 1, offset 0
    assert text.count("__hpvm_barrier()") == 2
    assert lines[text.splitlines().index("    __hpvm_barrier()")] == lowered.barrier_lines[0]
    atomics = lower_queries(leaf_ir(leaf_suite.LEAVES["histogram", "bin_value"]))
    assert "__hpvm_atomic_add(bins, index, 1)" in emit_python(atomics.ir, clone=True)[0]
    malloc = lower_queries(leaf_ir(leaf_suite.LEAVES["programs", "p_alloc"]))
    assert "__hpvm_malloc(" in emit_python(malloc.ir, clone=True)[0]


def test_an_atomic_on_an_element_of_a_2d_array_takes_its_index_tuple() -> None:
    text = """\
leaf f(m: i32[:, :], v: i32) -> () at "f.py":1 {
  2: hpvm.atomic_add(m, 1, 2, v)
}
"""
    ir = parse_leaf_ir(text)
    assert "hpvm.atomic_add(m, (1, 2), v)" in emit_python(ir)[0]
    assert "__hpvm_atomic_add(m, (1, 2), v)" in emit_python(lower_queries(ir).ir, clone=True)[0]


# -- the errors: the syntax-tree cloner's, at the same lines --------------------------------

HEAD = 'leaf f(out: i64[:]) -> () at "f.py":1 {\n  var h: node\n  var g: node\n'


@pytest.mark.parametrize(
    ("body", "message", "line"),
    [
        ("  2: h = g\n", "node handle 'h' is assigned something else", 2),
        (
            "  2: h = hpvm.get_node()\n  3: h = hpvm.get_parent_node(hpvm.get_node())\n"
            "  4: out[0] = hpvm.get_node_instance_id_x(h)\n",
            "the node handle passed to hpvm.get_node_instance_id_x() is not known at compile time",
            4,
        ),
        ("  2: hpvm.get_node()\n", "hpvm.get_node() is used other than in a structure query", 2),
        (
            "  2: h = hpvm.get_node()\n  3: hpvm.get_parent_node(h)\n",
            "hpvm.get_parent_node() is used other than in a structure query",
            3,
        ),
    ],
)
def test_what_cannot_be_lowered_is_a_compile_error_at_its_line(body: str, message: str, line: int) -> None:
    ir = parse_leaf_ir(HEAD + body + "}\n")
    with pytest.raises(CompileError) as e:
        lower_queries(ir, "cuda")
    assert f"leaf 'f' (f.py:{line}): {message}" in str(e.value)
    assert "the cuda back end cannot compile this — try target='interp'" in str(e.value)


def test_a_handle_variable_used_as_a_value_is_a_compile_error() -> None:
    text = 'leaf f() -> (node) at "f.py":1 {\n  var h: node\n  2: h = hpvm.get_node()\n  3: return h;\n}\n'
    with pytest.raises(CompileError, match=r"\(f.py:3\): node handle 'h' is used other than as the argument"):
        lower_queries(parse_leaf_ir(text))


def test_a_barrier_inside_an_expression_is_a_compile_error() -> None:
    out = ops.Var("out", ops.ArrayType(rules.I64, 1))
    stmt = ops.Store(out, (rules.const(0),), rules.intrinsic(INTRINSICS["barrier"], []), 2)
    ir = ops.LeafIR("f", parse_leaf_ir(HEAD + "}\n").params, (), (), (stmt,), "f.py", 1)
    with pytest.raises(CompileError, match=r"\(f.py:2\): hpvm.barrier\(\) must be a statement of its own"):
        lower_queries(ir)


@hpvm.leaf(outs=("out",))
def stray(out: hpvm.i64[:]):  # type: ignore[no-untyped-def]
    node = hpvm.get_node()
    hpvm.get_node()
    out[0] = hpvm.get_node_instance_id_x(node)


def test_a_query_without_its_handle_is_a_compile_error() -> None:
    out = ops.Var("out", ops.ArrayType(rules.I64, 1))
    query = ops.IntrinsicOp(INTRINSICS["get_node_instance_id_x"], (), rules.I64)  # (rules refuse it)
    stmt = ops.Store(out, (rules.const(0),), query, 2)
    ir = ops.LeafIR("f", parse_leaf_ir(HEAD + "}\n").params, (), (), (stmt,), "f.py", 1)
    with pytest.raises(
        CompileError, match=r"\(f.py:2\): hpvm.get_node_instance_id_x\(\) takes one node handle"
    ):
        lower_queries(ir)


def test_the_same_errors_as_the_cloner_on_python_leaves() -> None:
    with pytest.raises(CompileError) as by_tree:
        clone_leaf(stray)
    with pytest.raises(CompileError) as by_ir:
        lower_queries(leaf_ir(stray))
    assert str(by_ir.value) == str(by_tree.value)


# -- CtxRead in the text form and the verifier -----------------------------------------------


def test_a_context_read_in_the_text_form() -> None:
    text = 'leaf f(out: i64[:]) -> () at "f.py":1 {\n  2: out[0] = @ctx[1].count_y + @ctx[0].dims\n}\n'
    ir = parse_leaf_ir(text)
    store = ir.body[0]
    assert isinstance(store, ops.Store)
    assert store.value.left == ops.CtxRead(1, ictx.EXTENT + 1)  # type: ignore[union-attr]
    assert store.value.right == ops.CtxRead(0, ictx.DIMS)  # type: ignore[union-attr]
    assert print_leaf(ir) == text
    assert emit_python(ir)[0].splitlines()[1] == "    out[0] = __hpvm_ctx[11] + __hpvm_ctx[6]"


@pytest.mark.parametrize(
    ("read", "message"),
    [("@ctx[0].width", "'width' is not a field of the context"), ("@ctx[0]", "expected '.'")],
)
def test_a_bad_context_read_is_a_parse_error(read: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_leaf_ir(f'leaf f(out: i64[:]) -> () at "f.py":1 {{\n  2: out[0] = {read}\n}}\n')


def test_context_reads_are_checked() -> None:
    with pytest.raises(rules.TypeProblem, match="level -1"):
        rules.ctx_read(-1, 0)
    with pytest.raises(rules.TypeProblem, match="field 7"):
        rules.ctx_read(0, ictx.STRIDE)
    text = 'leaf f(out: i64[:]) -> () at "f.py":1 {\n  2: out[0] = @ctx[0].id_y + @ctx[1].id_z\n}\n'
    ir = parse_leaf_ir(text)
    assert leaf_problems(ir, dims=2) == []
    problems = leaf_problems(ir, dims=1)
    assert len(problems) == 1 and "f.py:2" in problems[0] and "hpvm.get_node_instance_id_y()" in problems[0]
    bad = replace(ir, body=(replace(ir.body[0], value=ops.CtxRead(0, 9)),))
    assert any("field 9" in p for p in leaf_problems(bad))


@hpvm.leaf(outs=("out",))
def names_math(out: hpvm.i64[:]):  # type: ignore[no-untyped-def]
    math = hpvm.get_node_instance_id_x(hpvm.get_node())
    out[math] = math


def test_a_leaf_the_emitter_cannot_write_keeps_the_syntax_tree_clone() -> None:
    """A variable named like a module the emitted Python reads (np, math, hpvm): the clone
    is the syntax-tree rewrite, without IR (the back ends' conservative path)."""
    clone = clone_leaf(names_math)
    assert clone.ir is None and clone.levels == 1
    assert "math = __hpvm_ctx[0]" in clone.source()
    direct = clone_leaf(stray_free)
    assert direct.ir is not None and direct.source() == emit_python(direct.ir, direct.symbol, clone=True)[0]


@hpvm.leaf(outs=("out",))
def stray_free(out: hpvm.i64[:]):  # type: ignore[no-untyped-def]
    out[0] = hpvm.get_num_dims(hpvm.get_parent_node(hpvm.get_node()))
