"""The Python functions a translated leaf may call, and the OpenCL C they become.

Keyed by the function object (the emitter looks up the leaf IR's canonical name, ``math.sqrt``
or ``np.sqrt``, in its module). Each entry says how the result is spelled (``kind``) and which
OpenCL built-in computes it; the result's type is the leaf IR's. Casts, ``min``/``max``/
``round`` and the hpvm intrinsics are the emitter's own.
"""

from __future__ import annotations

import builtins
import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class MathFunction:
    """``kind``: ``float`` (float result: float32 stays, else float64), ``to_int`` (a float
    rounded to int64, like ``math.floor``), ``same`` (the argument's type, ``abs``),
    ``predicate`` (bool), ``float2`` (two arguments, float result)."""

    kind: str
    cname: str
    arity: int = 1


def _table() -> dict[int, tuple[Any, MathFunction]]:
    entries: list[tuple[Any, MathFunction]] = []

    def add(objs: list[Any], fn: MathFunction) -> None:
        entries.extend((o, fn) for o in objs)

    for name, cname in [
        ("sqrt", "sqrt"),
        ("exp", "exp"),
        ("log", "log"),
        ("log2", "log2"),
        ("log10", "log10"),
        ("sin", "sin"),
        ("cos", "cos"),
        ("tan", "tan"),
        ("sinh", "sinh"),
        ("cosh", "cosh"),
        ("tanh", "tanh"),
        ("expm1", "expm1"),
        ("log1p", "log1p"),
    ]:
        add([getattr(math, name), getattr(np, name)], MathFunction("float", cname))
    for py, npn, cname in [
        ("asin", "arcsin", "asin"),
        ("acos", "arccos", "acos"),
        ("atan", "arctan", "atan"),
        ("asinh", "arcsinh", "asinh"),
        ("acosh", "arccosh", "acosh"),
        ("atanh", "arctanh", "atanh"),
    ]:
        add([getattr(math, py), getattr(np, npn)], MathFunction("float", cname))
    add([math.erf], MathFunction("float", "erf"))
    add([math.erfc], MathFunction("float", "erfc"))
    add([math.gamma], MathFunction("float", "tgamma"))
    add([math.lgamma], MathFunction("float", "lgamma"))
    add([np.exp2], MathFunction("float", "exp2"))
    add([np.cbrt], MathFunction("float", "cbrt"))
    add([math.fabs, np.fabs], MathFunction("float", "fabs"))
    add([np.floor], MathFunction("float", "floor"))
    add([np.ceil], MathFunction("float", "ceil"))
    add([np.trunc], MathFunction("float", "trunc"))
    add([np.rint], MathFunction("float", "rint"))
    add([math.floor], MathFunction("to_int", "floor"))
    add([math.ceil], MathFunction("to_int", "ceil"))
    add([math.trunc], MathFunction("to_int", "trunc"))
    add([builtins.abs, np.abs, np.absolute], MathFunction("same", "abs"))
    add([math.isnan, np.isnan], MathFunction("predicate", "isnan"))
    add([math.isinf, np.isinf], MathFunction("predicate", "isinf"))
    add([math.isfinite, np.isfinite], MathFunction("predicate", "isfinite"))
    add([math.atan2, np.arctan2], MathFunction("float2", "atan2", 2))
    add([math.hypot, np.hypot], MathFunction("float2", "hypot", 2))
    add([math.copysign, np.copysign], MathFunction("float2", "copysign", 2))
    add([math.fmod], MathFunction("float2", "fmod", 2))
    add([math.pow], MathFunction("float2", "pow", 2))
    return {id(obj): (obj, fn) for obj, fn in entries}


_MATH = _table()


def math_function(obj: Any) -> MathFunction | None:
    entry = _MATH.get(id(obj))
    return entry[1] if entry is not None and entry[0] is obj else None
