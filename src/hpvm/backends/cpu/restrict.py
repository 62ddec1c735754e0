"""Chunk functions compiled like Numba's own ``prange`` bodies: ``noalias`` arrays, inlined.

Why. A 2-D stage of edge detection (``laplacian_estimate``, ``gradient``: a 3x3
neighbourhood whose indices are clamped, ``min(max(j - 1, 0), cols - 1)``) ran 1.5-2x the
same loop written by hand with Numba, on one thread. The difference was in LLVM's view of
the arrays, not in the loop. Numba compiles a hand-written ``prange`` body as a gufunc whose
array arguments are ``noalias`` (the parfor pass finds no aliases among them), so LLVM
vectorizes the clamped loads as gathers without proving anything about them. A chunk
function (``chunks.py``) is an ordinary compiled function called from that gufunc: its
arrays are not ``noalias``, and a clamped index is not affine, so LLVM cannot check the
overlap at run time either and keeps the loop scalar. It then unrolled it (the chunk's own
optimization runs first); where the chunk was small enough to be inlined into the gufunc,
the vectorizer met the unrolled loop and gave an interleaved, slower form. Measured on one
thread, 512², interleaved: ``laplacian_estimate`` 1.7-2.1x Numba before, about 1.0x with
both changes below; ``gradient`` 1.45x before, 1.3x inlined alone, 1.0x with ``noalias``
too (docs/backends/cpu.md).

What. The chunk function of the common case (the innermost extent below 2^32: the masked
copy of ``loopnest.py``) is compiled with Numba's ``noalias`` flag, the one the parfor pass
sets on its gufuncs, and ``forceinline`` (LLVM's ``alwaysinline``), so it is optimized as
Numba's own loop body is. ``noalias`` is a promise: no memory the chunk writes is read or
written through another of its array arguments. The generated code keeps it: the masked
copy is called only when ``__hpvm_disjoint`` finds the chunk's arrays pairwise apart in
memory (``chunks.py``, once per loop, before its chunks run); arrays that overlap (the same
buffer bound to two ports, views of one buffer) take the other copy, compiled as before.

How. Numba has no ``noalias`` option for ``jit``; its dispatcher asks its compiler for the
flags of each compilation (``_FunctionCompiler._customize_flags``), which is where the flag
is set, on that dispatcher alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def restrict(dispatcher: Any) -> Any:
    """``dispatcher`` (made with ``forceinline=True``) compiled with ``noalias`` arrays."""

    def customize(flags: Any) -> Any:
        flags.noalias = True
        return flags

    dispatcher._compiler._customize_flags = customize
    return dispatcher


def disjoint(arrays: tuple[Any, ...]) -> bool:
    """Whether no two arrays of ``arrays`` share a byte, by their bounds (pure Python meaning:
    NumPy's ``may_share_memory``; compiled code gets the lowering below, which skips the
    tuple's numbers, and answers ``False`` for any other item: an array inside a tuple, an
    object)."""
    if any(not _plain(a) for a in arrays if not isinstance(a, np.ndarray)):
        return False
    found = [a for a in arrays if isinstance(a, np.ndarray)]
    return not any(np.may_share_memory(a, b) for i, a in enumerate(found) for b in found[:i])


def _plain(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, complex, np.number, np.bool_))


_REGISTERED = False


def disjoint_helpers() -> dict[str, Any]:
    """The name generated code calls, with its Numba typing and lowering registered (once).

    Lowered straight to LLVM IR (``type_callable``/``lower_builtin``, as ``loop_errors.py``'s
    intrinsics), not as an ``@overload``: an overload is a function of its own, compiled by
    Numba's whole pipeline once per tuple type, and loops' tuples differ — edge detection's
    six loops made four such compilations, 1.7 s of a 24 s cold compile
    (docs/backends/cpu-performance.md, "Cold compile"). These few comparisons cost no
    compilation of their own and inline into the graph function."""
    global _REGISTERED
    if not _REGISTERED:
        _register()
        _REGISTERED = True
    return {"__hpvm_disjoint": disjoint}


def _register() -> None:
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import lower_builtin, type_callable

    def plain(t: Any) -> bool:  # no pointer in it: nothing for noalias to promise
        if isinstance(t, types.BaseTuple):
            return all(plain(e) for e in t.types)
        return isinstance(t, (types.Number, types.Boolean, types.NoneType))

    @type_callable(disjoint)
    def _type(context):  # type: ignore[no-untyped-def]
        def typer(arrays):  # type: ignore[no-untyped-def]
            return types.boolean if isinstance(arrays, types.BaseTuple) else None

        return typer

    @lower_builtin(disjoint, types.BaseTuple)
    def _lower(context, builder, sig, args):  # type: ignore[no-untyped-def]
        (tuple_type,) = sig.args
        if any(not plain(t) for t in tuple_type.types if not isinstance(t, types.Array)):
            return cgutils.false_bit  # (arrays in a container, other objects: not checked)
        i64 = ir.IntType(64)
        spans = []  # each array's [lo, hi) in bytes; an empty array's is empty
        for i, t in enumerate(tuple_type.types):
            if not isinstance(t, types.Array):
                continue
            a = context.make_array(t)(context, builder, builder.extract_value(args[0], i))
            lo = hi = builder.ptrtoint(a.data, i64)
            shape = cgutils.unpack_tuple(builder, a.shape, t.ndim)
            strides = cgutils.unpack_tuple(builder, a.strides, t.ndim)
            for extent, stride in zip(shape, strides):
                step = builder.mul(builder.sub(extent, i64(1)), stride)
                negative = builder.icmp_signed("<", step, i64(0))
                lo = builder.add(lo, builder.select(negative, step, i64(0)))
                hi = builder.add(hi, builder.select(negative, i64(0), step))
            full = builder.icmp_signed(">", a.nitems, i64(0))
            spans.append((lo, builder.select(full, builder.add(hi, a.itemsize), lo)))
        apart = cgutils.true_bit
        for k, (lo_k, hi_k) in enumerate(spans):
            for lo_m, hi_m in spans[:k]:
                overlap = builder.and_(
                    builder.and_(builder.icmp_signed("<", lo_k, hi_k), builder.icmp_signed("<", lo_m, hi_m)),
                    builder.and_(builder.icmp_signed("<", lo_k, hi_m), builder.icmp_signed("<", lo_m, hi_k)),
                )
                apart = builder.and_(apart, builder.not_(overlap))
        return apart
