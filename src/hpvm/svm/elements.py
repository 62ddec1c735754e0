"""Element types: the seed's fixed-size elements as NumPy dtypes, and conversions of
Python values to arrays of them.

An element size given as a byte count is an opaque ``V<n>`` dtype (elements are ``bytes``
in Python); a dtype may be any fixed-size NumPy type: numbers, booleans, fixed-length
arrays (``np.dtype((np.float32, 4))``) and structs (structured dtypes).

A value enters an element only if it fits, as C's conversions define "fits": an integer
within the type's range, a float whose integer part is (C truncates toward zero; NaN and
infinities never fit an integer), a number whose magnitude does not round to infinity in
a narrower float. Anything else is an ``SVMError`` naming the stream or block, the value
and the type, never NumPy's ``OverflowError`` nor a silent wrap-around (NumPy wraps when it
casts arrays). Boolean elements take any number's truth value, as C's ``_Bool`` does.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..ir.elementfit import first_misfit, range_text
from .errors import SVMError


def element_dtype(element_size: Any, function: str) -> np.dtype:
    """The dtype for an ``element_size`` argument (bytes or a dtype-like)."""
    if isinstance(element_size, bool):
        raise SVMError(
            f"{function}: element_size must be a byte count or a NumPy dtype, got {element_size!r}"
        )
    if isinstance(element_size, int | np.integer):
        if element_size <= 0:
            raise SVMError(f"{function}: element_size must be a positive number of bytes, got {element_size}")
        return np.dtype(f"V{int(element_size)}")
    try:
        dtype = np.dtype(element_size)
    except TypeError as exc:
        raise SVMError(
            f"{function}: element_size {element_size!r} is neither a byte count nor a NumPy dtype"
        ) from exc
    if dtype.itemsize == 0 or dtype.hasobject:
        raise SVMError(
            f"{function}: element type {dtype} has no fixed size in bytes; use numbers, fixed-length "
            "arrays or structured dtypes"
        )
    return dtype


def _is_raw(dtype: np.dtype) -> bool:
    return dtype.kind == "V" and dtype.fields is None and dtype.subdtype is None


def float_limit(dtype: np.dtype) -> int:
    """The smallest magnitude that rounds to infinity in float type ``dtype`` (exact: the
    largest finite value plus half its last place)."""
    top = np.finfo(dtype).max
    below = np.nextafter(top, dtype.type(0))
    return int(top) + (int(top) - int(below)) // 2


def _shown(value: Any) -> str:
    """``value`` for a message: NumPy scalars as plain numbers, huge integers shortened."""
    if isinstance(value, np.generic):
        value = value.item()
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:12]}...{text[-6:]} ({len(text)} characters)"


def misfit(where: str, value: Any, dtype: np.dtype, position: str = "") -> SVMError:
    """The error for ``value`` that does not fit an element of ``dtype`` (``where``: the
    call and the stream or block, ``position``: which of several values)."""
    fix = (
        f"np.clip, or an explicit wrapping conversion such as np.array(v).astype(np.{dtype.name})"
        if dtype.kind in "iuf"
        else "check each member against its type"
    )
    return SVMError(
        f"{where}: {position}{_shown(value)} does not fit in an element of type {dtype} ({range_text(dtype)}); "
        f"bring it into that range first ({fix}), or declare the elements with a wider type"
    )


@functools.cache
def _bounds(dtype: np.dtype) -> tuple[int, int]:
    """The integers an element of integer type ``dtype`` holds; for a float type, the open
    interval of magnitudes that do not round to infinity."""
    if dtype.kind == "f":
        limit = float_limit(dtype)
        return -limit, limit
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def fits(value: Any, dtype: np.dtype) -> bool:
    """Whether number ``value`` fits an element of scalar numeric type ``dtype`` (module
    docstring); values that are not numbers are left to NumPy's conversion."""
    kind = dtype.kind
    if kind not in "iuf" or type(value) is dtype.type or isinstance(value, bool | np.bool_):
        return True
    if isinstance(value, int | np.integer):
        low, high = _bounds(dtype)
        number = int(value)
        return low < number < high if kind == "f" else low <= number <= high
    if isinstance(value, float | np.floating):
        if not math.isfinite(value):
            return kind == "f"
        low, high = _bounds(dtype)
        if kind == "f":  # a Python float against Python ints: exact, and NumPy warns of nothing
            return low < float(value) < high
        return low <= math.trunc(float(value)) <= high
    return True


