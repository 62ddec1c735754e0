"""HBIR's constant expressions (``consteval.py``): the checker's ``evaluate`` (which reports)
and the code generator's ``fold`` (which does not) give one value, and C's ``/`` and ``%``
keep C's identities."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hpvm.hbir import ast as A
from hpvm.hbir.consteval import c_div, c_rem, evaluate, fold

ENV: dict[str, Any] = {"N": 6, "M": -4, "F": 2.5, "B": True, "target.t.x_max": 4}

leaves = st.one_of(
    st.integers(-20, 20).map(A.IntLit),
    st.sampled_from([0.5, -1.25, 3.0]).map(A.FloatLit),
    st.booleans().map(A.BoolLit),
    st.sampled_from(["N", "M", "F", "B", "data.N", "target.t.x_max", "missing"]).map(
        lambda n: A.Ref(tuple(n.split(".")))
    ),
    st.just(A.StrLit("x")),  # not a constant expression
)
exprs = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.builds(A.Unary, st.sampled_from(["-", "!"]), inner),
        st.builds(
            A.Binary,
            st.sampled_from(["+", "-", "*", "/", "%", "&&", "||", "==", "!=", "<", "<=", ">", ">="]),
            inner,
            inner,
        ),
        st.builds(A.Cond, inner, inner, inner),
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(exprs)
def test_evaluate_and_fold_agree_and_evaluate_says_why_it_has_no_value(e: A.Expr) -> None:
    problems: list[str] = []
    try:
        folded: Any = fold(e, ENV)
    except (TypeError, ZeroDivisionError):  # % of floats and the like: the checker's types refuse them
        return
    value = evaluate(e, ENV, "the test", lambda node, message: problems.append(message))
    assert value == folded or (value != value and folded != folded)  # (NaN is not itself)
    assert (value is None) == bool(problems)


@given(st.integers(-(10**6), 10**6), st.integers(-(10**3), 10**3).filter(bool))
def test_c_division_truncates_and_the_remainder_takes_the_dividends_sign(a: int, b: int) -> None:
    q, r = c_div(a, b), c_rem(a, b)
    assert q * b + r == a
    assert abs(r) < abs(b) and (r == 0 or (r < 0) == (a < 0))
    assert abs(q) == abs(a) // abs(b)
