"""Leaf arithmetic as Numba computes it, on Python values: what rewritten leaves call.

The interpreter runs leaf code as Python, where ``np.int32(100000) * np.int32(100000)``
wraps at 32 bits and ``np.float32(x) + 0.0`` stays float32 (NumPy 2's weak Python scalars),
and where ``1.0 / 0.0`` raises. Compiled back ends follow Numba's typing instead (int32
products are int64, literals are int64/float64), so the interpreter runs every operator,
store and typing-relevant call of a leaf as a call of the functions here — in Python
emitted from the leaf IR (``from_ir.py``: conversions by ``converter``, chosen from the
IR's static types) or in the leaf's rewritten syntax tree (``arith_rewrite.py``) — which
give each result the type ``ir/numeric.py`` says Numba gives it, then compute in that type.

Values are kept in cheap forms that the rules read back as the same types: int64 as a
Python ``int`` (wrapped to 64 bits after each operation), float64 as a Python ``float``,
uint64 and narrower types as NumPy scalars. Division never raises: floats follow IEEE 754
and integer ``//`` and ``%`` by zero give 0 (docs/semantics.md §7). Each operation keeps a
plan per pair of operand types, so the rules are worked out once, not per call.
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ...ir import numeric as nt

_MASK = 2**64 - 1
_HALF = 2**63

Plan = Callable[[Any, Any], Any]

_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
}
_IN_PLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.iadd,
    "-": operator.isub,
    "*": operator.imul,
    "/": operator.itruediv,
    "//": operator.ifloordiv,
    "%": operator.imod,
    "**": operator.ipow,
    "<<": operator.ilshift,
    ">>": operator.irshift,
    "&": operator.iand,
    "|": operator.ior,
    "^": operator.ixor,
}
_UFUNCS: dict[str, np.ufunc] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.true_divide,
    "//": np.floor_divide,
    "%": np.remainder,
    "**": np.power,
    "<<": np.left_shift,
    ">>": np.right_shift,
    "&": np.bitwise_and,
    "|": np.bitwise_or,
    "^": np.bitwise_xor,
}
_UNARY_OPERATORS = {"-": operator.neg, "+": operator.pos, "~": operator.invert}
_UNARY_UFUNCS = {"-": np.negative, "+": np.positive, "~": np.invert}


# -- representations ----------------------------------------------------------------------


def wrap64(r: int) -> int:
    """A Python integer as the int64 two's-complement arithmetic leaves it."""
    if -_HALF <= r < _HALF:
        return r
    r &= _MASK
    return r - 2**64 if r >= _HALF else r


def _to_int64(x: Any) -> int:
    return wrap64(int(x))


def _to_uint64(x: Any) -> int:
    return int(x) & _MASK


def to_type(dtype: np.dtype) -> Callable[[Any], Any]:
    """The function converting a real scalar to ``dtype`` as compiled code converts it
    (int64 as a Python int, float64 as a Python float)."""
    if dtype == nt.INT64:
        return _to_int64
    if dtype == nt.FLOAT64:
        return builtins.float
    if dtype == nt.BOOL:
        return builtins.bool
    return dtype.type


Cast = Callable[[Any], Any] | None  # None: the operand is already in the result's form


def _caster(t: type, dtype: np.dtype, exact: bool = True) -> Cast:
    """How an operand of type ``t`` enters an operation computed in ``dtype``. ``exact``:
    int64 operands must hold their signed value (not needed before ``+ - * & | ^ <<``,
    whose results are wrapped afterwards: those commute with wrapping)."""
    if dtype == nt.INT64:
        if t is int:
            return None
        return _to_int64 if exact and t is np.uint64 else builtins.int
    if dtype == nt.UINT64:
        return _to_uint64  # computed on Python ints modulo 2**64
    if dtype == nt.FLOAT64:
        return None if t is float or t is np.float64 else builtins.float
    if dtype == nt.FLOAT32:
        return None if t is np.float32 else np.float32
    return None


def _identity(x: Any) -> Any:
    return x


def _apply(f: Plan, ca: Cast, cb: Cast) -> Plan:
    """``f`` on the operands cast, with as few Python-level calls as the casts allow."""
    if ca is None and cb is None:
        return f
    if ca is None:
        return lambda a, b: f(a, cb(b))  # type: ignore[misc]
    if cb is None:
        return lambda a, b: f(ca(a), b)
    return lambda a, b: f(ca(a), cb(b))


