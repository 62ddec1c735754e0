"""Property test: leaf arithmetic on the interpreter computes what Numba computes, in the
same types, on generated expressions over every scalar type leaves use.

Hypothesis draws expressions — binary and unary operators, comparisons, ``min``/``max``,
``abs``, ``int``/``float``/``round`` and ``math`` functions over one operand of each of the
eleven types and Python literals — and operand values over each type's whole range (NaN and
infinities included). Each example compiles the expressions with Numba
(``error_model="numpy"``, as the ``cpu`` back end compiles leaves) and runs them as the
interpreter runs a leaf (``arith_rewrite.typed_function``); results must have Numba's type
and value: exactly, except for floats after a ``math`` function (Python's libm and Numba's
may differ in the last bit).
"""

from __future__ import annotations

import linecache
import math
from itertools import count

import numpy as np
import pytest

from hpvm.backends.interp.arith_rewrite import typed_function
from hpvm.errors import SourceLocation
from hpvm.ir import numeric as nt
from hpvm.ir.graph import LeafFunction
from hpvm.ir.types import SCALAR_TYPES

numba = pytest.importorskip("numba")
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

TYPES = [t.dtype for t in SCALAR_TYPES.values()]  # every scalar type of a port
PARAMS = [f"v{k}" for k in range(len(TYPES))]
LITERALS = [0, 1, 2, -3, 7, 255, 100_000, 2**40, 0.5, -2.25, 1e10, 3.0, True, False]
MATH1 = ["sqrt", "exp", "log", "floor", "ceil", "sin"]
# A float converted to an integer: NaN, infinities and values out of int64's range give
# INT64_MIN on the interpreter, and anything in compiled code (LLVM's poison value: Numba may
# constant-fold it to any number). Such results are not compared.
CONVERSIONS = ("int(", "round(", "math.floor(", "math.ceil(")
# Not math.hypot: Numba converts a uint64 argument above 2**63 as if it were signed when the
# other is unsigned or a bool; not math.copysign: the sign of a NaN (0.0 ** 0.5 of a
# negative...) is unspecified. Their types are checked in test_numeric_rules.py.
MATH2 = ["pow", "atan2"]
_SERIAL = count()


