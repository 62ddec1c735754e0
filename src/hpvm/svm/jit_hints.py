"""Branch hints for compiled kernels: ``likely(cond)`` / ``unlikely(cond)`` (LLVM's
``llvm.expect``), used on the stream operations' fast paths (``jit_ops.py``).

Why: every pop, push and peek has slow paths that call back into Python (a wait, the first
use of a stream, an error, a pause). Without a hint LLVM weighs those calls like the fast
path: it keeps the user's loop values (a FIR's accumulator, the tap index) on the stack
because the calls clobber every vector register, and lays the cold code inside the loop.
With the hint it keeps them in registers on the hot path and spills only on the way into
a call. The hint changes no result: ``unlikely(c)`` is ``c``.

Importing this module imports Numba; ``hpvm.svm`` imports it only when a compiled kernel
is run.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic

_I1 = ir.IntType(1)
_EXPECT = ir.FunctionType(_I1, [_I1, _I1])


def _expect(expected: int, name: str) -> Any:
    def typer(typingctx: Any, cond: types.Type) -> Any:
        if not isinstance(cond, types.Boolean):
            raise TypingError(f"{name}: expected a boolean condition, got {cond}")

        def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: Any) -> ir.Value:
            value = context.cast(builder, args[0], sig.args[0], types.boolean)
            fn = cgutils.get_or_insert_function(builder.module, _EXPECT, "llvm.expect.i1")
            return builder.call(fn, [value, ir.Constant(_I1, expected)])

        return types.boolean(cond), codegen

    typer.__name__ = name
    return intrinsic(typer)


likely = _expect(1, "likely")
unlikely = _expect(0, "unlikely")
