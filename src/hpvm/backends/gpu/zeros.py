"""Placing a leaf's small zeroed arrays in thread-private memory: a pass on the leaf IR.

Why. GPU threads cannot allocate: a small scratch array in a leaf (every HBIR local array is
one) becomes thread-private memory whose size must be known when the kernel is compiled —
``cuda.local.array`` for numba-cuda, a ``__private`` C array for OpenCL — and whose
contents start undefined. ``private_zeros`` rewrites each ``name = np.zeros(SHAPE, DTYPE)``
of a constant shape into ``name = np.empty(SHAPE, DTYPE)`` followed by loops that set every
element to zero, so the leaf computes what it computes on the other back ends; a back end
then makes every constant-shape ``np.empty`` private (``pyemit.CloneSpelling.local_array``).
Any other allocation is left as written.
"""

from __future__ import annotations

from dataclasses import replace

from ...ir.leafir import LeafIR, ops, rules
from ...ir.leafir.rewrite import rewrite_stmts

_INDEX = "__hpvm_z"  # the zero-fill loops' variables


def constant_shape(alloc: ops.Alloc) -> tuple[int, ...] | None:
    """The shape of a local array whose extents are all integer constants (non-negative),
    else ``None``."""
    shape = []
    for extent in alloc.shape:
        if not (isinstance(extent, ops.Const) and isinstance(extent.value, int) and extent.value >= 0):
            return None
        shape.append(int(extent.value))
    return tuple(shape)


def _zeros(stmt: ops.Stmt) -> ops.Assign | None:
    """``stmt`` as ``name = np.zeros(<constant shape>, dtype)``, else ``None``."""
    if isinstance(stmt, ops.Assign) and isinstance(stmt.value, ops.Alloc) and stmt.value.fill == "zeros":
        return stmt if constant_shape(stmt.value) is not None else None
    return None


def private_zeros(ir: LeafIR) -> LeafIR:
    """``ir`` with its constant-shape ``np.zeros`` assignments made ``np.empty`` plus zero-fill
    loops (see the module doc); ``ir`` itself when it has none."""
    counters: list[tuple[str, ops.ScalarType]] = []

    def fill(stmt: ops.Stmt) -> tuple[ops.Stmt, ...] | None:
        if _zeros(stmt) is None:
            return None
        assert isinstance(stmt, ops.Assign)
        alloc = stmt.value
        assert isinstance(alloc, ops.Alloc) and isinstance(alloc.type, ops.ArrayType)
        empty = ops.Assign(stmt.target, replace(alloc, fill="empty"), stmt.line)
        names = []
        for _ in alloc.shape:
            names.append(ops.Var(f"{_INDEX}{len(counters)}", rules.I64))
            counters.append((names[-1].name, rules.I64))
        zero = rules.const(0, alloc.type.elem)
        body: ops.Stmt = ops.Store(stmt.target, tuple(names), zero, stmt.line)
        for var, extent in reversed(list(zip(names, alloc.shape))):
            one = rules.const(1)
            body = ops.For(var, rules.const(0), extent, one, (body,), stmt.line)
        return (empty, body)

    body = rewrite_stmts(ir.body, fill)
    return replace(ir, body=body, locals=ir.locals + tuple(counters)) if counters else ir


def has_private_arrays(ir: LeafIR) -> bool:
    """Whether ``ir`` makes a constant-shape ``np.empty`` (what a GPU back end makes private)."""
    return any(
        isinstance(e, ops.Alloc) and e.fill == "empty" and constant_shape(e) is not None
        for stmt in ops.walk_stmts(ir.body)
        for top in ops.stmt_exprs(stmt)
        for e in ops.walk_expr(top)
    )


__all__ = ["constant_shape", "has_private_arrays", "private_zeros"]
