"""Privatized atomics: per-thread copies of an array only ever updated atomically.

Why: a histogram (2^24 ``hpvm.atomic_add`` on 256 shared bins) spends its time with the
cores fighting over the bins' cache lines; two threads ran it 3.8× *slower* than one. The
code a Numba user writes instead gives each thread private bins and sums them at the end.

When. In a parallel loop of the root (or of a streaming stage), array ``A`` is privatized
when every leaf of the loop that receives ``A`` uses it only as the target of atomics of
*one* operation among add, sub, min, max, and, or, xor, as statements (the old value they
return is not used), and otherwise reads only its shape (``A.shape``, ``A.size``,
``len(A)``; the leaf IR's cached ``AtomicOnlyArrays`` analysis says so, and a leaf
outside its dialect is not privatized); and no other node of the loop receives ``A`` (an
internal node might read it). Then no instance of the loop can observe ``A`` until the loop is over, and
the updates commute: for integers the result is exactly the same; for floats additions
are done in another order (the spec does not order atomic float adds either: concurrent
instances already apply them in any order). Two conditions are checked each time the loop
runs, falling back to the real atomics when either fails: ``A`` is at most
``MAX_PRIVATE_BYTES`` (each thread gets a whole copy), and it overlaps no other array the
loop's nodes receive (the same memory passed twice under two names could be read).

How. Each thread (chunk of the outermost loop, one chunk per thread) gets a copy filled
with the operation's identity (``-0.0`` for float add and sub, so an untouched ``-0.0``
stays ``-0.0``), the leaf runs as a *variant* whose atomics on ``A`` are plain operations
on its copy (``Q[i] += v``), and after the loop the copies are folded into ``A`` serially
(sub accumulates ``-v`` and is folded with ``+``). The value is cast to ``A``'s dtype
first, as the atomics do, so integer wrap-around is the same. (The variant is still made by
rewriting the clone's syntax tree, ``privatized_clone``: producing code from the leaf IR
waits for its emitters, docs/leafir.md.)
"""

from __future__ import annotations

import ast
import copy
import hashlib
from dataclasses import replace
from typing import Any

import numpy as np

from ...ir.intrinsics import COMMUTING
from ...ir.leafir import LeafIRUnsupported, leaf_ir
from ...ir.leafir.analyses import atomic_only_arrays
from ...passes.clone_leaves import LeafClone

#: The atomic operations that commute (the intrinsic table's ``family``): add, sub, min,
#: max, and, or, xor.
PRIVATIZABLE = tuple(COMMUTING)
MAX_PRIVATE_BYTES = 64 * 1024  # per thread: larger arrays keep the real atomics
_ATOMIC_PREFIX = "__hpvm_atomic_"
PLAIN_PREFIX = "__hpvm_plain_"


def _atomic_op(call: ast.AST) -> str | None:
    if (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id.startswith(_ATOMIC_PREFIX)
    ):
        return call.func.id[len(_ATOMIC_PREFIX) :]
    return None


def atomic_only_params(clone: LeafClone) -> dict[int, str]:
    """Array parameters of the leaf used only as targets of unused-result atomics of one
    privatizable operation (and for their shape): parameter index -> operation.

    Read off the leaf IR's cached analysis (``ir/leafir/analyses/``: computed once per
    leaf IR); a leaf outside the leaf IR's dialect gets none (the conservative answer: its
    atomics stay real atomics)."""
    try:
        ir = leaf_ir(clone.user)
    except LeafIRUnsupported:
        return {}  # outside the dialect: not privatized (the real atomics run)
    found = atomic_only_arrays(ir)
    result: dict[int, str] = {}
    for index, param in enumerate(ir.params):
        ops = found.get(param.name, frozenset())
        if len(ops) == 1 and next(iter(ops)) in PRIVATIZABLE:
            result[index] = next(iter(ops))
    return result


def privatized_clone(clone: LeafClone, params: dict[int, str]) -> LeafClone:
    """The variant of ``clone`` whose atomics on ``params`` are plain read-modify-writes."""
    func = copy.deepcopy(clone.func)
    leaf = clone.leaf
    names = {func.args.args[i].arg: i for i in params}
    for stmt in ast.walk(func):
        if not isinstance(stmt, ast.Expr):
            continue
        op = _atomic_op(stmt.value)
        call = stmt.value
        if op is None or not isinstance(call, ast.Call) or not call.args:
            continue
        target = call.args[0]
        if isinstance(target, ast.Name) and target.id in names and len(call.args) == 3:
            dtype = leaf.params[names[target.id]].type.dtype.name
            call.func = ast.copy_location(ast.Name(f"{PLAIN_PREFIX}{op}", ast.Load()), call.func)
            value = call.args[2]
            cast = ast.Call(ast.Name(f"__hpvm_dt_{dtype}", ast.Load()), [value], [])
            call.args[2] = ast.copy_location(cast, value)
    ast.fix_missing_locations(func)
    func.name = "__hpvm_clone"
    digest = hashlib.sha1(ast.unparse(func).encode()).hexdigest()[:8]
    symbol = f"{clone.symbol}_priv{digest}"
    func.name = symbol
    return replace(clone, symbol=symbol, func=func)


