"""Barrier leaves as work-item loops: each stretch of per-instance code a loop over the group.

HPVM (as OpenCL) requires every instance of a parent instance to reach the same barriers.
When the leaf's LLVM shows that it does (every barrier under control flow that is the same
for all instances), the group needs no coroutines: run the *control flow* once for the
group, and every stretch of per-instance code between two points where that control flow
is shared as a loop over the group's instances. A barrier is then nothing but the end of
one such loop and the start of the next, and LLVM vectorizes each loop across instances
(PoCL's work-item loops, https://portablecl.org/docs/html/kernel_compiler.html, with
uniform control flow as the region boundaries instead of barriers alone).

The clone's node function, inlined into one function ``__hpvm_wib.<digest>(ptr args,
ptr ctx, ptr out)`` (the trampoline's body), is prepared by LLVM: inlining, SROA,
instcombine, simplifycfg; each barrier then starts a block of its own; ``reg2mem``
leaves every SSA value local to its block (values crossing blocks, and phis, in allocas).
Then, on that form (``Function``):

1. *Uniformity* (``analyse``), optimistically and to a fixed point: a value is uniform
   when it is a constant, an argument slot (loads from ``args``, never written by a leaf),
   a read of the context's shared part (ids of ancestors, extents: loads from ``ctx`` at
   a constant offset past level 0's ids), a pure operation or pure intrinsic of uniform
   values in a block every instance runs, or a load of a ``reg2mem`` alloca that only
   uniform stores write. Instance ids, ``out``, loads of any other memory, calls and
   anything in divergent code are not. A block is *divergent* when it lies between a
   branch on a value that is not uniform and that branch's immediate post-dominator.
2. *Structure*: every barrier in a block that is not divergent; every connected stretch of
   divergent blocks entered from one uniform block (its *owner*) and left to one uniform
   block (or returning). Anything else (a barrier under an id-dependent branch or in a
   loop whose trip count depends on the id, unstructured divergence, ``invoke``, a phi
   ``reg2mem`` left) returns a reason instead of a module, and the caller takes the
   coroutine path (``coro.py``), which runs anything and never hangs.
3. *Emission* (``_emit``): ``__hpvm_wi.<digest>`` keeps the uniform blocks as they are
   (their uniform instructions run once); each uniform block's per-instance instructions,
   with the divergent stretch it owns, become a loop nest over the group's instances: z
   outermost, x innermost (the unit-stride id of GPU-style code, so the innermost loop is
   the one the vectorizer widens). Per-instance values that live in more than one such loop
   (and every alloca the program itself made) get one slot per instance in an array
   (``aligned_alloc``), indexed by the flattened instance ``(z*ny + y)*nx + x``; the
   ``reg2mem`` allocas used in one loop only stay scalars (each instance stores before it
   loads: the value's definition dominates its uses), so SROA promotes them again.
   Instance-id reads become the loop variables; every other use of the context reads the
   instance's own context (the error slots of ``leaf_errors.py``), and outputs go to the
   instance's output slots, as the coroutine path has them. A loop whose instances start
   with ``if (x < u)`` runs ``x < min(nx, u)`` only; one whose branch is ``c + x < u`` runs
   in two copies, one without the test for groups every instance of which passes it
   (``wiguard.py``); the per-instance code of an ``if``'s merge block joins the ``if``'s
   loop when only the ``if`` leads there (``_tails``). Each x loop is a *parallel* loop to
   LLVM (``_parallel``: its plain loads and stores in one access group, named by the loop's
   ``llvm.loop.parallel_accesses``): the instances of a phase are independent — two that
   touch the same memory between barriers, one writing, are a data race, which HPVM leaves
   undefined (``interp`` reports it) — so LLVM vectorizes the loop without run-time alias
   checks. The block reduction's rounds ``s[x] += s[x + stride]`` had one per round, and
   its scalar loop ran whenever the check could not tell.

The group runner (``coro.group_runner``: same symbol, signature and results as the
coroutine path's) fills every instance's context, calls ``__hpvm_wi.<digest>`` once, and
reports the first instance (row-major) that raised, as before.
"""

from __future__ import annotations

import re
from typing import Any

