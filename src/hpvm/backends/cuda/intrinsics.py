"""hpvm's leaf intrinsics as numba-cuda device functions.

Leaf clones call ``__hpvm_atomic_<op>`` and ``__hpvm_barrier`` (``passes/clone_leaves.py``);
on the ``cuda`` back end those names are bound to these functions: device atomics
(``numba.cuda.atomic``, which return the old value like ``hpvm.atomic_*``) and
``cuda.syncthreads()``. They call through the module global ``cuda`` so that numba-cuda's
simulator can substitute its own implementation while a kernel runs.
"""

from __future__ import annotations

from typing import Any

from numba import cuda

from ...ir.intrinsics import ATOMIC_OPS


@cuda.jit(device=True)
def atomic_add(a, i, v):  # type: ignore[no-untyped-def]
    return cuda.atomic.add(a, i, v)


@cuda.jit(device=True)
def atomic_sub(a, i, v):  # type: ignore[no-untyped-def]
    return cuda.atomic.sub(a, i, v)


@cuda.jit(device=True)
def atomic_min(a, i, v):  # type: ignore[no-untyped-def]
    return cuda.atomic.min(a, i, v)


@cuda.jit(device=True)
def atomic_max(a, i, v):  # type: ignore[no-untyped-def]
    return cuda.atomic.max(a, i, v)


@cuda.jit(device=True)
def atomic_xchg(a, i, v):  # type: ignore[no-untyped-def]
    return cuda.atomic.exch(a, i, v)


@cuda.jit(device=True)
def atomic_and(a, i, v):  # type: ignore[no-untyped-def]
    return cuda.atomic.and_(a, i, v)


@cuda.jit(device=True)
def atomic_or(a, i, v):  # type: ignore[no-untyped-def]
    return cuda.atomic.or_(a, i, v)


@cuda.jit(device=True)
def atomic_xor(a, i, v):  # type: ignore[no-untyped-def]
    return cuda.atomic.xor(a, i, v)


@cuda.jit(device=True)
def barrier():  # type: ignore[no-untyped-def]
    cuda.syncthreads()


def helpers() -> dict[str, Any]:
    """The names leaf clones call, bound to the device functions above."""
    names: dict[str, Any] = {"__hpvm_barrier": barrier}
    for op in ATOMIC_OPS:  # (the intrinsic table's list: a new atomic needs a function here)
        names[f"__hpvm_atomic_{op}"] = globals()[f"atomic_{op}"]
    return names
