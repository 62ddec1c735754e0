"""Checked array views: the interpreter's bounds and write-permission checks.

Leaves see their array arguments through ``CheckedArray`` views (no copy). Every integer
index is checked against the bounds — negative indices included, because they would wrap in
Python and Numba but read out of bounds on a GPU, so a portable leaf must not use them — and
arrays not in a leaf's ``outs`` are read-only views whose writes are reported by name.
While races are checked, each view also reports the elements it reads and writes to its
leaf execution's recorder (``races.py``): subscripts, ufuncs and NumPy functions, ``fill``,
``copy`` and ``astype``; views derived from it (slices, reshapes, ``.view(dtype)``) report
to the same recorder, copies do not (they are the instance's own memory).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ...errors import IllegalWriteError, OutOfBoundsError
from ...ir.execution import current_context
from . import arith

#: The types of an integer index (``bool`` and ``np.bool_`` are not: they select).
_INDEX_TYPES = frozenset({int, *(np.dtype(c).type for c in np.typecodes["AllInteger"])})


class CheckedArray(np.ndarray):
    """An ndarray view that checks integer indices and write permission."""

    _hpvm_name: str | None = None
    #: the recorder (races.py) of the leaf execution whose array this views, or None
    _hpvm_races: Any = None
    #: that leaf's array itself (``checked_view``), named and indexed in race messages
    _hpvm_origin: Any = None
    #: (address of the first element, strides), cached by races.py
    _hpvm_layout: Any = None

    def __array_finalize__(self, obj: Any) -> None:
        if obj is not None:
            self._hpvm_name = getattr(obj, "_hpvm_name", None)
            races = getattr(obj, "_hpvm_races", None)
            if races is not None:
                base = self.base
                if base is obj or (base is not None and base is obj.base):  # a view of obj's memory
                    self._hpvm_races = races
                    self._hpvm_origin = obj._hpvm_origin

    def _describe(self, depth: int = 2) -> str:
        """Node instance and line of the access: from the running leaf's context. (A store
        or an augmented assignment reaches the array through ``arith``: the leaf's line is
        the caller's.)"""
        frame = sys._getframe(depth)
        while frame.f_back is not None and frame.f_code.co_filename == arith.__file__:
            frame = frame.f_back
        file, line = frame.f_code.co_filename, frame.f_lineno
        ctx = current_context()
        where = getattr(ctx, "where", None)
        return where(line, file) if where else f"{file}:{line}"

    def _label(self) -> str:
        return f"array '{self._hpvm_name}'" if self._hpvm_name else "a temporary array"

    def _check(self, key: Any) -> None:
        if type(key) is int or (isinstance(key, np.integer) and self.ndim):  # the common a[i]
            size = self.shape[0] if self.ndim else 0
            if not 0 <= key < size:
                raise OutOfBoundsError(self._oob_message(int(key), 0, size))
            return
        if type(key) is tuple and len(key) == self.ndim:  # the common a[i, j]: one element
            shape = self.shape
            for axis, k in enumerate(key):
                if type(k) not in _INDEX_TYPES:
                    break  # a slice, an index array, a bool...: the general rules below
                if not 0 <= k < shape[axis]:
                    raise OutOfBoundsError(self._oob_message(int(k), axis, shape[axis]))
            else:
                return
        keys = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, list) for k in keys):
            # Index lists (a[[0, 5]]) are fancy indices like index arrays: check them the same
            # way (unchecked, a negative entry would silently wrap around).
            keys = tuple(_as_index_array(k) for k in keys)
        axis = 0
        for position, k in enumerate(keys):
            if k is Ellipsis:  # the axes after an ellipsis count from the end
                axis = self.ndim - sum(1 for x in keys[position + 1 :] if x is not None)
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
            " (negative indices are out of bounds in HPVM leaves: they would wrap in Python but not on a GPU)"
            if index < 0
            else ""
        )
        return (
            f"{self._describe(4)}: index {index} is out of bounds for axis {axis} of "
            f"{self._label()} with size {size}{hint}"
        )

    def __repr__(self) -> str:  # NumPy's printing indexes with negative numbers: not a leaf's access
        return repr(self.view(np.ndarray))

    def __str__(self) -> str:
        return str(self.view(np.ndarray))

    def __getitem__(self, key: Any) -> Any:
        self._check(key)
        races = self._hpvm_races
        if races is not None:
            races.read(self, key)
        return np.ndarray.__getitem__(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if not self.flags.writeable:
            raise IllegalWriteError(self._illegal_write_message(self._describe()))
        self._check(key)
        races = self._hpvm_races
        if races is not None:
            races.write(self, key, value)
        elif isinstance(value, CheckedArray) and value._hpvm_races is not None:
            value._hpvm_races.read_all(value)
        np.ndarray.__setitem__(self, key, value)

    def fill(self, value: Any) -> None:
        if self._hpvm_races is not None and self.flags.writeable:
            self._hpvm_races.write_all(self)
        np.ndarray.fill(self, value)

    def copy(self, order: Any = "C") -> Any:
        if self._hpvm_races is not None:
            self._hpvm_races.read_all(self)
        return np.ndarray.copy(self, order)

    def astype(self, *args: Any, **kwargs: Any) -> Any:
        if self._hpvm_races is not None:
            self._hpvm_races.read_all(self)
        return np.ndarray.astype(self, *args, **kwargs)

    def _illegal_write_message(self, where: str) -> str:
        return (
            f"{where}: writes array '{self._hpvm_name}', which the leaf's outs does not "
            f"declare; add '{self._hpvm_name}' to outs=(...)"
        )

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """Ufuncs on checked arrays: ``out=`` must be writable (named when it is not), and
        the new arrays they make are checked temporaries, not views named after an input."""
        at = method == "at" and isinstance(inputs[0], CheckedArray)
        if at:  # np.add.at(a, idx, v) writes a
            target = inputs[0]
            if not target.flags.writeable:
                raise IllegalWriteError(target._illegal_write_message(target._describe()))
            if len(inputs) > 1:
                target._check(inputs[1])
        outs = kwargs.get("out")
        if outs:
            for o in outs:
                if isinstance(o, CheckedArray) and not o.flags.writeable:
                    raise IllegalWriteError(o._illegal_write_message(o._describe()))
        _record_ufunc(inputs, outs or (), at)
        if outs:
            kwargs["out"] = tuple(unwrap(o) for o in outs)
        result = getattr(ufunc, method)(*(unwrap(i) for i in inputs), **kwargs)
        if outs:  # NumPy's convention: return the out arguments themselves
            return outs[0] if len(outs) == 1 else tuple(outs)
        if isinstance(result, tuple):
            return tuple(_temporary(r) for r in result)
        return _temporary(result)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NumPy functions that write an array (``np.copyto(a, ...)``, ``out=a``) name it
        when the leaf's outs does not declare it."""
        _check_function_writes(func, args, kwargs)
        _record_function(func, args, kwargs)
        return super().__array_function__(func, types, args, kwargs)


# NumPy functions that write their first argument (besides any function's ``out=``).
_WRITES_FIRST_ARGUMENT = frozenset(
    {np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis}
)


def checked_view(array: np.ndarray, name: str, writable: bool, races: Any = None) -> CheckedArray:
    """A checked, zero-copy view of ``array`` named ``name`` for one node's execution;
    ``races``: the recorder its accesses go to (``races.LeafRecorder``), if any."""
    view = array.view(CheckedArray)
    view._hpvm_name = name
    if races is not None:
        view._hpvm_races = races
        view._hpvm_origin = view
    if not writable:
        view.flags.writeable = False
    return view


def _recorded(value: Any) -> bool:
    return isinstance(value, CheckedArray) and value._hpvm_races is not None


def _record_ufunc(inputs: tuple[Any, ...], outs: tuple[Any, ...], at: bool) -> None:
    """A ufunc reads its array operands and writes its ``out=`` arrays (``ufunc.at``: the
    selected elements of its first operand)."""
    written = [id(o) for o in outs]
    if at and _recorded(inputs[0]):
        written.append(id(inputs[0]))
        inputs[0]._hpvm_races.write(inputs[0], inputs[1] if len(inputs) > 1 else (), None)
    for operand in inputs:
        if _recorded(operand) and id(operand) not in written:
            operand._hpvm_races.read_all(operand)
    for o in outs:
        if _recorded(o):
            o._hpvm_races.write_all(o)


# NumPy functions that only look at an array's shape or make a view of it: not reads.
_NO_READ = frozenset(
    getattr(np, name)
    for name in (
        "shape ndim size empty_like zeros_like ones_like full_like may_share_memory shares_memory "
        "result_type iscomplexobj isrealobj reshape ravel transpose swapaxes moveaxis rollaxis "
        "squeeze expand_dims atleast_1d atleast_2d atleast_3d broadcast_to broadcast_arrays "
        "diagonal real imag flip fliplr flipud rot90 split array_split hsplit vsplit dsplit"
    ).split()
)


def _record_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """A NumPy function reads the arrays it is given and writes its ``out=`` arrays and, for
    those in ``_WRITES_FIRST_ARGUMENT``, its first argument: ``np.put``, ``np.place`` and
    ``np.putmask`` only the elements they select, ``np.copyto(where=)`` only where the mask
    is true, the others all of it."""
    out = kwargs.get("out")
    targets = list(out if isinstance(out, tuple) else (out,)) if out is not None else []
    for t in targets:
        if _recorded(t):
            t._hpvm_races.write_all(t)
    first = args[0] if args else None
    if func in _WRITES_FIRST_ARGUMENT and _recorded(first):
        targets.append(first)
        first._hpvm_races.write_picked(first, _picker(func, args, kwargs))
    if func in _NO_READ:
        return
    written = {id(t) for t in targets}
    values = [*args, *(v for k, v in kwargs.items() if k != "out")]
    for value in values:
        for operand in value if isinstance(value, (list, tuple)) else (value,):
            if _recorded(operand) and id(operand) not in written:
                operand._hpvm_races.read_all(operand)


def _picker(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """For a function writing its first argument: from the addresses of that array's
    elements (in its shape), those it writes."""

    def masked(mask: Any) -> Any:
        return lambda grid: grid[np.broadcast_to(np.asarray(mask, dtype=bool), grid.shape)]

    if func is np.put and len(args) > 1:
        return lambda grid: grid.ravel()[np.asarray(args[1], dtype=np.intp).ravel()]
    if func in (np.place, np.putmask) and len(args) > 1:
        return masked(args[1])
    if func is np.copyto and kwargs.get("where", True) is not True:
        return masked(kwargs["where"])
    return lambda grid: grid


def _check_function_writes(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    targets = list(args[:1]) if func in _WRITES_FIRST_ARGUMENT else []
    out = kwargs.get("out")
    if out is not None:
        targets.extend(out if isinstance(out, tuple) else (out,))
    for t in targets:
        if isinstance(t, CheckedArray) and not t.flags.writeable:
            raise IllegalWriteError(t._illegal_write_message(t._describe(3)))


def _temporary(value: Any) -> Any:
    if isinstance(value, np.ndarray) and not isinstance(value, CheckedArray):
        view = value.view(CheckedArray)
        view._hpvm_name = None
        return view
    return value


def _as_index_array(key: Any) -> Any:
    if isinstance(key, list):
        try:
            arr = np.asarray(key)
        except ValueError:
            return key
        if arr.dtype.kind in "iu":
            return arr
    return key


def unwrap(value: Any) -> Any:
    """The plain ndarray behind a checked view (values leaving a leaf are plain arrays)."""
    if isinstance(value, CheckedArray):
        return value.view(np.ndarray)
    return value