from ...ir.llvm_text import mark_always_inline
from .coro import ERROR_CALL, MARK, declarations, group_runner, slot_call, split_at_marks
from .wiguard import guard_bound, versioned
from .wirecompute import Recompute, instance_id, rename
from .wiuniform import (
    BARRIER_BLOCK,
    Analysis,
    Block,
    Function,
    Ins,
    Stretch,
    analyse,
    ctx_offset,
    divergent_term,
    fusable,
    head,
    llvm_local,
    owner,
    post_dominators,
    read_function,
    structure,
)

#: The first metadata number of the x loops' hints (far above what LLVM numbers from 0).
_LOOP_MD = 7_000_000
#: The metadata number of ``NONNEGATIVE``, far above any a module parsed here uses (LLVM
#: numbers a printed module's metadata from 0; the work-item loops' hints start at 7,000,000).
NONNEGATIVE_MD = 6_000_000
#: ``!range`` of the context's instance ids and counts (the queries' loads: ``native.py``; the jammed
#: leaf's calling instance, below), which are never negative. Why: a leaf compiled
#: from Python indexes with wrap-around (``col < 0 ? col + n : col``); knowing ``col``
#: non-negative, LLVM drops that ``select``, and the lanes of a jammed leaf
#: (``wijam.py``) address ``b[p, col + lane]`` as neighbours instead of one by one.
NONNEGATIVE = f"!{NONNEGATIVE_MD} = !{{i64 0, i64 9223372036854775807}}"
#: Metadata numbers per loop: its loop id, its interleave hint, its access group, its parallel hint.
_MD_STRIDE = 4
#: Per-instance arrays up to this many bytes in all live on the stack.
_STACK_BYTES = 32768  # the virtual exit in the post-dominator tree


def _alloca_type(text: str) -> tuple[str, int] | None:
    m = re.search(r"= alloca (.+?)(?:, align (\d+))?(?:, !.*)?$", text)
    if not m or re.search(r", i(32|64) \d+$", m.group(1)):
        return None
    return m.group(1), int(m.group(2) or 1)


