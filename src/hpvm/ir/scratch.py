"""Scratch allocations: ``malloc`` buffers that live one parent instance, sized alike in each.

Why. Seed 001's allocation-node pattern mallocs one buffer per instance of the parent
(GPU shared memory: one per thread block). A CPU thread runs many parent instances one
after the other, and the block reduction's hand-written loops allocate one scratch per
thread and reuse it for every block. A back end may do the same — allocate once for a run
of consecutive parent instances on one thread, and hand each instance the same memory,
zero-filled again as a fresh ``malloc`` is (docs/semantics.md §11) — when nothing can tell
the difference:

- the buffer's size is the same in every instance: the allocation node is a single-instance
  leaf whose every input is bound from the parent's inputs, and whose body is
  ``return hpvm.malloc(n)`` (or that buffer ``.view``\\ ed as another type) with ``n``
  computed from its scalar parameters and constants — no instance id, no call, nothing
  else done to the buffer;
- the buffer dies with the parent instance: it goes only over edges to siblings, never out
  of the parent by an output bind of the allocation node. (Whether a sibling passes it on
  out of the parent is the back end's data-flow question: the cpu back end's
  ``mallocpool.MallocFlow``.)

Whether the parent's inputs are the same in every parent instance the back end runs in one
go is a property of where the parent is used (its feeds in the grandparent's graph), also
the back end's to check. This module only answers the two questions above, on the graph
and the leaf's body, so that every back end applies one rule: ``scratch_allocations`` is the
rule, and a leaf's body is a plain allocation in one of two forms — the leaf IR's
(``plain_allocation``: Python leaves) or LLVM's (``plain_llvm_allocation``: HPVM-C and
``.ll`` leaves, whose node function only calls ``llvm.hpvm.malloc`` with a size computed
from its scalar arguments and constants, and returns that pointer with a size).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from . import instance_context as ictx
from .graph import InternalFunction, LeafFunction, Node
from .leafir.ops import (
    Assign,
    Binary,
    Break,
    Cast,
    Const,
    Continue,
    CtxRead,
    Expr,
    ExprStmt,
    For,
    IntrinsicOp,
    LeafIR,
    Raise,
    Return,
    Retype,
    Store,
    Unary,
    Var,
    stmt_exprs,
    walk_expr,
    walk_stmts,
)
from .llvm_text import DEFINITION
from .types import ArrayType, ScalarType

_SIZE_EXPRS = (Var, Const, Binary, Unary, Cast)


def plain_allocation(ir: LeafIR) -> bool:
    """Whether the leaf IR ``ir`` is ``return hpvm.malloc(n)`` (or ``hpvm.malloc(n).view(t)``,
    or either assigned to a local that is returned) with ``n`` an arithmetic expression of
    scalar parameters and constants."""
    body = ir.body
    if len(body) == 2 and isinstance(body[0], Assign) and isinstance(body[0].target, Var):
        # (``buf = hpvm.malloc(n).view(t); return buf``)
        if not (isinstance(body[1], Return) and body[1].values == (body[0].target,)):
            return False
        body = (Return((body[0].value,), body[1].line),)
    if len(body) != 1 or not isinstance(body[0], Return) or len(body[0].values) != 1:
        return False
    value = body[0].values[0]
    if isinstance(value, Retype):
        value = value.array
    if not (isinstance(value, IntrinsicOp) and value.intrinsic.kind == "malloc" and len(value.args) == 1):
        return False
    scalars = {p.name for p in ir.params if isinstance(p.type, ScalarType)}
    size = walk_expr(value.args[0])
    return all(isinstance(e, _SIZE_EXPRS) and (not isinstance(e, Var) or e.name in scalars) for e in size)


#: Instructions a plain LLVM allocation may compute its size with: integer arithmetic, which
#: reads no memory and no instance id (those come from loads and calls, refused).
_LLVM_SIZE_OPS = frozenset(
    "add sub mul shl lshr ashr udiv sdiv urem srem and or xor zext sext trunc freeze".split()
)
_LLVM_MALLOC = re.compile(
    r"^(?:tail |notail |musttail )?call ptr @llvm\.hpvm\.malloc\(i64(?: noundef)? ([^)]+)\)"
)
_LLVM_INSERT = re.compile(r"^insertvalue \{ ptr, i64 \} (\S+), (ptr|i64) (\S+), ([01])$")
#: An integer instruction on integer operands only (no pointer, no vector).
_LLVM_ARITH = re.compile(r"^\w+(?: (?:nsw|nuw|exact|disjoint|nneg))* i\d+ [^,]+(?:, [^,]+)?(?: to i\d+)?$")
#: What follows an instruction without changing what it computes: its attribute group, its
#: metadata attachments.
_LLVM_TAIL = re.compile(r"(?:\s+#\d+)?(?:,\s*!.*)?$")


def plain_llvm_allocation(function: str) -> bool:
    """Whether the LLVM node function ``function`` (its text as LLVM prints it, before the
    back end's clone) is a plain allocation: one basic block whose only call is
    ``llvm.hpvm.malloc(n)`` — ``n`` an argument, a constant, or integer arithmetic of them —
    returning ``{ ptr, i64 }`` with that pointer in field 0 (the HPVM-C allocation node:
    ``__hpvm__return(2, __hpvm__malloc(n), n)``). Loads, stores, other calls (the instance
    ids are calls), branches: not plain."""
    lines = [_LLVM_TAIL.sub("", line).strip() for line in function.splitlines()]
    lines = [line for line in lines if line and not line.startswith(";")]  # (comments)
    if len(lines) < 3 or not lines[0].startswith("define { ptr, i64 } @") or lines[-1] != "}":
        return False
    debug = ("#dbg_", "call void @llvm.dbg.")  # (debug records, in either of LLVM's forms)
    body = [line for line in lines[1:-1] if not line.startswith(debug) and line != "entry:"]
    if not body:
        return False
    malloc: str | None = None
    fields: dict[str, dict[str, str]] = {"poison": {}, "undef": {}}  # struct value -> field -> value
    for line in body[:-1]:
        m = DEFINITION.match(line)
        if m is None:
            return False
        name, rhs = m.groups()
        if _LLVM_MALLOC.match(rhs):
            if malloc is not None:
                return False
            malloc = name
            continue
        insert = _LLVM_INSERT.match(rhs)
        if insert is not None:
            agg, _, value, field = insert.groups()
            if agg not in fields:
                return False
            fields[name] = {**fields[agg], field: value}
            continue
        if rhs.split()[0] not in _LLVM_SIZE_OPS or not _LLVM_ARITH.match(rhs):
            return False
    ret = re.match(r"^ret \{ ptr, i64 \} (\S+)$", body[-1])
    returned = fields.get(ret.group(1)) if ret is not None else None
    return malloc is not None and returned is not None and returned.get("0") == malloc


def covering_store(ir: LeafIR, param: str) -> int | None:
    """Whether every instance of the (1-D) barrier leaf ``ir`` overwrites its element of the
    buffer parameter ``param`` before any instance reads the buffer: then no instance can
    see what the buffer held before, and a back end need not zero-fill it. Returns the
    element size in bytes of that store (every byte is written when the instances number at
    least ``nbytes / size``: the caller's run-time test), or ``None``.

    The rule, on the leaf's top-level statements before its first barrier: the buffer (or a
    ``.view`` of it) is mentioned only by one store ``view[x] = e``, where ``x`` holds the
    instance's own x id and ``e`` does not mention the buffer; before it, nothing can stop
    an instance (no return, raise, break or continue, at any depth) or reassign ``x``, and
    after it, up to the barrier, nothing mentions the buffer. The barrier then orders every
    instance's store before every later read (what the barrier promises)."""
    aliases = {param: _elem_size(ir, param)}
    ids: set[str] = set()  # locals holding this instance's x id
    found: int | None = None
    for stmt in ir.body:
        if (
            isinstance(stmt, ExprStmt)
            and isinstance(stmt.value, IntrinsicOp)
            and stmt.value.intrinsic.kind == "barrier"
        ):
            return found
        if isinstance(stmt, Assign) and found is None:
            name, value = stmt.target.name, stmt.value
            if name in aliases:
                return None
            ids.discard(name)
            if isinstance(value, CtxRead) and value.level == 0 and value.field == ictx.ID:
                ids.add(name)
                continue
            if isinstance(value, Retype) and isinstance(value.array, Var) and value.array.name in aliases:
                aliases[name] = _size(value.type.elem)
                continue
        if isinstance(stmt, Store) and found is None and _mentions(stmt.array, aliases):
            index = stmt.indices[0] if len(stmt.indices) == 1 else None
            if not (isinstance(stmt.array, Var) and isinstance(index, Var) and index.name in ids):
                return None
            if _mentions(stmt.value, aliases):
                return None
            found = aliases[stmt.array.name]
            continue
        for inner in walk_stmts((stmt,)):
            if isinstance(inner, (Return, Raise, Break, Continue)) and found is None:
                return None
            if isinstance(inner, (Assign, For)) and _target(inner) in ids | set(aliases):
                return None
            if any(_mentions(e, aliases) for e in stmt_exprs(inner)):
                return None
    return found  # (no barrier: no instance reads another's element after its own store)


def _target(stmt: Assign | For) -> str:
    return stmt.target.name if isinstance(stmt, Assign) else stmt.var.name


def _mentions(expr: Expr, names: dict[str, int]) -> bool:
    return any(isinstance(e, Var) and e.name in names for e in walk_expr(expr))


def _size(t: ScalarType) -> int:
    return int(t.dtype.itemsize)


def _elem_size(ir: LeafIR, param: str) -> int:
    t = next(p.type for p in ir.params if p.name == param)
    return _size(t.elem) if isinstance(t, ArrayType) else 0


def scratch_allocations(fn: InternalFunction, plain: Callable[[LeafFunction], bool]) -> list[Node]:
    """The children of ``fn`` whose buffer lives one instance of ``fn`` and is sized alike in
    every instance with the same inputs (the module doc's rule). ``plain(leaf)``: whether the
    leaf's body is a plain allocation (``plain_allocation`` on the back end's leaf IR)."""
    graph = fn.graph
    bound_out = {id(b.src) for b in graph.out_binds}
    fed = {(id(b.dst), b.ic) for b in graph.in_binds}
    out = []
    for node in graph.nodes:
        leaf = node.function
        if not isinstance(leaf, LeafFunction) or node.dims != 0 or id(node) in bound_out:
            continue
        if len(leaf.out_types) != 1 or not isinstance(leaf.out_types[0], ArrayType):
            continue
        if all((id(node), i) in fed for i in range(len(leaf.params))) and plain(leaf):
            out.append(node)
    return out
