"""Barrier leaves as LLVM coroutines: every instance of one parent instance on one thread.

This is the fallback lowering. A barrier leaf whose barriers are uniform (every instance
of a parent instance reaches them: not under a branch or in a loop that depends on the
instance id) runs as work-item loops instead (``wiloops.py``), which LLVM vectorizes
across instances; the coroutine path runs everything else (and, with work-item loops off,
everything), never hangs on a divergent barrier, and shares the group runner
(``group_runner``) with it, so both have the same symbol, signature and results.

HPVM's barrier says: no instance of a parent instance passes barrier *k* before all have
reached it. The ``cpu`` back end meets that for Python leaves by phase splitting (loop
fission at the barrier, values live across it in arrays). LLVM code cannot be split by
hand, but LLVM can split it for us: a *switched-resume coroutine* (``llvm.coro.*``,
https://llvm.org/docs/Coroutines.html) suspends at each barrier and keeps every value live
across it in its frame, which is exactly phase splitting's state, made by CoroSplit.

The clone of a barrier leaf gets (this module's ``coroutine_module``):

1. every function on a path from the node function to ``llvm.hpvm.barrier`` marked
   ``alwaysinline`` (``noinline``/``optnone`` dropped) and inlined into one function, the
   coroutine ``__hpvm_coro.<digest>(ptr args, ptr ctx, ptr out, ptr mem, ptr info)``; a
   call that is left (recursion) is a ``CompileError`` naming the leaf;
2. each barrier in it replaced by ``llvm.coro.suspend``; the node function's return
   stores its outputs through ``out`` and reaches a final suspend; the frame lives in
   ``mem`` (or in memory of its own when ``mem`` is null: the first instance's, which
   tells its size and alignment through ``info``);
3. LLVM's default pipeline at ``-O2`` on that (CoroEarly, CoroSplit, CoroCleanup among
   it): the ramp, ``.resume`` and ``.destroy`` functions and the frame;
4. then the group runner ``__hpvm_group.<digest>`` (``NativeLeaf.group_symbol``,
   ``group_runner`` with ``_coroutines`` as its middle), and
   ``-O2`` again: it creates the parent instance's instances in row-major order (each runs
   to its first barrier), then resumes every instance that is not done, in order, round
   after round, until a round resumes none; then destroys them. All instances reach
   barrier *k* before any passes it; an instance that finishes early (a *divergent*
   barrier, undefined in HPVM) is skipped, so the group never hangs. The frames of one
   parent instance are one ``malloc`` (the first instance's frame is its own, and tells
   the size). An instance that raised (an exported leaf's ``raise`` records it in the
   instance's context: ``leaf_errors.py``) has finished; when all are done, the runner
   reports the first such instance.

The text handed to MCJIT (``interp``) or linked into Numba's code (``cpu``) holds only
ordinary functions, whatever pipeline those run.

Barriers reached through the one-instance trampoline (``__hpvm_call``) do nothing: one
instance alone meets every barrier at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ...errors import CompileError
from ...ir.graph import LeafFunction
from ...ir.instance_context import STRIDE
from ...ir.llvm_text import WRITTEN_NAME as WRITTEN
from ...ir.llvm_text import mark_always_inline

MARK = "__hpvm_barrier_mark"
#: What a clone calls where its leaf raises (``__hpvm_leaf_error``, native.py): it writes the context.
ERROR_CALL = "__hpvm_q.error"
_LABEL = re.compile(r'^("(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+):')


def _fail(leaf: LeafFunction, what: str) -> CompileError:
    return CompileError(f"leaf '{leaf.name}' ({leaf.location}): {what}")


def barrier_helper() -> str:
    """``__hpvm_q.barrier`` for a barrier leaf: a call of the marker that step 2 turns into
    a suspend (and that is empty everywhere else)."""
    return (
        f"declare void @{MARK}()\n"
        "define internal void @__hpvm_q.barrier(ptr %c) alwaysinline {\n"
        f"  call void @{MARK}()\n  ret void\n}}"
    )


def function_span(lines: list[str], symbol: str) -> tuple[int, int]:
    head = f"@{symbol}("
    start = next(k for k, line in enumerate(lines) if line.startswith("define") and head in line)
    end = next(k for k in range(start, len(lines)) if lines[k] == "}")
    return start, end


def split_at_marks(text: str, fn: str, make: Callable[[int, str], list[str]], prefix: str) -> str:
    """``text`` with each marker call in ``fn`` replaced by ``make(k, label)``'s lines, which
    end a block and start the block ``label`` (``prefix`` + k) with what followed the call;
    the phis of the old block's successors name the new one (``make`` may branch
    elsewhere too: the coroutine's suspend switch)."""
    lines = text.split("\n")
    start, end = function_span(lines, fn)
    body = lines[start:end]
    count = 0
    call = f"call void @{MARK}()"
    while True:
        at = next((k for k, line in enumerate(body) if line.strip().startswith(call)), None)
        if at is None:
            break
        label = None
        for j in range(at - 1, 0, -1):
            m = _LABEL.match(body[j])
            if m:
                label = m.group(1)
                break
        resumed = f"{prefix}{count}"
        if label is not None:  # phis naming the block now name its second half
            old = re.compile(r",\s*%" + re.escape(label) + r"\s*\]")
            for j, line in enumerate(body):
                if " = phi " in line:
                    body[j] = old.sub(f", %{resumed} ]", line)
        body[at : at + 1] = make(count, resumed)
        count += 1
    lines[start:end] = body
    return "\n".join(lines)