def emit(
    f: Function,
    a: Analysis,
    stretches: dict[str, Stretch],
    name: str,
    attrs: str,
    nout: int,
    nargs: int = 0,
    jam: int | None = None,
    header: int = 0,
    md_base: int = _LOOP_MD,
) -> str | None:
    """``name``'s text: the work-item-loop function (module docstring, step 3); ``None``
    when an alloca has a form it does not handle. ``nargs``: the argument slots, which
    nothing writes while it runs: ``%args`` is declared so (``noalias``, dereferenceable),
    and LLVM may read a slot where the program reads it under a condition (hoisted out of
    the loop, the conditional load of ``gid < n ? in[gid] : 0`` becomes a masked load).
    ``jam``: the instances are not a group's but the calling instance and its neighbours
    along axis ``jam``, ``nx`` of them, sharing its context (``wijam.py``; ``header``: the
    context's slots before level 0, where its ids are read): the x loop's variable is added
    to that id, and no loop is guarded or versioned (both assume ids from 0). ``md_base``:
    the first metadata number of its loops' hints (two such functions in one module need
    numbers apart)."""
    rc = Recompute(f, a, jam)
    fused = fusable(f, a, stretches)
    tails = _tails(f, a, stretches, fused)
    owners: dict[str, set[str]] = {al: set() for al in f.allocas if al not in rc.allocas}
    for b in f.blocks:
        own = head(f, fused, owner(f, stretches, tails.get(b.name, b.name)))
        for i in [*b.body, b.term]:
            if id(i) in a.skeleton:
                continue
            for n in i.locals():
                if n in owners:
                    owners[n].add(own)
    arrays = {
        al: _alloca_type(f.allocas[al].text)
        for al, where in owners.items()
        if al not in a.uniform_allocas and (al in f.original or len(where) > 1)
    }
    if any(t is None for t in arrays.values()):
        return None
    out = [
        f"define internal i32 @{name}(ptr noalias readonly align 8 dereferenceable({8 * max(1, nargs)}) %args, "
        "ptr %ctx, ptr %out, i64 %__wi.ctxbytes, i64 %__wi.nx, "
        f"i64 %__wi.ny, i64 %__wi.nz) {attrs} {{",
        "__wi.entry:",
        "  %__wi.nxy = mul i64 %__wi.nx, %__wi.ny",
        "  %__wi.n = mul i64 %__wi.nxy, %__wi.nz",
    ]
    if jam is not None:  # (the calling instance's ids)
        for k in range(3):
            out += [
                f"  %__wi.b{k}p = getelementptr i8, ptr %ctx, i64 {8 * (header + k)}",
                f"  %__wi.b{k} = load i64, ptr %__wi.b{k}p, align 8, !range !{NONNEGATIVE_MD}",
            ]  # (the module defines NONNEGATIVE: wijam.py)
    # The arrays of values kept per instance: one piece of memory, on the stack when small
    # (a group of GPU-style size), else from aligned_alloc (freed at the end).
    strides = {}
    offset = "0"
    for k, (al, ta) in enumerate(sorted(arrays.items())):
        t, align = ta  # type: ignore[misc]
        strides[al] = f"%__wi.st{k}"
        out += [
            f"  %__wi.sz{k}p = getelementptr {t}, ptr null, i64 1",
            f"  %__wi.sz{k} = ptrtoint ptr %__wi.sz{k}p to i64",
            f"  %__wi.st{k}a = add i64 %__wi.sz{k}, {align - 1}",
            f"  %__wi.st{k} = and i64 %__wi.st{k}a, {-align}",
            f"  %__wi.by{k} = mul i64 %__wi.st{k}, %__wi.n",
            f"  %__wi.by{k}a = add i64 %__wi.by{k}, 63",
            f"  %__wi.by{k}b = and i64 %__wi.by{k}a, -64",
            f"  %__wi.off{k + 1} = add i64 {offset}, %__wi.by{k}b",
        ]
        offset = f"%__wi.off{k + 1}"
    first = llvm_local(f.blocks[0].name)
    if arrays:
        out += [
            f"  %__wi.small = icmp ule i64 {offset}, {_STACK_BYTES}",
            "  br i1 %__wi.small, label %__wi.stack, label %__wi.heap",
            "__wi.stack:",
            f"  %__wi.stk = alloca i8, i64 {offset}, align 64",
            "  br label %__wi.carve",
            "__wi.heap:",
            f"  %__wi.hp = call ptr @aligned_alloc(i64 64, i64 {offset})",
            "  %__wi.null = icmp eq ptr %__wi.hp, null",
            "  br i1 %__wi.null, label %__wi.oom, label %__wi.carve",
            "__wi.carve:",
            "  %__wi.mem = phi ptr [ %__wi.stk, %__wi.stack ], [ %__wi.hp, %__wi.heap ]",
            "  %__wi.own = phi ptr [ null, %__wi.stack ], [ %__wi.hp, %__wi.heap ]",
        ]
        out += [
            f"  %__wi.arr{k} = getelementptr i8, ptr %__wi.mem, i64 %__wi.off{k}"
            for k in range(1, len(arrays))
        ]
        out.append("  %__wi.arr0 = getelementptr i8, ptr %__wi.mem, i64 0")
    out.append(f"  br label {first}")
    frees = ["  call void @free(ptr %__wi.own)"] if arrays else []
    bad = bool(arrays)
    # Every alloca kept (uniform, or one loop's) at the start, where SROA promotes it.
    out[4:4] = [i.text for b in f.blocks for i in b.body if i.opcode == "alloca" and i.name not in arrays]
    base = {al: f"%__wi.arr{k}" for k, al in enumerate(sorted(arrays))}
    counter = iter(range(1 << 30))
    hoisted: set[str] = set()

    def per(b: Block, tail: bool = False) -> list[Ins]:
        """``b``'s per-instance instructions; none for a merge block whose owner's loop runs
        them (``_tails``), unless ``tail``: that loop asking."""
        if b.name in tails and not tail:
            return []
        return [i for i in b.body if id(i) not in a.skeleton and i.opcode != "alloca"]

    def loop(path: list[Block], pred: str, stretch: Stretch | None) -> None:
        """The loop over the instances running ``path``'s per-instance code (and the
        stretch its last block owns), entered from the block labelled ``pred``: twice,
        when its guard may hold for every instance (``wiguard.versioned``), the first
        copy branching into the stretch unconditionally."""
        code = [i for blk in path for i in per(blk)]
        lab = f"__wiv{next(counter)}."
        version = None if jam is not None else versioned(f, a, path, code, stretch, rc.single, f"%{lab}")
        if version is None:
            one(path, pred, stretch, None)
            return
        out.extend(version.lines)
        out.append(f"  br i1 {version.name}, label %{lab}all, label %{lab}some")
        out.append(f"{lab}all:")
        one(path, f"%{lab}all", stretch, version.target)
        out.extend([f"  br label %{lab}join", f"{lab}some:"])
        one(path, f"%{lab}some", stretch, None)
        out.extend([f"  br label %{lab}join", f"{lab}join:"])

    def one(path: list[Block], pred: str, stretch: Stretch | None, taken: str | None) -> None:
        """One loop (``loop``); ``taken``: the stretch block its guard always goes to."""
        k = next(counter)
        p = f"%__wi{k}."
        lab = p[1:]
        used = {n for blk in path for i in per(blk) for n in i.locals()}
        for name in stretch.blocks if stretch else []:
            used |= {n for i in [*f.by_name[name].body, f.by_name[name].term] for n in i.locals()}
        tail = f.by_name[stretch.merge] if stretch and stretch.merge in tails else None
        again: list[Ins] = []  # (the tail's uniform values, computed in the loop too)
        if tail is not None:  # (the merge block's per-instance code ends this loop: _tails)
            used |= {n for i in per(tail, True) for n in i.locals()}
            again = [i for i in tail.body if id(i) in a.skeleton and i.opcode != "alloca" and i.name]
        code = [i for blk in path for i in per(blk)]
        guard = None  # (a tail is run by every instance: no bound then)
        if taken is None and tail is None and jam is None:
            guard = guard_bound(f, a, path, code, stretch, rc.single, p)
        if guard is not None:
            out.extend(guard.lines)
            taken = guard.target
        out.extend(_loop_head(p, lab, pred, guard.name if guard else None))
        body = len(out)
        renames = {"ctx": f"{lab}ctx", "out": f"{lab}out"}
        out.extend(
            [
                f"  {p}rm0 = mul i64 {p}x, %__wi.ny",
                f"  {p}rm1 = add i64 {p}rm0, {p}y",
                f"  {p}rm2 = mul i64 {p}rm1, %__wi.nz",
                f"  {p}rm = add i64 {p}rm2, {p}z",
                f"  {p}co = mul i64 {p}rm, %__wi.ctxbytes",
                f"  {p}ctx = getelementptr i8, ptr %ctx, i64 {p}co",
                f"  {p}oo = mul i64 {p}rm, {8 * max(1, nout)}",
                f"  {p}out = getelementptr i8, ptr %out, i64 {p}oo",
            ]
        )
        for al in sorted(used & set(arrays)):
            m = f"{p}a{len(renames)}"
            out.extend(
                [
                    f"  {m}o = mul i64 {p}j, {strides[al]}",
                    f"  {m} = getelementptr i8, ptr {base[al]}, i64 {m}o",
                ]
            )
            renames[al] = m[1:]
        # (a block's code may run in several loops, one per way out of its tree: names per loop)
        stretched = [f.by_name[name] for name in (stretch.blocks if stretch else [])]
        for blk in [*path, *stretched, *([tail] if tail is not None else [])]:
            for i in blk.body:
                if i.name and id(i) not in a.skeleton and i.opcode != "alloca":
                    renames[i.name] = f"{lab}v{len(renames)}"
        for i in again:
            renames[i.name] = f"{lab}v{len(renames)}"
        latch = f"%{lab}xl"
        if stretch is not None:  # what divergent code recomputes, computed by every instance
            memo: dict[str, str] = {}  # (so that LLVM can if-convert the divergent code)
            for name in stretch.blocks:
                for i in f.by_name[name].body:
                    if i.opcode == "load" and i.operands[0][0] in rc.allocas and rc.speculatable(i):
                        lines: list[str] = []
                        renames[i.name] = rc.load(i, lines, memo, renames, p)
                        hoisted.add(i.name)
                        out.extend(lines)
        for blk in path:
            out.extend(_instances(per(blk), renames, a, rc, p, jam))
        if stretch is None:
            out.append(f"  br label {latch}")
        else:
            # (the stretch's labels are the loop's own: a versioned loop has two copies)
            labels = {name: f"%{lab}s{j}" for j, name in enumerate(stretch.blocks)}
            joined = f"%{lab}m" if tail is not None else latch
            targets = {**labels, **({stretch.merge: joined} if stretch.merge is not None else {})}
            if taken is not None:  # (every instance visited passes the guard: wiguard.py)
                out.append(f"  br label {labels[taken]}")
            else:
                out.append(_terminator(path[-1].term, renames, targets, latch))
            for name in stretch.blocks:
                sb = f.by_name[name]
                out.append(f"{labels[name][1:]}:")
                out.extend(_instances([i for i in sb.body if i.name not in hoisted], renames, a, rc, p, jam))
                out.append(_terminator(sb.term, renames, targets, latch))
            if tail is not None:
                out.append(f"{lab}m:")
                out.extend(_instances([*again, *per(tail, True)], renames, a, rc, p, jam))
                out.append(f"  br label {latch}")
        scalars = {llvm_local(al) for al in f.allocas if al not in arrays}
        out[body:] = _parallel(out[body:], scalars, md_base + _MD_STRIDE * k + 2)
        out.extend(_loop_tail(p, lab, guard.name if guard else "%__wi.nx", md_base + _MD_STRIDE * k))

    def tree(b: Block, path: list[Block]) -> None:
        """``b`` and the blocks fused after it (``fusable``): their uniform code in the
        skeleton, one loop for each way out of them, running every block on the way."""
        path = [*path, b]
        out.append(f"{llvm_local(b.name)[1:]}:")
        out.extend(i.text for i in b.body if id(i) in a.skeleton and i.opcode != "alloca")
        stretch = stretches.get(b.name)
        work = any(per(blk) for blk in path)
        if stretch is not None or divergent_term(b, a) or b.term.opcode in ("ret", "unreachable"):
            if work or stretch is not None or divergent_term(b, a):
                loop(path, llvm_local(b.name), stretch)
            if stretch is not None:
                out.append(
                    f"  br label {llvm_local(stretch.merge) if stretch.merge is not None else '%__wi.ret'}"
                )
            elif divergent_term(b, a):
                out.append(f"  br label {llvm_local(b.succ[0])}")
            else:
                out.append(_terminator(b.term, {}))
            return
        later = [f.by_name[t] for t in dict.fromkeys(b.succ) if t in fused]
        exits = {t: f"%__wix{next(counter)}" for t in dict.fromkeys(b.succ) if t not in fused} if work else {}
        out.append(_terminator(b.term, {}, exits))
        for t, label in exits.items():
            out.append(f"{label[1:]}:")
            loop(path, label, None)
            out.append(f"  br label {llvm_local(t)}")
        for nxt in later:
            tree(nxt, path)

    for b in f.blocks:
        if b.name not in a.divergent and b.name not in fused:
            tree(b, [])
    out += ["__wi.ret:", *frees, "  ret i32 0"]
    if bad:
        out += ["__wi.oom:", "  ret i32 1"]
    out.append("}")
    # Each x loop runs nx instances, few (a GPU-style group's row): vectorized without
    # interleaving, one vector iteration covers it instead of falling to the remainder.
    # The instances of a phase are independent (a program whose instances touch the same
    # memory between two barriers, one of them writing, has a data race): every plain load and
    # store in the loop is in its access group, and the loop says so (``_parallel``), so that
    # LLVM vectorizes it without run-time alias checks.
    for k in range(next(counter)):
        md = md_base + _MD_STRIDE * k
        out.append(
            f'!{md} = distinct !{{!{md}, !{md + 1}, !{md + 3}}}\n!{md + 1} = !{{!"llvm.loop.interleave.count", i32 1}}\n'
            f'!{md + 2} = distinct !{{}}\n!{md + 3} = !{{!"llvm.loop.parallel_accesses", !{md + 2}}}'
        )
    return "\n".join(out) + "\n"


