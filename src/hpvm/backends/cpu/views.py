"""``buffer.view(dtype)`` at the cost of a cast: ``__hpvm_view(array, dtype)``.

Why. The allocation-node pattern hands a barrier leaf ``malloc``'d bytes, which it types
with ``shared = buffer.view(np.float32)`` — once per parent instance (GPU block), in its
group function. Numba's ``array.view`` costs about 26 ns a call on this machine (measured
in a loop of views, against 6 ns for the version below): it calls NumPy 1.23's
compatibility check and ``_change_dtype`` as functions LLVM does not inline, and takes a
reference it cannot prune. On the block reduction (2^22 floats, 256 per block, one
thread) that made the group function 1.5–1.7× the same loops with the view taken once
outside them.

What. For a 1-D C-contiguous array — what ``malloc`` returns and the leaf IR allows
viewing (``rules.py``: only 1-D arrays are viewed) — the view is built in place: the same
data pointer cast to the new element type, ``nbytes // itemsize`` elements, the owner's
reference taken as Numba's own view takes it (so the buffer lives as long as the view).
A byte count the new element size does not divide raises NumPy's ``ValueError`` with
NumPy's message, as ``array.view`` does. Other arrays (any layout, more dimensions) call
``array.view`` itself: one semantics, one fallback.
"""

from __future__ import annotations

from typing import Any

#: NumPy's message (and Numba's) for a byte count the new element size does not divide.
INDIVISIBLE = (
    "When changing to a larger dtype, its size must be a divisor of the total size in bytes "
    "of the last axis of the array."
)

#: Its name in generated code.
VIEW = "__hpvm_view"
_HELPERS: dict[str, Any] = {}


def view_helpers() -> dict[str, Any]:
    """The name generated code calls: a Numba intrinsic (made once), so it exists only in
    compiled code. An intrinsic, not an overload: an overload's implementation is a
    function of its own, and a function compiled without NRT (the group functions that
    hold no array of their own, ``barrier_emit.GroupSource.refcounted``) may return no
    array it was not passed."""
    if not _HELPERS:
        _HELPERS[VIEW] = _build()
    return dict(_HELPERS)


def _build() -> Any:
    from numba.core import cgutils, types
    from numba.core.imputils import impl_ret_borrowed
    from numba.core.typing.npydecl import parse_dtype
    from numba.extending import intrinsic
    from numba.np.arrayobj import make_array

    def size_of(t: Any) -> int:
        return t.bitwidth // 8 if isinstance(t, types.Number) else 0

    @intrinsic
    def hpvm_view(typingctx, array, dtype):  # type: ignore[no-untyped-def]
        elem = parse_dtype(dtype) if isinstance(array, types.Array) else None
        if elem is None:
            return None
        result = array.copy(dtype=elem)
        old, new = size_of(array.dtype), size_of(elem)
        fast = array.ndim == 1 and array.layout == "C" and old and new

        def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
            if not fast:  # booleans, records, other layouts: Numba's own view
                return context.get_function("array.view", sig)(builder, args)
            intp = context.get_value_type(types.intp)
            src = make_array(array)(context, builder, args[0])
            nbytes = builder.mul(builder.extract_value(src.shape, 0), intp(old))
            with builder.if_then(builder.icmp_unsigned("!=", builder.urem(nbytes, intp(new)), intp(0))):
                context.call_conv.return_user_exc(builder, ValueError, (INDIVISIBLE,))
            out = make_array(result)(context, builder)
            context.populate_array(
                out,
                data=builder.bitcast(src.data, out.data.type),
                shape=cgutils.pack_array(builder, [builder.udiv(nbytes, intp(new))]),
                strides=cgutils.pack_array(builder, [intp(new)]),
                itemsize=intp(new),
                meminfo=src.meminfo,
                parent=src.parent,
            )
            return impl_ret_borrowed(context, builder, result, out._getvalue())

        return result(array, dtype), codegen

    return hpvm_view