def _suspend(count: int, resumed: str) -> list[str]:
    return [
        f"  %__hpvm_s{count} = call i8 @llvm.coro.suspend(token none, i1 false)",
        f"  switch i8 %__hpvm_s{count}, label %__hpvm_co_suspend [ i8 0, label %{resumed} "
        "i8 1, label %__hpvm_co_cleanup ]",
        f"{resumed}:",
    ]


def _declare(declared: set[str], name: str, decl: str) -> str:
    return "" if name in declared else decl + "\n"


def slot_call(entry: str, args: tuple[str, ...], outs: tuple[str, ...], ret: str) -> list[str]:
    """Instructions calling the clone ``entry`` with its arguments loaded from the 8-byte
    slots at ``%args`` and its outputs stored to those at ``%out`` (``%ctx`` passed first):
    the body of the trampoline and of the coroutine alike. ``ret``: the clone's return
    type as its module spells it (``void``, ``{ float }``, ``%struct.out.f``...)."""
    body = []
    values = []
    for k, t in enumerate(args):
        body.append(f"  %s{k} = getelementptr i64, ptr %args, i64 {k}")
        body.append(f"  %a{k} = load {t}, ptr %s{k}, align 8")
        values.append(f"{t} %a{k}")
    void = ret == "void"
    call = f"call {ret} @{entry}(ptr %ctx{''.join(', ' + v for v in values)})"
    body.append(f"  {call}" if void else f"  %r = {call}")
    for k, t in enumerate(outs):
        body.append(f"  %r{k} = extractvalue {ret} %r, {k}")
        body.append(f"  %o{k} = getelementptr i64, ptr %out, i64 {k}")
        body.append(f"  store {t} %r{k}, ptr %o{k}, align 8")
    return body


