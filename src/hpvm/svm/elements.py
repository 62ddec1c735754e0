"""Element types: the seed's fixed-size elements as NumPy dtypes, and conversions of
Python values to arrays of them.

An element size given as a byte count is an opaque ``V<n>`` dtype (elements are ``bytes``
in Python); a dtype may be any fixed-size NumPy type: numbers, booleans, fixed-length
arrays (``np.dtype((np.float32, 4))``) and structs (structured dtypes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

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


def one(value: Any, dtype: np.dtype, where: str) -> np.ndarray:
    """``value`` as an array of one element of ``dtype``."""
    if _is_raw(dtype):
        raw = (
            bytes(value) if isinstance(value, bytes | bytearray | memoryview) else np.asarray(value).tobytes()
        )
        if len(raw) != dtype.itemsize:
            raise SVMError(f"{where}: an element is {dtype.itemsize} bytes, got {len(raw)} bytes ({value!r})")
        return np.frombuffer(raw, dtype=dtype).copy()
    out = np.empty(1, dtype)
    try:
        out[0] = value
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
    try:
        arr = np.ascontiguousarray(values, dtype=dtype.base)
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
