"""An exception raised inside an LLVM leaf, read back from what the leaf's code recorded.

An exported Python leaf is Numba's code: when its body raises, Numba returns a nonzero
status and points its *exception info* at a struct ``{ptr pickle, i32 size, ptr, ptr, i32
alloc}`` whose pickle is ``(class, args, (function, file, line))`` — a constant of the
module for a static exception (``raise ValueError("negative input")``). The exported node
function passes both to ``__hpvm_leaf_error`` (``ir.bodies.LEAF_ERROR``), which the clone
(``native.py``) defines as two stores into the instance context's reserved slots 0 and 1:
no call into Python, and nothing at all while no leaf raises. Whoever called the clone
reads the slots afterwards — ``run.py`` for ``interp``, the ``cpu`` back end's wrapper
(``numba_call.py``, which raises ``LeafRaised`` from its compiled code) — and
``describe`` turns them into the exception's class and message.

A *dynamic* exception (run-time values among its arguments, ``raise ValueError("bad",
i)``) keeps those values in memory that only Numba's unwrapping function, which needs the
Python objects of the module Numba compiled, could turn into Python values; the exported
module does not have them. Its class and static arguments are shown, each run-time value as
``<run-time value>``, and its memory is freed.
"""

from __future__ import annotations

import ctypes
import pickle
from dataclasses import dataclass
from typing import Any

from ...errors import NodeExecutionError

#: Numba's status for a user exception (``numba.core.callconv.RETCODE_USEREXC``), and what its
#: other nonzero codes mean: a Python exception set through the C API, ``None``, ``StopIteration``.
USER_EXCEPTION = 1
#: What a checked access that failed calls (``checked.py``): ``(i64 offset, i64 size, i32
#: status, ptr info)`` — the access's byte offset from its array and the array's bytes,
#: then ``__hpvm_leaf_error``'s two. The clone records all four (slots 0 to 3).
CHECK_FAILED = "__hpvm_leaf_error_at"
CHECK_FAILED_DECLARATION = f"declare void @{CHECK_FAILED}(i64, i64, i32, ptr)"
_OTHER = {-1: "a Python exception it could not pass on", -2: "None", -3: "StopIteration"}


class LeafRaised(Exception):
    """Raised by the compiled code of the ``cpu`` back end when an LLVM leaf's clone
    recorded an error: ``(digest of the clone, status, exception-info address)``, and in
    checked code then ``(offset, size, the instance's context)`` (a failed checked access's
    byte offset and its array's bytes, ``checked.py``). The back end turns it into a
    ``NodeExecutionError`` naming the node (``cpu/raised.py``)."""


class _Excinfo(ctypes.Structure):
    _fields_ = [
        ("pickle", ctypes.c_void_p),
        ("size", ctypes.c_int32),
        ("values", ctypes.c_void_p),
        ("unwrap", ctypes.c_void_p),
        ("alloc", ctypes.c_int32),
    ]


class _RuntimeValue:
    """Stands for an argument only known at run time (a dynamic exception's)."""

    def __repr__(self) -> str:
        return "<run-time value>"

    __str__ = __repr__


@dataclass(frozen=True)
class Raised:
    """What a leaf raised: ``text`` is ``"ValueError: negative input"`` (as
    ``f"{type(e).__name__}: {e}"`` writes the exception), ``where`` the place of the
    ``raise`` Numba recorded (``"file:line, in function"``, or empty), ``exception`` the
    exception itself when it could be rebuilt (to chain the ``NodeExecutionError`` from)."""

    text: str
    where: str = ""
    exception: BaseException | None = None

    def message(self) -> str:
        """``raised ValueError: negative input (at prog.py:8, in picky)``."""
        return f"raised {self.text}" + (f" (at {self.where})" if self.where else "")


