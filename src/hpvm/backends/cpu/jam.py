"""Jammed instances: one call of a leaf runs ``width`` neighbouring instances in lockstep.

Why. A leaf written in the GPU convention with a loop of its own — a matmul's
``for k: acc += a[y, k] * b[k, x]`` per element — runs as an instance loop over x around
the leaf's loop over k. LLVM vectorizes innermost loops only, so the k loop ran as one
scalar chain of dependent adds per element (4 cycles each), and the x loop, where the
vectors are, was never vectorized: the matmul of ``make bench``'s peers row ran at Numba's
speed, behind Taichi's. A hand-written Numba loop that keeps 16 accumulators, one per
neighbouring x, is 2.5–3× faster on this machine with the same result bit for bit: each
element's sum is still taken in its own order, and LLVM's SLP vectorizer turns the 16
lanes into vector operations.

What. ``jam_leaf`` rewrites a clone's lowered leaf IR into that form ("unroll and jam" of
the instance loop): every statement whose value may differ between neighbours along the
jammed axis (the leaf IR's ``Uniformity`` with ``axes=(axis,)``: y and z are the same for
neighbours in x) is written once per lane, its varying variables renamed per lane and the
jammed id read as ``id + lane``; a loop or ``if`` whose bounds and condition are the same
for every lane stays one statement with a jammed body; one that may differ is written
whole once per lane. Every instance still runs its own statements in its own order, and
the instances of a replicated node may run in any order and interleaving (seed 000: they
are independent; one that reads what another writes is a race), so this is one more legal
schedule. A value the same for all lanes (``a[y, k]``: an array the leaf never writes, at
uniform indices) is computed once.

Guards. A kernel ported from CUDA puts its whole body under a bounds check (``if x <
c.shape[1] and y < c.shape[0]:``, for a grid rounded up to whole blocks), so its loop sits
under a condition that differs between lanes and would be written whole per lane. When
the body is assignments followed by such an ``if`` (no ``else``), the jammed clone is that
of the leaf with the guard taken, preceded by every lane's condition: ``if c0 and ... and
c7:`` the jammed body, ``return True``; else ``return False``, having written nothing
(``guarded``). The loop nest runs the block's instances plain when it returns False (the
block straddling the edge).

When. ``jam_problem`` says why a leaf is not jammed: an intrinsic left after lowering
(atomics, barriers, ``malloc``), a local array, a ``raise``, a ``return`` before its end,
or no loop that its lanes share (then the instance loop is the innermost loop already, and
LLVM vectorizes it). The loop nest (``loopnest.py``) runs the jammed clone on whole blocks
of ``width`` instances and the plain clone on the rest. A leaf's outputs (its final
``return``, as HPVM's stages return the array they wrote) are dropped from the jammed
clone: the loop nest jams a leaf with outputs only where nothing but the last instance's
values is used (``peel``: the last instance runs plain, after the loop), so the lanes'
values were never read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import NamedTuple

from ...ir import instance_context as ictx
from ...ir.leafir import ops, rules
from ...ir.leafir.analyses.manager import ANALYSES
from ...ir.leafir.analyses.uniformity import Uniform, Uniformity
from ...ir.leafir.rewrite import rewrite_block, rewrite_expr
from ...ir.types import bool_

#: The most and fewest lanes. 8: on this machine's matmul (384³, float32) 16 lanes ran no
#: faster (15.2–16.7 ms against 16.1–16.7), on the tiled sgemm (512³, 16-wide tiles) slower
#: (65–66 ms against 47–54), and they added about a second to the sgemm graph's cold
#: compile; 4 lanes ran the matmul in 19 ms (a hand-written Numba loop: 8 lanes 16.8 ms,
#: 16 lanes 14.0 ms, 32 lanes 16.8 ms).
MAX_WIDTH, MIN_WIDTH = 8, 4
#: How many instances one call of an LLVM leaf's jammed wrapper runs (``llvm_native/
#: wijam.py``), where the node has that many along the axis (else ``MAX_WIDTH``). Its lanes
#: run as scalar chains, as this module's lanes do, but LLVM keeps 16 of them in registers
#: where this module's clone spills: the tiled sgemm's LLVM leaves (1024³, 16-wide tiles)
#: ran in 153–155 ms at 16 lanes against 392–415 ms at 8, and the Python leaves' in
#: 194–216 ms (issue 24; docs/backends/cpu.md, "Jammed LLVM leaves").
LLVM_WIDTH = 16
#: The most per-lane statements a jammed clone may hold (each lane's copy counted): a
#: longer leaf is jammed fewer times, or not at all, to keep its compile time.
MAX_STATEMENTS = 128
_LANE = "__hpvm_l"  # a varying variable's name in lane j: __hpvm_l<j>_<name>


class Jammed(NamedTuple):
    """A jammed clone as the loop nest calls it: its symbol, how many instances a call runs,
    and whether it is guarded (it returns whether it ran them, into ``JAM_RAN``)."""

    symbol: str
    width: int
    guarded: bool = False


#: The generated local a guarded jammed clone's answer goes to (``Jammed.guarded``).
JAM_RAN = "__hpvm_jam_ran"


@dataclass
class Switch:
    """Whether the ``cpu`` back end jams leaves: on, unless ``HPVM_CPU_JAM=0`` (for A/B
    measurements; tests set ``JAM.enabled``). It changes only code compiled after it is
    set, and the generated code, so Numba's cache entries, differ."""

    enabled: bool = True


