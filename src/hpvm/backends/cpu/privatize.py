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
on its copy (``Q[i] = Q[i] + v``), and after the loop the copies are folded into ``A``
serially (sub accumulates ``-v`` and is folded with ``+``). The value is cast to ``A``'s
dtype first, as the atomics do, so integer wrap-around is the same. The variant is a pass
on the clone's lowered leaf IR (``privatize_atomics``), emitted again as Python
(``LeafClone.reemitted``); nothing here reads Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ...ir.intrinsics import COMMUTING
from ...ir.leafir import LeafIR, LeafIRUnsupported, leaf_ir, ops, rules
from ...ir.leafir.analyses import atomic_only_arrays
from ...ir.leafir.rewrite import rewrite_stmts
from ...passes.clone_leaves import LeafClone

#: The atomic operations that commute (the intrinsic table's ``family``): add, sub, min,
#: max, and, or, xor.
PRIVATIZABLE = tuple(COMMUTING)
MAX_PRIVATE_BYTES = 64 * 1024  # per thread: larger arrays keep the real atomics
#: The plain update each privatizable atomic becomes: a binary operator, or (min, max) a
#: comparison under which the value replaces the element (Python's ``min(old, v)``: a NaN
#: value never replaces).
_UPDATE = {"add": "+", "sub": "-", "and": "&", "or": "|", "xor": "^"}
_REPLACES_WHEN = {"min": "<", "max": ">"}
_TEMP = "__hpvm_priv"  # the locals holding an update's index and value (evaluated once)


def atomic_only_params(clone: LeafClone) -> dict[int, str]:
    """Array parameters of the leaf used only as targets of unused-result atomics of one
    privatizable operation (and for their shape): parameter index -> operation.

    Read off the leaf IR's cached analysis (``ir/leafir/analyses/``: computed once per
    leaf IR); a leaf outside the leaf IR's dialect, whose clone has no IR, gets none (the
    conservative answer: its atomics stay real atomics)."""
    if clone.ir is None:
        return {}  # outside the dialect: not privatized (the real atomics run)
    try:
        ir = leaf_ir(clone.user)
    except LeafIRUnsupported:  # pragma: no cover - a clone with an IR has a leaf IR
        return {}
    found = atomic_only_arrays(ir)
    result: dict[int, str] = {}
    for index, param in enumerate(ir.params):
        ops_ = found.get(param.name, frozenset())
        if len(ops_) == 1 and next(iter(ops_)) in PRIVATIZABLE:
            result[index] = next(iter(ops_))
    return result


def privatized_clone(clone: LeafClone, params: dict[int, str]) -> LeafClone:
    """The variant of ``clone`` whose atomics on ``params`` (parameter index -> operation)
    are plain read-modify-writes on its private copy: ``privatize_atomics`` on its lowered
    IR, emitted again. A clone without IR is returned as it is (``atomic_only_params``
    never chooses one)."""
    if clone.ir is None or not params:
        return clone
    names = {clone.ir.params[i].name: op for i, op in params.items()}
    return clone.reemitted(privatize_atomics(clone.ir, names), "priv")


def privatize_atomics(ir: LeafIR, arrays: Mapping[str, str]) -> LeafIR:
    """``ir`` with each atomic statement on an array parameter of ``arrays`` (name ->
    operation) made a plain update: its indices and value evaluated once, in order, into
    locals; the value converted to the element type first, as the atomics do (so integer
    wrap-around is the same); then ``a[i] = a[i] <op> v`` or, for min and max, ``if v < a[i]:
    a[i] = v``. Nothing else changes."""
    temps: list[tuple[str, Any]] = []

    def temp(value: ops.Expr, line: int, out: list[ops.Stmt]) -> ops.Expr:
        inner = value.value if isinstance(value, ops.Cast) else value
        if isinstance(inner, (ops.Var, ops.Const)):
            return value  # (nothing to evaluate twice)
        var = ops.Var(f"{_TEMP}{len(temps)}", value.type)
        temps.append((var.name, value.type))
        out.append(ops.Assign(var, value, line))
        return var

    def update(stmt: ops.Stmt) -> list[ops.Stmt] | None:
        if not _privatized(stmt, arrays):
            return None
        out: list[ops.Stmt] = []
        call = stmt.value
        assert isinstance(call, ops.IntrinsicOp) and call.intrinsic.op is not None
        array, line = call.args[0], stmt.line
        assert isinstance(array.type, ops.ArrayType)
        indices = tuple(temp(i, line, out) for i in call.args[1:-1])
        value = temp(rules.convert(call.args[-1], array.type.elem), line, out)
        old = rules.load(array, indices)
        op = call.intrinsic.op
        if op in _UPDATE:
            new = rules.convert(rules.binary(_UPDATE[op], old, value), array.type.elem)
            out.append(ops.Store(array, indices, new, line))
        else:
            test = rules.compare([_REPLACES_WHEN[op]], [value, old])
            out.append(ops.If(test, (ops.Store(array, indices, value, line),), (), line))
        return out

    body = rewrite_stmts(ir.body, update)
    return replace(ir, body=body, locals=ir.locals + tuple(temps))


def _privatized(stmt: ops.Stmt, arrays: Mapping[str, str]) -> bool:
    """Whether ``stmt`` is an atomic statement on one of ``arrays`` with its operation."""
    if not (isinstance(stmt, ops.ExprStmt) and isinstance(stmt.value, ops.IntrinsicOp)):
        return False
    call = stmt.value
    target = call.args[0] if call.args else None
    return (
        call.intrinsic.kind == "atomic"
        and isinstance(target, ops.Var)
        and arrays.get(target.name) == call.intrinsic.op
    )


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
    """What the privatized loops call: ``__hpvm_overlaps(a, b)`` (whether two arrays share
    memory) and ``__hpvm_num_threads()``. Built once."""
    if not _JITTED:
        import numba

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

        _JITTED["__hpvm_overlaps"] = overlaps
        _JITTED["__hpvm_num_threads"] = num_threads
    return dict(_JITTED)