def _coroutine(
    digest: str, entry: str, args: tuple[str, ...], outs: tuple[str, ...], ret: str, group: int | None
) -> str:
    """The coroutine: the trampoline's body (arguments from 8-byte slots, outputs to them)
    between ``llvm.coro.begin`` and a final suspend."""
    body = slot_call(entry, args, outs, ret)
    attrs = f"#{group}" if group is not None else ""
    return f"""
define ptr @__hpvm_coro.{digest}(ptr %args, ptr %ctx, ptr %out, ptr %mem, ptr %info) presplitcoroutine {attrs} {{
entry:
  %id = call token @llvm.coro.id(i32 16, ptr null, ptr null, ptr null)
  %size = call i64 @llvm.coro.size.i64()
  %align = call i64 @llvm.coro.align.i64()
  store i64 %size, ptr %info, align 8
  %infoa = getelementptr i64, ptr %info, i64 1
  store i64 %align, ptr %infoa, align 8
  %own = icmp eq ptr %mem, null
  br i1 %own, label %__hpvm_co_alloc, label %__hpvm_co_begin
__hpvm_co_alloc:
  %al = call i64 @llvm.umax.i64(i64 %align, i64 16)
  %am = sub i64 %al, 1
  %sz1 = add i64 %size, %am
  %nal = sub i64 0, %al
  %sz2 = and i64 %sz1, %nal
  %fresh = call ptr @aligned_alloc(i64 %al, i64 %sz2)
  %nomem = icmp eq ptr %fresh, null
  br i1 %nomem, label %__hpvm_co_oom, label %__hpvm_co_begin
__hpvm_co_oom:
  call void @abort()
  unreachable
__hpvm_co_begin:
  %frame = phi ptr [ %mem, %entry ], [ %fresh, %__hpvm_co_alloc ]
  %hdl = call ptr @llvm.coro.begin(token %id, ptr %frame)
{chr(10).join(body)}
  br label %__hpvm_co_final
__hpvm_co_final:
  %fin = call i8 @llvm.coro.suspend(token none, i1 true)
  switch i8 %fin, label %__hpvm_co_suspend [ i8 0, label %__hpvm_co_trap i8 1, label %__hpvm_co_cleanup ]
__hpvm_co_trap:
  unreachable
__hpvm_co_cleanup:
  %mine = call ptr @llvm.coro.free(token %id, ptr %hdl)
  br i1 %own, label %__hpvm_co_free, label %__hpvm_co_suspend
__hpvm_co_free:
  call void @free(ptr %mine)
  br label %__hpvm_co_suspend
__hpvm_co_suspend:
  call void @llvm.coro.end(ptr %hdl, i1 false, token none)
  ret ptr %hdl
}}
"""


