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

A back end also need not zero-fill such a buffer again for each instance when its consumer
overwrites it before anything can read it: ``covering_store`` answers that for a Python
barrier leaf (its leaf IR), ``covering_llvm_store`` for an LLVM one (its node function's
control-flow graph), one question in two forms here.
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
from .llvm_text import DEFINITION, VALUE_NAME, arguments
from .types import ArrayType, ScalarType

_SIZE_EXPRS = (Var, Const, Binary, Unary, Cast)
#: How a debug line of a function body starts, in either of LLVM's forms (a record, a call).
_DEBUG_LINES = ("#dbg_", "call void @llvm.dbg.")


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
    body = [line for line in lines[1:-1] if not line.startswith(_DEBUG_LINES) and line != "entry:"]
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


# --- The covering store in LLVM's form (HPVM-C and ``.ll`` barrier leaves) ---------------

#: Bytes of the scalar types an LLVM leaf may store as its element (anything else: no proof).
_LLVM_SIZES = {
    "i8": 1,
    "i16": 2,
    "i32": 4,
    "i64": 8,
    "half": 2,
    "bfloat": 2,
    "float": 4,
    "double": 8,
    "ptr": 8,
}
_LLVM_NAME = VALUE_NAME.pattern
_LLVM_LABEL = re.compile(r"^([-a-zA-Z$._0-9]+|\"[^\"]*\"):$")
_LLVM_CALL = re.compile(r"^(?:(?:tail|notail|musttail) )?call (?:[^@%(]*?)@([-a-zA-Z$._0-9]+)\((.*)\)$")
#: ``getelementptr [flags] T, ptr %base, i64 %index`` (one index: element ``index`` of ``base``).
_LLVM_GEP = re.compile(
    rf"^getelementptr(?: (?:inbounds|nuw|nusw))* (\w+), ptr ({_LLVM_NAME}), i64 ({_LLVM_NAME}|-?\d+)$"
)
_LLVM_STORE = re.compile(rf"^store (\w+) ([^,]+), ptr ({_LLVM_NAME})(?:, align \d+)?$")
#: hpvm intrinsics that only answer a query (the instance ids and counts, node handles).
_LLVM_QUERIES = frozenset(
    {"getNode", "getParentNode", "getNumDims"}
    | {f"{q}.{d}" for q in ("getNodeInstanceID", "getNumNodeInstances") for d in "xyz"}
)


def covering_llvm_store(function: str, arg: int) -> int | None:
    """``covering_store`` in LLVM's form: whether every instance of the (1-D) barrier leaf
    whose node function is ``function`` (its text as LLVM prints it) stores its own element
    of the buffer in argument number ``arg`` (the array port's pointer: ``llvm_argument``)
    on every path from the entry to the first barrier, and nothing else touches the buffer
    before that barrier. Returns the element's size in bytes, or ``None``.

    The rule, on the part of the control-flow graph reachable from the entry without
    passing a barrier call (``llvm.hpvm.barrier``), region R:

    - no path in R ends (no ``ret``, ``unreachable`` or other terminator than ``br``): every
      instance reaches a barrier;
    - R calls only LLVM intrinsics and hpvm's queries (a helper could hold a barrier or
      reach the buffer);
    - the buffer's pointer, and every ``getelementptr`` from it, is used in R only by
      another ``getelementptr`` or as the address of a plain store ``store T v, ptr p``
      where ``p`` is ``getelementptr T, ptr buf, i64 x``, ``x`` this node's
      ``getNodeInstanceID.x`` (an own-element store, ``buf[x] = v``; ``v`` not the buffer);
    - every path from the entry to a barrier passes an own-element store (the walk from the
      entry that stops at such stores meets no barrier): where the store sits after a
      branch (a ``phi`` of ``gid < n ? in[gid] : 0``, or a ``select``) it still dominates
      the barrier.

    Anything else — a store only under ``if (x < k)``, of another index, a read of the
    buffer, a call, a quoted name or a construct the text reader does not follow — gives
    no proof. After the barrier anything may happen: the barrier orders every instance's
    store before every later read."""
    parsed = _llvm_blocks(function)
    if parsed is None:
        return None
    args, blocks = parsed
    if not blocks or arg >= len(args):
        return None
    region = _llvm_region(blocks)
    if region is None:
        return None
    derived, own = _llvm_pointers(region, args[arg])
    size = None
    for _, rhs in region:
        uses = set(VALUE_NAME.findall(rhs))
        call = _LLVM_CALL.match(rhs)
        if rhs.split()[0] in ("call", "tail", "notail", "musttail", "invoke", "callbr") or "asm " in rhs:
            if call is None or not _llvm_query(call.group(1)):
                return None
        if not uses & derived:
            continue
        gep = _LLVM_GEP.match(rhs)
        if gep is not None and gep.group(2) in derived and not ({gep.group(3)} & derived):
            continue
        store = _LLVM_STORE.match(rhs)
        if store is None or store.group(3) not in own or set(VALUE_NAME.findall(store.group(2))) & derived:
            return None
        elem = _LLVM_GEP.match(_llvm_definition(region, store.group(3)))
        if elem is None or elem.group(1) != store.group(1):
            return None
        if size not in (None, _LLVM_SIZES[store.group(1)]):
            return None
        size = _LLVM_SIZES[store.group(1)]
    return size if size is not None and _llvm_covered(blocks, own) else None