def _tails(f: Function, a: Analysis, stretches: dict[str, Stretch], fused: set[str]) -> dict[str, str]:
    """Merge blocks whose per-instance code joins the loop of the stretch they end (merge
    -> owner): entered only from the owner and its stretch, neither a barrier's block nor
    divergent, with no stretch or divergent branch of their own, with per-instance code,
    and storing nothing in their uniform code (which runs after the loop: what the
    per-instance code reads of it, the loop computes again). Then a value
    the ``if`` computes and the merge stores (``s[x] = c ? in[x] : 0``) stays in one loop:
    no per-instance array and no second loop copying from it."""
    preds: dict[str, set[str]] = {b.name: set() for b in f.blocks}
    for b in f.blocks:
        for t in b.succ:
            preds[t].add(b.name)
    found = {}
    for own, st in stretches.items():
        m = st.merge
        if m is None or m in stretches or m in a.divergent or m in fused or m == own:
            continue
        mb = f.by_name[m]
        if re.fullmatch(re.escape(BARRIER_BLOCK) + r"\d+", m) or divergent_term(mb, a):
            continue
        if not preds[m] <= {own, *st.blocks}:
            continue
        mine = [i for i in mb.body if id(i) in a.skeleton and i.opcode != "alloca"]
        if any(i.opcode == "store" for i in mine) or all(id(i) in a.skeleton for i in mb.body):
            continue
        found[m] = own
    return found


