"""Loads and stores at raw addresses, as Numba intrinsics, for compiled kernels: typed
element loads and stores, and int64 counter loads and stores with acquire / release
ordering.

Why addresses, not arrays: a NumPy array inside a tuple is reference-counted by Numba at
every use (atomic increments on its meminfo) unless the compiler can prove it need not be,
which it cannot once a function has a slow path that calls out; at 16 peeks an element
that alone cost more than the target budget. The runner keeps the arrays alive while the
kernel runs (``jit_kernel.JitRun.keep``).

Why here and not ``hpvm.backends.numba_shared.atomics``: the svm layer may not import the
back ends (import-linter contract), and those are read-modify-write operations, all
``seq_cst``; a single-producer single-consumer ring needs only loads and stores with
acquire / release ordering (the writer publishes its data, then its counter with a release
store; the reader loads the counter with an acquire load, then the data). On x86-64 both
compile to ordinary ``mov`` instructions — what they forbid is the compiler moving memory
accesses across them or hoisting a load out of a spin loop. ``load_relaxed`` (LLVM
``monotonic``) is for flags polled in loops that need no ordering.

Importing this module imports Numba; ``hpvm.svm`` imports it only when a compiled kernel
is run.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.core.errors import TypingError
from numba.extending import intrinsic

_I64 = ir.IntType(64)


def _address(builder: ir.IRBuilder, context: Any, sig: Any, args: Any, elem: ir.Type) -> ir.Value:
    """``(elem*) addr + index``."""
    addr = context.cast(builder, args[0], sig.args[0], types.intp)
    idx = context.cast(builder, args[1], sig.args[1], types.intp)
    return builder.gep(builder.inttoptr(addr, elem.as_pointer()), [idx])


def _check(addr: types.Type, index: types.Type, name: str) -> None:
    if not isinstance(addr, types.Integer) or not isinstance(index, types.Integer):
        raise TypingError(f"{name}: expected an integer address and index, got {addr}, {index}")


def _counter_load(ordering: str | None, name: str) -> Any:
    def typer(typingctx: Any, addr: types.Type, index: types.Type) -> Any:
        _check(addr, index, name)

        def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: Any) -> ir.Value:
            ptr = _address(builder, context, sig, args, _I64)
            return builder.load(ptr, align=8) if ordering is None else builder.load_atomic(ptr, ordering, 8)

        return types.int64(addr, index), codegen

    typer.__name__ = name
    return intrinsic(typer)


def _counter_store(ordering: str | None, name: str) -> Any:
    def typer(typingctx: Any, addr: types.Type, index: types.Type, value: types.Type) -> Any:
        _check(addr, index, name)
        if not isinstance(value, types.Integer):
            raise TypingError(f"{name}: the value must be an integer, got {value}")

        def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: Any) -> Any:
            ptr = _address(builder, context, sig, args, _I64)
            val = context.cast(builder, args[2], sig.args[2], types.int64)
            if ordering is None:
                builder.store(val, ptr, align=8)
            else:
                builder.store_atomic(val, ptr, ordering, 8)
            return context.get_dummy_value()

        return types.none(addr, index, value), codegen

    typer.__name__ = name
    return intrinsic(typer)


load = _counter_load(None, "load")
load_acquire = _counter_load("acquire", "load_acquire")
load_relaxed = _counter_load("monotonic", "load_relaxed")
store = _counter_store(None, "store")
store_release = _counter_store("release", "store_release")


@intrinsic
def element_load(typingctx: Any, addr: types.Type, index: types.Type, proto: types.Type) -> Any:
    """Element ``index`` of type ``typeof(proto)`` at ``addr``."""
    _check(addr, index, "element_load")

    def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: Any) -> ir.Value:
        ptr = _address(builder, context, sig, args, context.get_data_type(proto))
        return context.unpack_value(builder, proto, ptr)

    return proto(addr, index, proto), codegen


@intrinsic
def element_store(
    typingctx: Any, addr: types.Type, index: types.Type, value: types.Type, proto: types.Type
) -> Any:
    """Store ``value`` (converted to ``typeof(proto)``) as element ``index`` at ``addr``."""
    _check(addr, index, "element_store")
    if not isinstance(value, types.Number | types.Boolean):
        raise TypingError(f"an element of type {proto} cannot be stored from a {value}")

    def codegen(context: Any, builder: ir.IRBuilder, sig: Any, args: Any) -> Any:
        ptr = _address(builder, context, sig, args, context.get_data_type(proto))
        val = context.cast(builder, args[2], sig.args[2], proto)
        context.pack_value(builder, proto, val, ptr)
        return context.get_dummy_value()

    return types.none(addr, index, value, proto), codegen
