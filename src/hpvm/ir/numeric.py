"""Numba's typing of leaf arithmetic: the result type of every operation, for every back end.

Leaf code means what Numba compiles it to (docs/semantics.md §7), so an operation's result
type is Numba's, whichever back end runs it. The rules were read off Numba 0.68
(``njit(...).compile(sig)`` and the result's type) and are checked against it operation by
operation and type by type in ``tests/interp/test_numeric_rules.py``. They differ from NumPy's:

* arithmetic on two integers (or bools) is 64-bit: ``int32 * int32`` is ``int64``, unsigned
  only if both are (``uint8 + uint8`` is ``uint64``, ``int64 + uint64`` is ``int64``);
* Python literals are typed ``int64`` / ``float64`` / ``bool`` ("strong", not NumPy 2's weak
  scalars): ``float32 * 0.5`` is ``float64``, ``float32 * 2`` is ``float64``;
* an integer with a float promotes as NumPy's ``promote_types`` does (``float32 + int16`` is
  ``float32``, ``float32 + int32`` is ``float64``), except that ``uint16`` with ``float32``
  gives ``float64``;
* ``/`` of two integers is ``float64``; ``**`` keeps a float base's type when the exponent
  is an integer (``float32 ** 2`` is ``float32``);
* ``min``, ``max`` (and a variable assigned values of several types) take NumPy's promotion
  without widening: ``min(int32, int32)`` is ``int32``, ``min(uint64, int64)`` is ``float64``;
* ``math`` functions keep ``float32`` and give ``float64`` for everything else;
  ``math.floor``/``ceil``/``trunc`` give ``int64`` (``uint64`` for unsigned integers);
* whole-array operations pick the first of the ufunc's loops the operands cast to safely,
  where any integer casts to any float when integers and floats are mixed
  (``ufunc_loop``): ``float32[:] + int32[:]`` is ``float32[:]``, ``float32[:] * 2.0`` is
  ``float64[:]``.

Nothing here runs Numba: the interpreter applies these rules to values (``backends/interp``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

BOOL = np.dtype(np.bool_)
INT32 = np.dtype(np.int32)
INT64 = np.dtype(np.int64)
UINT16 = np.dtype(np.uint16)
UINT64 = np.dtype(np.uint64)
FLOAT32 = np.dtype(np.float32)
FLOAT64 = np.dtype(np.float64)

#: The binary operators, as Python spells them.
BINARY_OPS = ("+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^")
#: The unary operators whose result type depends on the operand (``not`` is always bool).
UNARY_OPS = ("-", "+", "~")

_SMALL_INTEGERS = frozenset(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.uint8))


def value_type(value: Any) -> np.dtype | None:
    """The Numba type of a scalar: a NumPy scalar's dtype; Python ``bool``, ``int`` and
    ``float`` as Numba types literals (an int from 2**63 up is ``uint64``); None otherwise."""
    t = type(value)
    if t is bool:
        return BOOL
    if t is int:
        return UINT64 if value >= 2**63 else INT64
    if t is float:
        return FLOAT64
    return scalar_dtype(t)


def scalar_dtype(t: type) -> np.dtype | None:
    """The dtype of values of type ``t`` as arithmetic sees them (Python ``int`` as int64), or
    None when ``t`` is not a real scalar type (arrays, complex numbers, other objects)."""
    if t is bool:
        return BOOL
    if t is int:
        return INT64
    if t is float:
        return FLOAT64
    if issubclass(t, (np.bool_, np.integer, np.floating)):
        dtype = np.dtype(t)
        return dtype if dtype.itemsize <= 8 else None  # no float128 in Numba
    return None


def _integral(t: np.dtype) -> bool:
    return t.kind in "biu"


def widen(a: np.dtype, b: np.dtype | None = None) -> np.dtype:
    """Integer arithmetic: 64 bits, unsigned only if every operand is unsigned."""
    unsigned = a.kind == "u" and (b is None or b.kind == "u")
    return UINT64 if unsigned else INT64


def promote(*types: np.dtype) -> np.dtype:
    """NumPy's promotion, without widening: ``min``, ``max``, conditional values."""
    result = types[0]
    for t in types[1:]:
        result = np.promote_types(result, t)
    return result


def _mixed(a: np.dtype, b: np.dtype) -> np.dtype:
    """An integer with a float, or two floats (Numba has no safe uint16 -> float32)."""
    if {a, b} == {FLOAT32, UINT16}:
        return FLOAT64
    return np.promote_types(a, b)