def _loop_head(p: str, lab: str, pred: str, bound: str | None = None) -> list[str]:
    """The loop nest's heads (ids ``{p}z``, ``{p}y``, ``{p}x``, flattened ``{p}j``), entered
    from the block ``pred``; ``bound``: the x loop's end when not ``nx`` (it may be 0)."""
    skip = [f"  {p}xe = icmp sgt i64 {bound}, 0", f"  br i1 {p}xe, label %{lab}xh, label %{lab}yl"]
    return [
        f"  br label %{lab}zh",
        f"{lab}zh:",
        f"  {p}z = phi i64 [ 0, {pred} ], [ {p}z1, %{lab}zl ]",
        f"  br label %{lab}yh",
        f"{lab}yh:",
        f"  {p}y = phi i64 [ 0, %{lab}zh ], [ {p}y1, %{lab}yl ]",
        f"  {p}row0 = mul i64 {p}z, %__wi.ny",
        f"  {p}row1 = add i64 {p}row0, {p}y",
        f"  {p}row = mul i64 {p}row1, %__wi.nx",
        *(skip if bound is not None else [f"  br label %{lab}xh"]),
        f"{lab}xh:",
        f"  {p}x = phi i64 [ 0, %{lab}yh ], [ {p}x1, %{lab}xl ]",
        f"  {p}j = add i64 {p}row, {p}x",
    ]


