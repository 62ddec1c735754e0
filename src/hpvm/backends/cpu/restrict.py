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
memory (``chunks.py``, once per loop, before the ``prange``); arrays that overlap (the same
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
    NumPy's ``may_share_memory``; compiled code gets the overload below, which skips the
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
    """The name generated code calls, with its Numba implementation registered (once)."""
    global _REGISTERED
    if not _REGISTERED:
        from numba.core import types
        from numba.extending import overload

        def plain(t: Any) -> bool:  # no pointer in it: nothing for noalias to promise
            if isinstance(t, types.BaseTuple):
                return all(plain(e) for e in t.types)
            return isinstance(t, (types.Number, types.Boolean, types.NoneType))

        @overload(disjoint)
        def _disjoint(arrays):  # type: ignore[no-untyped-def]
            picked = [i for i, t in enumerate(arrays.types) if isinstance(t, types.Array)]
            if any(not plain(t) for t in arrays.types if not isinstance(t, types.Array)):
                return lambda arrays: False  # (arrays in a container, other objects: not checked)
            lines = ["def impl(arrays):"]
            for k, i in enumerate(picked):
                lines += [
                    f"    a = arrays[{i}]",
                    "    lo = hi = np.int64(a.ctypes.data)",
                    "    for d in range(a.ndim):",
                    "        step = (a.shape[d] - 1) * a.strides[d]",
                    "        if step < 0:",
                    "            lo += step",
                    "        else:",
                    "            hi += step",
                    f"    lo{k} = lo",
                    f"    hi{k} = hi + a.itemsize if a.size > 0 else lo",
                ]
            for k in range(len(picked)):
                for m in range(k):
                    lines.append(
                        f"    if lo{k} < hi{k} and lo{m} < hi{m} and lo{k} < hi{m} and lo{m} < hi{k}:"
                    )
                    lines.append("        return False")
            lines.append("    return True")
            namespace: dict[str, Any] = {"np": np}
            exec("\n".join(lines), namespace)
            return namespace["impl"]

        _REGISTERED = True
    return {"__hpvm_disjoint": disjoint}
