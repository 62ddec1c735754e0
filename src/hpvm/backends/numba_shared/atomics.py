"""CPU atomics for Numba-compiled leaves.

Numba has no atomic operations on the CPU (numba/numba#2988), so hpvm provides its own
(the ``cpu`` back end runs them; the ``cuda`` back end compiles leaves with them when it
type-checks them for numba-cuda's simulator): each ``atomic_<op>(arr, index, value)`` here
is a Numba ``@intrinsic`` that emits a single LLVM atomic instruction (or a short
compare-and-swap loop) on the address of ``arr[index]``. They are callable only from ``@njit`` code (including
``parallel=True`` functions, inside ``prange`` loops, and functions compiled with
``cache=True``) and return the element's **old** value, the value it held just before the
operation, like the interpreter's ``hpvm.atomic_*``.

Arguments
---------
``arr``
    A writable, aligned NumPy array of any layout (``'C'``, ``'F'`` or ``'A'``: strided
    views such as ``a[::2]`` or ``a.T`` work).
``index``
    An integer for a 1-D array, or a tuple of ``arr.ndim`` integers. Negative indices
    count from the end, as in NumPy. Indices are bounds-checked only when the caller is
    compiled with ``boundscheck=True``.
``value``
    Any integer, float or bool; it is cast to the array's dtype first, like
    ``arr.dtype.type(value)`` (C-style casting: float to int truncates toward zero,
    integers wrap).

Supported operations (anything else is a Numba ``TypingError`` naming the operation and
the dtype, and listing what is supported):

======  ====================  ====================  ===================================
op      int32, int64          uint32, uint64        float32, float64
======  ====================  ====================  ===================================
add     ``atomicrmw add``     ``atomicrmw add``     ``atomicrmw fadd``
sub     ``atomicrmw sub``     ``atomicrmw sub``     ``atomicrmw fsub``
min     ``atomicrmw min``     ``atomicrmw umin``    ``cmpxchg`` loop (see below)
max     ``atomicrmw max``     ``atomicrmw umax``    ``cmpxchg`` loop (see below)
xchg    ``atomicrmw xchg``    ``atomicrmw xchg``    not supported
and     ``atomicrmw and``     ``atomicrmw and``     not supported
or      ``atomicrmw or``      ``atomicrmw or``      not supported
xor     ``atomicrmw xor``     ``atomicrmw xor``     not supported
======  ====================  ====================  ===================================

Integer arithmetic wraps around on overflow, like NumPy's. These are the instructions this
module emits; LLVM then lowers each for the target. On x86-64, ``add``/``sub`` become
``lock xadd``, ``xchg`` becomes ``xchg``, and everything else (min/max/and/or/xor with the
old value used, and ``fadd``/``fsub``) becomes a ``lock cmpxchg`` loop, which LLVM writes
itself; targets with native instructions for them (e.g. AArch64 LSE) use those.

Memory ordering
---------------
Every operation is sequentially consistent (``seq_cst``, the default ordering of C++'s
``std::atomic`` operations; both the success and the failure ordering of ``cmpxchg``):
all atomic operations of all threads appear in one total order consistent with
each thread's program order, and each is also a full fence for the ordinary loads and
stores around it. That is stronger than counting needs, but it is what the interpreter
(which holds a lock around each atomic) gives, and on x86-64 every locked RMW is a full
barrier anyway, so it costs nothing extra there.

Float min/max
-------------
LLVM's ``atomicrmw fmin``/``fmax`` follow IEEE ``minNum``/``maxNum`` (a NaN operand is
ignored on either side), which is not what the interpreter computes. The interpreter does
``new = min(old, v)`` with Python's ``min``, which keeps its first argument unless the
second compares smaller: ``new = v if v < old else old`` (``max``: ``v > old``). So this
module emits a compare-and-swap loop on the element's integer bit pattern::

    old = load atomic seq_cst (bits of arr[index])
    loop:
        if not (v < old):            # ordered compare: false if either is NaN
            return old               # nothing to store
        (seen, ok) = cmpxchg(ptr, bits(old), bits(v), seq_cst, seq_cst)
        if ok: return old
        old = seen                   # another thread changed it: retry
        goto loop

Consequences, all identical to ``min(old, v)``/``max(old, v)`` in Python:

* a NaN ``value`` never replaces the element;
* a NaN already in the element stays there (every comparison with it is false);
* ``-0.0`` and ``0.0`` compare equal, so the element keeps whichever zero it had.

When no store is needed the operation is just a ``seq_cst`` atomic load, which is still a
valid linearization point. The compare-and-swap compares bit patterns, so it can't be
confused by ``-0.0 == 0.0`` or NaN payloads.

Caching
-------
Functions that call these can be compiled with ``cache=True``: the atomic instructions
are part of the caller's machine code, nothing refers back to Python objects at run
time. Note that Numba invalidates a cache entry only when the *caller's* source file
changes, not when this module does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llvmlite import ir
from numba.core import cgutils, types
from numba.core.errors import TypingError
from numba.core.typing.templates import Signature
from numba.extending import intrinsic
from numba.np.arrayobj import fix_integer_index

from ...ir.intrinsics import ATOMIC_OPS, FLOAT_ATOMIC_OPS

__all__ = [
    "ATOMIC_OPS",
    "ATOMICS",
    "FLOAT_ATOMIC_OPS",
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "atomic_add",
    "atomic_and",
    "atomic_max",
    "atomic_min",
    "atomic_or",
    "atomic_sub",
    "atomic_xchg",
    "atomic_xor",
    "supported_dtypes",
]

# The op names and which apply to floats are the frontend's (one list for every back end).
INT_DTYPES: tuple[str, ...] = ("int32", "int64", "uint32", "uint64")
FLOAT_DTYPES: tuple[str, ...] = ("float32", "float64")

_ORDERING = "seq_cst"

# The integer ``atomicrmw`` operation for each op, by signedness of the element type.
_INT_RMW: dict[str, tuple[str, str]] = {  # op: (signed, unsigned)
    "add": ("add", "add"),
    "sub": ("sub", "sub"),
    "min": ("min", "umin"),
    "max": ("max", "umax"),
    "xchg": ("xchg", "xchg"),
    "and": ("and", "and"),
    "or": ("or", "or"),
    "xor": ("xor", "xor"),
}
# Float ops with a native ``atomicrmw``; min/max use the compare-and-swap loop instead.
_FLOAT_RMW: dict[str, str] = {"add": "fadd", "sub": "fsub"}
# Float min/max: store ``v`` iff ``fcmp <pred> v, old`` (ordered: false on NaN).
_FLOAT_REPLACE_IF: dict[str, str] = {"min": "<", "max": ">"}


def supported_dtypes(op: str) -> tuple[str, ...]:
    """The array dtypes (as NumPy names) that ``atomic_<op>`` supports."""
    if op not in ATOMIC_OPS:
        raise ValueError(f"unknown atomic operation {op!r}; expected one of {', '.join(ATOMIC_OPS)}")
    return INT_DTYPES + FLOAT_DTYPES if op in FLOAT_ATOMIC_OPS else INT_DTYPES


# --------------------------------------------------------------------------- typing


def _check_types(op: str, arr: types.Type, index: types.Type, value: types.Type) -> None:
    """Raise a ``TypingError`` that says what is wrong, or return if the call types check."""
    name = f"atomic_{op}(arr, index, value)"
    if not isinstance(arr, types.Array):
        raise TypingError(f"{name}: arr must be a NumPy array, not {arr}")
    dtype = str(arr.dtype)
    allowed = supported_dtypes(op)
    if dtype not in allowed:
        if op not in FLOAT_ATOMIC_OPS and dtype in FLOAT_DTYPES:
            why = f"atomic_{op} is not supported on {dtype} arrays (it is a bitwise/exchange atomic)"
        else:
            why = f"atomic_{op} is not supported on {dtype} arrays"
        raise TypingError(f"{name}: {why}; atomic_{op} supports {', '.join(allowed)} arrays")
    if not arr.mutable:
        raise TypingError(f"{name}: arr is a read-only {arr}; atomics write to the array")
    if not arr.aligned:
        raise TypingError(f"{name}: arr is an unaligned {arr}; atomics need naturally aligned elements")

    if isinstance(index, types.BaseTuple):
        idx_types: Sequence[types.Type] = index.types
    else:
        idx_types = (index,)
    if not all(isinstance(t, types.Integer) for t in idx_types):
        raise TypingError(
            f"{name}: index must be an integer or a tuple of integers, not {index}"
            " (slices and arrays are not supported)"
        )
    if len(idx_types) != arr.ndim:
        raise TypingError(
            f"{name}: arr has {arr.ndim} dimension(s) but the index {index} has {len(idx_types)}; "
            f"give exactly one integer per dimension"
        )
    if not isinstance(value, (types.Integer, types.Float, types.Boolean)):
        raise TypingError(f"{name}: value must be an integer, float or bool, not {value}")


# --------------------------------------------------------------------------- codegen


def _element_pointer(
    context: Any, builder: ir.IRBuilder, arrty: types.Array, arr: Any, idxty: types.Type, idx: Any
) -> ir.Value:
    """The address of ``arr[idx]``, with NumPy's negative-index wraparound."""
    ary = context.make_array(arrty)(context, builder, arr)
    shape = cgutils.unpack_tuple(builder, ary.shape, arrty.ndim)
    strides = cgutils.unpack_tuple(builder, ary.strides, arrty.ndim)
    if isinstance(idxty, types.BaseTuple):
        raw = cgutils.unpack_tuple(builder, idx, len(idxty))
        idx_types = list(idxty.types)
    else:
        raw, idx_types = [idx], [idxty]
    indices = [fix_integer_index(context, builder, t, i, n) for t, i, n in zip(idx_types, raw, shape)]
    return cgutils.get_item_pointer2(
        context,
        builder,
        ary.data,
        shape,
        strides,
        arrty.layout,
        indices,
        wraparound=False,
        boundscheck=context.enable_boundscheck,
    )


