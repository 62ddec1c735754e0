"""Replication-size expressions: integer expressions over a parent node's inputs.

Replication sizes are the only data-dependent part of a graph's structure (seed 000), so
they are kept symbolic — ``n // 16``, ``a.shape[0]``, ``min(n, 256)`` — and evaluated for
every execution of the graph. The printed form is Python syntax, and parses back.

Division. ``//`` and ``%`` have Python's meaning here (the quotient floored: ``-3 // 2 ==
-2``), as a Python leaf's program writes them; the seed's HPVM IR and HPVM-C divide with
LLVM's ``sdiv``/``srem`` (truncated: ``-3 / 2 == -1``), and programs move between the two
(``hpvm.llvm`` export and import, ``hpvm.c``). The two agree whenever no ``//`` or ``%``
meets a negative operand with a remainder. A size whose value differs between them
(``truncated`` against ``evaluate``: ``(n - 3) // 2 + 5`` at ``n = 0`` is 3 or 4) is refused
— at launch, or by the verifier when it reads no input — rather than run with a size
another front end or back end would not give it; one where they agree (``max(0, (n - 8) //
4)``, a trip count at any ``n``) runs.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import TracingError
from .tracing import tracing

_BINARY = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
}
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "//": 2, "%": 2}

#: How deep operators may nest in one size expression. Every walk over an expression
#: (printing, evaluating, ``params``, hashing) recurses, and the ``cpu`` back end compiles
#: its printed form as Python, which refuses more than 200 nested parentheses: a limit well
#: inside both keeps a long expression from ending in a ``RecursionError``. Real sizes are a
#: few operators deep (``(n + 15) // 16``); the text parser and the front end refuse deeper ones.
MAX_EXPR_DEPTH = 100


def _tracing() -> bool:
    return tracing() is not None


def _misuse(what: str) -> TracingError:
    return TracingError(
        f"an internal node used an input value {what}; internal nodes only build their child "
        "graph (inputs may appear only in replication sizes and binds) — move the computation "
        "into a leaf node"
    )


class Expr:
    """Base of size expressions. Arithmetic builds new expressions; anything else is an error."""

    precedence = 3
    depth = 0  # operators nested in this expression (0 for a constant, input or shape)

    def evaluate(self, env: Mapping[str, Any], truncate: bool = False) -> int:
        """The value for ``env``; ``truncate``: with LLVM's (and C's) integer division,
        ``sdiv``/``srem``, the quotient truncated toward zero, instead of Python's floor
        (the module doc, "Division")."""
        raise NotImplementedError

    def params(self) -> set[str]:
        """Names of the parent inputs this expression reads."""
        raise NotImplementedError

    def _bin(self, op: str, other: Any, swap: bool = False) -> Expr:
        other_expr = as_expr(other)
        return _checked(BinOp(op, other_expr, self) if swap else BinOp(op, self, other_expr))

    def __add__(self, o: Any) -> Expr:
        return self._bin("+", o)

    def __radd__(self, o: Any) -> Expr:
        return self._bin("+", o, True)

    def __sub__(self, o: Any) -> Expr:
        return self._bin("-", o)

    def __rsub__(self, o: Any) -> Expr:
        return self._bin("-", o, True)

    def __mul__(self, o: Any) -> Expr:
        return self._bin("*", o)

    def __rmul__(self, o: Any) -> Expr:
        return self._bin("*", o, True)

    def __floordiv__(self, o: Any) -> Expr:
        return self._bin("//", o)

    def __rfloordiv__(self, o: Any) -> Expr:
        return self._bin("//", o, True)

    def __mod__(self, o: Any) -> Expr:
        return self._bin("%", o)

    def __rmod__(self, o: Any) -> Expr:
        return self._bin("%", o, True)

    def __truediv__(self, o: Any) -> Expr:
        raise _misuse("with '/' (replication sizes are integers: use '//')")

    __rtruediv__ = __truediv__

    def __bool__(self) -> bool:
        raise _misuse("in a condition (Python control flow may not depend on input values)")

    def __index__(self) -> int:
        raise _misuse("as a Python integer")

    def __int__(self) -> int:
        raise _misuse("as a Python integer")

    def __float__(self) -> float:
        raise _misuse("as a Python float")

    def __neg__(self) -> Expr:
        return BinOp("-", Const(0), self)

    def __lt__(self, o: Any) -> bool:
        raise _misuse("in a comparison (for sizes, use hpvm.size_min / hpvm.size_max)")

    __le__ = __gt__ = __ge__ = __lt__

    def __hash__(self) -> int:
        return hash(str(self))

    def __eq__(self, o: object) -> bool:
        """Structural equality (for passes, tests and round trips), except while an internal
        node is traced: there ``if n == 0:`` would silently take one branch for every input."""
        if isinstance(o, (Expr, int, float, np.number, np.bool_)) and _tracing():
            raise _misuse("in a comparison ('==' / '!=')")
        return isinstance(o, Expr) and str(self) == str(o)

    def __repr__(self) -> str:
        return f"Expr({self})"


@dataclass(frozen=True, eq=False)
class Const(Expr):
    value: int

    def evaluate(self, env: Mapping[str, Any], truncate: bool = False) -> int:
        return self.value

    def params(self) -> set[str]:
        return set()

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True, eq=False)
class Param(Expr):
    """The value of a scalar input of the parent node."""

    name: str

    def evaluate(self, env: Mapping[str, Any], truncate: bool = False) -> int:
        value = env[self.name]
        if isinstance(value, np.ndarray) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"input '{self.name}' is {type(value).__name__}, not an integer")
        return int(value)

    def params(self) -> set[str]:
        return {self.name}

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False)
class Shape(Expr):
    """``a.shape[axis]`` of an array input of the parent node."""

    name: str
    axis: int

    def evaluate(self, env: Mapping[str, Any], truncate: bool = False) -> int:
        return int(np.shape(env[self.name])[self.axis])

    def params(self) -> set[str]:
        return {self.name}

    def __str__(self) -> str:
        return f"{self.name}.shape[{self.axis}]"


@dataclass(frozen=True, eq=False)
class BinOp(Expr):
    op: str
    lhs: Expr
    rhs: Expr

    @property
    def precedence(self) -> int:  # type: ignore[override]
        return _PRECEDENCE[self.op]

    def __post_init__(self) -> None:
        object.__setattr__(self, "depth", 1 + max(self.lhs.depth, self.rhs.depth))

    def evaluate(self, env: Mapping[str, Any], truncate: bool = False) -> int:
        left, right = self.lhs.evaluate(env, truncate), self.rhs.evaluate(env, truncate)
        if self.op in ("//", "%") and right == 0:
            raise ZeroDivisionError(f"division by zero in replication size {self}")
        if truncate and self.op in ("//", "%"):
            quotient = abs(left) // abs(right) * (1 if (left < 0) == (right < 0) else -1)
            return quotient if self.op == "//" else left - right * quotient
        return int(_BINARY[self.op](left, right))

    def params(self) -> set[str]:
        return self.lhs.params() | self.rhs.params()

    def __str__(self) -> str:
        left = str(self.lhs)
        if self.lhs.precedence < self.precedence:
            left = f"({left})"
        right = str(self.rhs)
        # The right operand needs parentheses at equal precedence: a - (b - c), a // (b * c).
        if self.rhs.precedence <= self.precedence:
            right = f"({right})"
        return f"{left} {self.op} {right}"


@dataclass(frozen=True, eq=False)
class Call(Expr):
    """``min(a, b, ...)`` or ``max(a, b, ...)``."""

    fn: str
    args: tuple[Expr, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "depth", 1 + max((a.depth for a in self.args), default=0))

    def evaluate(self, env: Mapping[str, Any], truncate: bool = False) -> int:
        values = [a.evaluate(env, truncate) for a in self.args]
        return min(values) if self.fn == "min" else max(values)

    def params(self) -> set[str]:
        return set().union(*(a.params() for a in self.args))

    def __str__(self) -> str:
        return f"{self.fn}({', '.join(str(a) for a in self.args)})"


def renamed(expr: Expr, names: Mapping[str, str]) -> Expr:
    """``expr`` reading input ``names[p]`` wherever it read input ``p``: the same size seen
    from another function (generated code's own names, or a parent a graph is inlined into).
    Every input ``expr`` reads must be in ``names``."""
    if isinstance(expr, Param):
        return Param(names[expr.name])
    if isinstance(expr, Shape):
        return Shape(names[expr.name], expr.axis)
    if isinstance(expr, BinOp):
        return BinOp(expr.op, renamed(expr.lhs, names), renamed(expr.rhs, names))
    if isinstance(expr, Call):
        return Call(expr.fn, tuple(renamed(a, names) for a in expr.args))
    return expr


#: Why a size whose rounding matters is refused (the module doc, "Division").
ROUNDING = (
    "a '//' or '%' of a negative number rounds differently in Python (floored) and in "
    "HPVM-C and LLVM (truncated), and a size must mean the same in both: keep the operands "
    "of '//' and '%' >= 0, or clamp the result (max(0, ...)) where they agree"
)


def divides(expr: Expr) -> bool:
    """Whether ``expr`` holds a ``//`` or ``%`` (whose rounding ``truncated`` checks)."""
    if isinstance(expr, BinOp):
        return expr.op in ("//", "%") or divides(expr.lhs) or divides(expr.rhs)
    if isinstance(expr, Call):
        return any(divides(a) for a in expr.args)
    return False


def truncated(expr: Expr, env: Mapping[str, Any]) -> int:
    """``expr``'s value with LLVM's (and C's) integer division (``evaluate(truncate=True)``)."""
    return expr.evaluate(env, truncate=True)


def rounding_differs(expr: Expr, env: Mapping[str, Any], value: int) -> int | None:
    """``expr``'s value with LLVM's division where it is not ``value`` (its Python value),
    else ``None``: a size that must be refused (the module doc, "Division").
    ``ZeroDivisionError`` as ``evaluate``."""
    if not divides(expr):
        return None
    other = truncated(expr, env)
    return other if other != value else None


def divisors(expr: Expr) -> list[Expr]:
    """The right operands of ``//`` and ``%`` in ``expr``, innermost first, constants other
    than 0 left out: what compiled code evaluating ``expr`` must check for zero (it divides
    with NumPy's error model, where ``n // 0`` is 0 instead of an error)."""
    found: list[Expr] = []
    if isinstance(expr, BinOp):
        found += divisors(expr.lhs) + divisors(expr.rhs)
        if expr.op in ("//", "%") and not (isinstance(expr.rhs, Const) and expr.rhs.value != 0):
            found.append(expr.rhs)
    elif isinstance(expr, Call):
        for arg in expr.args:
            found += divisors(arg)
    return found


def as_expr(value: Any) -> Expr:
    """An expression for an int or an expression; anything else is a tracing error."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, np.bool_)):
        raise TracingError(f"a replication size must be an integer, not {value!r}")
    if isinstance(value, (int, np.integer)):
        return Const(int(value))
    raise TracingError(
        f"a replication size must be an integer or an expression of the node's integer "
        f"inputs, not {type(value).__name__} {value!r}"
    )


def size_min(*args: Any) -> Expr:
    """``hpvm.size_min(a, b)``: the minimum of size expressions (Python's ``min`` needs bools)."""
    return _call("min", args)


def size_max(*args: Any) -> Expr:
    """``hpvm.size_max(a, b)``: the maximum of size expressions."""
    return _call("max", args)


def _call(fn: str, args: tuple[Any, ...]) -> Expr:
    if not args:
        raise TracingError(f"hpvm.size_{fn}() needs at least one size")
    exprs = tuple(as_expr(a) for a in args)
    return exprs[0] if len(exprs) == 1 else _checked(Call(fn, exprs))


def _checked(expr: Expr) -> Expr:
    """``expr``, if its operators nest at most ``MAX_EXPR_DEPTH`` deep (a builder that sums
    sizes in a long loop gets a ``TracingError`` here, not a ``RecursionError`` later)."""
    if expr.depth > MAX_EXPR_DEPTH:
        raise TracingError(
            f"a replication size nests operators more than {MAX_EXPR_DEPTH} deep; sizes are short "
            "integer expressions of the node's inputs — compute a long one in the host and pass "
            "it as an input"
        )
    return expr