_MEMORY = re.compile(r"^\s*(?:%\S+ = )?(load|store) (?!atomic|volatile)")
_POINTER = re.compile(r', ptr (%"[^"]*"|%[-a-zA-Z$._0-9]+)')


def _parallel(lines: list[str], scalars: set[str], group: int) -> list[str]:
    """``lines`` (a work-item loop's body) with each plain load and store in the access group
    ``!group``: every one but those of ``scalars`` (``reg2mem`` allocas every instance reuses:
    the same address in every iteration; SROA usually removes them first). Atomics, volatile
    accesses and calls stay out of the group, and a loop with any of them is no parallel loop
    to LLVM (it then checks aliasing as before)."""
    marked = []
    for line in lines:
        if _MEMORY.match(line):
            ptr = _POINTER.search(line)
            if ptr is not None and ptr.group(1) not in scalars:
                line = f"{line}, !llvm.access.group !{group}"
        marked.append(line)
    return marked


def _loop_tail(p: str, lab: str, bound: str, md: int) -> list[str]:
    return [
        f"{lab}xl:",
        f"  {p}x1 = add nuw nsw i64 {p}x, 1",
        f"  {p}xm = icmp slt i64 {p}x1, {bound}",
        f"  br i1 {p}xm, label %{lab}xh, label %{lab}yl, !llvm.loop !{md}",
        f"{lab}yl:",
        f"  {p}y1 = add nuw nsw i64 {p}y, 1",
        f"  {p}ym = icmp slt i64 {p}y1, %__wi.ny",
        f"  br i1 {p}ym, label %{lab}yh, label %{lab}zl",
        f"{lab}zl:",
        f"  {p}z1 = add nuw nsw i64 {p}z, 1",
        f"  {p}zm = icmp slt i64 {p}z1, %__wi.nz",
        f"  br i1 {p}zm, label %{lab}zh, label %{lab}done",
        f"{lab}done:",
    ]