def group_runner(
    digest: str,
    outs: tuple[str, ...],
    header: int,
    raised: int,
    middle: str,
    *,
    coroutines: bool,
    every_context: bool = True,
    inline: bool = True,
    shared_context: bool = False,
) -> str:
    """``__hpvm_group.<digest>`` (``NativeLeaf.group_symbol``): every instance of one parent
    instance on this thread; 1 when memory runs out, ``raised`` when an instance recorded
    an error in its context (after all have run), with the first such instance's slots and
    index in ``err`` (five words: slots 0 and 1, the index, slots 2 and 3). It makes and fills every instance's context (``%ctxs``, ``%ctxbytes``
    bytes each, row-major) and their output slots (``%outs``), then runs ``middle`` (the
    label ``run``; it ends branching to ``done``, or to ``oom`` when memory ran out):
    ``_coroutines`` here, or ``wiloops.py``'s one call. ``coroutines``: the handles array
    and the frames (``%raw1``) that middle needs. ``every_context`` false: only the first
    instance's context is filled past its error slots (work-item loops that read the
    others' error slots alone: the ids are their loop variables, the rest is shared).
    ``inline`` false: ``noinline``, so that a caller's optimizer (Numba's, on ``cpu``) calls
    the optimized runner rather than inlining it and optimizing its loops again.
    ``shared_context`` (work-item loops whose instances never write their context: a leaf
    that cannot raise, and ``every_context`` false): one context for all instances,
    ``%ctxstep`` 0 bytes apart, so nothing per instance is filled or scanned. Without
    coroutines, the contexts and output slots live on the stack when they are small (a
    ``malloc`` and a ``free`` per parent instance otherwise)."""
    if shared_context:
        assert not every_context and not coroutines, "a shared context is for work-item loops"
    nctx = "1" if shared_context else "%n"
    nout = max(1, len(outs))
    copy_out = "\n".join(
        f"  %lo{k} = getelementptr i64, ptr %lastout, i64 {k}\n  %lv{k} = load i64, ptr %lo{k}, align 8\n"
        f"  %do{k} = getelementptr i64, ptr %out, i64 {k}\n  store i64 %lv{k}, ptr %do{k}, align 8"
        for k in range(len(outs))
    )
    fills = "\n".join(
        f"  %l{k} = getelementptr i64, ptr %c, i64 {header + k}\n  store i64 {v}, ptr %l{k}, align 8"
        for k, v in enumerate(("%x", "%y", "%z", "%nx", "%ny", "%nz", "%dims"))
    )
    frames = "  call void @free(ptr %raw1)\n" if coroutines else ""
    frees = "".join(
        f"  call void @free(ptr %{b})\n" for b in (("ctxs", "hdls", "scratch") if coroutines else ("own",))
    )
    # (without coroutines the buffers are usually on the stack: no call of free(null) a group)
    cleanup = (
        frees
        if coroutines
        else "  %owned = icmp ne ptr %own, null\n  br i1 %owned, label %freeing, label %leave\n"
        f"freeing:\n{frees}  br label %leave\nleave:\n"
    )
    return f"""
define i32 @__hpvm_group.{digest}(ptr %args, ptr %parent, i64 %npar, i64 %nx, i64 %ny, i64 %nz, i64 %dims, ptr %out, i64 %all, ptr %err) {"" if inline else "noinline "}{{
entry:
  %info = alloca [2 x i64], align 8
  %nyz = mul i64 %ny, %nz
  %n = mul i64 %nx, %nyz
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %ok, label %setup
ok:
  ret i32 0
oom:
{frees}  ret i32 1
setup:
  %slots = add i64 %npar, {header + STRIDE}
  %ctxbytes = mul i64 %slots, 8
  %ctxstep = mul i64 %ctxbytes, {0 if shared_context else 1}
  %allctx = mul i64 %ctxbytes, {nctx}
  %outbytes = mul i64 %n, {8 * nout}
  %every = icmp ne i64 %all, 0
  %sbytes = select i1 %every, i64 8, i64 %outbytes
{_buffers(coroutines)}
  %outs = select i1 %every, ptr %out, ptr %scratch
  br i1 %bad, label %oom, label %ready
ready:
  br label %fill
fill:
  %i = phi i64 [ 0, %ready ], [ %i1, %filled ]
  %x = udiv i64 %i, %nyz
  %rem = urem i64 %i, %nyz
  %y = udiv i64 %rem, %nz
  %z = urem i64 %rem, %nz
  %coff = mul i64 %i, %ctxbytes
  %c = getelementptr i8, ptr %ctxs, i64 %coff
  store i64 0, ptr %c, align 8
  %cr = getelementptr i64, ptr %c, i64 1
  store i64 0, ptr %cr, align 8
  %whole = icmp eq i64 %i, {"%i" if every_context else "0"}
  br i1 %whole, label %fillall, label %filled
fillall:
{fills}
  br label %copy
copy:
  %j = phi i64 [ 0, %fillall ], [ %j1, %copyone ]
  %more = icmp slt i64 %j, %npar
  br i1 %more, label %copyone, label %filled
copyone:
  %src = getelementptr i64, ptr %parent, i64 %j
  %v = load volatile i64, ptr %src, align 8
  %dj = add i64 %j, {header + STRIDE}
  %dst = getelementptr i64, ptr %c, i64 %dj
  store i64 %v, ptr %dst, align 8
  %j1 = add i64 %j, 1
  br label %copy
filled:
  %i1 = add i64 %i, 1
  %again = icmp slt i64 %i1, {nctx}
  br i1 %again, label %fill, label %run
run:
{middle}
done:
  br label %scan
scan:
  %q = phi i64 [ 0, %done ], [ %q1, %scannext ]
  %qoff = mul i64 %q, %ctxbytes
  %qc = getelementptr i8, ptr %ctxs, i64 %qoff
  %qs = load i64, ptr %qc, align 8
  %qbad = icmp ne i64 %qs, 0
  br i1 %qbad, label %raised, label %scannext
scannext:
  %q1 = add i64 %q, 1
  %qmore = icmp slt i64 %q1, {nctx}
  br i1 %qmore, label %scan, label %results
raised:
  %qe = getelementptr i64, ptr %qc, i64 1
  %qx = load i64, ptr %qe, align 8
  store i64 %qs, ptr %err, align 8
  %err1 = getelementptr i64, ptr %err, i64 1
  store i64 %qx, ptr %err1, align 8
  %err2 = getelementptr i64, ptr %err, i64 2
  store i64 %q, ptr %err2, align 8
  %qo = getelementptr i64, ptr %qc, i64 2
  %qov = load i64, ptr %qo, align 8
  %err3 = getelementptr i64, ptr %err, i64 3
  store i64 %qov, ptr %err3, align 8
  %qn = getelementptr i64, ptr %qc, i64 3
  %qnv = load i64, ptr %qn, align 8
  %err4 = getelementptr i64, ptr %err, i64 4
  store i64 %qnv, ptr %err4, align 8
  br label %results
results:
  %code = phi i32 [ 0, %scannext ], [ {raised}, %raised ]
  br i1 %every, label %cleanup, label %last
last:
  %lastidx = sub i64 %n, 1
  %lastoff = mul i64 %lastidx, {8 * nout}
  %lastout = getelementptr i8, ptr %outs, i64 %lastoff
{copy_out}
  br label %cleanup
cleanup:
{frames}{cleanup}  ret i32 %code
}}
"""


