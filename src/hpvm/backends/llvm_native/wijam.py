"""Jammed LLVM leaves: one call runs ``width`` neighbouring instances in lockstep.

Why. The ``cpu`` back end calls a leaf once per instance from its loop over instances. A
leaf in the GPU convention with a loop of its own (a matmul's ``for k: acc += a[y][k] *
b[k][x]``) then runs that loop as one scalar chain per instance, and LLVM, which vectorizes
innermost loops, never widens the loop over instances around it. Python leaves are jammed
for this on their leaf IR (``cpu/jam.py``: the tiled sgemm 3-4× faster); an LLVM leaf has
no leaf IR, but it has what the work-item loops of barrier leaves are built from
(``wiuniform.py``, ``wiloops.py``): which values and branches are the same for every
instance, and the emission of each stretch of per-instance code as a loop over instances.

What. ``jam_module`` builds ``__hpvm_jam<axis>w<width>.<digest>(ptr args, ptr ctx)``: the instance
whose context ``ctx`` is and its ``width - 1`` neighbours along ``axis`` (ids ``id + 1`` ...),
as the work-item loops of a "group" of ``width`` instances along that axis sharing the
caller's context (``wiloops.emit`` with ``jam``): control flow the same for all of them
(the matmul's k loop) runs once, each stretch of per-instance code is a loop of ``width``
iterations over them, which LLVM vectorizes or unrolls, values kept across stretches in an
array per instance. Every instance still runs its own instructions in its own order, and
the instances of a replicated leaf are independent (seed 000), so this is one more legal
schedule, bit for bit. Outputs are dropped: the loop nest jams a leaf with outputs only
where nothing but the last instance's values is used, and runs that one plainly.

Guards. HPVM's and CUDA's kernels put their whole body under a bounds check (``if ((gx <
n) && (gy < m))``: the grid is rounded up to whole blocks), so their loops sit in
per-instance code and no loop is shared. When that guard is the first branch that differs
between lanes and nothing before it writes memory but locals (``_guarded``), the entry runs
a *probe* first — the leaf's work-item form cut at the guard, each lane's condition stored
in its output slot — then the jammed leaf with the guard taken as true where every lane
passes it, else each lane's plain clone in turn (the block straddling the edge).

Lanes. Each lane keeps its own scalar chain, as a jammed Python leaf's do (``cpu/jam.py``):
the jammed module is optimized without LLVM's vectorizers. Across lanes, the loop over
instances becomes one vector chain whose loads of ``b[p, col .. col + 15]`` start wherever
the array's rows start — NumPy's large arrays begin 16 bytes into a cache line, so every
such load spans two lines — and a walk down a matrix of 4 KiB rows (1024 floats) evicted
them from the few cache sets they map to: the tiled sgemm's LLVM leaves (1024³) ran in
298–323 ms with vectors, 109 ms when the arrays were 64-byte aligned, 153–155 ms as scalar
lanes whatever the alignment (their Python leaves: 194–216 ms; issue 24). With 16 lanes
(``cpu/jam.py``: ``LLVM_WIDTH``) the chains hide each other's latency.

When. Not for a leaf with barriers (its group runs as work-item loops already), ``malloc``
or atomics; not when it can raise (a lane that raised would go on with its neighbours), when
its code reads its context other than its ids and the shared part (the lanes share one
context), when the work-item analysis does not take its control flow, or when no loop that
every lane runs together does per-instance work, even past a guard (then the loop over
instances is the innermost loop already, and LLVM vectorizes it). ``jam_module`` says why
instead.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Any

from ...ir.cache import stored_json
from .coro import ERROR_CALL, declarations
from .stored import code_version
from .wiloops import NONNEGATIVE, _own_context, emit, prepare
from .wiuniform import (
    PURE_INTRINSICS,
    Analysis,
    Block,
    Function,
    Ins,
    Stretch,
    analyse,
    llvm_local,
    post_dominators,
    read_function,
    structure,
)

if TYPE_CHECKING:
    from .native import NativeLeaf

_DEFINES_CTX = re.compile(r"^define [^\n]*?(@(?:\"[^\"]+\"|[-a-zA-Z$._0-9]+))\(ptr %__hpvm_ctx", re.M)
_ATOMIC = re.compile(r"\b(atomicrmw|cmpxchg)\b")
#: Calls that may come before a guard: they write no memory (``llvm.memset`` would).
_HARMLESS = re.compile(
    PURE_INTRINSICS.pattern + r"|llvm\.(lifetime\.|experimental\.noalias\.scope\.decl|assume|dbg\.)"
)
#: The probe's loop hints' first metadata number (the jammed function's start at 7,000,000).
_PROBE_MD = 8_000_000
_MODULES: dict[tuple[str, int, int], tuple[str | None, str]] = {}
_LOCK = threading.Lock()


def jam_symbol(digest: str, axis: int, width: int) -> str:
    """``void(ptr args, ptr ctx)``: ``width`` instances from the calling one along ``axis``."""
    return f"__hpvm_jam{axis}w{width}.{digest}"


def jam_module(native: NativeLeaf, axis: int, width: int) -> tuple[str | None, str]:
    """The module defining ``jam_symbol`` (every other function in it internal), optimized;
    or ``None`` and why the leaf is not jammed (module doc, "When"). Made once per clone,
    axis and width, and kept on disk (``_stored``): the cpu back end decides whether to jam
    when it generates a graph's code, also when Numba's cache then serves that code, and
    building it took 0.1–0.6 s a leaf of every process's first launch."""
    key = (native.digest, axis, width)
    with _LOCK:
        if key not in _MODULES:
            _MODULES[key] = _stored(native, axis, width)
        return _MODULES[key]