# -- scalar operations ---------------------------------------------------------------------


def _int_pow(a: int, b: int) -> int:
    """Numba's integer power: a negative exponent gives 0 except for bases 1 and -1."""
    if b < 0:
        if a == 1:
            return 1
        if a == -1:
            return -1 if b & 1 else 1
        return 0
    return wrap64(pow(a, b, 2**64))


def _float_int_pow(one: Any, a: Any, n: int) -> Any:
    """A float to an integer power by repeated squaring, as Numba computes it (the result
    can differ from ``pow`` in the last bit); a zero to a negative power is infinite."""
    exp = -n if n < 0 else n
    if exp > 0x10000:  # Numba's cutoff: the generic algorithm
        return type(one)(np.power(np.float64(a), np.float64(n)))
    r = one
    while exp:
        if exp & 1:
            r *= a
        exp >>= 1
        a *= a
    return type(one)(np.float64(1.0) / r) if n < 0 else r


def _floor_div(a: int, b: int) -> int:
    """``a // b`` of int64s: 0 for a zero divisor, and for ``-2**63 // -1``, as Numba does."""
    if b == 0 or (b == -1 and a == -_HALF):
        return 0
    return a // b


def _mod(a: int, b: int) -> int:
    return a % b if b else 0


def _int64_plan(op: str, ta: type, tb: type) -> Plan:
    exact = op in ("//", "%", "**", ">>")
    ca, cb = _caster(ta, nt.INT64, exact), _caster(tb, nt.INT64, exact)
    if op == "//":
        return _apply(_floor_div, ca, cb)
    if op == "%":
        return _apply(_mod, ca, cb)
    if op == "**":
        return _apply(_int_pow, ca, cb)
    if op == ">>":
        return _apply(lambda a, b: a >> (b & 63), ca, cb)
    g = _apply(_OPERATORS[op] if op != "<<" else (lambda a, b: a << (b & 63)), ca, cb)

    def wrapped(a: Any, b: Any) -> int:
        r = g(a, b)
        return r if -_HALF <= r < _HALF else wrap64(r)

    return wrapped


def _uint64_plan(op: str, ta: type, tb: type) -> Plan:
    u64 = np.uint64
    if op in ("//", "%"):
        f = _OPERATORS[op]

        def divide(a: Any, b: Any) -> Any:
            d = _to_uint64(b)
            return u64(f(_to_uint64(a), d)) if d else u64(0)

        return divide
    if op == "**":
        return lambda a, b: u64(pow(_to_uint64(a), _to_uint64(b), 2**64))
    if op == "<<":
        return lambda a, b: u64((_to_uint64(a) << (_to_uint64(b) & 63)) & _MASK)
    if op == ">>":
        return lambda a, b: u64(_to_uint64(a) >> (_to_uint64(b) & 63))
    f = _OPERATORS[op]
    return lambda a, b: u64(f(_to_uint64(a), _to_uint64(b)) & _MASK)


def _float64_plan(op: str, ta: type, tb: type) -> Plan:
    f = _OPERATORS[op]
    if op == "**":  # NumPy's power: NaN, not a complex number or an OverflowError
        return lambda a, b: f(np.float64(a), np.float64(b))
    g = _apply(f, _caster(ta, nt.FLOAT64), _caster(tb, nt.FLOAT64))
    if op not in ("/", "//", "%"):
        return g

    def divide(a: Any, b: Any) -> Any:
        try:
            return g(a, b)
        except ZeroDivisionError:  # IEEE 754: inf, -inf or nan
            return f(np.float64(a), np.float64(b))

    return divide


def _scalar_plan(op: str, ta: type, tb: type, da: np.dtype, db: np.dtype) -> Plan:
    result = nt.binary_type(op, da, db)
    if result is None:
        return _OPERATORS[op]  # Python's (or NumPy's) own error
    if result == nt.INT64:
        return _int64_plan(op, ta, tb)
    if result == nt.UINT64:
        return _uint64_plan(op, ta, tb)
    if op == "**" and da.kind == "f" and db.kind != "f":
        one, ca = result.type(1), _caster(ta, result) or _identity
        return lambda a, b: _float_int_pow(one, ca(a), int(b))
    if result == nt.FLOAT64:
        return _float64_plan(op, ta, tb)
    # float32 (NumPy's float32 arithmetic never raises) or bool (& | ^ of two bools)
    return _apply(_OPERATORS[op], _caster(ta, result), _caster(tb, result))