#: Contexts and output slots of one group up to this many bytes live on the runner's stack.
_STACK_BYTES = 16384


def _buffers(coroutines: bool) -> str:
    """The group runner's ``%ctxs`` (``%allctx`` bytes) and ``%scratch`` (``%sbytes``), and
    ``%bad`` when memory ran out: the coroutine path's ``malloc``s (and ``%hdls``), else one
    piece of memory, on the stack when small (``%own`` the heap's, or null)."""
    if coroutines:
        return """  %ctxs = call ptr @malloc(i64 %allctx)
  %hbytes = mul i64 %n, 8
  %hdls = call ptr @malloc(i64 %hbytes)
  %scratch = call ptr @malloc(i64 %sbytes)
  %c0 = icmp eq ptr %ctxs, null
  %h0 = icmp eq ptr %hdls, null
  %s0 = icmp eq ptr %scratch, null
  %bad1 = or i1 %c0, %h0
  %bad = or i1 %bad1, %s0"""
    return f"""  %total = add i64 %allctx, %sbytes
  %small = icmp ule i64 %total, {_STACK_BYTES}
  br i1 %small, label %onstack, label %onheap
onstack:
  %stk = alloca i8, i64 %total, align 16
  br label %carve
onheap:
  %hp = call ptr @malloc(i64 %total)
  br label %carve
carve:
  %ctxs = phi ptr [ %stk, %onstack ], [ %hp, %onheap ]
  %own = phi ptr [ null, %onstack ], [ %hp, %onheap ]
  %scratch = getelementptr i8, ptr %ctxs, i64 %allctx
  %bad = icmp eq ptr %ctxs, null"""


