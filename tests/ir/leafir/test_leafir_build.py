"""The builder: Numba's typing of locals (unified, conversions made explicit), the per-leaf
cache and its invalidation, lines of generated code, and a precise ``LeafIRUnsupported``
for each construct outside the dialect."""

from __future__ import annotations

import inspect
import math
import re

import numpy as np
import pytest

import hpvm
from hpvm.errors import HPVMError
from hpvm.ir.leafir import LeafIRUnsupported, build, leaf_ir, ops
from hpvm.ir.leafir.printer import print_leaf
from hpvm.ir.leafir.verify import verify_leaf

LIMIT = 3


def _line(fn, text: str) -> int:  # type: ignore[no-untyped-def]
    """The file line of the first line of ``fn``'s source containing ``text``."""
    lines, first = inspect.getsourcelines(fn.pyfunc)
    return first + next(k for k, line in enumerate(lines) if text in line)


@hpvm.leaf(outs=("x",))
def unified(n: hpvm.i64, x: hpvm.f32[:]) -> hpvm.f64:
    s = 0
    for k in range(n):
        s = s + 0.5 * k
    t = np.float32(2.5)
    x[0] = s  # stored as f32: an explicit cast in the IR
    x[1] = t * 2
    m = min(n, 3)
    r = math.sqrt(s) if n > LIMIT else -1.0
    return r + m + x.size + len(x)


def test_a_local_has_one_type_and_conversions_are_explicit() -> None:
    ir = leaf_ir(unified)
    types = dict(ir.locals)
    assert [str(types[v]) for v in ("s", "k", "t", "m", "r")] == ["f64", "i64", "f32", "i64", "f64"]
    text = print_leaf(ir)
    assert "s = 0.0" not in text and f"{_line(unified, 's = 0')}: s = f64(0)" in text
    assert f"{_line(unified, 'x[0] = s')}: x[0] = f32(s)" in text
    assert "x[1] = f32(t * 2)" in text  # f32 * i64 literal is f64 (Numba), stored back as f32
    assert "r = math.sqrt(s) if (n > 3) else (-1.0)" in text  # a global number is a constant
    assert "x.size" in text and "x.shape[0]" in text
    verify_leaf(ir)


@hpvm.leaf(outs=("out",))
def handles(out: hpvm.i64[:, :]) -> None:
    node = hpvm.get_node()
    parent = hpvm.get_parent_node(node)
    i = hpvm.get_node_instance_id_x(node)
    j = hpvm.get_node_instance_id_y(parent)
    while True:
        if i > 2:
            break
        i += 1
        continue
    out[i, j] = hpvm.get_num_dims(node) if i != j else ~(i ^ j)


def test_handles_loops_and_the_dimension_rule() -> None:
    ir = leaf_ir(handles)
    verify_leaf(ir, dims=1)  # y is queried on the parent, which the rule does not see
    assert dict(ir.locals)["parent"] == hpvm.node_t


def test_the_leaf_ir_is_built_once_and_rebuilt_when_the_source_changes() -> None:
    first = leaf_ir(handles)
    assert leaf_ir(handles) is first
    source, line = handles.source, handles.source_line
    try:
        handles.set_source(source.replace("i > 2", "i > 5"), line)
        again = leaf_ir(handles)
        assert again is not first and "i > 5" in print_leaf(again)
    finally:
        handles.set_source(source, line)
    assert leaf_ir(handles) == first


def test_a_refusal_is_cached_and_raised_again() -> None:
    with pytest.raises(LeafIRUnsupported):
        leaf_ir(raises)
    assert isinstance(raises.__dict__["_leaf_ir"], LeafIRUnsupported)
    with pytest.raises(LeafIRUnsupported, match=r"'raise \.\.\. from \.\.\.'"):
        leaf_ir(raises)


@hpvm.leaf
def raises(n: hpvm.i64) -> None:
    if n < 0:
        raise ValueError("negative") from None  # (a plain raise is in the dialect; a cause is not)


