"""HPVM's files of tensors and labels, read as its tensor runtime reads them (tensorUtils.h).

Why. HPVM's DNN programs read their weights, input images and labels from raw binary files
that HPVM's tools write: a tensor file is its float32 values in NCHW order (a batch of
images is N images one after the other), a labels file one unsigned integer per image —
uint32 for ``readLabels3``, ``readLabelsBatch3`` and the runtime controller, uint8 for
``readLabels`` — all in native byte order with no header. HPVM reads them with ``fread`` and
does not look at the count: a missing file aborts, a short one leaves the rest of the
tensor uninitialized. Here both are an ``HPVMCError`` saying what the file holds and how to
write it. Labels go back to C in memory from C's ``malloc`` (HPVM's are), so a program may
``free`` them.
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Any

import numpy as np

from .errors import HPVMCError

_HOW = {
    "float32": "write tensors as raw float32 in NCHW order (numpy: a.astype(np.float32).tofile(path))",
    "uint32": "write labels as raw uint32 (numpy: labels.astype(np.uint32).tofile(path))",
    "uint8": "write labels as raw uint8 (numpy: labels.astype(np.uint8).tofile(path))",
}


def read_values(api: str, path: str, dtype: str, start: int, count: int) -> np.ndarray:
    """Values ``start`` .. ``start + count - 1`` of the file at ``path``, of ``dtype``
    (``float32``, ``uint32`` or ``uint8``); ``HPVMCError`` naming ``api`` if the file cannot be
    read or holds fewer."""
    kind = np.dtype(dtype)
    try:
        with open(path, "rb") as f:
            total = os.fstat(f.fileno()).st_size // kind.itemsize
            f.seek(start * kind.itemsize)
            data = np.fromfile(f, dtype=kind, count=count)
    except OSError as e:
        raise HPVMCError(f"{api}({path!r}): cannot read the file: {e.strerror or e}") from None
    if data.size != count:
        raise HPVMCError(
            f"{api}({path!r}): the file holds {total} {kind.name} values, {start + count} are needed; "
            + _HOW[kind.name]
        )
    return data


def c_copy(values: np.ndarray) -> int:
    """The address of a copy of ``values`` in memory from C's ``malloc``."""
    size = max(values.nbytes, 1)
    address = _malloc()(size)
    if not address:
        raise MemoryError(f"malloc({size}) failed")
    ctypes.memmove(address, np.ascontiguousarray(values).ctypes.data, values.nbytes)
    return int(address)


def c_values(address: int, dtype: str, count: int) -> np.ndarray:
    """A copy of the ``count`` values of ``dtype`` at ``address`` (C memory)."""
    kind = np.dtype(dtype)
    return np.frombuffer(ctypes.string_at(address, count * kind.itemsize), dtype=kind).copy()


@functools.cache
def _malloc() -> Any:
    """C's ``malloc`` (the one the program's own ``free`` pairs with)."""
    malloc = ctypes.CDLL(None).malloc
    malloc.restype = ctypes.c_void_p
    malloc.argtypes = [ctypes.c_size_t]
    return malloc


__all__ = ["c_copy", "c_values", "read_values"]