# -- arrays -------------------------------------------------------------------------------


def _operand_dtype(x: Any) -> np.dtype | None:
    if isinstance(x, np.ndarray):
        return x.dtype if x.dtype.kind in "biuf" else None
    return nt.value_type(x)


def _array_plan(op: str, in_place: bool) -> Plan:
    """An operation with an array operand: the ufunc loop Numba chooses (``ufunc_loop``)."""
    ufunc = _UFUNCS[op]
    loops: dict[tuple[np.dtype, np.dtype], str | None] = {}
    fallback = _IN_PLACE[op] if in_place else _OPERATORS[op]

    def apply(a: Any, b: Any) -> Any:
        da, db = _operand_dtype(a), _operand_dtype(b)
        if da is None or db is None:
            return fallback(a, b)
        key = (da, db)
        if key not in loops:
            loops[key] = nt.ufunc_loop(ufunc, key)
        loop = loops[key]
        if loop is None:
            return fallback(a, b)
        if in_place:  # computed in the loop's type, stored in the array's
            return ufunc(a, b, out=a, signature=loop, casting="unsafe")
        return ufunc(a, b, signature=loop, casting="unsafe")

    return apply


# -- the operations leaves call -----------------------------------------------------------


def _binary(op: str, in_place: bool = False) -> Plan:
    plans: dict[tuple[type, type], Plan] = {}

    def plan(ta: type, tb: type) -> Plan:
        if issubclass(ta, np.ndarray):
            return _array_plan(op, in_place)
        if issubclass(tb, np.ndarray):  # x += array makes a new array, as x = x + array
            return _array_plan(op, False)
        da, db = nt.scalar_dtype(ta), nt.scalar_dtype(tb)
        if da is None or db is None:  # lists, tuples, strings, arrays on the right...
            return _IN_PLACE[op] if in_place else _OPERATORS[op]
        return _scalar_plan(op, ta, tb, da, db)

    def apply(a: Any, b: Any) -> Any:
        key = (type(a), type(b))
        found = plans.get(key)
        if found is None:
            found = plans[key] = plan(*key)
        return found(a, b)

    apply.__name__ = apply.__qualname__ = f"numba_{'i' if in_place else ''}{_OPERATORS[op].__name__}"
    return apply


def _unary_plan(op: str, t: type) -> Callable[[Any], Any]:
    f = _UNARY_OPERATORS[op]
    if issubclass(t, np.ndarray):
        ufunc = _UNARY_UFUNCS[op]

        def on_array(a: Any) -> Any:
            loop = nt.ufunc_loop(ufunc, (a.dtype,)) if a.dtype.kind in "biuf" else None
            return f(a) if loop is None else ufunc(a, signature=loop, casting="unsafe")

        return on_array
    dtype = nt.scalar_dtype(t)
    result = None if dtype is None else nt.unary_type(op, dtype)
    if result is None or result.kind == "f":
        return f  # floats keep their type; other objects raise their own errors
    if result == nt.BOOL:
        return operator.not_  # ~ of a bool is logical not in Numba (and NumPy)
    if t is int:
        return lambda x: wrap64(f(x))
    if dtype == nt.BOOL:
        return lambda x: f(int(x))
    # Numba computes in the operand's own width, then widens: -int8(-128) is -128.
    return (lambda x: np.uint64(f(x))) if result == nt.UINT64 else (lambda x: int(f(x)))


def _unary(op: str) -> Callable[[Any], Any]:
    plans: dict[type, Callable[[Any], Any]] = {}

    def apply(x: Any) -> Any:
        t = type(x)
        found = plans.get(t)
        if found is None:
            found = plans[t] = _unary_plan(op, t)
        return found(x)

    apply.__name__ = apply.__qualname__ = f"numba_{_UNARY_OPERATORS[op].__name__}"
    return apply


#: ``x <op> y``, ``x <op>= y`` (in place for arrays) and ``<op> x``, by operator symbol.
BINARY: dict[str, Plan] = {op: _binary(op) for op in nt.BINARY_OPS}
IN_PLACE: dict[str, Plan] = {op: _binary(op, in_place=True) for op in nt.BINARY_OPS}
UNARY: dict[str, Callable[[Any], Any]] = {op: _unary(op) for op in nt.UNARY_OPS}


