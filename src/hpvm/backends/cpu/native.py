"""A compiled entry called from C past Numba's dispatcher: the replay in C's native call.

Why. A replayed launch of a tiny graph (the 64-element vector add) calls the root's
compiled function through its Numba dispatcher: the arguments' type codes, the overload's
look-up, an NRT ``MemInfo`` made and freed per array, the context tuple unboxed and the
empty result boxed — about 0.4 µs of a 0.5 µs call, a fifth of the whole launch + wait
(docs/backends/cpu-performance.md, "The native call"). The replay in C has already tested
everything the dispatcher tests again (the arrays are the record's, with the record's
shapes, dtypes and flags; the scalars equal the record's).

What. For a function and one of its compiled signatures, a Numba ``cfunc`` of C type
``void (int64_t *block)``: it makes the arguments from ``block`` — each array from its
data pointer, dimensions and strides, each scalar from its bits, the context tuple from its
values — and calls the function through ``__hpvm_try_call`` (``loop_errors.py``), which
writes the status and exception info into the block's last two slots instead of
propagating them. The block's layout, in 64-bit slots, per argument in order:

- an array: ``flags | ndim << 32`` (NumPy's C-contiguous, Fortran-contiguous, aligned and
  writeable flags, which fix Numba's type of it: the C compares them before each call),
  the data pointer, the dimensions, the strides;
- a scalar: its value (an integer or a bool as an ``int64``'s bits, a float as a
  ``double``'s);

then the context tuple's values, then the status code and the exception info. ``template``
makes a block with the scalars and the context in place; the C copies it and writes each
array's slots per call, and each scalar's (``NativeCall.kinds``): a replay's key leaves out
the values of scalars that change no work (``plan.LaunchPlan.neutral``: a row index, a time
step), and ``-0.0 == 0.0``, so even a float equal to the record's may have other bits, which
the function must see as the dispatcher's call would pass them. A failure is raised by
``raise_status`` as the function would have raised it (``__hpvm_reraise``), and worded by
the record's ``failed`` like any other.

Everything the wrapper names is in its source text (types as literals), so its on-disk
cache entry means the same in every process; its header names the module of the function
it calls.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from ..base import NativeCall

if TYPE_CHECKING:
    from .compiler import CompiledProgram, Compiler

#: NumPy's flags that fix Numba's type of an array (``NPY_ARRAY_C_CONTIGUOUS``,
#: ``_F_CONTIGUOUS``, ``_ALIGNED``, ``_WRITEABLE``): ``ndarray.flags.num`` masked.
FLAGS_MASK = 0x1 | 0x2 | 0x100 | 0x400

#: The wrapper's symbol in its module (one per file: the file is named by its text).
SYMBOL = "__hpvm_native"


_HELPERS: dict[str, Any] = {}


def native_helpers() -> dict[str, Any]:
    """The names a wrapper calls: three Numba intrinsics (made once)."""
    if not _HELPERS:
        _HELPERS.update(_build())
    return dict(_HELPERS)


def _build() -> dict[str, Any]:
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic
    from numba.np.arrayobj import populate_array
    from numba.np.numpy_support import from_dtype

    i64 = ir.IntType(64)
    block_type = types.CPointer(types.int64)

    def literal(value: Any, kind: type) -> Any:
        return (
            value.literal_value
            if isinstance(value, types.Literal) and isinstance(value.literal_value, kind)
            else None
        )

    def load(builder: Any, block: Any, index: int) -> Any:
        return builder.load(builder.gep(block, [i64(index)]))

    def make_array(context: Any, builder: Any, array_type: Any, data: Any, shape: list, strides: list) -> Any:
        array = context.make_array(array_type)(context, builder)
        itemsize = context.get_abi_sizeof(context.get_data_type(array_type.dtype))
        populate_array(
            array,
            data=builder.inttoptr(data, context.get_data_type(array_type.dtype).as_pointer()),
            shape=cgutils.pack_array(builder, shape),
            strides=cgutils.pack_array(builder, strides),
            itemsize=context.get_constant(types.intp, itemsize),
            meminfo=None,
        )
        return array._getvalue()

    @intrinsic(prefer_literal=True)
    def block_array(typingctx, block, index, dtype, ndim, layout, readonly, aligned):  # type: ignore[no-untyped-def]
        """The array whose slots start at ``block[index]`` (its flags slot), of the type the
        literals give."""
        values = (
            literal(index, int),
            literal(dtype, str),
            literal(ndim, int),
            literal(layout, str),
            literal(readonly, bool),
            literal(aligned, bool),
        )
        if block != block_type or any(v is None for v in values):
            return None
        start, name, rank, order, frozen, aligned_ = values
        array_type = types.Array(from_dtype(np.dtype(name)), rank, order, readonly=frozen, aligned=aligned_)

        def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
            slots = [load(builder, args[0], start + 1 + k) for k in range(1 + 2 * rank)]
            return make_array(context, builder, array_type, slots[0], slots[1 : 1 + rank], slots[1 + rank :])

        return array_type(block, index, dtype, ndim, layout, readonly, aligned), codegen

    @intrinsic(prefer_literal=True)
    def block_scalar(typingctx, block, index, dtype):  # type: ignore[no-untyped-def]
        """The scalar in ``block[index]``, of the type the literal names."""
        start, name = literal(index, int), literal(dtype, str)
        if block != block_type or start is None or name is None:
            return None
        scalar = from_dtype(np.dtype(name))

        def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
            bits = load(builder, args[0], start)
            if isinstance(scalar, types.Boolean):
                return builder.icmp_unsigned("!=", bits, i64(0))
            if isinstance(scalar, types.Float):
                value = builder.bitcast(bits, ir.DoubleType())
                return value if scalar.bitwidth == 64 else builder.fptrunc(value, ir.FloatType())
            return bits if scalar.bitwidth == 64 else builder.trunc(bits, ir.IntType(scalar.bitwidth))

        return scalar(block, index, dtype), codegen

    @intrinsic(prefer_literal=True)
    def block_status(typingctx, block, index):  # type: ignore[no-untyped-def]
        """``block[index:index + 2]`` as the one-row error table ``__hpvm_try_call`` writes."""
        start = literal(index, int)
        if block != block_type or start is None:
            return None
        table = types.Array(types.int64, 2, "C")

        def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
            data = builder.ptrtoint(builder.gep(args[0], [i64(start)]), i64)
            return make_array(context, builder, table, data, [i64(1), i64(2)], [i64(16), i64(8)])

        return table(block, index), codegen

    @intrinsic(prefer_literal=True)
    def block_put(typingctx, block, index, value):  # type: ignore[no-untyped-def]
        """``value`` (an output of the root) into ``block[index]``: a float as a double's
        bits, an integer widened to 64 bits as its signedness says, a bool as 0 or 1."""
        start = literal(index, int)
        if block != block_type or start is None or not isinstance(value, (types.Number, types.Boolean)):
            return None
        if isinstance(value, types.Complex):
            return None

        def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
            given = args[2]
            if isinstance(value, types.Boolean):
                bits = builder.zext(given, i64)
            elif isinstance(value, types.Float):
                wide = given if value.bitwidth == 64 else builder.fpext(given, ir.DoubleType())
                bits = builder.bitcast(wide, i64)
            elif value.bitwidth == 64:
                bits = given
            else:
                bits = builder.sext(given, i64) if value.signed else builder.zext(given, i64)
            builder.store(bits, builder.gep(args[0], [i64(start)]))
            return context.get_dummy_value()

        return types.none(block, index, value), codegen

    return {
        "__hpvm_block_array": block_array,
        "__hpvm_block_scalar": block_scalar,
        "__hpvm_block_status": block_status,
        "__hpvm_block_put": block_put,
    }


def native_calls(
    compiler: Compiler, program: CompiledProgram, funcs: Sequence[Any], args: Sequence[Any], make: bool
) -> tuple[NativeCall | None, ...]:
    """Each of ``funcs`` (``program``'s entry, its function for one thread; ``None`` for one
    it has not) for ``args`` as a ``NativeCall``: where it was compiled for their types (the
    dispatcher's signature, found once for all) and its wrapper compiles (``make``: now, if
    need be; ``Compiler.native``)."""
    import numba

    none: tuple[None, ...] = (None,) * len(funcs)
    if not make and not program.natives:  # (none made, none to make: no signature to find)
        return none
    tail = program.root_ctx()
    try:
        signature = tuple(numba.typeof(v) for v in (*args, tail))
    except ValueError:  # (a value Numba has no type for: the dispatcher says so)
        return none
    makers = tuple(t.dtype.type for t in program.root.out_types)
    codes = bytes(ord(np.dtype(t).char) for t in makers)
    calls: list[NativeCall | None] = []
    for func in funcs:
        wrapper = None
        if func is not None and signature in func.overloads:
            returns = outputs(func.overloads[signature].signature.return_type, len(makers))
            made = None if returns is None else template(args, tail, signature, len(returns))
            if made is not None:
                wrapper = compiler.native(program, func, signature, make)
        calls.append(
            None
            if wrapper is None
            else NativeCall(
                int(wrapper.address), made, raise_status, kinds(signature), wrapper, returns, makers, codes
            )
        )
    return tuple(calls)


def outputs(returned: Any, count: int) -> bytes | None:
    """``NativeCall.returns`` of a function returning ``returned`` (Numba's type of the root's
    ``count`` outputs): ``f`` a float, ``i`` a signed integer, ``u`` an unsigned one, ``b`` a
    bool, per output; ``None`` where one is none of those (the block cannot carry it)."""
    from numba.core import types

    if returned == types.none:
        return b"" if count == 0 else None
    if not isinstance(returned, types.BaseTuple) or len(returned.types) != count:
        return None
    made = []
    for kind in returned.types:
        if isinstance(kind, types.Boolean):
            made.append(ord("b"))
        elif isinstance(kind, types.Float):
            made.append(ord("f"))
        elif isinstance(kind, types.Integer):
            made.append(ord("i") if kind.signed else ord("u"))
        else:
            return None
    return bytes(made)


def kinds(signature: Sequence[Any]) -> bytes:
    """``NativeCall.kinds`` of the arguments of ``signature`` (the context tuple, last, is
    not an argument): ``a`` an array, ``f`` a float, ``b`` a bool, ``s`` an integer."""
    from numba.core import types

    def kind_of(kind: Any) -> str:
        if isinstance(kind, types.Array):
            return "a"
        return "f" if isinstance(kind, types.Float) else "b" if isinstance(kind, types.Boolean) else "s"

    return "".join(kind_of(kind) for kind in signature[:-1]).encode()


def wrapper_source(callee: str, signature: Sequence[Any], returned: int = 0) -> str | None:
    """The wrapper's source calling ``callee`` with arguments of ``signature`` (Numba types:
    arrays, scalars, and last the context tuple of integers), or ``None``: an argument the
    block cannot carry. ``returned``: how many scalars the callee returns (the root's
    outputs), each written into a slot after the status (``__hpvm_block_put``)."""
    from numba.core import types

    made: list[str] = []
    slot = 0
    for kind in signature[:-1]:
        if (
            isinstance(kind, types.Array)
            and kind.layout in "CFA"
            and isinstance(kind.dtype, (types.Number, types.Boolean))
        ):
            made.append(
                f"__hpvm_block_array(block, {slot}, {str(np.dtype(str(kind.dtype)))!r}, {kind.ndim}, "
                f"{kind.layout!r}, {not kind.mutable}, {kind.aligned})"
            )
            slot += 2 + 2 * kind.ndim
        elif isinstance(kind, (types.Integer, types.Float, types.Boolean)):
            made.append(f"__hpvm_block_scalar(block, {slot}, {_dtype_name(kind)!r})")
            slot += 1
        else:
            return None
    context = signature[-1]
    if not isinstance(context, types.BaseTuple) or not all(t == types.int64 for t in context.types):
        return None
    tail = [f"__hpvm_block_scalar(block, {slot + k}, 'int64')" for k in range(len(context.types))]
    slot += len(tail)
    arguments = ", ".join([*made, f"({''.join(t + ', ' for t in tail)})"])
    call = f"__hpvm_try_call({callee}, ({arguments},), __hpvm_block_status(block, {slot}), 0)"
    if not returned:
        return f"def {SYMBOL}(block):\n    {call}\n"
    puts = "".join(f"    __hpvm_block_put(block, {slot + 2 + k}, out[{k}])\n" for k in range(returned))
    return f"def {SYMBOL}(block):\n    out = {call}\n{puts}"


def _dtype_name(kind: Any) -> str:
    from numba.core import types

    return "bool" if isinstance(kind, types.Boolean) else str(np.dtype(str(kind)))


def template(
    args: Sequence[Any], tail: Sequence[int], signature: Sequence[Any], returned: int = 0
) -> bytes | None:
    """The block for ``args`` (and the context ``tail``) as the wrapper of ``signature``
    reads it: the scalars and the context in place, each array's flags slot (the C compares
    it before writing the rest), zeros for the status and the ``returned`` outputs' slots;
    ``None`` where an argument is not what the signature says."""
    from numba.core import types

    slots: list[int] = []
    for value, kind in zip(args, signature[:-1]):
        if isinstance(kind, types.Array):
            if not isinstance(value, np.ndarray) or value.ndim != kind.ndim:
                return None
            slots += [(value.flags.num & FLAGS_MASK) | value.ndim << 32] + [0] * (1 + 2 * value.ndim)
        elif isinstance(kind, types.Float):
            slots.append(struct.unpack("=q", struct.pack("=d", float(value)))[0])
        elif isinstance(kind, types.Boolean):
            slots.append(1 if value else 0)
        else:  # (an unsigned 64-bit value past 2**63 travels as its bits)
            bits = int(value) & 0xFFFF_FFFF_FFFF_FFFF
            slots.append(bits - (1 << 64) if bits >= 1 << 63 else bits)
    slots += [int(v) for v in tail] + [0, 0] + [0] * returned
    return struct.pack(f"={len(slots)}q", *slots)


_RERAISE: Any = None


def raise_status(code: int, info: int) -> NoReturn:
    """Raise the failure a wrapper's status slots hold, as the function it called raised it
    (``__hpvm_reraise``: the exception's class, message and the line Numba records)."""
    global _RERAISE
    if _RERAISE is None:
        import numba

        from .loop_errors import loop_error_helpers

        helper = loop_error_helpers()["__hpvm_reraise"]

        def reraised(table):  # type: ignore[no-untyped-def]
            helper(table)

        _RERAISE = numba.njit(nogil=True)(reraised)
    _RERAISE(np.array([[code, info]], dtype=np.int64))
    raise RuntimeError(f"a native call failed with status {code}, and nothing was raised")  # (cannot happen)
