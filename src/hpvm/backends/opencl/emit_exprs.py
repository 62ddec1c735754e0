"""Scalar expressions of the leaf IR as OpenCL C: constants, variables, operators,
comparisons, ``and``/``or``, conditional expressions, conversions and function calls.

Why it reads types and does not infer them: every expression of the leaf IR carries the type
Numba gives it (``ir/leafir/rules.py``), so this module only spells each operation in C with
Python's semantics where C's differ (floor division and modulo, integer powers, ``min``/
``max``, narrow negation: ``helpers.py``). What it adds is the back end's own fact, a lower
bound of each integer value, so that indices known to be non-negative skip the wrap.
"""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any

import numpy as np

from ...ir import numeric as nt
from ...ir.leafir import ops
from ...ir.types import ScalarType
from . import cltypes as ct
from .functions import math_function
from .values import Val, cast, constant, simple, strip_parens

_ARITH = {"+", "-", "*"}
_BITS = {"&", "|", "^", "<<", ">>"}


def _dtype(e: ops.Expr) -> np.dtype:
    assert isinstance(e.type, ScalarType)
    return e.type.dtype


def _product(a: Any, b: Any) -> Any:
    return a * b if a is not None and b is not None and a >= 0 and b >= 0 else None


def _cast_lb(src: np.dtype, dst: np.dtype, lb: Any) -> Any:
    """A conversion keeps a value's lower bound when it cannot wrap a non-negative value
    negative: to a float, or to a signed integer at least as wide (a float to int64 too)."""
    if lb is None or lb < 0:
        return None
    if ct.is_float(dst) or dst.kind == "u":
        return lb
    if dst.kind == "i" and (src.itemsize <= dst.itemsize if src.kind != "u" else src.itemsize < dst.itemsize):
        return lb
    if dst == ct.I64 and ct.is_float(src):
        return lb
    return None


def _converted(value: Any, dtype: np.dtype) -> Any:
    """A constant converted to ``dtype`` as NumPy converts it, or None where that gives no
    number (``int(math.inf)``, NaN to an integer: left to the device)."""
    if value is None:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = dtype.type(value).item()
        except (OverflowError, ValueError):
            return None
    return result


def _truth(code: str, dtype: np.dtype) -> str:
    """``code`` as a condition: OpenCL C's ``?:`` takes no float condition, so a float is
    compared with zero (as Python's truth of it)."""
    return f"({code} != 0)" if ct.is_float(dtype) else code