JAM = Switch(os.environ.get("HPVM_CPU_JAM", "1") != "0")


def lane_name(name: str, lane: int) -> str:
    return f"{_LANE}{lane}_{name}"


def jam_width(ir: ops.LeafIR, axis: int) -> int:
    """How many instances one call of the jammed leaf runs: ``MAX_WIDTH``, halved while
    the lanes' copies would hold more than ``MAX_STATEMENTS`` (a guarded leaf's: those of
    its body with the guard taken)."""
    taken = _guard_taken(ir, axis)
    ir = taken[0] if taken is not None else ir
    per_lane = max(1, _lane_size(ir.body, _facts(ir, axis)))
    width = MAX_WIDTH
    while width > MIN_WIDTH and per_lane * width > MAX_STATEMENTS:
        width //= 2
    return width


def _facts(ir: ops.LeafIR, axis: int) -> Uniform:
    """The leaf's uniformity along ``axis``, its lanes running what differs between them one
    after another (``Uniformity.in_turn``: a loop written per lane assigns each lane's own
    variables)."""
    return ANALYSES.get(Uniformity(axes=(axis,), in_turn=True), ir)


def jam_problem(ir: ops.LeafIR, axis: int) -> str | None:
    """Why ``ir`` (a lowered leaf IR) is not jammed along instance axis ``axis``; ``None``:
    it is (module doc, "When")."""
    body = _without_final_return(ir.body)
    for stmt in ops.walk_stmts(body):
        if isinstance(stmt, (ops.Return, ops.Raise)):
            return f"a {'return' if isinstance(stmt, ops.Return) else 'raise'} on line {stmt.line}"
        for expr in ops.stmt_exprs(stmt):
            for sub in ops.walk_expr(expr):
                if isinstance(sub, ops.IntrinsicOp):
                    return f"hpvm.{sub.intrinsic.name} on line {stmt.line}"
                if isinstance(sub, ops.Alloc):
                    return f"a local array on line {stmt.line}"
    facts = _facts(ir, axis)
    if not any(_shared_loop(stmt, facts) for stmt in ops.walk_stmts(body)):
        taken = _guard_taken(ir, axis)
        if taken is None or jam_problem(taken[0], axis) is not None:
            return "no loop its neighbouring instances share"
        return None
    per_lane = _lane_size(body, facts)
    if per_lane * MIN_WIDTH > MAX_STATEMENTS:
        return f"{per_lane} statements per instance: too long to write {MIN_WIDTH} times"
    return None


def guarded(ir: ops.LeafIR, axis: int) -> bool:
    """Whether ``ir`` is jammed in its guarded form (module doc, "Guards"): its clone then
    returns whether it ran its lanes."""
    return _guard_taken(ir, axis) is not None


def _guard_taken(ir: ops.LeafIR, axis: int) -> tuple[ops.LeafIR, ops.If] | None:
    """``ir`` with its guard taken, and the guard; ``None`` unless ``ir`` shares no loop of
    its own and its body (less a closing ``return``) ends in an ``if`` without ``else`` whose
    condition differs between lanes, with only assignments before it (nothing that writes
    memory: its lanes' conditions are known before anything is done)."""
    body = _without_final_return(ir.body)
    facts = _facts(ir, axis)
    if any(_shared_loop(stmt, facts) for stmt in ops.walk_stmts(body)):
        return None
    if not body or not isinstance(body[-1], ops.If) or body[-1].orelse:
        return None
    guard = body[-1]
    if guard.line not in facts.divergent or not all(isinstance(s, ops.Assign) for s in body[:-1]):
        return None
    return replace(ir, body=(*body[:-1], *guard.body)), guard


def _shared(loop: ops.For | ops.While, facts: Uniform) -> bool:
    """Whether all lanes run ``loop`` together: its bounds or condition are the same for
    all, and a ``for``'s variable is not assigned a varying value elsewhere."""
    if loop.line in facts.divergent:
        return False
    return not (isinstance(loop, ops.For) and loop.var.name in facts.varying)


def _shared_loop(stmt: ops.Stmt, facts: Uniform) -> bool:
    """Whether ``stmt`` is a loop all lanes run together whose body does per-lane work
    that is not itself a loop of each lane's own (that is what LLVM can then vectorize)."""
    if not isinstance(stmt, (ops.For, ops.While)) or not _shared(stmt, facts):
        return False
    return any(_per_lane(inner, facts) for inner in _straight(stmt.body, facts))