def _instances(
    block: list[Ins], renames: dict[str, str], a: Analysis, rc: Recompute, p: str, jam: int | None = None
) -> list[str]:
    """One block's per-instance instructions inside the loop with prefix ``p``: instance
    ids read from the loop's variables, recomputable values computed again."""
    lines: list[str] = []
    memo: dict[str, str] = {}
    for i in block:
        if i.name in a.ids:
            lines.append(
                f"  {llvm_local(renames.get(i.name, i.name))} = {instance_id(a.ids[i.name], p, jam)}"
            )
        elif i.opcode == "store" and i.operands[1][0] in rc.allocas:
            continue
        elif i.opcode == "load" and i.operands[0][0] in rc.allocas:
            renames[i.name] = rc.load(i, lines, memo, renames, p)
        elif i.opcode == "getelementptr" and i.name in a.immutable:  # the shared context
            lines.append(rename(i.text, {k: v for k, v in renames.items() if k != "ctx"}))
        else:
            lines.append(rename(i.text, renames))
    return lines


def _own_context(f: Function, a: Analysis, header: int, shared_ids: tuple[int, ...] = ()) -> bool:
    """Whether per-instance code reads an instance's context other than its error slots
    (0 and 1), its ids (the loop variables) or the shared part: then every instance's
    context is filled in full."""
    every = [i for b in f.blocks for i in [*b.body, b.term]]
    id_loads_only = {i.operands[0][0] for i in every if i.name in a.ids}
    id_loads_only -= {n for i in every if i.name not in a.ids for n in i.locals()}
    for i in every:
        if id(i) in a.skeleton or "ctx" not in i.locals():
            continue
        if i.opcode == "getelementptr" and i.operands[0][0] == "ctx":
            off = ctx_offset(i)
            shared = off is not None and (
                off >= 8 * (header + 3) or off in {8 * (header + k) for k in shared_ids}
            )
            if off is not None and (off in (0, 8) or shared or i.name in id_loads_only):
                continue
        if i.opcode == "load" and i.operands[0][0] == "ctx":
            continue
        if i.opcode == "store" and i.operands[1][0] == "ctx" and i.operands[0][0] != "ctx":
            continue
        return True
    return False


def _terminator(
    term: Ins, renames: dict[str, str], targets: dict[str, str] | None = None, latch: str = ""
) -> str:
    """``term`` with its targets in ``targets`` (block -> label text) redirected; a return
    leaves the function (the loop's latch inside a loop)."""
    if term.opcode == "ret":
        return f"  br label {latch or '%__wi.ret'}"
    text = rename(term.text, renames)
    for block, label in (targets or {}).items():
        text = re.sub(
            re.escape(f"label {llvm_local(block)}") + r"(?![-a-zA-Z$._0-9\"])", f"label {label}", text
        )
    return text


def prepare(
    text: str,
    *,
    entry: str,
    digest: str,
    args: tuple[str, ...],
    outs: tuple[str, ...],
    ret: str,
    reach_barrier: set[str],
) -> tuple[Any, str] | str:
    """The module with ``__hpvm_wib.<digest>``: the node function inlined into the trampoline's
    body, simplified, each barrier at the start of a block of its own, in ``reg2mem`` form;
    and that function's attributes. A reason (str) when LLVM could not make it."""
    import llvmlite.binding as llvm

    from .native import optimize_module

    text, group = mark_always_inline(text, reach_barrier, f"@{entry}")
    attrs = f"#{group}" if group is not None else ""
    body = f"__hpvm_wib.{digest}"
    text += (
        f"\ndefine internal void @{body}(ptr %args, ptr %ctx, ptr %out) {attrs} {{\nentry:\n"
        + "\n".join(slot_call(entry, args, outs, ret))
        + "\n  ret void\n}\n"
    )
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as e:
        return f"its LLVM could not be inlined ({str(e).strip()})"
    optimize_module(
        module,
        2,
        (
            "always_inliner",
            "sroa",
            "instruction_combine",
            "simplify_cfg",
            "sccp",
            "instruction_combine",
            "simplify_cfg",
        ),
    )
    text = str(module)
    text = split_at_marks(text, body, lambda k, label: ["  br label %" + label, f"{label}:"], BARRIER_BLOCK)
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as e:
        return f"its barriers could not start blocks ({str(e).strip()})"
    optimize_module(module, 0, ("instruction_namer",))
    return module, attrs


