"""``ir/numeric.py`` is Numba's typing, checked operation by operation and type by type.

Each test types one function with Numba over every pair (or every one) of the eleven scalar
types leaves compute with, one statement per pair, and compares the type Numba's type
inference gives each statement's result with the rule's. Typing only (no code generation),
one function per operation, keeps this fast; what Numba refuses is checked on a few pairs.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from hpvm.ir import numeric as nt
from hpvm.ir.types import SCALAR_TYPES

numba = pytest.importorskip("numba")
from numba.core import compiler, registry  # noqa: E402
from numba.core.typed_passes import type_inference_stage  # noqa: E402

TYPES = [t.dtype for t in SCALAR_TYPES.values()]  # every scalar type of a port
PARAMS = [f"v{k}" for k in range(len(TYPES))]
PAIRS = list(itertools.product(range(len(TYPES)), repeat=2))


def numba_types(statements: dict[str, str], arrays: bool = False) -> dict[str, str]:
    """The types Numba gives ``name = expression`` statements over parameters ``v0``… of the
    eleven types (``a0``… arrays of them as well, when ``arrays``)."""
    params = PARAMS + ([f"a{k}" for k in range(len(TYPES))] if arrays else [])
    body = "".join(f"    {name} = {expr}\n" for name, expr in statements.items())
    namespace = {"math": math, "np": np}
    exec(f"def f({', '.join(params)}):\n{body}    return 0\n", namespace)
    scalars = [numba.from_dtype(t) for t in TYPES]
    args = tuple(scalars + ([numba.types.Array(t, 1, "C") for t in scalars] if arrays else []))
    target = registry.cpu_target
    target.typing_context.refresh()
    target.target_context.refresh()
    typed = type_inference_stage(
        target.typing_context, target.target_context, compiler.run_frontend(namespace["f"]), args, None
    )
    return {name: str(typed.typemap[name]) for name in statements}


def assert_rule(statements: dict[str, str], rule: dict[str, np.dtype | str], arrays: bool = False) -> None:
    got = numba_types(statements, arrays)
    wrong = {statements[n]: (got[n], str(rule[n])) for n in statements if got[n] != str(rule[n])}
    assert not wrong, f"(numba, rule) differ: {wrong}"


def compile_fails(expression: str, *types: np.dtype) -> bool:
    namespace: dict = {}
    exec(f"def f(x, y):\n    return {expression}\n", namespace)
    try:
        numba.njit(namespace["f"]).compile(tuple(numba.from_dtype(t) for t in types))
    except numba.core.errors.TypingError:
        return True
    return False


@pytest.mark.parametrize("op", nt.BINARY_OPS)
def test_binary_operators(op):
    statements, rule = {}, {}
    for i, j in PAIRS:
        result = nt.binary_type(op, TYPES[i], TYPES[j])
        if result is not None:
            statements[f"r{i}_{j}"] = f"v{i} {op} v{j}"
            rule[f"r{i}_{j}"] = result
    assert_rule(statements, rule)


@pytest.mark.parametrize("op", ["<<", "&", "^"])
def test_bitwise_operators_and_shifts_refuse_floats(op):
    assert nt.binary_type(op, nt.FLOAT32, nt.INT32) is None
    assert compile_fails(f"x {op} y", nt.FLOAT32, nt.INT32)
    assert compile_fails(f"x {op} y", nt.INT64, nt.FLOAT64)


def test_literals_are_int64_float64_and_bool():
    statements = {}
    for k in range(len(TYPES)):
        statements[f"i{k}"] = f"v{k} * 3"
        statements[f"f{k}"] = f"v{k} + 0.5"
        statements[f"b{k}"] = f"v{k} - True"
    rule = {}
    for k, t in enumerate(TYPES):
        rule[f"i{k}"] = nt.binary_type("*", t, nt.value_type(3))
        rule[f"f{k}"] = nt.binary_type("+", t, nt.value_type(0.5))
        rule[f"b{k}"] = nt.binary_type("-", t, nt.value_type(True))
    assert_rule(statements, rule)
    assert nt.value_type(2**63) == nt.UINT64


def test_unary_operators():
    statements, rule = {}, {}
    for op, name in (("-", "neg"), ("+", "pos"), ("~", "inv")):
        for k, t in enumerate(TYPES):
            result = nt.unary_type(op, t)
            if result is not None:
                statements[f"{name}{k}"] = f"{op}v{k}"
                rule[f"{name}{k}"] = result
    assert_rule(statements, rule)
    assert nt.unary_type("~", nt.FLOAT64) is None and compile_fails("~x", nt.FLOAT64, nt.FLOAT64)


# Typing min, max and conditional values is slow in Numba: a sample of the pairs.
SOME = [k for k, t in enumerate(TYPES) if t.name in ("bool", "int8", "int32", "uint16", "uint64", "float32")]
SOME_PAIRS = list(itertools.product(SOME, repeat=2))


def test_min_max_and_conditional_values_promote_without_widening():
    statements, rule = {}, {}
    for i, j in SOME_PAIRS:
        statements[f"lo{i}_{j}"] = f"min(v{i}, v{j})"
        statements[f"hi{i}_{j}"] = f"max(v{i}, v{j})"
        statements[f"if{i}_{j}"] = f"v{i} if v0 else v{j}"
        for name in ("lo", "hi", "if"):
            rule[f"{name}{i}_{j}"] = nt.promote(TYPES[i], TYPES[j])
    assert_rule(statements, rule)


MATH1 = "sqrt exp log log10 sin atan tanh erf gamma lgamma fabs degrees exp2".split()


def test_math_functions_keep_float32():
    statements, rule = {}, {}
    for k, t in enumerate(TYPES):
        for name in MATH1:
            statements[f"{name}{k}"] = f"math.{name}(v{k})"
            rule[f"{name}{k}"] = nt.math_type(t)
        for name in ("floor", "ceil", "trunc"):
            statements[f"{name}{k}"] = f"math.{name}(v{k})"
            rule[f"{name}{k}"] = nt.floor_type(t)
        statements[f"int{k}"] = f"int(v{k})"
        rule[f"int{k}"] = nt.int_type(t)
        statements[f"round{k}"] = f"round(v{k})"
        rule[f"round{k}"] = nt.INT64
        statements[f"abs{k}"] = f"abs(v{k})"
        rule[f"abs{k}"] = nt.abs_type(t)
        if t != nt.BOOL:  # float(True): Numba refuses it
            statements[f"float{k}"] = f"float(v{k})"
            rule[f"float{k}"] = nt.float_type(t)
    assert_rule(statements, rule)


@pytest.mark.parametrize("name", ["pow", "atan2", "hypot", "copysign"])
def test_math_functions_of_two_arguments(name):
    statements = {f"r{i}_{j}": f"math.{name}(v{i}, v{j})" for i, j in PAIRS}
    rule = {f"r{i}_{j}": nt.math2_type(name, TYPES[i], TYPES[j]) for i, j in PAIRS}
    assert_rule(statements, rule)


@pytest.mark.parametrize("op", ["+", "*", "/", "//", "**", "&"])
def test_array_operations_use_numbas_ufunc_loop(op):
    ufunc = {"+": np.add, "*": np.multiply, "/": np.true_divide, "//": np.floor_divide}.get(op)
    ufunc = ufunc or {"**": np.power, "&": np.bitwise_and}[op]
    statements, rule = {}, {}
    for i, j in PAIRS:
        for name, expr, operands in (
            ("aa", f"a{i} {op} a{j}", (TYPES[i], TYPES[j])),
            ("as", f"a{i} {op} v{j}", (TYPES[i], TYPES[j])),
            ("al", f"a{i} {op} 2", (TYPES[i], nt.INT64)),
            ("af", f"a{i} {op} 2.5", (TYPES[i], nt.FLOAT64)),
        ):
            loop = nt.ufunc_loop(ufunc, operands)
            key = f"{name}{i}_{j}"
            if loop is not None and key not in statements:
                statements[key] = expr
                rule[key] = f"array({np.dtype(loop[-1])}, 1d, C)"
    assert_rule(statements, rule, arrays=True)


def test_float_to_int_conversions():
    assert nt.float_to_int(-2.7) == -2 and nt.float_to_int(2.7) == 2
    for x in (math.nan, math.inf, -math.inf, 1e30):
        assert nt.float_to_int(x) == nt.INT64_MIN

    @numba.njit
    def convert(x):
        return int(x)

    for x in (-2.7, 2.7, 1e30, -1e30, math.inf, math.nan):
        assert convert(x) == nt.float_to_int(x)