def _stored(native: NativeLeaf, axis: int, width: int) -> tuple[str | None, str]:
    """``_build``'s answer from hpvm's cache (``llvm-jam/``, ``ir.cache.stored_json``), else
    built and stored there (``stored.py``), keyed by the clone (its text, digest, ports), the axis and
    the width."""
    found = stored_json(
        "llvm-jam",
        code_version(),
        [native.digest, native.args, native.outs, native.ret, axis, width],
        native.text,
        {"text": (str, type(None)), "why": str},
        lambda: dict(zip(("text", "why"), _build(native, axis, width), strict=True)),
    )
    return found["text"], found["why"]


def _build(native: NativeLeaf, axis: int, width: int) -> tuple[str | None, str]:
    import llvmlite.binding as llvm

    from .native import HEADER, nonnegative_queries, optimize_module

    if native.uses_barrier or native.uses_malloc:
        return None, "it reaches a barrier or malloc"
    digest = native.digest
    reach = set(_DEFINES_CTX.findall(native.text))
    prepared = prepare(
        nonnegative_queries(native.text),  # (the lanes' ids are never negative)
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
    shared = tuple(k for k in range(3) if k != axis)  # (the lanes' other ids are the caller's)
    found = _analysed(f, shared)
    if isinstance(found, str):
        return None, found
    a, stretches = found
    symbol = jam_symbol(digest, axis, width)
    name, nout, nargs = f"__hpvm_wj.{digest}", len(native.outs), len(native.args)
    slots = width * max(1, nout)
    call = f"call i32 @{name}(ptr %args, ptr %ctx, ptr %out, i64 0, i64 {width}, i64 1, i64 1)"
    if _shared_loop(f, a, stretches):
        made = emit(f, a, stretches, name, attrs, nout, nargs, jam=axis, header=HEADER)
        if made is None:
            return None, "an alloca of a form work-item loops do not handle"
        trampoline = (
            f"\ndefine void @{symbol}(ptr %args, ptr %ctx) {attrs} {{\n"
            f"  %out = alloca [{slots} x i64], align 8\n  %r = {call}\n  ret void\n}}\n"
        )
    else:
        guarded = _guarded(f, a, stretches, shared)
        if guarded is None:
            return None, "no loop its neighbouring instances share"
        assumed, probe = guarded
        made = emit(*assumed, name, attrs, nout, nargs, jam=axis, header=HEADER)
        probed = emit(
            *probe, f"__hpvm_wp.{digest}", attrs, nout, nargs, jam=axis, header=HEADER, md_base=_PROBE_MD
        )
        if made is None or probed is None:
            return None, "an alloca of a form work-item loops do not handle"
        made += probed
        trampoline = _guarded_trampoline(symbol, digest, attrs, call, axis, width, nout)
    declared = declarations({f.name for f in module.functions})
    text = f"{module}{made}{trampoline}{declared}\n{NONNEGATIVE}\n"  # (the lanes' ids: wiloops.emit)
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as e:
        return None, f"its jammed loops are not valid LLVM ({str(e).strip()})"
    for g in module.functions:
        if not g.is_declaration and g.name != symbol:
            g.linkage = "internal"
    optimize_module(module, 0, ("global_dead_code_eliminate",))
    optimize_module(module, 2, vectorize=False)  # (scalar lanes: the module doc, "Lanes")
    return str(module), ""


def _analysed(f: Function, shared: tuple[int, ...]) -> tuple[Analysis, dict[str, Stretch]] | str:
    """``f``'s uniformity and divergent stretches for lanes sharing the ids of ``shared``;
    or why work-item loops cannot run it."""
    from .native import HEADER

    pdom = post_dominators(f)
    if pdom is None:
        return "a loop in it never ends"
    a = analyse(f, pdom, HEADER, shared)
    if _own_context(f, a, HEADER, shared):
        return "it reads its context other than its ids"
    stretches = structure(f, a)
    if isinstance(stretches, str):
        return stretches
    return a, stretches


def _guarded(
    f: Function, a: Analysis, stretches: dict[str, Stretch], shared: tuple[int, ...]
) -> (
    tuple[tuple[Function, Analysis, dict[str, Stretch]], tuple[Function, Analysis, dict[str, Stretch]]] | None
):
    """A leaf whose loops sit under a guard on its id (``if (gx < n) { for ... }``, HPVM's
    and CUDA's bounds check): the first branch that differs between lanes, reached by code
    that changes no memory but its locals. Two functions, each with what work-item loops
    need: ``assumed``, the leaf with that branch always taken (every lane passes the guard;
    it must then share a loop), and ``probe``, which stops at the branch and stores each
    lane's condition in its first output slot (the trampoline runs it first: ``None``, when
    there is no such guard)."""
    preds: dict[str, set[str]] = {b.name: set() for b in f.blocks}
    for b in f.blocks:
        for t in b.succ:
            preds[t].add(b.name)
    owner = next((b for b in f.blocks if b.name in stretches), None)
    if owner is None or owner.term.opcode != "br" or len(owner.succ) != 2:
        return None
    before, todo = {owner.name}, [owner.name]
    while todo:
        for p in preds[todo.pop()]:
            if p not in before:
                before.add(p)
                todo.append(p)
    for name in before:
        for i in f.by_name[name].body:
            if i.opcode == "store" and i.operands[1][0] not in f.allocas:
                return None
            if i.opcode == "call" and not _HARMLESS.match(i.operands[-1][0]):
                return None
    cond = owner.term.operands[0]
    taken = owner.succ[0]  # (llvm's true target: read_function lists it first)
    assumed = _replaced(
        f, owner.name, [], Ins("", "br", f"  br label {llvm_local(taken)}", [(taken, "basic_block")]), [taken]
    )
    flag = Ins("__wj.flag", "zext", f"  %__wj.flag = zext i1 {llvm_local(cond[0])} to i64", [cond])
    store = Ins(
        "",
        "store",
        "  store i64 %__wj.flag, ptr %out, align 8",
        [("__wj.flag", "instruction"), ("out", "argument")],
    )
    probe = _replaced(f, owner.name, [flag, store], Ins("", "ret", "  ret void", []), [])
    out = []
    for g in (assumed, probe):
        found = _analysed(g, shared)
        if isinstance(found, str):
            return None
        out.append((g, *found))
    if not _shared_loop(*out[0]):
        return None
    return out[0], out[1]  # type: ignore[return-value]


def _replaced(f: Function, name: str, extra: list[Ins], term: Ins, succ: list[str]) -> Function:
    """``f`` with block ``name`` ending in ``extra`` and ``term`` instead of its branch."""
    blocks = [
        Block(b.name, [*b.body, *extra], term, succ)
        if b.name == name
        else Block(b.name, list(b.body), b.term, list(b.succ))
        for b in f.blocks
    ]
    return Function(blocks, dict(f.allocas), set(f.original))


def _guarded_trampoline(
    symbol: str, digest: str, attrs: str, call: str, axis: int, width: int, nout: int
) -> str:
    """The jammed entry of a guarded leaf (``_guarded``): the probe says whether every lane
    passes the guard; then the jammed leaf runs with it assumed, else each lane runs the
    plain clone (``__hpvm_call``) with its own id in the context, one after another."""
    from .native import HEADER

    stride = max(1, nout)
    lines = [
        f"\ndefine void @{symbol}(ptr %args, ptr %ctx) {attrs} {{",
        "entry:",
        f"  %out = alloca [{width * stride} x i64], align 8",
        f"  %p = {call.replace('@__hpvm_wj.', '@__hpvm_wp.')}",
        "  %all0 = icmp eq i64 1, 1",
    ]
    for lane in range(width):
        lines += [
            f"  %f{lane}p = getelementptr i64, ptr %out, i64 {lane * stride}",
            f"  %f{lane} = load i64, ptr %f{lane}p, align 8",
            f"  %t{lane} = icmp ne i64 %f{lane}, 0",
            f"  %all{lane + 1} = and i1 %all{lane}, %t{lane}",
        ]
    lines += [
        f"  br i1 %all{width}, label %jam, label %each",
        "jam:",
        f"  %r = {call}",
        "  ret void",
        "each:",
        f"  %idp = getelementptr i8, ptr %ctx, i64 {8 * (HEADER + axis)}",
        "  %base = load i64, ptr %idp, align 8",
        "  br label %lane",
        "lane:",
        "  %l = phi i64 [ 0, %each ], [ %l1, %lane ]",
        "  %id = add i64 %base, %l",
        "  store i64 %id, ptr %idp, align 8",
        f"  call void @__hpvm_call.{digest}(ptr %args, ptr %ctx, ptr %out)",
        "  %l1 = add nuw nsw i64 %l, 1",
        f"  %more = icmp ult i64 %l1, {width}",
        "  br i1 %more, label %lane, label %done",
        "done:",
        "  store i64 %base, ptr %idp, align 8",
        "  ret void",
        "}",
    ]
    return "\n".join(lines) + "\n"


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
