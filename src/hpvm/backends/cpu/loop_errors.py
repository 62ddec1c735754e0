"""Exceptions raised inside parallel loops, carried to the thread that launched the loop.

Why. Numba runs a ``prange`` loop as a parallel kernel whose wrapper, when an iteration
fails, sets the Python exception on *the thread that ran that iteration* and goes on: an
exception on a worker thread is silently lost (numba/numba#2811, #9673), and one on the
launching thread comes back as ``SystemError: ... returned a result with an exception
set`` with the real message only as its cause. And a ``raise`` written in the loop body
itself (a leaf inlined there) makes Numba give up parallelizing the loop altogether, with
two ``NumbaPerformanceWarning``\\ s pointing into generated code.

The same holds for the threading layer's kernel that ``__hpvm_parallel_for`` runs now
(``parallel_for.py``): nothing carries a status out of it.

What. The parallel loops of generated code (``chunks.py``) run one task per chunk; each
task calls its chunk, an ordinary compiled function, through ``__hpvm_try_call``, an
intrinsic that calls it *without* propagating its status: its outcome is written, as
Numba's return code (0: none) and exception-info pointer, into the chunk's row of an
error table. After the
loop, on the launching thread, ``__hpvm_reraise(table)`` propagates the first failure as if
the chunk had been called there: the exception (class, message, and the traceback line
Numba records for a ``raise``) reaches the caller exactly as from serial code.

The exception-info pointer stays valid: a static exception's is a constant of the compiled
module, a dynamic one's (run-time values in its message) a heap block that the raise on the
launching thread frees. If several chunks fail, the first is raised; the others' dynamic
blocks (a few bytes each) are not freed.
"""

from __future__ import annotations

from typing import Any

_HELPERS: dict[str, Any] = {}
_LOST = (
    "a node raised a Python exception (in object mode) in a parallel loop of the cpu back end, "
    "which cannot carry it to the caller; run it with target='interp' to see it"
)


class ChunkCompileError(Exception):
    """A chunk function did not compile. Raised through Numba's typing of ``try_call``
    untouched (it is no ``NumbaError``): Numba would bury ``error``, what the chunk's own
    compilation said — naming the leaf's line — under "No implementation of function
    try_call". The back end reports ``error``."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def loop_error_helpers() -> dict[str, Any]:
    """The names generated code calls: ``__hpvm_try_call``, ``__hpvm_reraise`` (made once)."""
    if not _HELPERS:
        _HELPERS.update(_build())
    return dict(_HELPERS)


def _build() -> dict[str, Any]:
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.core.callconv import RETCODE_USEREXC, Status, excinfo_ptr_t
    from numba.core.errors import NumbaError
    from numba.extending import intrinsic

    i64 = ir.IntType(64)

    def make_try_call(attrs: tuple[str, ...]) -> Any:
        @intrinsic
        def try_call(typingctx, func, args, table, row):  # type: ignore[no-untyped-def]
            """``func(*args)``; on failure its code and exception info go to ``table[row]``.
            What it returns — nothing, or a tuple of scalars (a root's graph function: its
            outputs, which a native call writes into its block) — is returned; after a
            failure its value means nothing."""
            if not isinstance(func, types.Dispatcher) or not isinstance(args, types.BaseTuple):
                return None
            if table != types.Array(types.int64, 2, "C") or not isinstance(row, types.Integer):
                return None
            try:
                call = func.get_call_type(typingctx, tuple(args.types), {})
            except NumbaError as e:
                raise ChunkCompileError(e) from None
            # (a chunk returns nothing; a root's graph function its scalar outputs: native.py)
            if call is None or not (
                call.return_type == types.none
                or (
                    isinstance(call.return_type, types.BaseTuple)
                    and all(
                        isinstance(t, (types.Integer, types.Float, types.Boolean)) for t in call.return_type
                    )
                )
            ):
                return None

            def codegen(context, builder, sig, llargs):  # type: ignore[no-untyped-def]
                _, packed, table_value, row_value = llargs
                compiled = func.dispatcher.get_compile_result(call)
                context.add_linking_libs([compiled.library])
                callee = context.declare_function(builder.module, compiled.fndesc)
                values = [
                    context.cast(builder, builder.extract_value(packed, i), given, wanted)
                    for i, (given, wanted) in enumerate(zip(args.types, call.args))
                ]
                status, result = context.call_conv.call_function(
                    builder, callee, compiled.fndesc.restype, compiled.fndesc.argtypes, values, attrs=attrs
                )
                data = context.make_array(sig.args[2])(context, builder, table_value).data
                base = builder.mul(row_value, row_value.type(2))
                code = builder.select(status.is_error, builder.sext(status.code, i64), i64(0))
                builder.store(code, builder.gep(data, [base]))  # every row is written: no need to zero it
                with builder.if_then(status.is_error, likely=False):
                    info = builder.ptrtoint(status.excinfoptr, i64)
                    builder.store(info, builder.gep(data, [builder.add(base, base.type(1))]))
                return context.get_dummy_value() if call.return_type == types.none else result

            return call.return_type(func, args, table, row), codegen

        return try_call

    @intrinsic
    def reraise(typingctx, table):  # type: ignore[no-untyped-def]
        """Return from the calling function with the first failure recorded in ``table``
        (an intrinsic, not a compiled helper: it costs no compilation of its own)."""
        if table != types.Array(types.int64, 2, "C"):
            return None

        def codegen(context, builder, sig, llargs):  # type: ignore[no-untyped-def]
            array = context.make_array(sig.args[0])(context, builder, llargs[0])
            rows = builder.extract_value(array.shape, 0)
            with cgutils.for_range(builder, rows) as loop:
                base = builder.mul(loop.index, loop.index.type(2))
                code = builder.load(builder.gep(array.data, [base]))
                user = builder.icmp_signed(">=", code, i64(RETCODE_USEREXC.constant))
                with builder.if_then(user, likely=False):
                    info = builder.load(builder.gep(array.data, [builder.add(base, base.type(1))]))
                    status = Status(
                        code=builder.trunc(code, cgutils.int32_t),
                        is_ok=cgutils.false_bit,
                        is_error=cgutils.true_bit,
                        is_python_exc=cgutils.false_bit,
                        is_none=cgutils.false_bit,
                        is_user_exc=cgutils.true_bit,
                        is_stop_iteration=cgutils.false_bit,
                        excinfoptr=builder.inttoptr(info, excinfo_ptr_t),
                    )
                    context.call_conv.return_status_propagate(builder, status)
                # Any other failure set a Python exception on the thread that ran the chunk;
                # this thread cannot get it.
                other = builder.icmp_signed("<", code, i64(0))
                with builder.if_then(other, likely=False):
                    context.call_conv.return_user_exc(builder, RuntimeError, (_LOST,))
            return context.get_dummy_value()

        return types.none(table), codegen

    return {
        "__hpvm_try_call": make_try_call(()),
        # The overlap/wide fallback chunk (chunks.py), kept out of line: LLVM neither
        # inlines it into the task nor optimizes it a second time there.
        "__hpvm_try_call_noinline": make_try_call(("noinline",)),
        "__hpvm_reraise": reraise,
    }
