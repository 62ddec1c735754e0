"""Replication sizes divide as Python does (``//``, ``%``: floored) and as the seed's LLVM
and HPVM-C do (``sdiv``/``srem``: truncated); a size whose value differs between the two is
refused — by the verifier when it reads no input, at launch on every back end otherwise —
and one where they agree runs (``ir/expr.py``, "Division")."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hpvm
from hpvm.errors import LaunchError, VerificationError
from hpvm.ir.expr import BinOp, Call, Const, Param, divides, truncated
from hpvm.ir.parser import parse_program
from markers import fails

pytestmark = pytest.mark.usefixtures("hpvm_runtime")

numbers = st.integers(-(10**6), 10**6)
nonzero = numbers.filter(lambda b: b != 0)


@given(a=numbers, b=nonzero)
def test_truncated_division_is_llvms_sdiv_and_srem(a: int, b: int) -> None:
    """LangRef: sdiv rounds toward zero; srem's result has the sign of the dividend."""
    quotient = math.trunc(Fraction(a, b))
    assert truncated(BinOp("//", Const(a), Const(b)), {}) == quotient
    remainder = truncated(BinOp("%", Const(a), Const(b)), {})
    assert remainder == a - b * quotient and (remainder == 0 or (remainder < 0) == (a < 0))


@given(a=st.integers(0, 10**6), b=st.integers(1, 10**6), c=numbers)
def test_the_two_agree_without_negative_operands(a: int, b: int, c: int) -> None:
    for op in ("//", "%"):
        expr = BinOp("+", BinOp(op, Param("a"), Param("b")), Call("max", (Param("c"), Const(0))))
        env = {"a": a, "b": b, "c": c}
        assert truncated(expr, env) == expr.evaluate(env)


def test_only_sizes_that_divide_are_checked() -> None:
    assert not divides(BinOp("-", Param("n"), Const(3)))
    assert divides(Call("min", (Param("n"), BinOp("%", Param("n"), Const(3)))))


@hpvm.leaf(outs=("a",))
def mark(a: hpvm.i64[:]):
    a[hpvm.get_node_instance_id_x(hpvm.get_node())] += 1


@hpvm.internal
def rounded_root(a: hpvm.i64[:], n: hpvm.i64):
    node = hpvm.create_node_1d(mark, (n - 3) // 2 + 5)
    hpvm.bind_in(node, 0, 0)


@hpvm.internal
def clamped_root(a: hpvm.i64[:], n: hpvm.i64):
    node = hpvm.create_node_1d(mark, hpvm.size_max(0, (n - 8) // 4))
    hpvm.bind_in(node, 0, 0)


@hpvm.internal
def nested_inner(a: hpvm.i64[:], n: hpvm.i64):
    node = hpvm.create_node_1d(mark, (n - 3) // 2 + 5)
    hpvm.bind_in(node, 0, 0)


@hpvm.internal
def nested_root(a: hpvm.i64[:], n: hpvm.i64):
    node = hpvm.create_node(nested_inner)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


def _marks(root, n: int, target: str) -> np.ndarray:  # type: ignore[no-untyped-def]
    a = np.zeros(12, np.int64)
    hpvm.track_memory(a)
    try:
        hpvm.wait(hpvm.launch(root, (a, n), target=target))
    finally:
        hpvm.untrack_memory(a)
    return a


@pytest.mark.parametrize("target", ["cpu", "interp"])
@pytest.mark.parametrize("root", [rounded_root, nested_root], ids=["launched", "nested"])
def test_a_size_that_rounds_differently_is_refused_on_every_back_end(root, target: str) -> None:  # type: ignore[no-untyped-def]
    """``(n - 3) // 2 + 5`` at n = 0: 3 in Python, 4 with LLVM's division (the root's child
    is sized by the launch; a nested one by the graph's own code on ``cpu``)."""
    with fails(LaunchError, "node 'mark' (", "(n - 3) // 2 + 5", "rounds differently in Python"):
        _marks(root, 0, target)
    assert _marks(root, 7, target).sum() == 7  # (2 + 5: no negative operand)


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_a_clamped_size_where_both_agree_runs(target: str) -> None:
    for n, count in ((0, 0), (5, 0), (20, 3)):
        assert _marks(clamped_root, n, target).sum() == count


def test_a_constant_size_that_rounds_differently_is_refused_by_the_verifier() -> None:
    """(Python folds ``(0 - 1) % 2`` to 1 as a builder runs; IR text and LLVM keep it.)"""
    text = """# hpvm IR v1
leaf @mark(a: i64[:]) -> ()
internal @odd_root(a: i64[:]) {
  %mark = node @mark[(0 - 1) % 2]
  bind in 0 -> %mark.0
}
"""
    with fails(
        VerificationError, "replication size '(0 - 1) % 2'", "is 1 in Python but -1 in HPVM-C and LLVM"
    ):
        hpvm.verify(parse_program(text, file="odd.hpvm"))
    hpvm.verify(parse_program(text.replace("(0 - 1) % 2", "max(0, (0 - 8) // 4)"), file="clamped.hpvm"))
