"""Jammed LLVM leaves: one call runs ``width`` neighbouring instances in lockstep.

Why. The ``cpu`` back end calls a leaf once per instance from its loop over instances. A
leaf in the GPU convention with a loop of its own (a matmul's ``for k: acc += a[y][k] *
b[k][x]``) then runs that loop as one scalar chain per instance, and LLVM, which vectorizes
innermost loops, never widens the loop over instances around it. Python leaves are jammed
for this on their leaf IR (``cpu/jam.py``: the tiled sgemm 3-4× faster); an LLVM leaf has
no leaf IR, but it has what the work-item loops of barrier leaves are built from
(``wiuniform.py``, ``wiloops.py``): which values and branches are the same for every
instance, and the emission of each stretch of per-instance code as a loop over instances.

What. ``jam_module`` builds ``__hpvm_jam<axis>.<digest>(ptr args, ptr ctx)``: the instance
whose context ``ctx`` is and its ``width - 1`` neighbours along ``axis`` (ids ``id + 1`` ...),
as the work-item loops of a "group" of ``width`` instances along that axis sharing the
caller's context (``wiloops.emit`` with ``jam``): control flow the same for all of them
(the matmul's k loop) runs once, each stretch of per-instance code is a loop of ``width``
iterations over them, which LLVM vectorizes or unrolls, values kept across stretches in an
array per instance. Every instance still runs its own instructions in its own order, and
the instances of a replicated leaf are independent (seed 000), so this is one more legal
schedule, bit for bit. Outputs are dropped: the loop nest jams a leaf with outputs only
where nothing but the last instance's values is used, and runs that one plainly.

When. Not for a leaf with barriers (its group runs as work-item loops already), ``malloc``
or atomics; not when it can raise (a lane that raised would go on with its neighbours), when
its code reads its context other than its ids and the shared part (the lanes share one
context), when the work-item analysis does not take its control flow, or when no loop that
every lane runs together does per-instance work (then the loop over instances is the
innermost loop already, and LLVM vectorizes it). ``jam_module`` says why instead.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Any

from .coro import ERROR_CALL, declarations
from .wiloops import _own_context, emit, prepare
from .wiuniform import Analysis, Function, Stretch, analyse, post_dominators, read_function, structure

if TYPE_CHECKING:
    from .native import NativeLeaf

_DEFINES_CTX = re.compile(r"^define [^\n]*?(@(?:\"[^\"]+\"|[-a-zA-Z$._0-9]+))\(ptr %__hpvm_ctx", re.M)
_ATOMIC = re.compile(r"\b(atomicrmw|cmpxchg)\b")
_MODULES: dict[tuple[str, int, int], tuple[str | None, str]] = {}
_LOCK = threading.Lock()


def jam_symbol(digest: str, axis: int, width: int) -> str:
    """``void(ptr args, ptr ctx)``: ``width`` instances from the calling one along ``axis``."""
    return f"__hpvm_jam{axis}w{width}.{digest}"


def jam_module(native: NativeLeaf, axis: int, width: int) -> tuple[str | None, str]:
    """The module defining ``jam_symbol`` (every other function in it internal), optimized;
    or ``None`` and why the leaf is not jammed (module doc, "When"). Made once per clone,
    axis and width."""
    key = (native.digest, axis, width)
    with _LOCK:
        if key not in _MODULES:
            _MODULES[key] = _build(native, axis, width)
        return _MODULES[key]


def _build(native: NativeLeaf, axis: int, width: int) -> tuple[str | None, str]:
    import llvmlite.binding as llvm

    from .native import HEADER, optimize_module

    if native.uses_barrier or native.uses_malloc:
        return None, "it reaches a barrier or malloc"
    digest = native.digest
    reach = set(_DEFINES_CTX.findall(native.text))
    prepared = prepare(
        native.text,
        entry=f"__hpvm_leaf.{digest}",
        digest=digest,
        args=native.args,
        outs=native.outs,
        ret=native.ret,
        reach_barrier=reach,
    )
    if isinstance(prepared, str):
        return None, prepared
    module, attrs = prepared
    fn = module.get_function(f"__hpvm_wib.{digest}")
    body = str(fn)
    if f"@{ERROR_CALL}(" in body:
        return None, "it may raise"
    if _ATOMIC.search(body):
        return None, "it uses atomics"
    if any(re.search(re.escape(g) + r"\(", body) for g in reach):
        return None, "a call reading its context was not inlined"
    if _writes_context(fn):  # (its error slots: __hpvm_leaf_error inlined)
        return None, "it may raise"
    original = {i.name for b in fn.blocks for i in b.instructions if i.opcode == "alloca"}
    optimize_module(module, 0, ("register_to_memory", "instruction_namer"))
    f = read_function(module.get_function(f"__hpvm_wib.{digest}"), original, str(module))
    if isinstance(f, str):
        return None, f
    pdom = post_dominators(f)
    if pdom is None:
        return None, "a loop in it never ends"
    shared = tuple(k for k in range(3) if k != axis)  # (the lanes' other ids are the caller's)
    a = analyse(f, pdom, HEADER, shared)
    if _own_context(f, a, HEADER, shared):
        return None, "it reads its context other than its ids"
    stretches = structure(f, a)
    if isinstance(stretches, str):
        return None, stretches
    if not _shared_loop(f, a, stretches):
        return None, "no loop its neighbouring instances share"
    name = f"__hpvm_wj.{digest}"
    made = emit(f, a, stretches, name, attrs, len(native.outs), len(native.args), jam=axis, header=HEADER)
    if made is None:
        return None, "an alloca of a form work-item loops do not handle"
    symbol = jam_symbol(digest, axis, width)
    slots = width * max(1, len(native.outs))
    trampoline = (
        f"\ndefine void @{symbol}(ptr %args, ptr %ctx) {attrs} {{\n"
        f"  %out = alloca [{slots} x i64], align 8\n"
        f"  %r = call i32 @{name}(ptr %args, ptr %ctx, ptr %out, i64 0, i64 {width}, i64 1, i64 1)\n"
        "  ret void\n}\n"
    )
    text = str(module) + made + trampoline + declarations({f.name for f in module.functions})
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as e:
        return None, f"its jammed loops are not valid LLVM ({str(e).strip()})"
    for g in module.functions:
        if not g.is_declaration and g.name != symbol:
            g.linkage = "internal"
    optimize_module(module, 0, ("global_dead_code_eliminate",))
    optimize_module(module, 2)
    return str(module), ""


def _writes_context(fn: Any) -> bool:
    """Whether ``fn`` (llvmlite, SSA form) stores through a pointer into its context (the
    argument ``%ctx`` or an address computed from it): only the recording of a raise does."""
    derived = {}  # an address instruction's name -> the name of the pointer it is computed from
    stores = []
    for block in fn.blocks:
        for ins in block.instructions:
            if ins.opcode in ("getelementptr", "bitcast", "addrspacecast") and ins.name:
                derived[ins.name] = next(iter(ins.operands)).name
            elif ins.opcode == "store":
                stores.append(list(ins.operands)[1].name)
    for name in stores:
        seen = set()
        while name in derived and name not in seen:
            seen.add(name)
            name = derived[name]
        if name == "ctx":
            return True
    return False


def _shared_loop(f: Function, a: Analysis, stretches: dict[str, Stretch]) -> bool:
    """Whether a loop of blocks every instance runs together (a cycle of blocks that are
    not divergent, a divergent stretch counted as a step from its owner to where it
    leads) holds per-instance instructions: the work jamming puts side by side."""
    uniform = {b.name for b in f.blocks if b.name not in a.divergent}

    def after(name: str) -> list[str]:
        stretch = stretches.get(name)
        merge = [stretch.merge] if stretch is not None and stretch.merge is not None else []
        return [*f.by_name[name].succ, *merge]

    state: dict[str, int] = {}  # 1: on the depth-first path, 2: done
    path: list[str] = []
    in_loop: set[str] = set()
    for start in (b.name for b in f.blocks if b.name in uniform):
        if start in state:
            continue
        todo = [(start, iter(after(start)))]
        state[start] = 1
        path.append(start)
        while todo:
            name, succ = todo[-1]
            nxt = next((s for s in succ if s in uniform), None)
            if nxt is None:
                todo.pop()
                path.pop()
                state[name] = 2
            elif state.get(nxt) == 1:  # a back edge: the blocks on the path from nxt loop
                in_loop.update(path[path.index(nxt) :])
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                todo.append((nxt, iter(after(nxt))))
    inside = in_loop | {b for owner in in_loop if owner in stretches for b in stretches[owner].blocks}
    return any(
        id(i) not in a.skeleton and i.opcode != "alloca" for name in inside for i in f.by_name[name].body
    )


__all__ = ["jam_module", "jam_symbol"]
