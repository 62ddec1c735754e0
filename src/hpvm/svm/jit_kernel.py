"""Compiled kernels: a user-defined work function compiled with Numba (``nogil=True``), run
on its processor's thread without the GIL, so kernels on different processors run in
parallel on different cores.

``kernel_init(k, proc, scratch, work, compiled=True)`` marks the kernel; at ``kernel_run``
its data members are read (as the seed's LLC reads a kernel's members from its init
function) and the work function is compiled for them: ``work(k)`` receives a named tuple
with one field per public member — a stream becomes a ``CStream``, a block a ``CBlock``
(``jit_ops``), a number stays a number (read-only) and a NumPy array is passed as is (the
way to hand results back: write into it). Anything the first version cannot lower is an
``SVMError`` at ``kernel_run`` naming the kernel and the member.

Importing this module imports Numba; ``kernels.py`` imports it only for compiled kernels.
"""

from __future__ import annotations

import threading
import warnings
from collections import namedtuple
from typing import Any

import numba
import numpy as np

from . import jit_callbacks, jit_ops
from .blocks import Block
from .errors import SVMError
from .ring import MASK
from .runtime import Context
from .streams import STREAM_UNORDERED, Stream

POLL = 0.002  # seconds: the longest a Python-side wait sleeps while compiled kernels exist

_dispatchers: dict[Any, Any] = {}  # work function -> its Numba dispatcher
_member_types: dict[tuple[str, tuple[str, ...]], type] = {}  # one named tuple type per shape
_lock = threading.Lock()


class JitRun:
    """What a compiled kernel's execution needs (on ``kernel._svm.jit``)."""

    def __init__(
        self, ctx: Context, dispatcher: Any, args: Any, objects: list[Any], keep: list[Any], seen: list[Any]
    ):
        self.ctx = ctx
        self.dispatcher = dispatcher
        self.args = args
        self.objects = objects  # streams and blocks by key
        self.seen = (
            seen  # by key: a stream's [read, written] words (1 once its role is taken), None for a block
        )
        self.keep = keep  # the arrays whose addresses compiled code uses: alive while it runs
        self.stop: BaseException | None = None  # what the compiled code unwound for

    def run(self) -> None:
        try:
            self.dispatcher(self.args)
        except jit_callbacks.CompiledStop:
            stop, self.stop = self.stop, None
            if stop is None:  # pragma: no cover - every CompiledStop is raised after a stash
                raise SVMError("compiled kernel stopped without a reason") from None
            raise stop from None


def _scalar_numeric(dtype: np.dtype) -> bool:
    return dtype.shape == () and dtype.fields is None and dtype.kind in "biuf"


def _address(arr: np.ndarray) -> int:
    return int(arr.ctypes.data)


def _member(
    ctx: Context,
    name: str,
    kernel: str,
    value: Any,
    ctl: np.ndarray,
    objects: list[Any],
    keep: list[Any],
    seen: list[Any],
) -> Any:
    where = f"compiled kernel {kernel}: member {name!r}"
    if isinstance(value, Stream):
        if value._ring is None or value._ctx is not ctx:
            raise SVMError(f"{where} is stream {value.name}, which is not initialised on this svm.init()")
        if not _scalar_numeric(value._ring.dtype):
            raise SVMError(
                f"{where} is stream {value.name} of element type {value._ring.dtype}; compiled kernels support "
                "streams of scalar numeric elements (bool, integers, floats) — use a Python work function"
            )
        ring = value._ring
        objects.append(value)
        words = np.zeros(2, np.int64)  # the first pop / push calls back to take the role (A7)
        seen.append(words)
        keep.extend((ring.data, ring.state, ring.tags, words))
        return jit_ops.CStream(
            _address(ring.data),
            _address(ring.state),
            _address(ring.tags),
            _address(ctl),
            _address(words),
            ring.capacity,
            int(ring.state[MASK]),
            bool(value.flags & STREAM_UNORDERED),
            len(objects) - 1,
            ring.dtype.type(0),
        )
    if isinstance(value, Block):
        if value.data is None or value._ctx is not ctx:
            raise SVMError(f"{where} is block {value.name}, which is not initialised on this svm.init()")
        if not _scalar_numeric(value.dtype):
            raise SVMError(
                f"{where} is block {value.name} of element type {value.dtype}; compiled kernels support "
                "blocks of scalar numeric elements — use a Python work function"
            )
        objects.append(value)
        seen.append(None)
        keep.append(value.data)
        return jit_ops.CBlock(
            _address(value.data), value.capacity, _address(ctl), len(objects) - 1, value.dtype.type(0)
        )
    if isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating):
        return value
    if isinstance(value, np.ndarray) and _scalar_numeric(value.dtype):
        return value
    raise SVMError(
        f"{where} is a {type(value).__name__}; a compiled kernel's members may be streams, blocks, "
        "numbers and NumPy arrays of numbers (rename it with a leading underscore to hide it from the "
        "work function, or use a Python work function)"
    )


def prepare(ctx: Context, k: Any) -> JitRun:
    """Read ``k``'s members and compile its work function for them (at ``kernel_run``)."""
    state = k._svm
    if state.ctl is None:
        state.ctl = np.zeros(8, np.int64)
    state.ctl[0] = 0
    objects: list[Any] = []
    keep: list[Any] = [state.ctl]  # compiled code holds raw addresses into these arrays
    seen: list[Any] = []
    members = {n: v for n, v in vars(k).items() if not n.startswith("_")}
    fields = {n: _member(ctx, n, state.name, v, state.ctl, objects, keep, seen) for n, v in members.items()}
    shape = (type(k).__name__, tuple(fields))
    with _lock:
        tuple_type = _member_types.get(shape)
        if tuple_type is None:
            tuple_type = _member_types[shape] = namedtuple(f"{type(k).__name__}Members", list(fields))
        dispatcher = _dispatchers.get(state.work)
        if dispatcher is None:
            dispatcher = _dispatchers[state.work] = numba.njit(nogil=True)(state.work)
    args = tuple_type(**fields)
    try:
        with warnings.catch_warnings():
            # The objmode call-backs (waiting, pausing) make Numba warn that "code running in
            # object mode" is not parallel: it runs only while the kernel waits in Python.
            warnings.simplefilter("ignore", numba.NumbaWarning)
            dispatcher.compile((numba.typeof(args),))
    except Exception as exc:  # Numba's typing and lowering errors
        first = str(exc).strip().splitlines()
        detail = "\n".join(line for line in first[:40] if line.strip())
        raise SVMError(
            f"kernel_run({state.name}): its work function {getattr(state.work, '__name__', state.work)!r} "
            f"cannot be compiled (members: {', '.join(fields) or 'none'}). Inside a compiled kernel use "
            "stream_pop / stream_push[_with_eos] / stream_peek / stream_peek_eos / block_read / block_write "
            "on the kernel's members, NumPy and plain Python numbers; write results into a NumPy array "
            f"member. Numba said:\n{detail}"
        ) from exc
    ctx.poll = POLL
    return JitRun(ctx, dispatcher, args, objects, keep, seen)