def cast_scalar(value: Any, dtype: np.dtype) -> Any:
    """``value`` as an element of an array of ``dtype``: integers wrap to the element's
    width and floats convert as compiled code converts them, where NumPy would refuse
    (a Python int out of range, NaN into an integer array)."""
    return np.asarray(value).astype(dtype)[()]


def setitem(target: Any, key: Any, value: Any) -> None:
    """``target[key] = value``, storing as compiled code stores: cast to the element type."""
    try:
        target[key] = value
    except (OverflowError, ValueError):
        dtype = getattr(target, "dtype", None)
        if dtype is None or dtype.kind not in "biuf" or nt.value_type(value) is None:
            raise
        target[key] = cast_scalar(value, dtype)


def augitem(op: Plan, target: Any, key: Any, value: Any) -> None:
    """``target[key] <op>= value``: the element read, computed with Numba's types, stored back."""
    setitem(target, key, op(target[key], value))


# -- builtins and math functions ---------------------------------------------------------


def _dtypes(values: tuple[Any, ...]) -> list[np.dtype] | None:
    types = [nt.scalar_dtype(type(v)) for v in values]
    return None if any(t is None for t in types) else types  # type: ignore[return-value]


def _extreme(builtin: Callable[..., Any]) -> Callable[..., Any]:
    def apply(*args: Any, **kwargs: Any) -> Any:
        types = _dtypes(args) if len(args) > 1 and not kwargs else None
        if types is None:  # an iterable, a key=, or non-numbers: Python's own
            return builtin(*args, **kwargs)
        # Python's choice (the first of equal values; NaN as Numba compares it), in the
        # promoted type of all the arguments.
        return to_type(nt.promote(*types))(builtin(*args))

    apply.__name__ = apply.__qualname__ = f"numba_{builtin.__name__}"
    return apply


def numba_abs(x: Any) -> Any:
    """``abs(x)``: the argument's type (a bool's absolute value is an int8 in Numba)."""
    t = type(x)
    if t is bool or t is np.bool_:
        return np.int8(x)
    return wrap64(builtins.abs(x)) if t is int else builtins.abs(x)


def numba_int(x: Any = 0, *rest: Any) -> Any:
    """``int(x)``: integers keep their type, floats truncate as compiled code converts."""
    t = nt.scalar_dtype(type(x))
    if rest or t is None:
        return builtins.int(x, *rest)
    if t.kind == "f":
        return nt.float_to_int(builtins.float(x))
    return builtins.int(x) if t == nt.BOOL else x


def numba_float(x: Any = 0.0) -> Any:
    """``float(x)``: float32 stays float32 (Python's float() would widen it)."""
    return x if type(x) is np.float32 else builtins.float(x)


def numba_round(x: Any, *rest: Any) -> Any:
    """``round(x)``: int64, half to even; NaN and infinities as compiled code converts them."""
    t = nt.scalar_dtype(type(x))
    if rest or t is None:
        return builtins.round(x, *rest)
    value = builtins.float(x)  # integers too: Numba rounds them as float64
    return _int64_or_min(builtins.round(value)) if math.isfinite(value) else nt.INT64_MIN


def _int64_or_min(r: int) -> int:
    """An integral float's value as int64, or what compiled code gives out of range."""
    return r if -_HALF <= r < _HALF else nt.INT64_MIN


def _gamma_error(x: float) -> float:
    if x == 0:
        return math.copysign(math.inf, x)
    return math.inf if x > 0 else math.nan  # overflow, or a pole at a negative integer / -inf


def _lgamma_error(x: float) -> float:
    return math.inf  # a pole (a non-positive integer) or overflow


def _ieee(name: str) -> Callable[[float], float]:
    """The IEEE 754 result where Python's ``math`` raises (``sqrt(-1)``, ``log(0)``, overflow)."""
    special = {"gamma": _gamma_error, "lgamma": _lgamma_error}
    if name in special:
        return special[name]
    numpy_name = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh"}.get(name, name)
    numpy_name = {"acosh": "arccosh", "atanh": "arctanh", "atan2": "arctan2", "pow": "power"}.get(
        numpy_name, numpy_name
    )
    ufunc = getattr(np, numpy_name, None)
    if ufunc is None:  # erf, erfc: Python's never raise
        return lambda *xs: math.nan
    return lambda *xs: builtins.float(ufunc(*(np.float64(x) for x in xs)))


