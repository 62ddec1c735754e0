"""Tensor leaves in LLVM form: seed 001's ``llvm.hpvm.tensor.*`` calls, exported and imported
back as tensor bodies that run on ``interp`` and ``tensor`` with the original's results;
a leaf mixing tensor calls with other code is a located ``LLVMImportError``."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import llvmlite.binding as llvm_binding
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm import llvm
from hpvm.ir.bodies import OpCall, Operand, TensorBody
from hpvm.ir.graph import ChildGraph, InputBind, InternalFunction, LeafFunction, Node, OutputBind
from hpvm.ir.graph import Param as Port
from hpvm.ir.printer import print_program
from hpvm.ir.tensorops.body import parse_tensor_leaf
from hpvm.ir.types import ArrayType, f32, i64

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tensor"))
import tensor_programs as tp  # noqa: E402

from markers import fails, needs_backend  # noqa: E402

PROGRAMS = [(tp.lenet_like, tp.lenet_inputs), (tp.everything, tp.everything_inputs)]


def _leaves(root: InternalFunction) -> dict[str, LeafFunction]:
    found: dict[str, LeafFunction] = {}

    def walk(fn: InternalFunction) -> None:
        for node in fn.graph.nodes:
            if isinstance(node.function, LeafFunction):
                found[node.function.name] = node.function
            else:
                walk(node.function)

    walk(root)
    return found


@pytest.mark.parametrize("root, inputs", PROGRAMS, ids=lambda v: getattr(v, "name", ""))
def test_tensor_programs_come_back_as_the_same_operations(root, inputs) -> None:
    text = llvm.to_hpvm_ir(root)
    llvm_binding.parse_assembly(text).verify()
    assert "call ptr @llvm.hpvm.tensor.convolution(" in text or "@llvm.hpvm.tensor.group.convolution(" in text
    back = llvm.from_hpvm_ir(text)
    assert print_program(back) == print_program(root)
    for name, leaf in _leaves(back).items():
        assert isinstance(leaf.body, TensorBody), name
        original = parse_tensor_leaf(_leaves(root)[name])
        assert (leaf.body.calls, leaf.body.returns) == (original.calls, original.returns), name


@pytest.mark.parametrize("target", ["interp", pytest.param("tensor", marks=needs_backend("tensor"))])
@pytest.mark.parametrize("root, inputs", PROGRAMS, ids=lambda v: getattr(v, "name", ""))
def test_imported_tensor_programs_compute_the_originals_results(root, inputs, target: str) -> None:
    want = tp.run(root, inputs(), "interp")
    got = tp.run(llvm.from_hpvm_ir(llvm.to_hpvm_ir(root)), inputs(), target)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_the_intrinsics_are_hpvms_names_with_hpvms_operand_types() -> None:
    text = llvm.to_hpvm_ir(tp.everything)
    assert re.search(r"declare ptr @llvm\.hpvm\.tensor\.pool\.min\(ptr, i32, i32, i32, i32, i32, i32\)", text)
    assert re.search(r"declare ptr @llvm\.hpvm\.tensor\.batchnorm\(ptr, ptr, ptr, ptr, ptr, double\)", text)
    assert re.search(r"declare ptr @llvm\.hpvm\.tensor\.clipped\.relu\(ptr, double, double\)", text)
    assert re.search(r"= trunc i64 %pad to i32", text)  # the i64 port passed as a pad


# -- generated chains of operations -------------------------------------------------------

_UNARY = ["relu", "tanh", "sigmoid", "softmax"]
_POOL = ["pool_max", "pool_min", "pool_mean"]
_op = st.one_of(
    st.tuples(st.sampled_from(_UNARY)),
    st.tuples(st.sampled_from(_POOL), st.lists(st.integers(0, 2**31 - 1), min_size=6, max_size=6)),
    st.tuples(
        st.just("clipped_relu"),
        st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=2, max_size=2),
    ),
)


def _chain_root(ops: list[tuple]) -> InternalFunction:
    calls = []
    for k, item in enumerate(ops):
        x = Operand("param", 0) if k == 0 else Operand("local", k - 1)
        extra = [Operand("const", v) for v in (item[1] if len(item) > 1 else [])]
        calls.append(OpCall(item[0], (x, *extra)))
    t4 = ArrayType(f32, 4)
    leaf = LeafFunction(
        None, "chain", [Port("x", t4), Port("k", i64)], [t4], ins=("x",),
        body=TensorBody(tuple(calls), (Operand("local", len(calls) - 1),)),
    )  # fmt: skip
    root = InternalFunction("root", [Port("x", t4), Port("k", i64)], graph=ChildGraph())
    node = Node("chain", leaf, ())
    root.graph.nodes.append(node)
    root.graph.in_binds += [InputBind(0, node, 0), InputBind(1, node, 1)]
    root.graph.out_binds.append(OutputBind(node, 0, 0))
    return root


@settings(max_examples=30, deadline=None)
@given(st.lists(_op, min_size=1, max_size=6))
def test_any_chain_of_operations_round_trips(ops) -> None:
    root = _chain_root(ops)
    back = llvm.from_hpvm_ir(llvm.to_hpvm_ir(root))
    body = back.graph.nodes[0].function.body
    original = root.graph.nodes[0].function.body
    assert isinstance(body, TensorBody)
    assert body.calls == original.calls and body.returns == original.returns
    assert [type(a.value) for c in body.calls for a in c.args] == [
        type(a.value) for c in original.calls for a in c.args
    ]


def test_a_constant_without_a_32_bit_form_is_an_export_error() -> None:
    root = _chain_root([("pool_max", [2**31, 2, 0, 0, 2, 2])])
    with fails(llvm.LLVMExportError, "leaf 'chain'", "2147483648", "pool_max", "i32"):
        llvm.to_hpvm_ir(root)


# -- import errors --------------------------------------------------------------------------


def _module(leaf_body: str) -> str:
    return f"""