def _first_misfit(src: np.ndarray, base: np.dtype) -> int | None:
    """The flat index of the first value of ``src`` that does not fit ``base``, or None
    (``ir/elementfit.py``; an array of Python objects is checked value by value)."""
    if src.dtype.kind == "O" and base.kind in "iuf":
        return next((i for i, v in enumerate(src.reshape(-1)) if not fits(v, base)), None)
    return first_misfit(src, base)


def _checked_array(values: Any, base: np.dtype, dtype: np.dtype, where: str) -> np.ndarray:
    """``values`` as an array, every value of it fitting ``base`` (the element type's
    scalar type), else the ``SVMError`` naming the first one that does not."""
    try:
        src = np.asarray(values)
    except (TypeError, ValueError, OverflowError) as exc:
        raise SVMError(f"{where}: cannot convert the values to elements of type {dtype}: {exc}") from None
    bad = _first_misfit(src, base)
    if bad is not None:
        value = src.reshape(-1)[bad]
        position = f"values[{bad}] = " if src.ndim else ""
        raise misfit(where, value, base, position)
    return src


def one(value: Any, dtype: np.dtype, where: str) -> np.ndarray:
    """``value`` as an array of one element of ``dtype``."""
    if _is_raw(dtype):
        raw = (
            bytes(value) if isinstance(value, bytes | bytearray | memoryview) else np.asarray(value).tobytes()
        )
        if len(raw) != dtype.itemsize:
            raise SVMError(f"{where}: an element is {dtype.itemsize} bytes, got {len(raw)} bytes ({value!r})")
        return np.frombuffer(raw, dtype=dtype).copy()
    if dtype.shape == () and dtype.fields is None and not fits(value, dtype):
        raise misfit(where, value, dtype)
    if dtype.shape:
        value = _checked_array(value, dtype.base, dtype, where)
    out = np.empty(1, dtype)
    try:
        out[0] = value
    except OverflowError:  # a member of a structured element
        raise misfit(where, value, dtype) from None
    except (TypeError, ValueError) as exc:
        raise SVMError(f"{where}: cannot store {value!r} as an element of type {dtype}: {exc}") from None
    return out


def many(values: Any, dtype: np.dtype, where: str) -> np.ndarray:
    """``values`` (an array or sequence) as a contiguous array of ``dtype`` elements."""
    if _is_raw(dtype):
        raw = np.ascontiguousarray(values).reshape(-1).view(np.uint8)
        if raw.nbytes % dtype.itemsize:
            raise SVMError(
                f"{where}: {raw.nbytes} bytes is not a whole number of {dtype.itemsize}-byte elements"
            )
        return raw.view(dtype)
    if dtype.fields is None:
        values = _checked_array(values, dtype.base, dtype, where)
    try:
        arr = np.ascontiguousarray(values, dtype=dtype.base)
    except OverflowError:  # a member of a structured element
        raise misfit(where, "one of the values", dtype) from None
    except (TypeError, ValueError) as exc:
        raise SVMError(f"{where}: cannot convert the values to elements of type {dtype}: {exc}") from None
    if dtype.shape:
        if arr.shape[-len(dtype.shape) :] != dtype.shape:
            raise SVMError(
                f"{where}: elements of type {dtype} need arrays ending in shape {dtype.shape}, got {arr.shape}"
            )
        return arr.reshape((-1, *dtype.shape))
    return arr.reshape(-1)


def item_value(item: Any, dtype: np.dtype) -> Any:
    """One element (from ``Ring.get``) as a Python-facing value (``bytes`` for opaque ones)."""
    return item.tobytes() if _is_raw(dtype) else item


def value(arr: np.ndarray, dtype: np.dtype) -> Any:
    """One popped element as a Python-facing value (``bytes`` for opaque elements)."""
    item = arr[0]
    return item.tobytes() if _is_raw(dtype) else item
