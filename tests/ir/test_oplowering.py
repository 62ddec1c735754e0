"""``ir/oplowering.lower_expression``: a leaf IR's opaque exception text, lowered to the
interpreter's Numba-typed operations, with the names it reads (the ``raise`` of a leaf run
from its IR, ``backends/interp/from_ir.py``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm.backends.interp.arith_rewrite import CALLS
from hpvm.ir.oplowering import lower_expression

ENV = {"LIMIT": np.int32(1), "UNREAD": object(), "np": np}


def _run(text: str, names: dict, local: dict):
    return eval(text, {**names}, local)


def test_the_lowered_text_computes_in_numbas_types_and_reads_only_what_it_names() -> None:
    text = 'ValueError(f"{x + LIMIT} {[k * 2 for k in range(n)]} {min(x, 3)}")'
    lowered, names = lower_expression(text, ENV, {"x", "n"}, CALLS)
    assert {k for k in names if not k.startswith("__hpvm_")} == {"LIMIT"}  # not UNREAD, x, n or k
    assert "__hpvm_op_add" in lowered and "__hpvm_op_mul" in lowered
    with np.errstate(all="ignore"):
        e = _run(lowered, names, {"x": np.int32(2**31 - 1), "n": 2})
    assert type(e) is ValueError and str(e) == "2147483648 [0, 2] 3"  # int32 + int32 is int64


def test_a_local_shadowing_a_module_name_is_read_as_the_local() -> None:
    lowered, names = lower_expression("LIMIT * 2", ENV, {"LIMIT"}, CALLS)
    assert "LIMIT" not in names and _run(lowered, names, {"LIMIT": 4}) == 8


LITERALS = ["3", "-2", "0.5", "7"]
TREES = st.recursive(
    st.sampled_from(["x", "y", "LIMIT", *LITERALS]),
    lambda inner: st.tuples(inner, st.sampled_from(["+", "-", "*", "//", "%", "/"]), inner),
    max_leaves=6,
)


def _text(tree) -> str:
    return tree if isinstance(tree, str) else f"({_text(tree[0])} {tree[1]} {_text(tree[2])})"


def _reference(tree, local: dict) -> tuple:
    """The tree's value computed with ``CALLS`` directly, and whether it is a constant that
    CPython's compiler folds (operations on literals alone: with Python's arithmetic)."""
    if isinstance(tree, str):
        folded = tree in LITERALS
        return (eval(tree) if folded else local.get(tree, ENV.get(tree))), folded
    (a, fa), (b, fb) = _reference(tree[0], local), _reference(tree[2], local)
    if fa and fb:
        try:
            value = eval(_text(tree))
            if type(value) in (int, float) and (type(value) is float or value.bit_length() <= 128):
                return value, True
        except ArithmeticError:
            pass
    return CALLS.binary[tree[1]](a, b), False


def _outcome(compute) -> tuple:
    try:
        value = compute()
    except ArithmeticError as e:
        return ("raised", type(e).__name__)
    return ("value", type(value).__name__, repr(value))


@settings(max_examples=60, deadline=None)
@given(TREES, st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1))
def test_lowering_computes_each_operator_with_the_tables_operation(tree, x: int, y: int) -> None:
    """The lowered text computes what the operations of ``CALLS`` compute, operator by
    operator (literals alone folded first, as CPython folds them), in their types."""
    local = {"x": np.int32(x), "y": y}
    lowered, names = lower_expression(_text(tree), ENV, {"x", "y"}, CALLS)
    with np.errstate(all="ignore"):
        got = _outcome(lambda: _run(lowered, names, local))
        want = _outcome(lambda: _reference(tree, local)[0])
    assert got == want, (_text(tree), lowered)
