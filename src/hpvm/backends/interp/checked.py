"""Checked array views: the interpreter's bounds and write-permission checks.

Leaves see their array arguments through ``CheckedArray`` views (no copy). Every integer
index is checked against the bounds — negative indices included, because they would wrap in
Python and Numba but read out of bounds on a GPU, so a portable leaf must not use them — and
arrays not in a leaf's ``outs`` are read-only views whose writes are reported by name.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ...errors import IllegalWriteError, OutOfBoundsError
from ...lang.intrinsics import current_context


class CheckedArray(np.ndarray):
    """An ndarray view that checks integer indices and write permission."""

    _hpvm_name: str | None = None

    def __array_finalize__(self, obj: Any) -> None:
        if obj is not None:
            self._hpvm_name = getattr(obj, "_hpvm_name", None)

    def _describe(self, depth: int = 2) -> str:
        """Node instance and line of the access: from the running leaf's context."""
        line = sys._getframe(depth).f_lineno
        ctx = current_context()
        where = getattr(ctx, "where", None)
        return where(line) if where else f"line {line}"

    def _check(self, key: Any) -> None:
        keys = key if isinstance(key, tuple) else (key,)
        axis = 0
        for position, k in enumerate(keys):
            if k is Ellipsis:  # the axes after an ellipsis count from the end
                axis = self.ndim - sum(1 for x in keys[position + 1:] if x is not None)
                continue
            if k is None:
                continue
            if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
                size = self.shape[axis] if axis < self.ndim else 0
                if not 0 <= int(k) < size:
                    raise OutOfBoundsError(self._oob_message(int(k), axis, size))
            elif isinstance(k, np.ndarray) and k.dtype.kind in "iu" and k.size:
                size = self.shape[axis] if axis < self.ndim else 0
                low, high = int(k.min()), int(k.max())
                if low < 0 or high >= size:
                    bad = low if low < 0 else high
                    raise OutOfBoundsError(self._oob_message(bad, axis, size))
            axis += 1

    def _oob_message(self, index: int, axis: int, size: int) -> str:
        hint = (
            " (negative indices are out of bounds in HPVM leaves: they would wrap in Python "
            "but not on a GPU)"
            if index < 0
            else ""
        )
        return (
            f"{self._describe(4)}: index {index} is out of bounds for axis {axis} of array "
            f"'{self._hpvm_name}' with size {size}{hint}"
        )

    def __getitem__(self, key: Any) -> Any:
        self._check(key)
        return np.ndarray.__getitem__(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if not self.flags.writeable:
            raise IllegalWriteError(
                f"{self._describe()}: writes array '{self._hpvm_name}', which the leaf's outs "
                f"does not declare; add '{self._hpvm_name}' to outs=(...)"
            )
        self._check(key)
        np.ndarray.__setitem__(self, key, value)


def checked_view(array: np.ndarray, name: str, writable: bool) -> CheckedArray:
    """A checked, zero-copy view of ``array`` named ``name`` for one node's execution."""
    view = array.view(CheckedArray)
    view._hpvm_name = name
    if not writable:
        view.flags.writeable = False
    return view


def unwrap(value: Any) -> Any:
    """The plain ndarray behind a checked view (values leaving a leaf are plain arrays)."""
    if isinstance(value, CheckedArray):
        return value.view(np.ndarray)
    return value