def describe(status: int, address: int) -> Raised:
    """The exception a leaf's code recorded with Numba's ``status`` and exception-info
    pointer ``address`` (null, or Numba's struct); frees a dynamic exception's memory.
    Never raises: what cannot be read is said so in the text."""
    if status < USER_EXCEPTION:
        what = _OTHER.get(status, f"status {status}")
        return Raised(f"an error Numba reports as {what}, with no exception information")
    if not address:
        return Raised(f"an exception (Numba status {status}) without exception information")
    info = _Excinfo.from_address(address)
    try:
        if not info.pickle or not 0 < info.size < 1 << 31:
            raise ValueError(f"no pickled exception at {address:#x}")
        cls, args, loc = pickle.loads(ctypes.string_at(info.pickle, info.size))
        args = tuple(_static(a) for a in (args or ()))
    except Exception as e:  # a hand-written leaf may pass anything: say what went wrong
        return Raised(f"an exception (Numba status {status}) whose information could not be read ({e})")
    # Numba's dynamic exception: its values and the struct itself are NRT_Allocate'd, and
    # the struct counts the run-time values the pickle holds places for. Only memory that
    # is evidently that is freed (a wrong free would corrupt the heap).
    places = sum(isinstance(a, _RuntimeValue) for a in args)
    if info.alloc > 0 and info.alloc == places and info.values and info.unwrap:
        _free(info.values)
        _free(address)
    return _rebuilt(cls, args, loc)


def _static(arg: Any) -> Any:
    """A static argument as it is; a dynamic exception's placeholder (an llvmlite value
    Numba pickled in place of each run-time value) as ``<run-time value>``."""
    return _RuntimeValue() if type(arg).__module__.startswith("llvmlite.") else arg


def _rebuilt(cls: Any, args: tuple[Any, ...], loc: Any) -> Raised:
    """``cls(*args)`` as ``Raised`` (a class whose constructor takes other arguments: its
    name and the arguments as ``BaseException`` shows them)."""
    where = ""
    if isinstance(loc, tuple) and len(loc) == 3:
        function, file, line = loc
        where = f"{file}:{line}, in {function}"
    name = getattr(cls, "__name__", str(cls))
    exception: BaseException | None = None
    if isinstance(cls, type) and issubclass(cls, BaseException):
        try:
            exception = cls(*args)
            text = f"{name}: {exception}"
        except Exception:  # an exception class whose constructor takes other arguments
            exception = None
    if exception is None:
        shown = str(args[0]) if len(args) == 1 else str(args) if args else ""
        text = f"{name}: {shown}"
    return Raised(text, where, exception)


def recorded(slot: int, address: int) -> Raised:
    """What the context's slots 0 and 1 recorded (``1 << 32 | status``, the info's address)."""
    return describe(ctypes.c_int32(int(slot) & 0xFFFFFFFF).value, int(address) & 0xFFFFFFFFFFFFFFFF)


def execution_error(where: str, raised: Raised) -> NodeExecutionError:
    """``NodeExecutionError("<where>: raised ValueError: ...")``, caused by the exception
    itself when it could be rebuilt (as ``raise ... from`` would set it)."""
    error = NodeExecutionError(f"{where}: {raised.message()}")
    if raised.exception is not None:
        error.__cause__ = raised.exception
        error.__suppress_context__ = True
    return error


_NRT_FREE: Any = None


def _free(address: int | None) -> None:
    """Free memory Numba's runtime allocated for a dynamic exception."""
    global _NRT_FREE
    if not address:
        return
    if _NRT_FREE is None:
        import llvmlite.binding as llvm

        symbol = llvm.address_of_symbol("NRT_Free")
        if not symbol:  # (the leaf allocated it with NRT_Allocate, so Numba's runtime is up)
            return
        _NRT_FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(symbol)
    _NRT_FREE(address)


__all__ = [
    "CHECK_FAILED",
    "CHECK_FAILED_DECLARATION",
    "LeafRaised",
    "Raised",
    "USER_EXCEPTION",
    "describe",
    "execution_error",
    "recorded",
]