def helper(v):  # type: ignore[no-untyped-def]
    return v + 1


@hpvm.leaf(outs=("a",))
def calls_helper(a: hpvm.f64[:]) -> None:
    a[0] = helper(a[0])


@hpvm.leaf(outs=("a",))
def slices(a: hpvm.f64[:]) -> None:
    a[1:3] = 0.0


@hpvm.leaf(outs=("a",))
def zeros(a: hpvm.f64[:]) -> None:
    t = np.zeros(4, order="F")
    a[0] = t[0]


@hpvm.leaf(outs=("a",))
def local_arrays(a: hpvm.f64[:], n: hpvm.i64) -> None:
    t = np.zeros(4)
    m = np.empty((n, 3), dtype=np.int32)
    m[0, 1] = 7
    for k in range(3):
        ones = np.ones((2,), "f4")
        a[k] = t[k] + m[0, k] + ones[0]


def test_local_arrays() -> None:
    ir = leaf_ir(local_arrays)
    assert [str(t) for _, t in ir.locals if isinstance(t, hpvm.ir.types.ArrayType)] == [
        "f64[:]",
        "i32[:, :]",
        "f32[:]",
    ]
    text = print_leaf(ir)
    assert "t = np.zeros<f64>(4)" in text and "m = np.empty<i32>(n, 3)" in text and "np.ones<f32>(2)" in text
    verify_leaf(ir)


@hpvm.leaf
def retypes_param(n: hpvm.i64) -> hpvm.i64:
    n = n * 0.5
    return 1


@hpvm.leaf
def while_else(n: hpvm.i64) -> None:
    while n > 0:
        n -= 1
    else:
        n = 0


@hpvm.leaf(outs=("a",))
def mixes_kinds(a: hpvm.f64[:]) -> None:
    v = a
    v = 1.0
    a[0] = v


@hpvm.leaf(outs=("a",))
def bad_bitwise(a: hpvm.f64[:]) -> None:
    a[0] = a[0] & 1


@hpvm.leaf(outs=("a",))
def keyword_call(a: hpvm.f64[:]) -> None:
    a[0] = max(a[0], a[1], key=abs)


@hpvm.leaf(outs=("a",))
def tuple_shape(a: hpvm.f64[:, :]) -> None:
    n, m = a.shape
    a[0, 0] = n + m


@hpvm.leaf(outs=("a",))
def unknown_name(a: hpvm.f64[:]) -> None:
    a[0] = not_defined_anywhere  # type: ignore[name-defined]  # noqa: F821


@pytest.mark.parametrize(
    "leaf, construct, text",
    [
        (raises, "'raise ... from ...'", "raise ValueError"),
        (calls_helper, "the call 'helper(a[0])'", "= helper("),
        (slices, "the slice 'a[1:3]'", "a[1:3]"),
        (zeros, "the arguments of 'np.zeros(4, order='F')'", "np.zeros"),
        (retypes_param, "assigning f64 to the parameter 'n' of type i64", "n = n * 0.5"),
        (while_else, "'while ... else'", "while n > 0"),
        (mixes_kinds, "'v' holding f64[:] and f64", "v = 1.0"),
        (bad_bitwise, "'&' is not defined on f64 and i64", "a[0] & 1"),
        (keyword_call, "the keyword arguments of", "key=abs"),
        (tuple_shape, "an unpacking assignment of something other than a tuple", "= a.shape"),
        (unknown_name, "the name 'not_defined_anywhere'", "not_defined_anywhere"),
    ],
    ids=lambda v: getattr(v, "name", None) if isinstance(v, hpvm.ir.graph.LeafFunction) else "",
)
def test_a_construct_outside_the_dialect_is_named_with_its_line(leaf, construct: str, text: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LeafIRUnsupported) as info:
        build(leaf)
    e = info.value
    assert isinstance(e, HPVMError)
    assert construct in str(e) and f"leaf '{leaf.name}'" in str(e)
    assert e.where is not None and e.where.line == _line(leaf, text)
    assert e.where.file == leaf.location.file