def _llvm_pointers(region: list[tuple[str, str]], buffer: str) -> tuple[set[str], set[str]]:
    """In ``region``: the pointers into ``buffer`` (it and its ``getelementptr``\\ s) and
    among them the own-element addresses (``getelementptr T, ptr buf, i64 x``, ``x`` this
    node's x id). A fixed point, as a ``phi`` may name a value defined later in R."""
    derived, own, nodes, ids = {buffer}, set(), set(), set()
    size = -1
    while size != len(derived) + len(nodes) + len(ids):
        size = len(derived) + len(nodes) + len(ids)
        for name, rhs in region:
            call, gep = _LLVM_CALL.match(rhs), _LLVM_GEP.match(rhs)
            if call is not None and call.group(1) == "llvm.hpvm.getNode":
                nodes.add(name)
            elif call is not None and call.group(1) == "llvm.hpvm.getNodeInstanceID.x":
                if call.group(2).split()[-1:] and call.group(2).split()[-1] in nodes:
                    ids.add(name)
            elif gep is not None and gep.group(2) in derived:
                derived.add(name)
                if gep.group(2) == buffer and gep.group(3) in ids and gep.group(1) in _LLVM_SIZES:
                    own.add(name)
    return derived, own


def llvm_argument(params: list, param: str) -> int:  # type: ignore[type-arg]
    """The LLVM argument number of port ``param``'s first argument (its pointer, for an
    array) in a node function taking ``params`` (``bodies.llvm_abi_types``)."""
    from .bodies import llvm_abi_types

    k = 0
    for p in params:
        if p.name == param:
            return k
        k += len(llvm_abi_types(p.type))
    raise KeyError(param)


def _llvm_query(callee: str) -> bool:
    """Whether a call of ``callee`` may sit before the first barrier: an hpvm query, or an
    LLVM intrinsic that is not hpvm's (its pointer arguments are checked like any use)."""
    if callee.startswith("llvm.hpvm."):
        return callee[len("llvm.hpvm.") :] in _LLVM_QUERIES
    return callee.startswith("llvm.")


def _llvm_definition(region: list[tuple[str, str]], name: str) -> str:
    return next((rhs for n, rhs in region if n == name), "")


_Blocks = dict[str, list[tuple[str, str]]]  # block label -> (defined name or "", instruction)


def _llvm_blocks(function: str) -> tuple[list[str], _Blocks] | None:
    """The argument names and basic blocks (in order, the entry first) of the printed
    function ``function``, its instructions without debug records, attribute groups and
    metadata; ``None`` for what this reader does not follow (quoted text in the body)."""
    lines = [line.strip() for line in function.splitlines()]
    lines = [line for line in lines if line and not line.startswith((";", *_DEBUG_LINES))]
    if not lines or not lines[0].startswith("define ") or lines[-1] != "}":
        return None
    args = arguments(lines[0])
    order: list[tuple[str, list[tuple[str, str]]]] = [("", [])]  # ("": an unlabelled entry)
    for line in lines[1:-1]:
        line = re.sub(r"\s*;.*$", "", line) if '"' not in line else line
        if '"' in line:
            return None
        label = _LLVM_LABEL.match(line)
        if label is not None and order == [("", [])]:
            order = [(f"%{label.group(1)}", [])]  # (the entry's label)
        elif label is not None:
            order.append((f"%{label.group(1)}", []))
        else:
            m = DEFINITION.match(_LLVM_TAIL.sub("", line).strip())
            order[-1][1].append((m.group(1), m.group(2)) if m else ("", _LLVM_TAIL.sub("", line).strip()))
    blocks = dict(order)
    if len(blocks) != len(order):
        return None  # (a label twice)
    return args, blocks


def _successors(rhs: str) -> list[str] | None:
    """A terminator's successors: ``br``'s labels; ``None`` for any other terminator."""
    if rhs.startswith("br "):
        return re.findall(rf"label ({_LLVM_NAME})", rhs)
    return None


def _is_barrier(rhs: str) -> bool:
    call = _LLVM_CALL.match(rhs)
    return call is not None and call.group(1) == "llvm.hpvm.barrier"


def _llvm_region(blocks: _Blocks) -> list[tuple[str, str]] | None:
    """The instructions reachable from the entry before any barrier (region R), or ``None``
    when a path in R ends other than at a barrier (or jumps to an unknown label)."""
    region, seen, work = [], set(), [next(iter(blocks))]
    while work:
        label = work.pop()
        if label in seen:
            continue
        seen.add(label)
        if label not in blocks:
            return None
        for k, (name, rhs) in enumerate(blocks[label]):
            if _is_barrier(rhs):
                break
            region.append((name, rhs))
            if k == len(blocks[label]) - 1:
                targets = _successors(rhs)
                if targets is None:
                    return None
                work += targets
        if not blocks[label]:
            return None
    return region


def _llvm_covered(blocks: _Blocks, own: set[str]) -> bool:
    """Whether every path from the entry to a barrier passes a store to an own element
    (``own``: those addresses): the walk from the entry that stops at such a store never
    meets a barrier."""
    seen, work = set(), [next(iter(blocks))]
    while work:
        label = work.pop()
        if label in seen:
            continue
        seen.add(label)
        for _, rhs in blocks[label]:
            store = _LLVM_STORE.match(rhs)
            if store is not None and store.group(3) in own:
                break
            if _is_barrier(rhs):
                return False
            targets = _successors(rhs)
            if targets is not None:
                work += targets
    return True
