"""Out-of-line calls from the inlined stream operations to their slow paths (a wait, the
first use of a stream, an error, a pause), for compiled kernels.

Why not a plain call: the stream operations (``jit_ops``) are compiled once per element
type and inlined by LLVM (``forceinline``) into every work function. A plain call from
them to another Numba function reserves its return and exception slots with
``cgutils.alloca_once``, which also stores zero into them in the *entry block* of the
operation; once the operation is inlined into the user's loop, those stores run at every
peek and push even though the call itself is on a cold path (three stores a peek in the
FIR kernel). ``cold(f)`` makes the same call with the slots reserved in the entry block
but zeroed only on the cold path, just before the call.

The callee is compiled for its arguments' non-literal types: a plain call with a constant
(``_call_wait(key, 0, READ)``) compiles one specialisation per distinct constant, and each
object-mode call-back costs about 0.3 s to compile. Its exception status is passed on as
Numba passes on a callee's, so a ``CompiledStop`` raised in it unwinds the kernel.

Importing this module imports Numba; ``hpvm.svm`` imports it only when a compiled kernel
is run.
"""

from __future__ import annotations

from typing import Any

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _result(dispatcher: Any, argtys: tuple[types.Type, ...]) -> Any:
    """The compile result to call for ``argtys`` (compiled for their non-literal types)."""
    plain = tuple(types.unliteral(t) for t in argtys)
    dispatcher.compile(plain)
    return dispatcher.overloads[plain]


def _call(context: Any, builder: Any, sig: Any, args: Any, result: Any) -> Any:
    """Emit the call (the body of ``cold``'s intrinsics)."""
    context.add_linking_libs([result.library])
    fn = context.declare_function(builder.module, result.fndesc)
    conv = context.call_conv
    ret_type, exc_type = (a.pointee for a in fn.function_type.args[:2])
    with builder.goto_entry_block():  # reserved once, without the entry-block store
        ret_slot = builder.alloca(ret_type)
        exc_slot = builder.alloca(exc_type)
    builder.store(ret_type(None), ret_slot)
    builder.store(exc_type(None), exc_slot)
    target = result.signature
    values = [context.cast(builder, v, t, u) for v, t, u in zip(args, sig.args, target.args, strict=True)]
    packed = list(conv._get_arg_packer(target.args).as_arguments(builder, values))
    code = builder.call(fn, [ret_slot, exc_slot, *packed])
    status = conv._get_return_status(builder, code, builder.load(exc_slot))
    with cgutils.if_unlikely(builder, status.is_error):
        conv.return_status_propagate(builder, status)
    value = context.get_returned_value(builder, target.return_type, builder.load(ret_slot))
    return context.cast(builder, value, target.return_type, sig.return_type)


def cold(dispatcher: Any, arity: int) -> Any:
    """An intrinsic that calls ``dispatcher`` (a ``numba.njit`` function of ``arity``
    arguments) as described in the module's doc."""

    def build(argtys: tuple[types.Type, ...]) -> Any:
        result = _result(dispatcher, argtys)

        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return _call(context, builder, sig, args, result)

        return result.signature.return_type(*argtys), codegen

    if arity == 0:

        def typer(typingctx: Any) -> Any:
            return build(())
    elif arity == 1:

        def typer(typingctx: Any, a: Any) -> Any:  # type: ignore[misc]
            return build((a,))
    elif arity == 2:

        def typer(typingctx: Any, a: Any, b: Any) -> Any:  # type: ignore[misc]
            return build((a, b))
    elif arity == 3:

        def typer(typingctx: Any, a: Any, b: Any, c: Any) -> Any:  # type: ignore[misc]
            return build((a, b, c))
    elif arity == 5:

        def typer(typingctx: Any, a: Any, b: Any, c: Any, d: Any, e: Any) -> Any:  # type: ignore[misc]
            return build((a, b, c, d, e))
    else:  # pragma: no cover - a programming error in this package
        raise ValueError(f"cold: no intrinsic for {arity} arguments")
    typer.__name__ = f"cold_{dispatcher.py_func.__name__}"
    return intrinsic(typer)