class ExprEmitter:
    """The expression half of the emitter (mixed into ``emit_stmts.LeafEmitter``, which holds
    the state: ``helpers``, ``lower``, ``used_types``, ``tmp``...)."""

    # set by LeafEmitter
    helpers: Any
    in_condition: bool
    used_types: list[np.dtype]

    def expr(self, e: ops.Expr, truth: bool = False) -> Any:
        """``e`` as a ``Val`` (a scalar), a ``View`` (an array) or a ``Handle``."""
        if isinstance(e, ops.BoolOp):
            v: Any = self._boolop(e, truth)
        else:
            method = getattr(self, f"_expr_{type(e).__name__}")
            v = method(e)
        if isinstance(v, Val) and v.const is None:  # constants are written in the type they are cast to
            self.used_types.append(v.dtype)
        return v

    def scalar(self, e: ops.Expr, truth: bool = False) -> Val:
        v = self.expr(e, truth)
        if not isinstance(v, Val):
            raise self.fail_at(f"{self.describe(v)} where a scalar is needed")
        return v

    def condition(self, e: ops.Expr) -> str:
        self.in_condition = True
        try:
            v = self.scalar(e, truth=True)
        finally:
            self.in_condition = False
        return strip_parens(_truth(v.code, v.dtype))

    # -- leaves of expressions ---------------------------------------------------------------

    def _expr_Const(self, e: ops.Const) -> Val:
        return constant(e.value, _dtype(e))

    def _expr_Cast(self, e: ops.Cast) -> Val:
        v = self.scalar(e.value)
        dtype = _dtype(e)
        value = _converted(v.const, dtype)
        if value is not None:
            return Val(
                cast(v, dtype), dtype, value if dtype.kind != "f" or value >= 0 else None, value, v.effects
            )
        return Val(cast(v, dtype), dtype, _cast_lb(v.dtype, dtype, v.lb), effects=v.effects)

    # -- operators -------------------------------------------------------------------------------

    def _expr_Unary(self, e: ops.Unary) -> Val:
        v = self.scalar(e.operand)
        t = _dtype(e)
        if e.op == "not":
            const = None if v.const is None else not v.const
            return Val(f"(!{v.code})", ct.BOOL, 0, const, v.effects)
        if e.op == "~":
            if v.dtype == ct.BOOL and t == ct.BOOL:
                return Val(f"(!{v.code})", ct.BOOL, 0, None, v.effects)
            if v.dtype == ct.BOOL:  # ~True is -2 (Numba types a bool literal as an int here)
                return Val(f"(~{cast(v, t)})", t, None, None, v.effects)
            return Val(self._narrow_unary("~", v, t), t, None, None, v.effects)
        if e.op == "+":
            return Val(cast(v, t), t, v.lb, v.const, v.effects)
        const = -v.const if v.const is not None and not isinstance(v.const, bool) else None
        if const is not None and t == ct.I64 and -(2**63) <= const < 2**63:
            return constant(const, t)
        if v.dtype == ct.BOOL:
            return Val(f"(-{cast(v, t)})", t, None, const, v.effects)
        if ct.is_int(v.dtype):
            return Val(self._narrow_unary("-", v, t), t, None, const, v.effects)
        return Val(f"(-{v.code})", t, None, const, v.effects)

    @staticmethod
    def _narrow_unary(op: str, v: Val, wide: np.dtype) -> str:
        """Numba applies ``-`` and ``~`` in the operand's own width, then widens to 64 bits
        (``-int32(-2**31)`` stays ``-2**31``; ``~uint8(1)`` is 254)."""
        if v.dtype == wide:
            return f"({op}{v.code})"
        if op == "-" and v.dtype == ct.I32:
            # negate in unsigned arithmetic: ``-INT_MIN`` on an int is undefined in C, and
            # PoCL's LLVM folds ``(long)(int)(-c)`` into ``-(long)c`` (2**31, not -2**31)
            return f"(({ct.c_name(wide)})({ct.c_name(v.dtype)})(0u - (uint)({v.code})))"
        return f"(({ct.c_name(wide)})({ct.c_name(v.dtype)})({op}{v.code}))"

    def _expr_Binary(self, e: ops.Binary) -> Val:
        return self.binop(e.op, self.scalar(e.left), self.scalar(e.right), _dtype(e))

    def binop(self, op: str, left: Val, right: Val, t: np.dtype) -> Val:
        effects = left.effects or right.effects
        both = left.nonneg and right.nonneg
        a, b = cast(left, t), cast(right, t)
        if op in _ARITH:
            lb = None
            if ct.is_integral(t) and left.lb is not None:
                if op == "+" and right.lb is not None:
                    lb = left.lb + right.lb
                elif op == "-" and isinstance(right.const, int) and not isinstance(right.const, bool):
                    lb = left.lb - right.const
                elif op == "*":
                    lb = _product(left.lb, right.lb)
            if lb is None and both and op != "-":
                lb = 0
            return Val(f"({a} {op} {b})", t, lb, effects=effects)
        if op == "/":
            return Val(f"({a} / {b})", t, 0 if both else None, effects=effects)
        if op in ("//", "%"):
            which = "floordiv" if op == "//" else "mod"
            fn = self.helpers.divmod(which, ct.c_name(t))
            nonneg = right.nonneg and (which == "mod" or left.nonneg)
            return Val(f"{fn}({a}, {b})", t, 0 if nonneg else None, effects=effects)
        if op == "**":
            return self._power(left, right, t, effects)
        if op in _BITS:
            if left.dtype == ct.BOOL and right.dtype == ct.BOOL and t == ct.BOOL:
                return Val(f"(({left.code}) {op} ({right.code}))", ct.BOOL, 0, effects=effects)
            nonneg = both or (op == "&" and (left.nonneg or right.nonneg)) or (op == ">>" and left.nonneg)
            return Val(f"({a} {op} {b})", t, 0 if nonneg else None, effects=effects)
        raise AssertionError(op)

    def _power(self, left: Val, right: Val, t: np.dtype, effects: bool) -> Val:
        if ct.is_integral(t):
            fn = self.helpers.ipow(ct.c_name(t))
            return Val(
                f"{fn}({cast(left, t)}, {cast(right, t)})", t, 0 if left.nonneg else None, effects=effects
            )
        if ct.is_integral(right.dtype):
            if right.const in (2, 3) and not isinstance(right.const, bool) and simple(left.code):
                x = cast(left, t)
                return Val(f"({x} * {x}{' * ' + x if right.const == 3 else ''})", t, effects=effects)
            return Val(f"pown({cast(left, t)}, (int)({right.code}))", t, effects=effects)
        return Val(f"pow({cast(left, t)}, {cast(right, t)})", t, effects=effects)

    def _expr_Compare(self, e: ops.Compare) -> Val:
        parts = []
        left = self.scalar(e.operands[0])
        effects = left.effects
        for op, operand in zip(e.ops, e.operands[1:]):
            right = self.scalar(operand)
            t = nt.promote(left.dtype, right.dtype)
            if t == ct.BOOL and op not in ("==", "!="):
                t = ct.I64
            parts.append(f"({cast(left, t)} {op} {cast(right, t)})")
            effects = effects or right.effects
            left = right
        code = parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"
        return Val(code, ct.BOOL, 0, effects=effects)

    def _boolop(self, e: ops.BoolOp, truth: bool) -> Val:
        values = [self.scalar(v, truth=True) for v in e.values]
        sym = "&&" if e.op == "and" else "||"
        effects = any(v.effects for v in values)
        if truth or all(v.dtype == ct.BOOL for v in values):
            code = "(" + f" {sym} ".join(f"({v.code})" for v in values) + ")"
            return Val(code, ct.BOOL, 0, effects=effects)
        # A value context: Python gives one of the operands.
        t = _dtype(e)
        result = values[-1]
        code = cast(result, t)
        for v in reversed(values[:-1]):
            x = self.tmp(v.dtype, v.code) if v.effects else v.code
            xv = Val(x, v.dtype)
            if sym == "&&":
                code = f"({_truth(x, v.dtype)} ? {code} : {cast(xv, t)})"
            else:
                code = f"({_truth(x, v.dtype)} ? {cast(xv, t)} : {code})"
        return Val(code, t, 0 if all(v.nonneg for v in values) else None)

    def _expr_IfExp(self, e: ops.IfExp) -> Val:
        cond = self.condition(e.test)
        a, b = self.scalar(e.body), self.scalar(e.orelse)
        t = _dtype(e)
        lb = min(a.lb, b.lb) if a.lb is not None and b.lb is not None else None
        return Val(f"({cond} ? {cast(a, t)} : {cast(b, t)})", t, lb, effects=a.effects or b.effects)

    # -- calls -----------------------------------------------------------------------------------

    def _expr_Call(self, e: ops.Call) -> Val:
        args = [self.scalar(a) for a in e.args]
        effects = any(a.effects for a in args)
        t = _dtype(e)
        module, _, name = e.func.rpartition(".")
        if not module and name in ("min", "max"):
            fn = self.helpers.minmax(name, ct.c_name(t))
            code = cast(args[0], t)
            for a in args[1:]:
                code = f"{fn}({code}, {cast(a, t)})"
            nonneg = all(a.nonneg for a in args) if name == "min" else any(a.nonneg for a in args)
            return Val(code, t, 0 if nonneg else None, effects=effects)
        if not module and name == "round":
            v = args[0]
            if ct.is_integral(v.dtype):
                return Val(cast(v, t), t, v.lb, effects=effects)
            return Val(f"((long)rint({v.code}))", t, 0 if v.nonneg else None, effects=effects)
        obj = getattr(builtins if not module else (math if module == "math" else np), name, None)
        fn = math_function(obj)
        if fn is None:
            raise self.fail_at(f"the function {e.func}() is not supported in OpenCL leaves")
        v = args[0]
        if fn.kind == "float" and ct.is_integral(t):
            # NumPy's integer loops of floor, ceil, trunc and rint: the integer itself
            if fn.cname not in ("floor", "ceil", "trunc", "rint"):
                raise self.fail_at(f"{e.func}() giving {e.type} is not supported in OpenCL leaves")
            return Val(cast(v, t), t, v.lb, effects=effects)
        if fn.kind == "float":
            nonneg = fn.cname in ("sqrt", "exp", "fabs", "exp2")
            return Val(f"{fn.cname}({cast(v, t)})", t, 0 if nonneg else None, effects=effects)
        if fn.kind == "to_int":
            if ct.is_integral(v.dtype):
                return Val(cast(v, t), t, v.lb, effects=effects)
            return Val(f"(({ct.c_name(t)}){fn.cname}({v.code}))", t, 0 if v.nonneg else None, effects=effects)
        if fn.kind == "same":
            if ct.is_float(t):
                return Val(f"fabs({cast(v, t)})", t, 0, effects=effects)
            if t.kind == "u":
                return Val(cast(v, t), t, 0, effects=effects)
            return Val(f"(({ct.c_name(t)})abs({cast(v, t)}))", t, 0, effects=effects)
        if fn.kind == "predicate":
            if not ct.is_float(v.dtype):
                return Val("true" if fn.cname == "isfinite" else "false", ct.BOOL, 0)
            return Val(f"({fn.cname}({v.code}) != 0)", ct.BOOL, 0, effects=effects)
        if fn.kind == "float2":
            code = f"{fn.cname}({cast(args[0], t)}, {cast(args[1], t)})"
            return Val(code, t, 0 if fn.cname == "hypot" else None, effects=effects)
        raise AssertionError(fn.kind)