declare ptr @llvm.hpvm.createNode(ptr)
declare void @llvm.hpvm.bind.input(ptr, i32, i32, i1)
declare void @llvm.hpvm.bind.output(ptr, i32, i32, i1)
declare ptr @llvm.hpvm.tensor.relu(ptr)
declare ptr @llvm.hpvm.tensor.add(ptr, ptr)
declare ptr @llvm.hpvm.tensor.frobnicate(ptr)
define {{ ptr, i64 }} @leaf(ptr "in" %x, i64 %bytes, float %s) {{
entry:
{leaf_body}
}}
define {{ ptr, i64 }} @root(ptr %x, i64 %bytes, float %s) {{
entry:
  %n = call ptr @llvm.hpvm.createNode(ptr @leaf)
  call void @llvm.hpvm.bind.input(ptr %n, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %n, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(ptr %n, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.output(ptr %n, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.output(ptr %n, i32 1, i32 1, i1 false)
  ret {{ ptr, i64 }} undef
}}
"""


def _ret(value: str) -> str:
    return (
        f"  %a = insertvalue {{ ptr, i64 }} undef, ptr {value}, 0\n"
        "  %b = insertvalue { ptr, i64 } %a, i64 0, 1\n  ret { ptr, i64 } %b"
    )


def test_a_c_front_ends_tensor_leaf_imports_as_a_tensor_body() -> None:
    root = llvm.from_hpvm_ir(_module("  %r = call ptr @llvm.hpvm.tensor.relu(ptr %x)\n" + _ret("%r")))
    body = root.graph.nodes[0].function.body
    assert body == TensorBody((OpCall("relu", (Operand("param", 0),)),), (Operand("local", 0),))


@pytest.mark.parametrize(
    "code, words",
    [
        (
            "  %r = call ptr @llvm.hpvm.tensor.relu(ptr %x)\n  %f = fadd float %s, 1.0\n" + _ret("%r"),
            ["@leaf", "'%f = fadd float %s, 1.000000e+00'", "holds only those calls"],
        ),
        (
            "  %r = call ptr @llvm.hpvm.tensor.frobnicate(ptr %x)\n" + _ret("%r"),
            ["@leaf", "llvm.hpvm.tensor.frobnicate", "calls only llvm.hpvm.tensor.* intrinsics"],
        ),
        (
            "  %r = call ptr @llvm.hpvm.tensor.relu(ptr %x)\n  %q = call ptr @llvm.hpvm.tensor.add(ptr %r, i64 %bytes)\n"
            + _ret("%q"),
            ["@leaf", "passes an array's size or extent to a tensor operation"],
        ),
    ],
)
def test_misused_tensor_intrinsics_are_located_import_errors(code: str, words: list[str]) -> None:
    text = _module(code)
    if "i64 %bytes)" in code:  # add(ptr, ptr) given an i64: declare the call's own type
        text = text.replace(
            "declare ptr @llvm.hpvm.tensor.add(ptr, ptr)", "declare ptr @llvm.hpvm.tensor.add(ptr, i64)"
        )
    with fails(llvm.LLVMImportError, *words):
        llvm.from_hpvm_ir(text)