def binary_type(op: str, a: np.dtype, b: np.dtype) -> np.dtype | None:
    """The type of ``x <op> y`` for scalars of types ``a`` and ``b``; None if Numba refuses
    it (bitwise operators and shifts on floats)."""
    if a.kind not in "biuf" or b.kind not in "biuf":
        return None
    integral = _integral(a) and _integral(b)
    if op in ("+", "-", "*", "//", "%"):
        return widen(a, b) if integral else _mixed(a, b)
    if op == "/":
        return FLOAT64 if integral else _mixed(a, b)
    if op == "**":
        if integral:
            return FLOAT32 if (a, b) == (BOOL, INT32) else widen(a, b)  # (sic: Numba's)
        if a.kind == "f" and _integral(b):
            return a
        return _mixed(a, b)
    if not integral:
        return None
    if op in ("<<", ">>"):  # the left operand's signedness
        return UINT64 if a.kind == "u" else INT64
    if op in ("&", "|", "^"):
        return BOOL if a == b == BOOL else widen(a, b)
    raise ValueError(f"not a binary operator: {op!r}")


def unary_type(op: str, a: np.dtype) -> np.dtype | None:
    """The type of ``-x``, ``+x`` or ``~x``; None if Numba refuses it (``~`` on a float)."""
    if a.kind == "f":
        return a if op in ("-", "+") else None
    if a.kind not in "biu":
        return None
    if op == "~" and a == BOOL:
        return BOOL
    return widen(a)


def abs_type(a: np.dtype) -> np.dtype:
    """``abs(x)``: the argument's type; a bool's is int8."""
    return np.dtype(np.int8) if a == BOOL else a


def math_type(a: np.dtype) -> np.dtype:
    """A ``math`` function of one argument (``math.sqrt``, ``math.exp`` ...): float32 stays
    float32, everything else computes in float64."""
    return FLOAT32 if a == FLOAT32 else FLOAT64


def math2_type(name: str, a: np.dtype, b: np.dtype) -> np.dtype:
    """``math.pow``, ``math.atan2``, ``math.hypot``, ``math.copysign`` of types ``a``, ``b``."""
    if name == "copysign" and a in _SMALL_INTEGERS and b in _SMALL_INTEGERS:
        return FLOAT32
    if name == "pow" and a == FLOAT32 and b.kind in "iu" and b.itemsize <= 2:
        return FLOAT64
    return FLOAT32 if _mixed(a, b) == FLOAT32 else FLOAT64


def floor_type(a: np.dtype) -> np.dtype:
    """``math.floor``, ``math.ceil``, ``math.trunc``: uint64 for unsigned integers, else int64."""
    return UINT64 if a.kind == "u" else INT64


def int_type(a: np.dtype) -> np.dtype:
    """``int(x)``: an integer keeps its type; a bool or a float becomes int64."""
    return a if a.kind in "iu" else INT64


def float_type(a: np.dtype) -> np.dtype:
    """``float(x)``: float32 stays float32; everything else becomes float64."""
    return FLOAT32 if a == FLOAT32 else FLOAT64


def range_type(types: list[np.dtype]) -> np.dtype:
    """The loop variable of ``range(...)`` over bounds of these types: uint64 if every bound
    is unsigned, int32 if every bound fits in int32, int64 otherwise (Numba's three range
    iterators)."""
    if all(t.kind == "u" for t in types):
        return UINT64
    if all((t.kind == "i" and t.itemsize <= 4) or (t.kind == "u" and t.itemsize <= 2) for t in types):
        return INT32
    return INT64


def ufunc_loop(ufunc: np.ufunc, inputs: tuple[np.dtype, ...]) -> str | None:
    """The loop Numba runs for ``ufunc`` on operands of these dtypes when one is an array:
    the first of ``ufunc.types`` whose inputs every operand casts to safely — any integer
    casting to any float when the operands mix integers and floats; float16 and object loops
    skipped. Returned as a ``signature=`` string (``"ff->f"``); None when no loop fits."""
    mixed = any(t.kind in "iu" for t in inputs) and any(t.kind == "f" for t in inputs)
    for candidate in ufunc.types:
        ins = candidate[: ufunc.nin]
        if "e" in ins or "O" in ins or any(c in "mM" for c in ins):
            continue
        if all(_can_cast(t, np.dtype(c), mixed) for t, c in zip(inputs, ins)):
            return candidate
    return None


def _can_cast(src: np.dtype, dst: np.dtype, mixed: bool) -> bool:
    if mixed and src.kind in "iu" and dst.kind == "f":
        return True
    return bool(np.can_cast(src, dst, "safe"))


#: The most negative int64: what converting NaN, an infinity or an out-of-range float to an
#: integer gives under Numba on x86 (``cvttsd2si``).
INT64_MIN = -(2**63)


def float_to_int(x: float) -> int:
    """A float truncated to int64 as compiled code converts it; NaN, infinities and values
    outside int64 give ``INT64_MIN``."""
    if math.isfinite(x):
        r = int(x)
        if INT64_MIN <= r < 2**63:
            return r
    return INT64_MIN