def test_generated_code_names_the_foreign_files_lines() -> None:
    from pathlib import Path

    import example_modules
    from hpvm import hbir
    from hpvm.ir.graph import LeafFunction, functions

    path = Path(example_modules.EXAMPLES) / "hbir" / "matmul.hbir"
    leaf = next(
        f for f in functions(hbir.load(path).to_hpvm()) if isinstance(f, LeafFunction) and f.name == "tg_0"
    )
    ir = leaf_ir(leaf)
    assert ir.file.endswith("matmul.hbir")
    hbir_lines = path.read_text().splitlines()
    stores = [s for s in ops.walk_stmts(ir.body) if isinstance(s, ops.Store)]
    assert stores and all("C[" in hbir_lines[s.line - 1] for s in stores)


@hpvm.leaf
def retyped_in_line(n: hpvm.i64) -> hpvm.i64:
    x = 0
    y = x // 2
    x = 1.5
    return y + n


@hpvm.leaf
def retyped_in_loop(n: hpvm.i64) -> hpvm.f64:
    x = 0
    for k in range(n):
        x = x + 0.5 * k
    if n > 2:
        z = 1
    else:
        z = 2.5
    return (x + z) // 2


def test_a_local_is_read_with_the_type_numba_gives_it_there() -> None:
    """Numba (SSA) unifies a variable's versions where control flow merges: a loop's head
    and an if's join agree with the one type of the leaf IR; a straight-line reassignment
    to another type does not, and is refused rather than typed differently."""
    ir = leaf_ir(retyped_in_loop)
    assert str(dict(ir.locals)["x"]) == "f64" and str(dict(ir.locals)["z"]) == "f64"
    with pytest.raises(LeafIRUnsupported, match="'x' read where Numba types it i64, while the leaf IR gives"):
        build(retyped_in_line)


def test_a_leaf_read_from_a_program_file_builds_without_running_its_code() -> None:
    """A body read back from the text form waits to run (``ir/moduletext.py``); building
    its IR resolves ``np`` from the text's own ``import numpy as np`` and runs nothing."""
    import example_modules
    from hpvm.ir.graph import LeafFunction, functions
    from hpvm.ir.parser import parse_program
    from hpvm.ir.printer import print_program

    stencil = example_modules.load("stencil")
    parsed = parse_program(print_program(stencil.root, bodies=True), file="stencil.hpvm")
    leaf = next(f for f in functions(parsed) if isinstance(f, LeafFunction))
    assert leaf.pending_code is not None
    ir = leaf_ir(leaf)
    assert leaf.pending_code is not None  # still not run
    assert "f32(0.25)" in print_leaf(ir)  # np.float32(0.25), np known from the text's import
    assert ir.file == "stencil.hpvm"  # lines are the program file's

    def unlined(text: str) -> str:
        return re.sub(r"(?m)^(\s*)\d+: ", r"\1", text.split("\n", 1)[1])

    assert unlined(print_leaf(ir)) == unlined(print_leaf(leaf_ir(stencil.jacobi_step)))


def test_tensor_and_llvm_bodies_are_refused() -> None:
    from hpvm.ir.bodies import LLVMBody, OpCall, Operand, TensorBody
    from hpvm.ir.graph import LeafFunction, Param

    a2 = hpvm.f32[:, :]
    tensor = TensorBody((OpCall("add", (Operand("param", 0), Operand("param", 1))),), (Operand("local", 0),))
    leaf = LeafFunction(None, "t", [Param("x", a2), Param("b", a2)], [a2], ins=("x", "b"), body=tensor)
    with pytest.raises(LeafIRUnsupported, match=r"the call 'hpvm\.tensor\.add\(x, b\)'"):
        build(leaf)
    llvm = LeafFunction(None, "l", [], [], body=LLVMBody("define void @l() { ret void }", "l"))
    with pytest.raises(LeafIRUnsupported, match="a llvm body without Python source"):
        build(llvm)
