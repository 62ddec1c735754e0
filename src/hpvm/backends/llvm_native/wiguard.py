"""Work-item loops whose instances branch on the x id against a uniform bound.

Two forms, both for loops whose last block branches into a divergent ``if``:

- ``if (x < u)`` with nothing else per instance before it (``guard_bound``): visit
  ``x < min(nx, u)`` only, and enter the ``if`` unconditionally;
- ``if (c + x < u)`` (``versioned``): run the loop in two copies, chosen before it by
  whether the last ``x`` passes; the first enters the ``if`` unconditionally.

A tree reduction's rounds (``if (lid < stride) s[lid] += s[lid + stride]; barrier``) are
work-item loops over every instance of the group in which most instances do nothing. Run as
written, the loop covers all ``nx`` instances, and LLVM's vectorizer cannot use its vector
body: the reads ``s[x + stride]`` and writes ``s[x]`` over ``x < nx`` overlap, so its run-time
alias check sends every round to the scalar loop (the HPVM-C block reduction spent a third
of its time there). When the loop's per-instance code before the guard is nothing but
reading the x id, and the guard is ``x < u`` (``slt``/``ult``) or ``x == 0`` with ``u``
uniform, the x loop runs to ``min(nx, u)`` (1 for ``x == 0``) instead, and the guard
branches straight into its stretch: every visited instance passes it, every other would
have skipped to the merge without doing anything. (The cpu back end's Python barrier leaves
do the same, docs/backends/cpu.md §3.) Reads ``[u, 2u)`` and writes ``[0, u)`` no longer
overlap, and the vector body runs. The second form is a bounds check (``gid < n ? in[gid] :
0``, ``gid = block * size + x``): true for every group but the last, it made LLVM load
``in`` with a mask in every group (half the block reduction's time after the rest was cut).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .wiuniform import Analysis, Block, Function, Ins, Stretch, llvm_local

_CMP = re.compile(r"= icmp (slt|ult|eq) i64 (\S+), (\S+?)\s*(?:,|$)")


@dataclass(frozen=True)
class Guard:
    """A loop's x bound: ``lines`` compute ``name`` (``min(nx, u)``, at least 0) before the
    loop, and its branch goes to ``target`` unconditionally."""

    name: str
    lines: tuple[str, ...]
    target: str


def guard_bound(
    f: Function,
    a: Analysis,
    path: list[Block],
    code: list[Ins],
    stretch: Stretch | None,
    single: dict[str, Ins],
    p: str,
) -> Guard | None:
    """The bound of the loop over ``path`` (its per-instance instructions ``code``, owning
    ``stretch``), named with the loop's prefix ``p``; ``None`` when its instances do not all
    start with such a guard. ``single``: the allocas stored once (value, store), whose loads
    are the value stored (``reg2mem`` keeps the x id in one)."""
    if stretch is None or stretch.merge is None:
        return None
    term = path[-1].term
    m = re.match(r"\s*br i1 (%\S+), label (%\S+), label (%\S+)\s*(?:,|$)", term.text)
    if not m:
        return None
    cond, true, false = m.groups()
    target = next((b for b in stretch.blocks if llvm_local(b) == true), None)
    if target is None or not _skips(f, stretch, false):
        return None
    guard = next((i for i in code if i.name and llvm_local(i.name) == cond), None)
    if guard is None or guard.opcode != "icmp":
        return None
    cmp = _CMP.search(guard.text)
    if cmp is None or not guard.operands or not _is_x(f, a, single, guard.operands[0][0]):
        return None
    # Nothing else per instance before the guard: the x id read, its reloads, the guard.
    for i in code:
        if i is not guard and not (i.opcode == "load" and _is_x(f, a, single, i.name)):
            if not (i.opcode == "store" and i.operands[0][0] in a.ids and i.operands[1][0] in single):
                return None
    op, u = cmp.group(1), cmp.group(3)
    if op == "eq":
        return Guard("1", (), target) if u == "0" else None
    if u.startswith("%") and not _uniform_before(a, guard.operands[1][0], path, f):
        return None
    b = f"{p}bx"
    lines = [
        f"  {p}bc = icmp {op} i64 {u}, %__wi.nx",
        f"  {p}b0 = select i1 {p}bc, i64 {u}, i64 %__wi.nx",
        f"  {p}bn = icmp slt i64 {p}b0, 0",
        f"  {b} = select i1 {p}bn, i64 0, i64 {p}b0",
    ]
    return Guard(b, tuple(lines), target)


def versioned(
    f: Function,
    a: Analysis,
    path: list[Block],
    code: list[Ins],
    stretch: Stretch | None,
    single: dict[str, Ins],
    p: str,
) -> Guard | None:
    """When the loop's branch is on ``c + x < u`` (``add nsw``, ``slt``; ``c`` and ``u``
    uniform, computed before the loop): ``name`` (from ``lines``, before the loop) is true
    when every instance passes it (``c + nx - 1 < u``: the largest ``x`` passes), and the
    loop is run in two copies, the first going to ``target`` unconditionally — a bounds
    check such as ``gid < n ? in[gid] : 0``, which holds for every group but the last, then
    loads without a mask."""
    if stretch is None:
        return None
    m = re.match(r"\s*br i1 (%\S+), label (%\S+), label (%\S+)\s*(?:,|$)", path[-1].term.text)
    if not m:
        return None
    cond, true, _ = m.groups()
    target = next((b for b in stretch.blocks if llvm_local(b) == true), None)
    defs = {i.name: i for i in code if i.name}
    guard = next((i for n, i in defs.items() if llvm_local(n) == cond), None)
    if target is None or guard is None or guard.opcode != "icmp" or len(guard.operands) != 2:
        return None
    cmp = re.search(r"= icmp slt i64 (\S+), (\S+?)\s*(?:,|$)", guard.text)
    add = defs.get(guard.operands[0][0])
    if add is not None and add.opcode == "load" and add.operands[0][0] in single:  # (a reload)
        add = defs.get(single[add.operands[0][0]].operands[0][0])
    if cmp is None or add is None or add.opcode != "add" or " nsw " not in add.text:
        return None
    (x, _), (c, kind) = add.operands
    if not _is_x(f, a, single, x):
        (c, kind), (x, _) = add.operands
        if not _is_x(f, a, single, x):
            return None
    u, ukind = guard.operands[1]
    for name, k in ((c, kind), (u, ukind)):
        if k in ("instruction", "argument") and not _uniform_before(a, name, path, f):
            return None
    ctext = re.search(
        r"= add (?:nuw )?nsw i64 (\S+), (\S+?)\s*(?:,|$)", add.text
    )  # (nuw: ids known non-negative)
    assert ctext is not None
    c_text = ctext.group(2) if _is_x(f, a, single, add.operands[0][0]) else ctext.group(1)
    lines = (
        f"  {p}va = add i64 {c_text}, %__wi.nx",
        f"  {p}vb = sub i64 {p}va, 1",
        f"  {p}vall = icmp slt i64 {p}vb, {cmp.group(2)}",
    )
    return Guard(f"{p}vall", lines, target)


def _skips(f: Function, stretch: Stretch, label: str) -> bool:
    """Whether the guard's other way does nothing: the merge, or an empty block to it."""
    if label == llvm_local(stretch.merge or ""):
        return True
    block = next((f.by_name[b] for b in stretch.blocks if llvm_local(b) == label), None)
    return block is not None and not block.body and block.succ == [stretch.merge]


def _is_x(f: Function, a: Analysis, single: dict[str, Ins], name: str) -> bool:
    """Whether ``name`` is the x id: read from the context, or reloaded from the alloca it
    was stored to once."""
    if a.ids.get(name) == 0:
        return True
    load = next((i for b in f.blocks for i in b.body if i.name == name), None)
    if load is None or load.opcode != "load" or load.operands[0][0] not in single:
        return False
    return a.ids.get(single[load.operands[0][0]].operands[0][0]) == 0


def _uniform_before(a: Analysis, name: str, path: list[Block], f: Function) -> bool:
    """Whether ``name`` is uniform and computed in the skeleton (before the loop starts)."""
    if name not in a.uniform:
        return False
    for b in f.blocks:
        for i in b.body:
            if i.name == name:
                return id(i) in a.skeleton
    return True  # an argument