def _float_minmax(builder: ir.IRBuilder, op: str, ptr: ir.Value, value: ir.Value) -> ir.Value:
    """The compare-and-swap loop for float min/max (see the module docstring); returns old."""
    ftype = value.type
    itype = ir.IntType(_float_bits(ftype))
    iptr = builder.bitcast(ptr, itype.as_pointer())
    vbits = builder.bitcast(value, itype)
    align = itype.width // 8

    entry = builder.block
    loop = builder.append_basic_block("atomic_fminmax.loop")
    swap = builder.append_basic_block("atomic_fminmax.swap")
    done = builder.append_basic_block("atomic_fminmax.done")

    first = builder.load_atomic(iptr, _ORDERING, align)
    builder.branch(loop)

    builder.position_at_end(loop)
    old_bits = builder.phi(itype)
    old_bits.add_incoming(first, entry)
    old = builder.bitcast(old_bits, ftype)
    replace = builder.fcmp_ordered(_FLOAT_REPLACE_IF[op], value, old)
    builder.cbranch(replace, swap, done)

    builder.position_at_end(swap)
    pair = builder.cmpxchg(iptr, old_bits, vbits, _ORDERING, _ORDERING)
    seen = builder.extract_value(pair, 0)
    ok = builder.extract_value(pair, 1)
    old_bits.add_incoming(seen, swap)
    builder.cbranch(ok, done, loop)

    # ``loop`` dominates ``done``; on both paths into it ``old`` is the value replaced
    # (swap succeeded, so seen == old_bits) or left in place (no swap needed).
    builder.position_at_end(done)
    return old