def _coroutines(digest: str, outs: tuple[str, ...]) -> str:
    """The group runner's middle on the coroutine path: creates the instances in row-major
    order (each runs to its first barrier), then resumes every instance that is not done,
    in order, round after round, until a round resumes none; then destroys them.

    Written against the split coroutine (switched-resume ABI: the frame starts with the
    resume and destroy functions; resume is null at the final suspend, which is what
    ``llvm.coro.done`` reads): every frame's resume function is the one CoroSplit made,
    so the runner calls it directly when it is (LLVM may then inline it into the round
    loop) instead of through the frame."""
    nout = max(1, len(outs))
    return f"""  br label %spawn
spawn:
  %si = phi i64 [ 0, %run ], [ %si1, %next ]
  %frames = phi ptr [ null, %run ], [ %frames1, %next ]
  %stride = phi i64 [ 0, %run ], [ %stride1, %next ]
  %raw = phi ptr [ null, %run ], [ %raw1, %next ]
  %soff = mul i64 %si, %ctxbytes
  %sc = getelementptr i8, ptr %ctxs, i64 %soff
  %ooff = mul i64 %si, {8 * nout}
  %myout = getelementptr i8, ptr %outs, i64 %ooff
  %first = icmp eq i64 %si, 0
  %im1 = sub i64 %si, 1
  %foff = mul i64 %im1, %stride
  %fptr = getelementptr i8, ptr %frames, i64 %foff
  %mem = select i1 %first, ptr null, ptr %fptr
  %h = call ptr @__hpvm_coro.{digest}(ptr %args, ptr %sc, ptr %myout, ptr %mem, ptr %info)
  %hslot = getelementptr ptr, ptr %hdls, i64 %si
  store ptr %h, ptr %hslot, align 8
  %multi = icmp sgt i64 %n, 1
  %measure = and i1 %first, %multi
  br i1 %measure, label %sizes, label %next
sizes:
  %sz = load i64, ptr %info, align 8
  %ia = getelementptr i64, ptr %info, i64 1
  %al0 = load i64, ptr %ia, align 8
  %al = call i64 @llvm.umax.i64(i64 %al0, i64 16)
  %am = sub i64 %al, 1
  %nal = sub i64 0, %al
  %sz1 = add i64 %sz, %am
  %sr = and i64 %sz1, %nal
  %others = sub i64 %n, 1
  %fb = mul i64 %others, %sr
  %fb2 = add i64 %fb, %al
  %got = call ptr @malloc(i64 %fb2)
  %nomem = icmp eq ptr %got, null
  br i1 %nomem, label %oomframes, label %aligned
oomframes:
  %dfa0 = getelementptr i8, ptr %h, i64 8
  %dfn0 = load ptr, ptr %dfa0, align 8
  call fastcc void %dfn0(ptr %h)
  br label %oom
aligned:
  %gi = ptrtoint ptr %got to i64
  %gu = add i64 %gi, %am
  %ga = and i64 %gu, %nal
  %gd = sub i64 %ga, %gi
  %fa = getelementptr i8, ptr %got, i64 %gd
  br label %next
next:
  %frames1 = phi ptr [ %frames, %spawn ], [ %fa, %aligned ]
  %stride1 = phi i64 [ %stride, %spawn ], [ %sr, %aligned ]
  %raw1 = phi ptr [ %raw, %spawn ], [ %got, %aligned ]
  %si1 = add i64 %si, 1
  %sagain = icmp slt i64 %si1, %n
  br i1 %sagain, label %spawn, label %rounds
rounds:
  br label %round
round:
  %r = phi i64 [ 0, %rounds ], [ %rn, %step ]
  %any = phi i1 [ false, %rounds ], [ %any1, %step ]
  %rslot = getelementptr ptr, ptr %hdls, i64 %r
  %hr = load ptr, ptr %rslot, align 8
  %fnr = load ptr, ptr %hr, align 8
  %dn = icmp eq ptr %fnr, null
  br i1 %dn, label %step, label %resume
resume:
  %known = icmp eq ptr %fnr, @__hpvm_coro.{digest}.resume
  br i1 %known, label %direct, label %indirect
direct:
  call fastcc void @__hpvm_coro.{digest}.resume(ptr %hr)
  br label %step
indirect:
  call fastcc void %fnr(ptr %hr)
  br label %step
step:
  %any1 = phi i1 [ %any, %round ], [ true, %direct ], [ true, %indirect ]
  %rn = add i64 %r, 1
  %rmore = icmp slt i64 %rn, %n
  br i1 %rmore, label %round, label %roundend
roundend:
  br i1 %any1, label %rounds, label %destroy
destroy:
  %d = phi i64 [ 0, %roundend ], [ %d1, %destroy ]
  %dslot = getelementptr ptr, ptr %hdls, i64 %d
  %hd = load ptr, ptr %dslot, align 8
  %dfa = getelementptr i8, ptr %hd, i64 8
  %dfn = load ptr, ptr %dfa, align 8
  call fastcc void %dfn(ptr %hd)
  %d1 = add i64 %d, 1
  %dmore = icmp slt i64 %d1, %n
  br i1 %dmore, label %destroy, label %done"""


