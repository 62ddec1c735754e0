"""Constant expressions of HBIR: their values, with C's arithmetic, and the problems that
leave one without a value.

Why a module of its own: sizes, tile maps, placements, constants and globals' initial
values are all constant expressions, judged by the checker's parts (``evaluate``, which
reports) and folded again by the code generator (``fold``, which does not); both follow
the one ``binary`` below, so a value is the same wherever it is computed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import ast as A

#: Reports a problem at a node (``CheckContext.problem``).
Report = Callable[[A.Node, str], None]


def c_div(a: Any, b: Any) -> Any:
    """C's division: truncating for ints."""
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_rem(a: int, b: int) -> int:
    """C's remainder: the sign of the dividend."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def binary(op: str, a: Any, b: Any) -> Any:
    """``a op b`` as HBIR (C) computes it; ``ZeroDivisionError`` for ``/ 0`` and ``% 0``."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return c_div(a, b)
    if op == "%":
        return c_rem(a, b)
    if op == "&&":
        return bool(a) and bool(b)
    if op == "||":
        return bool(a) or bool(b)
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _key(e: A.Ref) -> str:
    """The name a reference is known by in an environment (``data.N`` is ``N``)."""
    return e.dotted[len("data.") :] if e.parts[0] == "data" else e.dotted


def evaluate(e: A.Expr, env: dict[str, Any], what: str, report: Report) -> Any:
    """The value of a constant expression (``None`` after reporting why it has none)."""
    if isinstance(e, (A.IntLit, A.FloatLit, A.BoolLit)):
        return e.value
    if isinstance(e, A.Ref):
        key = _key(e)
        if key in env:
            return env[key]
        report(e, f"'{e.dotted}' is not declared (in {what}); known here: {_known(env)}")
        return None
    if isinstance(e, A.Unary):
        v = evaluate(e.operand, env, what, report)
        if v is None:
            return None
        return (not v) if e.op == "!" else -v
    if isinstance(e, A.Binary):
        a = evaluate(e.left, env, what, report)
        b = evaluate(e.right, env, what, report)
        if a is None or b is None:
            return None
        try:
            return binary(e.op, a, b)
        except ZeroDivisionError:
            report(e, f"division by zero in {what}")
            return None
    if isinstance(e, A.Cond):
        c = evaluate(e.cond, env, what, report)
        if c is None:
            return None
        return evaluate(e.then if c else e.orelse, env, what, report)
    report(e, f"{what} must be a constant expression, not '{type(e).__name__}'")
    return None


def positive_ints(
    dims: tuple[A.Expr, ...], env: dict[str, Any], what: str, report: Report
) -> tuple[int, ...] | None:
    """Sizes: each a constant positive int (``None`` after reporting the first that is not)."""
    out = []
    for d in dims:
        v = evaluate(d, env, what, report)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            report(d, f"{what} is {v!r}; sizes are positive integers")
            return None
        out.append(v)
    return tuple(out)


def fold(e: A.Expr, env: dict[str, Any]) -> Any:
    """The value of a constant expression over ``env`` (``None`` if it has none); what
    ``evaluate`` computes, without reporting, for the code generator to reuse."""
    if isinstance(e, (A.IntLit, A.FloatLit, A.BoolLit)):
        return e.value
    if isinstance(e, A.Ref):
        return env.get(_key(e))
    if isinstance(e, A.Unary):
        v = fold(e.operand, env)
        return None if v is None else (not v) if e.op == "!" else -v
    if isinstance(e, A.Binary):
        a, b = fold(e.left, env), fold(e.right, env)
        try:
            return None if a is None or b is None else binary(e.op, a, b)
        except ZeroDivisionError:
            return None
    if isinstance(e, A.Cond):
        c = fold(e.cond, env)
        return None if c is None else fold(e.then if c else e.orelse, env)
    return None


def _known(env: dict[str, Any]) -> str:
    names = sorted(env)
    return ", ".join(names[:12]) + (", ..." if len(names) > 12 else "") if names else "nothing"