def _float_bits(ftype: ir.Type) -> int:
    if isinstance(ftype, ir.FloatType):
        return 32
    if isinstance(ftype, ir.DoubleType):
        return 64
    raise TypeError(f"not a float32/float64 LLVM type: {ftype}")


def _make_atomic(op: str) -> Callable[..., Any]:
    def typer(typingctx: Any, arr: types.Type, index: types.Type, value: types.Type) -> Any:
        _check_types(op, arr, index, value)
        sig: Signature = arr.dtype(arr, index, value)

        def codegen(context: Any, builder: ir.IRBuilder, sig: Signature, args: Sequence[Any]) -> ir.Value:
            arrty, idxty, valty = sig.args
            arr_v, idx_v, val_v = args
            dtype = arrty.dtype
            ptr = _element_pointer(context, builder, arrty, arr_v, idxty, idx_v)
            val = context.cast(builder, val_v, valty, dtype)
            if isinstance(dtype, types.Float):
                if op in _FLOAT_RMW:
                    return builder.atomic_rmw(_FLOAT_RMW[op], ptr, val, _ORDERING)
                return _float_minmax(builder, op, ptr, val)
            signed, unsigned = _INT_RMW[op]
            return builder.atomic_rmw(signed if dtype.signed else unsigned, ptr, val, _ORDERING)

        return sig, codegen

    typer.__name__ = typer.__qualname__ = f"atomic_{op}"
    typer.__doc__ = (
        f"``atomic_{op}(arr, index, value)``: atomically ``arr[index] = {_DESCRIBE[op]}`` "
        "(sequentially consistent); returns the old value of ``arr[index]``. "
        f"Supported dtypes: {', '.join(supported_dtypes(op))}."
    )
    typer.__module__ = __name__
    return intrinsic(typer)


_DESCRIBE: dict[str, str] = {
    "add": "old + value",
    "sub": "old - value",
    "min": "min(old, value)",
    "max": "max(old, value)",
    "xchg": "value",
    "and": "old & value",
    "or": "old | value",
    "xor": "old ^ value",
}

atomic_add = _make_atomic("add")
atomic_sub = _make_atomic("sub")
atomic_min = _make_atomic("min")
atomic_max = _make_atomic("max")
atomic_xchg = _make_atomic("xchg")
atomic_and = _make_atomic("and")
atomic_or = _make_atomic("or")
atomic_xor = _make_atomic("xor")

#: ``op`` name (as in ``hpvm.atomic_<op>``) to the njit-callable intrinsic.
ATOMICS: dict[str, Any] = {
    "add": atomic_add,
    "sub": atomic_sub,
    "min": atomic_min,
    "max": atomic_max,
    "xchg": atomic_xchg,
    "and": atomic_and,
    "or": atomic_or,
    "xor": atomic_xor,
}
