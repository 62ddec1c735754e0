"""Innermost instance ids LLVM can vectorize over: ``__hpvm_narrow(i, small)``.

Why. A leaf indexes arrays with affine functions of its instance id (``a[id + 1]``,
``a[id - 1]``). Numba wraps negative indices (``idx < 0 ? idx + n : idx``), and LLVM can
drop that select, and vectorize the loop, only when it can prove the index non-negative.
For ``id + 2`` with ``id`` in ``range(n)`` it cannot: ``n`` may be as large as 2^63 - 1, and
``id + 2`` may then wrap. (A hand-written loop ``for i in range(1, n - 1)`` with ``a[i + 1]``
escapes this because its bound is the array extent itself.) Measured on Parboil's stencil,
one thread, the generated loop was 1.3× slower than the hand-written one.

What. The generated innermost loop computes its instance id as ``__hpvm_narrow(j, small)``:
``j & 0xFFFFFFFF`` when ``small``, else ``j``. Both are ``j`` as long as ``small`` holds only
for extents below 2^32, so nothing changes for any program; but where ``small`` holds LLVM
knows ``id < 2^32``, so small offsets cannot wrap, the index checks fold away and the body
vectorizes. In a 1-D loop ``small = extent <= 0xFFFFFFFF`` is computed before the loop and
LLVM unswitches the loop on it. It did not unswitch a 2-D nest (the edge detection's
gradient: 2x slower, not vectorized), so where a 2-D or 3-D nest is a parallel loop's
chunk function, the loop has two chunk functions, picked by the test, once, before the
loop (``loopnest.py``): the one called while the innermost extent fits in 32 bits does not
mask the id but bounds its loop, ``range(min(n, MASK))`` — the same facts for LLVM, with the
id still the loop's own induction variable, whose first iterations LLVM peels to drop a
clamp like ``max(j - 1, 0)`` (a masked id hid that: every clamped load became a gather) —
and the other takes ``j`` as it is. Nests that are no chunk function of their own (a
flattened hierarchy's children, private copies, loops below a parallel loop) and 1-D loops
still get ``small`` at run time, here.

Typed so that both branches keep ``j``'s own integer type; not inlined by Numba (``inline="always"`` would freeze the mask's type before a ``prange``
index turns unsigned in the parallel kernel) but by LLVM, which does it for so small a
function.
"""

from __future__ import annotations

from typing import Any

MASK = 0xFFFFFFFF


def narrow(index: int, small: bool) -> int:
    """``index`` (pure Python meaning; compiled code gets the overload below)."""
    return (index & MASK) if small else index


_REGISTERED = False


def narrow_helpers() -> dict[str, Any]:
    """The name generated code calls, with its Numba implementation registered (once)."""
    global _REGISTERED
    if not _REGISTERED:
        from numba.core import types
        from numba.extending import overload

        @overload(narrow)
        def _narrow(index, small):  # type: ignore[no-untyped-def]
            if isinstance(index, types.Integer) and index.bitwidth == 64:
                mask = index.cast_python_value(MASK)  # j's own type: the branches unify

                def masked(index, small):  # type: ignore[no-untyped-def]
                    return (index & mask) if small else index

                return masked

            def unchanged(index, small):  # type: ignore[no-untyped-def]
                return index

            return unchanged

        _REGISTERED = True
    return {"__hpvm_narrow": narrow}