@st.composite
def arithmetic(draw, depth: int = 3) -> tuple[str, np.dtype]:
    """An expression without math functions, and its type under ``ir/numeric``'s rules
    (used only to keep to what Numba compiles: no shifts of floats...)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        k = draw(st.integers(0, len(TYPES) + 3))
        if k < len(TYPES):
            return PARAMS[k], TYPES[k]
        literal = draw(st.sampled_from(LITERALS))
        return repr(literal), nt.value_type(literal)
    kind = draw(st.sampled_from(["binary"] * 5 + ["unary", "compare", "call"]))
    # Comparisons of operands alone: Numba's signed integer arithmetic is "no signed wrap"
    # to LLVM, which may then decide `a < a - b` as `b > 0` when a - b overflows.
    a, ta = draw(arithmetic(0 if kind == "compare" else depth - 1))
    if kind == "unary":
        op = draw(st.sampled_from(["-", "+", "~", "abs"]))
        if op == "~" and ta.kind == "f":
            op = "-"
        if op == "abs":
            # Of an operand alone, for the same reason: LLVM may fold `abs(a - 1)` assuming
            # `a - 1` does not wrap (a = INT64_MIN gave -(2**63 - 1) where wrapping gives 2**63 - 1).
            a, ta = draw(arithmetic(0))
            return f"abs({a})", nt.abs_type(ta)
        return f"({op}{a})", nt.unary_type(op, ta)
    b, tb = draw(arithmetic(0 if kind == "compare" else depth - 1))
    if kind == "compare":
        op = draw(st.sampled_from(["<", "<=", "==", "!=", ">"]))
        # (an integer beyond 2**53 compared with a float differs: see semantics.md §7)
        if ta.kind == "f" and tb.kind in "iu" and tb != nt.BOOL:
            b = f"float({b})"
        elif tb.kind == "f" and ta.kind in "iu" and ta != nt.BOOL:
            a = f"float({a})"
        return f"({a} {op} {b})", nt.BOOL
    if kind == "call":
        name = draw(st.sampled_from(["min", "max", "int", "float", "round"]))
        if name in ("min", "max"):
            return f"{name}({a}, {b})", nt.promote(ta, tb)
        if name == "round" or (ta.kind == "f" and name == "int"):
            # conversions through float64 to an integer only at the top (see CONVERSIONS)
            name = "float" if ta.kind == "f" else "int"
        if name == "float" and ta == nt.BOOL:
            name = "int"  # float(bool): Numba refuses it
        rule = {"int": nt.int_type, "float": nt.float_type, "round": lambda t: nt.INT64}[name]
        return f"{name}({a})", rule(ta)
    op = draw(st.sampled_from(nt.BINARY_OPS))
    if nt.binary_type(op, ta, tb) is None:  # bitwise operators and shifts of floats
        op = "+"
    if op in ("<<", ">>"):
        b, tb = f"({b} & 31)", nt.binary_type("&", tb, nt.INT64)  # a defined shift count
    elif op == "**" and tb.kind != "f":
        b, tb = f"({b} & 7)", nt.binary_type("&", tb, nt.INT64)  # (0 ** -1 differs: see docs)
        if ta.kind != "f":  # no overflow: LLVM may assume Numba's integer power never overflows
            a, ta = f"(({a} & 255) - 128)", nt.INT64
    return f"({a} {op} {b})", nt.binary_type(op, ta, tb)


@st.composite
def expressions(draw) -> str:
    """An arithmetic expression, possibly under one math function (only at the top, so that
    a last-bit difference of libm is not amplified by later operations)."""
    expr, t = draw(arithmetic())
    wrap = draw(st.sampled_from([None] * 3 + MATH1 + MATH2 + ["int", "round"]))
    if wrap is None:
        return expr
    if wrap in ("int", "round"):
        return f"{wrap}({expr})"
    # (Numba's math functions mishandle bool arguments: copysign(x, False) can be negative)
    expr = f"int({expr})" if t == nt.BOOL else expr
    if wrap in MATH1:
        return f"math.{wrap}({expr})"
    other, t = draw(arithmetic(1))
    if wrap == "pow" and t.kind != "f":
        other = f"({other} & 7)"  # (0 ** -1 differs: see docs)
    elif t == nt.BOOL:
        other = f"int({other})"
    return f"math.{wrap}({expr}, {other})"


def _operand(dtype: np.dtype):
    if dtype.kind == "b":
        return st.booleans().map(np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        edges = st.sampled_from([info.min, info.max, 0, 1, -1 if dtype.kind == "i" else 2])
        return st.one_of(edges, st.integers(int(info.min), int(info.max))).map(dtype.type)
    return st.floats(width=8 * dtype.itemsize).map(dtype.type)


rows = st.tuples(*(_operand(t) for t in TYPES))


def _compile(exprs: list[str]):
    """The expressions as a Numba function and as the interpreter's leaf function."""
    source = f"def semantics({', '.join(PARAMS)}):\n    return ({', '.join(exprs)},)\n"
    filename = f"<numba-arithmetic-{next(_SERIAL)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"math": math}
    exec(compile(source, filename, "exec"), namespace)
    pyfunc = namespace["semantics"]
    compiled = numba.njit(error_model="numpy")(pyfunc)
    compiled.compile(tuple(numba.from_dtype(t) for t in TYPES))
    types = [str(numba.types.unliteral(t)) for t in compiled.nopython_signatures[0].return_type]
    leaf = LeafFunction(pyfunc, "semantics", [], [], location=SourceLocation(filename, 1), source=source)
    return compiled, typed_function(leaf), types


def _same(got, want, typename: str, approximate: bool) -> bool:
    got, want = float(got) if typename.startswith("float") else int(got), want
    if typename.startswith("float"):
        want = float(want)
        if math.isnan(want) or math.isnan(got):
            return math.isnan(want) and math.isnan(got)
        if approximate and math.isfinite(want):
            tol = 2e-7 if typename == "float32" else 1e-14
            return got == pytest.approx(want, rel=tol, abs=tol)
        return got == want
    return got == int(want)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(expressions(), min_size=1, max_size=6), st.lists(rows, min_size=1, max_size=4))
def test_interpreter_arithmetic_is_numbas(exprs, values):
    try:
        compiled, interpreted, types = _compile(exprs)
    except numba.core.errors.TypingError:
        assume(False)  # an expression Numba refuses (the generator keeps this rare)
    for row in values:
        want = compiled(*row)
        with np.errstate(all="ignore"):
            got = interpreted(*row)
        for expr, g, w, t in zip(exprs, got, want, types):
            assert str(nt.value_type(g)) == t, (expr, row, g, w)
            if expr.startswith(CONVERSIONS) and (g == nt.INT64_MIN or (t == "uint64" and int(g) >= 2**63)):
                continue  # an undefined conversion (see CONVERSIONS; a uint64 past 2**63 goes
                # through float64 in Numba's math.floor/ceil and back: out of range, poison)
            assert _same(g, w, t, "math." in expr), (expr, row, g, w)
