"""Scalar types of emitted leaves: NumPy dtypes and their OpenCL C names and literals.

Every back end runs the same leaf source, and the ``cpu`` back end compiles it with Numba, so
OpenCL C must compute each value in the type Numba gives it. Those types are decided in one
place, the leaf IR's constructors (``ir/leafir/rules.py`` on ``ir/numeric.py``): a few
examples of Numba's rules — ``int32 + int32`` is ``int64``, ``float32 * 0.5`` is ``float64``,
``min(int32, int32)`` stays ``int32``, a variable assigned several types has their promotion.
This module only spells them in C.
"""

from __future__ import annotations

import numpy as np

from ...ir.numeric import range_type  # noqa: F401  (the loop variable's type: one rule, in ir)

BOOL = np.dtype(np.bool_)
I32 = np.dtype(np.int32)
I64 = np.dtype(np.int64)
U64 = np.dtype(np.uint64)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)

_C_NAMES = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "char",
    np.dtype(np.int16): "short",
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long",
    np.dtype(np.uint8): "uchar",
    np.dtype(np.uint16): "ushort",
    np.dtype(np.uint32): "uint",
    np.dtype(np.uint64): "ulong",
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
}


def c_name(dtype: np.dtype) -> str:
    """The OpenCL C name of a scalar type (``bool`` for values in registers)."""
    return _C_NAMES[np.dtype(dtype)]


def c_storage(dtype: np.dtype) -> str:
    """The OpenCL C element type of an array of ``dtype`` (bool arrays are bytes)."""
    return "uchar" if np.dtype(dtype) == BOOL else c_name(dtype)


def is_int(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f"


def is_integral(dtype: np.dtype) -> bool:
    """Integers and booleans (what integer arithmetic accepts)."""
    return dtype.kind in "iub"


def literal(c: str, dtype: np.dtype) -> str:
    """A C literal of ``dtype`` for the Python number ``c`` (already formatted)."""
    name = c_name(dtype)
    if dtype == I64:
        return f"{c}L"
    if dtype == U64:
        return f"{c}UL"
    if dtype in (I32, BOOL):
        return c
    if dtype == F32:
        return f"{c}f"
    if dtype == F64:
        return c
    return f"(({name}){c})"


def is_scalar(dtype: np.dtype) -> bool:
    """Whether OpenCL C has an element type for ``dtype``."""
    return np.dtype(dtype) in _C_NAMES
