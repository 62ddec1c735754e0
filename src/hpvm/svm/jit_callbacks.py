"""The Python side of compiled kernels: what compiled code calls back into (with
``numba.objmode``, taking the GIL) when it must wait, pause, end, wake a waiter or report an
error, and the small compiled functions that make those calls.

Each call-back returns 0, or -1 after stashing what the kernel must unwind with (a
``KernelStop`` for an end or cleanup, an ``SVMError`` for a misuse) on its ``JitRun``;
compiled code then raises ``CompiledStop`` and the runner raises what was stashed. The
waits are the runtime's own (``Context.wait_until``), so the deadlock detection, pause,
end and cleanup treat a compiled kernel like a Python one.
"""

from __future__ import annotations

import numba

from . import elements, streams
from .errors import SVMError
from .runtime import current_kernel

READ, WRITE = 0, 1
FAIL_PEEK, FAIL_BLOCK_READ, FAIL_BLOCK_WRITE, FAIL_UNORDERED = 0, 1, 2, 3
SIGNED, UNSIGNED, FLOAT = 0, 1, 2  # how py_misfit reads the value it is given


class CompiledStop(Exception):
    """Raised by compiled code to unwind to the runner, which raises what Python stashed
    (``KernelStop`` for an end or cleanup, an ``SVMError`` for a misuse)."""


# -- the Python side of the callbacks (run with the GIL, in the kernel's thread) ---------


def _stash(exc: BaseException) -> int:
    current_kernel()._svm.jit.stop = exc  # type: ignore[union-attr]
    return -1


def py_wait(key: int, need: int, kind: int) -> int:
    """Wait until stream ``key`` holds more than ``need`` elements (READ) or has room for
    more than ``need`` (WRITE); 0, or -1 with the reason stashed."""
    try:
        kernel = current_kernel()
        jit = kernel._svm.jit  # type: ignore[union-attr]
        s, ctx = jit.objects[key], jit.ctx
        with ctx.cond:
            ctx.cond.notify_all()  # what this kernel did since its last wake-up call is visible now
            if kind == READ:
                ring = streams._ring(ctx, s, "stream_pop", "reader")
                verb = "pop from" if need == 0 else f"peek element {need} of"
                ctx.wait_until(lambda: ring.count > need, streams._describe(s, verb), (ring,))
            else:
                ring = streams._ring(ctx, s, "stream_push", "writer")
                ctx.wait_until(lambda: ring.space > need, streams._describe(s, "push onto"), (ring,))
        return 0
    except BaseException as exc:  # KernelStop included: the runner re-raises it
        return _stash(exc)


def py_use(key: int, kind: int) -> int:
    """The kernel's first pop / peek (READ) or push (WRITE) of stream ``key`` in this
    execution: take the role as a Python kernel does (A6 and A7 in the assertion mode, the
    program's picture); 0, or -1 with the reason stashed."""
    try:
        kernel = current_kernel()
        jit = kernel._svm.jit  # type: ignore[union-attr]
        s, ctx = jit.objects[key], jit.ctx
        with ctx.cond:
            if kind == READ:
                streams._ring(ctx, s, "stream_pop", "reader")
            else:
                streams._ring(ctx, s, "stream_push", "writer")
        jit.seen[key][kind] = 1
        return 0
    except BaseException as exc:
        return _stash(exc)


def py_misfit(key: int, ivalue: int, fvalue: float, kind: int, what: int) -> int:
    """Stash the ``SVMError`` for a value that does not fit the element type of stream or
    block ``key`` (the message ``elements.misfit`` gives Python kernels); -1."""
    state = current_kernel()._svm  # type: ignore[union-attr]
    obj = state.jit.objects[key]
    value = (ivalue, ivalue % (1 << 64), fvalue)[kind]
    function = "block_write" if what == FAIL_BLOCK_WRITE else "stream_push"
    dtype = obj.dtype
    return _stash(elements.misfit(f"{function}({obj.name}) in compiled kernel {state.name}", value, dtype))


def py_checkpoint() -> int:
    """Honour a pause, end or cleanup request (the control word was set); 0 or -1."""
    try:
        kernel = current_kernel()
        state = kernel._svm  # type: ignore[union-attr]
        ctx = state.jit.ctx
        with ctx.cond:
            ctx.checkpoint(kernel)
            state.ctl[0] = 1 if (state.pause_requested or state.end_requested or ctx.stopping) else 0
        return 0
    except BaseException as exc:
        return _stash(exc)


def py_notify() -> int:
    """Wake the Python-side waiters (a compiled operation changed a ring they watch)."""
    ctx = current_kernel()._svm.jit.ctx  # type: ignore[union-attr]
    with ctx.cond:
        ctx.cond.notify_all()
    return 0


def py_fail(key: int, index: int, what: int) -> int:
    """Stash the ``SVMError`` for an out-of-bounds peek or block access, or a peek on a
    ``STREAM_UNORDERED`` stream; -1."""
    kernel = current_kernel()
    state = kernel._svm  # type: ignore[union-attr]
    obj = state.jit.objects[key]
    function = ("stream_peek", "block_read", "block_write", "stream_peek")[what]
    if what == FAIL_UNORDERED:
        why = "peek cannot be used on a STREAM_UNORDERED stream"
    elif what == FAIL_PEEK:
        why = (
            f"index must be in [0, {obj.capacity}) — the stream holds at most {obj.capacity} elements, "
            f"so index {index} could never be available"
        )
    else:
        why = f"index out of bounds: block {obj.name} holds {obj.capacity} elements (indices 0 to {obj.capacity - 1})"
    return _stash(SVMError(f"{function}({obj.name}, {index}) in compiled kernel {state.name}: {why}"))


# -- the compiled calls ----------------------------------------------------------------------
# Called through ``jit_cold.cold`` (once per argument types, not per constant argument).
# ``forceinline=False`` is explicit: Numba lets a function compiled while a ``forceinline``
# one is compiled inherit the flag, and these must stay out of line.


@numba.njit(nogil=True, forceinline=False)
def _call_wait(key: int, need: int, kind: int) -> None:
    with numba.objmode(rc="int64"):
        rc = py_wait(key, need, kind)
    if rc < 0:
        raise CompiledStop()


@numba.njit(nogil=True, forceinline=False)
def _call_use(key: int, kind: int) -> None:
    with numba.objmode(rc="int64"):
        rc = py_use(key, kind)
    if rc < 0:
        raise CompiledStop()


@numba.njit(nogil=True, forceinline=False)
def _call_misfit(key: int, ivalue: int, fvalue: float, kind: int, what: int) -> None:
    with numba.objmode(rc="int64"):
        rc = py_misfit(key, ivalue, fvalue, kind, what)
    if rc < 0:
        raise CompiledStop()


@numba.njit(nogil=True, forceinline=False)
def _call_checkpoint() -> None:
    with numba.objmode(rc="int64"):
        rc = py_checkpoint()
    if rc < 0:
        raise CompiledStop()


@numba.njit(nogil=True, forceinline=False)
def _call_notify() -> None:
    with numba.objmode(rc="int64"):
        rc = py_notify()
    if rc < 0:
        raise CompiledStop()


@numba.njit(nogil=True, forceinline=False)
def _call_fail(key: int, index: int, what: int) -> None:
    with numba.objmode(rc="int64"):
        rc = py_fail(key, index, what)
    if rc < 0:
        raise CompiledStop()
