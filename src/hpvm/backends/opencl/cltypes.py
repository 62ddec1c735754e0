"""Scalar types of translated leaves: NumPy dtypes, their OpenCL C names, and Numba's typing rules.

Every back end runs the same leaf source; the ``cpu`` back end compiles it with Numba, so the
OpenCL translation types each expression the way Numba does, or the two back ends would compute
in different precisions. The rules below were read off Numba 0.68 (``njit(...).compile(sig)``
and the return type) and differ from NumPy's in places:

* arithmetic on two integers widens to 64 bits: ``int32 + int32`` is ``int64``, ``uint8 +
  uint8`` is ``uint64``; signed if either operand is signed (``int64 + uint64`` is ``int64``);
* an integer with a float follows NumPy's promotion: ``float32 + int8`` is ``float32``,
  ``float32 + int32`` is ``float64``; Python literals are ``int64`` / ``float64``, so
  ``x32 * 0.5`` is ``float64``;
* a variable assigned values of different types has their NumPy promotion
  (``np.promote_types``: ``int64`` with ``float64`` gives ``float64``);
* ``min``/``max`` and conditional expressions also use the promotion, without widening
  (``min(int32, int32)`` stays ``int32``).
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