def workitem_function(
    module: Any, *, digest: str, attrs: str, header: int, nout: int, reach: set[str], nargs: int = 0
) -> str:
    """``__hpvm_wi.<digest>``'s text from ``prepare``'s module, or a reason (``"why: ..."``)
    it cannot be made (then the coroutine path runs the leaf)."""
    from .native import optimize_module

    fn = module.get_function(f"__hpvm_wib.{digest}")
    body = str(fn)
    if any(re.search(re.escape(g) + r"\(", body) for g in reach) or f"@{MARK}(" in body:
        return "why: a call reaching a barrier was not inlined"
    original = {i.name for b in fn.blocks for i in b.instructions if i.opcode == "alloca"}
    optimize_module(module, 0, ("register_to_memory", "instruction_namer"))
    f = read_function(module.get_function(f"__hpvm_wib.{digest}"), original, str(module))
    if isinstance(f, str):
        return "why: " + f
    pdom = post_dominators(f)
    if pdom is None:
        return "why: a loop in it never ends"
    a = analyse(f, pdom, header)
    stretches = structure(f, a)
    if isinstance(stretches, str):
        return "why: " + stretches
    made = emit(f, a, stretches, f"__hpvm_wi.{digest}", attrs, nout, nargs)
    if made is None:
        return "why: an alloca of a form work-item loops do not handle"
    return made, _own_context(f, a, header)


def workitem_module(
    leaf: Any,
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
) -> tuple[str | None, str]:
    """The clone ``text`` with ``__hpvm_wi.<digest>`` and the group runner, optimized; or
    ``None`` and why work-item loops do not apply (the caller then builds coroutines)."""
    import llvmlite.binding as llvm

    from .native import optimize_module

    raises = f"@{ERROR_CALL}(ptr %__hpvm_ctx" in text  # (before inlining hides the call)
    prepared = prepare(
        text, entry=entry, digest=digest, args=args, outs=outs, ret=ret, reach_barrier=reach_barrier
    )
    if isinstance(prepared, str):
        return None, prepared
    module, attrs = prepared
    made = workitem_function(
        module,
        digest=digest,
        attrs=attrs,
        header=header,
        nout=len(outs),
        reach=reach_barrier,
        nargs=len(args),
    )
    if isinstance(made, str):
        return None, made.removeprefix("why: ")
    made, every_context = made
    text = str(module)
    # Elsewhere (the one-instance trampoline) a barrier does nothing.
    text = text.replace(
        f"declare void @{MARK}()", f"define internal void @{MARK}() alwaysinline {{\n  ret void\n}}", 1
    )
    names = {f.name for f in module.functions}
    call = (
        f"  %code0 = call i32 @__hpvm_wi.{digest}(ptr %args, ptr %ctxs, ptr %outs, i64 %ctxstep, i64 %nx, "
        "i64 %ny, i64 %nz)\n  %failed = icmp ne i32 %code0, 0\n  br i1 %failed, label %oom, label %done"
    )
    text += (
        made
        + group_runner(
            digest,
            outs,
            header,
            raised,
            call,
            coroutines=False,
            every_context=every_context,
            inline=False,
            # (instances that cannot raise never write their context: one serves them all)
            shared_context=not every_context and not raises,
        )
        + declarations(names)
    )
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as e:
        return None, f"its work-item loops are not valid LLVM ({str(e).strip()})"
    optimize_module(module, 2)
    return str(module), ""


__all__ = ["workitem_module"]