def declarations(declared: set[str]) -> str:
    """The intrinsics and C functions the coroutine, the runners and the work-item loops
    call, those of them not in ``declared``."""
    return "".join(
        _declare(declared, name, decl)
        for name, decl in (
            ("llvm.coro.id", "declare token @llvm.coro.id(i32, ptr, ptr, ptr)"),
            ("llvm.coro.size.i64", "declare i64 @llvm.coro.size.i64()"),
            ("llvm.coro.align.i64", "declare i64 @llvm.coro.align.i64()"),
            ("llvm.coro.begin", "declare ptr @llvm.coro.begin(token, ptr)"),
            ("llvm.coro.suspend", "declare i8 @llvm.coro.suspend(token, i1)"),
            ("llvm.coro.free", "declare ptr @llvm.coro.free(token, ptr)"),
            ("llvm.coro.end", "declare void @llvm.coro.end(ptr, i1, token)"),
            ("llvm.coro.resume", "declare void @llvm.coro.resume(ptr)"),
            ("llvm.coro.destroy", "declare void @llvm.coro.destroy(ptr)"),
            ("llvm.coro.done", "declare i1 @llvm.coro.done(ptr)"),
            ("llvm.umax.i64", "declare i64 @llvm.umax.i64(i64, i64)"),
            ("malloc", "declare ptr @malloc(i64)"),
            ("aligned_alloc", "declare ptr @aligned_alloc(i64, i64)"),
            ("free", "declare void @free(ptr)"),
            ("abort", "declare void @abort()"),
        )
    )


def coroutine_module(
    leaf: LeafFunction,
    text: str,
    *,
    entry: str,
    digest: str,
    args: tuple[str, ...],
    outs: tuple[str, ...],
    ret: str,
    reach_barrier: set[str],
    declared: set[str],
    header: int,
    raised: int,
) -> str:
    """The clone ``text`` of a barrier leaf (its ``__hpvm_q.barrier`` is ``barrier_helper``)
    with the coroutine and the group runner added and lowered (module docstring).
    ``reach_barrier``: the global names (as LLVM text writes them) of the functions on a
    path to a barrier, the node function (``@entry``) among them."""
    import llvmlite.binding as llvm

    from .native import optimize_module

    coro = f"__hpvm_coro.{digest}"
    text, group = mark_always_inline(text, reach_barrier, f"@{entry}")
    text += _coroutine(digest, entry, args, outs, ret, group)
    text += declarations(declared)
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as e:
        raise _fail(
            leaf, f"its LLVM could not be made a coroutine for its barriers ({str(e).strip()})"
        ) from None
    optimize_module(module, 0, ("always_inliner", "instruction_namer"))
    text = str(module)
    lines = text.split("\n")
    start, end = function_span(lines, coro)
    coro_body = "\n".join(lines[start + 1 : end])
    left = sorted(g for g in reach_barrier if re.search(re.escape(g) + r"\(", coro_body))
    if left:
        raise _fail(
            leaf,
            f"{', '.join(left)} reach(es) __hpvm__barrier and could not be inlined into the node "
            "function (recursion, or attributes that forbid inlining); barriers must be reached "
            "through calls that can be inlined: remove the recursion around the barrier",
        )
    text = split_at_marks(text, coro, _suspend, "__hpvm_barrier.")
    # Elsewhere (the one-instance trampoline) a barrier does nothing.
    text = text.replace(
        f"declare void @{MARK}()", f"define internal void @{MARK}() alwaysinline {{\n  ret void\n}}", 1
    )
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as e:
        raise _fail(leaf, f"its barriers could not be made coroutine suspends ({str(e).strip()})") from None
    optimize_module(module, 2)  # CoroSplit: the ramp, .resume and .destroy
    text = str(module)
    if f"@{coro}.resume(" not in text:
        raise _fail(leaf, "LLVM's CoroSplit did not split its barrier coroutine (no resume function)")
    declared = {f.name for f in module.functions}
    text += group_runner(digest, outs, header, raised, _coroutines(digest, outs), coroutines=True)
    text += declarations(declared)
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as e:
        raise _fail(leaf, f"its group runner could not be built ({str(e).strip()})") from None
    module.get_function(coro).linkage = "internal"
    optimize_module(module, 2)
    return str(module)


__all__ = [
    "MARK",
    "WRITTEN",
    "barrier_helper",
    "coroutine_module",
    "declarations",
    "function_span",
    "group_runner",
    "slot_call",
    "split_at_marks",
]