def _math1(name: str) -> Callable[[Any], Any]:
    f, ieee = getattr(math, name), _ieee(name)

    def apply(x: Any) -> Any:
        t = nt.scalar_dtype(type(x))
        if t is None:
            return f(x)
        value = builtins.float(x)
        try:
            r = f(value)
        except (ValueError, OverflowError):
            r = ieee(value)
        return np.float32(r) if nt.math_type(t) == nt.FLOAT32 else r

    apply.__name__ = apply.__qualname__ = f"numba_math_{name}"
    return apply


def _math2(name: str) -> Callable[[Any, Any], Any]:
    f, ieee = getattr(math, name), _ieee(name)

    def apply(a: Any, b: Any) -> Any:
        ta, tb = nt.scalar_dtype(type(a)), nt.scalar_dtype(type(b))
        if ta is None or tb is None:
            return f(a, b)
        x, y = builtins.float(a), builtins.float(b)
        try:
            r = f(x, y)
        except (ValueError, OverflowError):
            r = ieee(x, y)
        return np.float32(r) if nt.math2_type(name, ta, tb) == nt.FLOAT32 else r

    apply.__name__ = apply.__qualname__ = f"numba_math_{name}"
    return apply


def _to_integer(name: str) -> Callable[[Any], Any]:
    f = getattr(math, name)

    def apply(x: Any) -> Any:
        t = nt.scalar_dtype(type(x))
        if t is None:
            return f(x)
        # Numba converts integers to float64 first too (2**53 + 1 comes back as 2**53).
        value = builtins.float(x)
        if nt.floor_type(t) == nt.UINT64:
            return np.uint64(min(builtins.int(value), _MASK))
        return _int64_or_min(f(value)) if math.isfinite(value) else nt.INT64_MIN

    apply.__name__ = apply.__qualname__ = f"numba_math_{name}"
    return apply


_MATH1 = (
    "sqrt exp expm1 log log1p log2 log10 sin cos tan asin acos atan sinh cosh tanh asinh "
    "acosh atanh erf erfc gamma lgamma fabs degrees radians exp2"
).split()
_MATH2 = ("pow", "atan2", "hypot", "copysign")

#: The functions whose result type Python and Numba disagree on, and their replacements.
FUNCTIONS: dict[Any, Callable[..., Any]] = {
    builtins.min: _extreme(builtins.min),
    builtins.max: _extreme(builtins.max),
    builtins.abs: numba_abs,
    builtins.int: numba_int,
    builtins.float: numba_float,
    builtins.round: numba_round,
    **{getattr(math, n): _math1(n) for n in _MATH1 if hasattr(math, n)},
    **{getattr(math, n): _math2(n) for n in _MATH2},
    **{getattr(math, n): _to_integer(n) for n in ("floor", "ceil", "trunc")},
}


# -- conversions the leaf IR makes explicit ------------------------------------------------


def converter(src: np.dtype, dst: np.dtype) -> Callable[[Any], Any]:
    """How compiled code converts a scalar of type ``src`` to ``dst``, on the forms values
    are kept in here (int64 as ``int``, float64 as ``float``): chosen once from the static
    types of a leaf IR's ``Cast`` (``from_ir.py``), the exact cheap conversion where there is
    one, else ``cast_scalar`` (the store conversion: integers wrap, floats truncate)."""
    if dst == nt.INT64:
        if src.kind == "f":
            return lambda x: nt.float_to_int(builtins.float(x))
        return _to_int64 if src == nt.UINT64 else builtins.int
    if dst == nt.FLOAT64:
        return builtins.float
    if dst == nt.BOOL:
        return builtins.bool
    if dst == nt.FLOAT32 and src.kind in "bf":
        return np.float32
    if dst == nt.UINT64 and src.kind in "biu":
        return lambda x: np.uint64(_to_uint64(x))
    if src.kind in "biu" and dst.kind in "iu" and np.can_cast(src, dst, "safe"):
        return dst.type  # a widening: exact
    return lambda x: cast_scalar(x, dst)