def _straight(block: ops.Block, facts: Uniform) -> Iterator[ops.Stmt]:
    """The statements of ``block`` not inside a loop that differs between lanes."""
    for stmt in block:
        yield stmt
        if isinstance(stmt, (ops.For, ops.While)) and not _shared(stmt, facts):
            continue
        for inner in ops.children(stmt):
            yield from _straight(inner, facts)


def _per_lane(stmt: ops.Stmt, facts: Uniform) -> bool:
    if isinstance(stmt, ops.Assign):
        return stmt.target.name in facts.varying
    return isinstance(stmt, ops.Store)


def _lane_size(block: ops.Block, facts: Uniform) -> int:
    """How many statements one lane's copies hold: per-lane assignments and stores, and
    everything inside a loop or ``if`` that differs between lanes (written whole per lane)."""
    size = 0
    for stmt in block:
        whole = isinstance(stmt, ops.If) and stmt.line in facts.divergent
        whole |= isinstance(stmt, (ops.For, ops.While)) and not _shared(stmt, facts)
        if whole:
            size += sum(1 for _ in ops.walk_stmts((stmt,)))
        elif _per_lane(stmt, facts):
            size += 1
        else:
            size += sum(_lane_size(inner, facts) for inner in ops.children(stmt))
    return size


def jam_leaf(ir: ops.LeafIR, axis: int, width: int) -> ops.LeafIR:
    """``ir`` (lowered, ``jam_problem`` ``None``) as a leaf running the ``width`` instances
    whose ``axis`` ids are its own id and the next ``width - 1`` (module doc, "What"); in
    the guarded form (``guarded``), returning whether it did (module doc, "Guards")."""
    taken = _guard_taken(ir, axis)
    guard = None
    if taken is not None:
        ir, guard = taken
    facts = _facts(ir, axis)
    varying = facts.varying
    own_id = ictx.ID + axis

    def lane_rule(lane: int):  # type: ignore[no-untyped-def]
        def rule(e: ops.Expr) -> ops.Expr:
            if isinstance(e, ops.Var) and e.name in varying:
                return ops.Var(lane_name(e.name, lane), e.type)
            if isinstance(e, ops.CtxRead) and e.level == 0 and e.field == own_id and lane:
                return rules.binary("+", e, rules.const(lane))
            return e

        return rule

    rules_by_lane = [lane_rule(lane) for lane in range(width)]

    def lanes(stmt: ops.Stmt) -> list[ops.Stmt]:
        return [s for rule in rules_by_lane for s in rewrite_block((stmt,), rule)]

    def jam(block: ops.Block) -> ops.Block:
        out: list[ops.Stmt] = []
        for stmt in block:
            if isinstance(stmt, ops.Assign) and stmt.target.name not in varying:
                out.append(stmt)  # the same value in every lane: once
            elif isinstance(stmt, (ops.For, ops.While)) and _shared(stmt, facts):
                out.append(replace(stmt, body=jam(stmt.body)))
            elif isinstance(stmt, ops.If) and stmt.line not in facts.divergent:
                out.append(replace(stmt, body=jam(stmt.body), orelse=jam(stmt.orelse)))
            elif isinstance(stmt, (ops.Break, ops.Continue, ops.Return)):
                out.append(stmt)  # (under conditions every lane takes alike)
            else:
                out += lanes(stmt)
        return tuple(out)

    params = {p.name: p.type for p in ir.params}
    entry = [
        ops.Assign(ops.Var(lane_name(name, lane), t), ops.Var(name, t), ir.line)
        for name, t in params.items()
        if name in varying
        for lane in range(width)
    ]
    declared = (*((name, t) for name, t in params.items() if name in varying), *ir.locals)
    local_types = tuple(
        entry
        for name, t in declared
        for entry in (
            [(lane_name(name, lane), t) for lane in range(width)] if name in varying else [(name, t)]
        )
        if entry[0] not in params
    )
    body = _without_final_return(ir.body)  # (its values: only the last instance's are used)
    if guard is None:
        return replace(ir, outputs=(), body=(*entry, *jam(body)), locals=local_types)
    # The assignments before the guard, then the guard's body jammed where every lane takes it.
    before = len(_without_final_return(ir.body)) - len(guard.body)
    every = rules.boolop("and", [rewrite_expr(guard.test, rule) for rule in rules_by_lane])
    done = (ops.Return((rules.const(True),), guard.line),)
    checked = ops.If(every, (*jam(body[before:]), *done), (), guard.line)
    skipped = ops.Return((rules.const(False),), guard.line)
    return replace(
        ir, outputs=(bool_,), body=(*entry, *jam(body[:before]), checked, skipped), locals=local_types
    )


def _without_final_return(body: ops.Block) -> ops.Block:
    """``body`` less its closing ``return``: a jammed clone returns nothing."""
    return body[:-1] if body and isinstance(body[-1], ops.Return) else body


__all__ = [
    "JAM",
    "JAM_RAN",
    "LLVM_WIDTH",
    "MAX_WIDTH",
    "MIN_WIDTH",
    "Jammed",
    "guarded",
    "jam_leaf",
    "jam_problem",
    "jam_width",
    "lane_name",
]