def identity(op: str, dtype: np.dtype) -> str:
    """The source of ``op``'s identity element in ``dtype`` (the private copies' fill)."""
    floating = np.issubdtype(dtype, np.floating)
    if op in ("add", "sub"):
        return "-0.0" if floating else "0"
    if op in ("or", "xor"):
        return "0"
    if op == "and":
        return str(np.iinfo(dtype).max) if np.issubdtype(dtype, np.unsignedinteger) else "-1"
    if op == "min":
        return "np.inf" if floating else str(np.iinfo(dtype).max)
    if op == "max":
        return "-np.inf" if floating else str(np.iinfo(dtype).min)
    raise ValueError(f"operation {op!r} is not privatizable")


def fold(op: str, target: str, value: str) -> list[str]:
    """Source lines folding private ``value`` into ``target`` (both element expressions)."""
    if op in ("add", "sub"):
        return [f"{target} += {value}"]  # sub's copies hold -v
    if op in ("and", "or", "xor"):
        symbol = {"and": "&", "or": "|", "xor": "^"}[op]
        return [f"{target} {symbol}= {value}"]
    compare = "<" if op == "min" else ">"
    return [f"if {value} {compare} {target}:", f"    {target} = {value}"]


_JITTED: dict[str, Any] = {}


def plain_helpers() -> dict[str, Any]:
    """``__hpvm_plain_<op>(arr, index, value)``: the atomics' effect without atomicity, for
    private copies (``value`` is already cast to the array's dtype). Built once."""
    if not _JITTED:
        import numba

        jit = numba.njit(nogil=True, cache=True, inline="always")

        @jit
        def plain_add(a, i, v):  # type: ignore[no-untyped-def]
            a[i] += v

        @jit
        def plain_sub(a, i, v):  # type: ignore[no-untyped-def]
            a[i] -= v

        @jit
        def plain_min(a, i, v):  # type: ignore[no-untyped-def]
            if v < a[i]:  # Python's min(old, v), as the atomic: a NaN value never replaces
                a[i] = v

        @jit
        def plain_max(a, i, v):  # type: ignore[no-untyped-def]
            if v > a[i]:
                a[i] = v

        @jit
        def plain_and(a, i, v):  # type: ignore[no-untyped-def]
            a[i] &= v

        @jit
        def plain_or(a, i, v):  # type: ignore[no-untyped-def]
            a[i] |= v

        @jit
        def plain_xor(a, i, v):  # type: ignore[no-untyped-def]
            a[i] ^= v

        @numba.njit(nogil=True, cache=True)
        def overlaps(a, b):  # type: ignore[no-untyped-def]
            """Whether the memory spans of two arrays overlap (any strides)."""
            if a.size == 0 or b.size == 0:
                return False
            alo = ahi = a.ctypes.data
            for d in range(a.ndim):
                step = (a.shape[d] - 1) * a.strides[d]
                if step < 0:
                    alo += step
                else:
                    ahi += step
            blo = bhi = b.ctypes.data
            for d in range(b.ndim):
                step = (b.shape[d] - 1) * b.strides[d]
                if step < 0:
                    blo += step
                else:
                    bhi += step
            return alo < bhi + b.itemsize and blo < ahi + a.itemsize

        # numba.get_num_threads() in compiled code calls through a ctypes pointer, which keeps
        # Numba from caching the caller on disk; its intrinsic (what Numba's parfors use)
        # does not.
        from numba.np.ufunc.parallel import _iget_num_threads

        @numba.njit(nogil=True, cache=True, inline="always")
        def num_threads():  # type: ignore[no-untyped-def]
            return _iget_num_threads()

        local = dict(locals())
        _JITTED.update({f"{PLAIN_PREFIX}{op}": local[f"plain_{op}"] for op in PRIVATIZABLE})
        _JITTED["__hpvm_overlaps"] = overlaps
        _JITTED["__hpvm_num_threads"] = num_threads
    return dict(_JITTED)
