"""Barrier intervals: which arrays may change while a statement runs, between two barriers.

Why: a load is the same in every instance of a group when its indices are and no instance
can change the element meanwhile. Without barriers "meanwhile" is the whole leaf, so any
array the leaf writes makes its loads varying (``uniformity.py``). With barriers it is only
the *interval* the load runs in — from the last barrier any path reaches it from to the next
barrier any path leads to: every instance's writes before the barrier are done, and none of
after the next one has started. ``total = buf[0] + buf[1]`` right after a barrier, in a
phase that writes no ``buf``, is uniform — what a loop whose exit condition reads it needs
to hold barriers (``phases.py``).

Computed as two dataflow passes over the statements (forward: written since the last
barrier; backward: written until the next), loops to a fixed point with their ``break``
and ``continue`` edges; a ``return`` or ``raise`` is followed as if it fell through
(conservative). A barrier under divergent control is trusted like any other; such a leaf is
refused by the barrier checks anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import ops
from .effects import view_roots
from .manager import AnalysisManager

_MALLOC = "<malloc>"  # memory ``malloc`` returned: each instance's own, loads from it vary


def _is_barrier(stmt: ops.Stmt) -> bool:
    value = stmt.value if isinstance(stmt, ops.ExprStmt) else None
    return isinstance(value, ops.IntrinsicOp) and value.intrinsic.kind == "barrier"


class _Dirty:
    """One direction's pass: ``at[id(stmt)]``, the keys written in the interval so far."""

    def __init__(self, keys: dict[str, frozenset[str]], reverse: bool):
        self.keys, self.reverse = keys, reverse
        self.at: dict[int, set[str]] = {}
        # Per enclosing loop. Forward: the states at its breaks and continues; backward: the
        # states after the loop and at its head (where a break and a continue go).
        self.loops: list[tuple[list[set[str]], list[set[str]]]] = []

    def record(self, stmt: ops.Stmt, state: set[str]) -> None:
        self.at.setdefault(id(stmt), set()).update(state)

    def writes(self, stmt: ops.Stmt) -> set[str]:
        found: set[str] = set()
        for root in ops.stmt_exprs(stmt) if not ops.children(stmt) else ():
            for e in ops.walk_expr(root):
                if isinstance(e, ops.IntrinsicOp) and e.intrinsic.kind == "atomic":
                    found |= self._array(e.args[0])
        if isinstance(stmt, ops.Store):
            found |= self._array(stmt.array)
        return found

    def _array(self, e: ops.Expr) -> set[str]:
        return {k for v in ops.walk_expr(e) if isinstance(v, ops.Var) for k in self.keys.get(v.name, ())}

    def block(self, block: ops.Block, state: set[str]) -> set[str]:
        for stmt in reversed(block) if self.reverse else block:
            state = self.stmt(stmt, state)
        return state

    def stmt(self, stmt: ops.Stmt, state: set[str]) -> set[str]:
        if _is_barrier(stmt):
            self.record(stmt, set())
            return set()
        if isinstance(stmt, ops.If):
            if not self.reverse:
                self.record(stmt, state)
            out = self.block(stmt.body, set(state)) | self.block(stmt.orelse, set(state))
            if self.reverse:
                self.record(stmt, out)  # the test runs before either branch
            return out
        if isinstance(stmt, (ops.For, ops.While)):
            head = self._loop(stmt, state)
            self.record(stmt, head)
            return head
        if isinstance(stmt, (ops.Break, ops.Continue)):
            self.record(stmt, state)
            breaks, continues = self.loops[-1]
            jump = breaks if isinstance(stmt, ops.Break) else continues
            if self.reverse:
                return set(jump[0])  # what follows a break is the loop's exit, a continue its head
            jump.append(set(state))
            return state
        state = state | self.writes(stmt)
        self.record(stmt, state)
        return state

    def _loop(self, stmt: ops.For | ops.While, state: set[str]) -> set[str]:
        """The state at the loop's head (a fixed point), which is also the state after it
        (backward) or, joined with its breaks, after it (forward)."""
        head = set(state)
        while True:
            if self.reverse:
                self.loops.append(([state], [head]))
                grown = state | self.block(stmt.body, set(head))  # its end leads back to the head
                self.loops.pop()
            else:
                breaks: list[set[str]] = []
                continues: list[set[str]] = []
                self.loops.append((breaks, continues))
                grown = head | self.block(stmt.body, set(head)).union(*continues)
                self.loops.pop()
            if grown == head:
                break
            head = grown
        return head if self.reverse else head.union(*breaks)


@dataclass(frozen=True)
class BarrierIntervals:
    """Per statement (``id``) of the leaf: the array variables whose elements some instance
    may change in the barrier interval the statement runs in (module doc)."""

    name: str = "barrier-intervals"

    def run(self, ir: ops.LeafIR, manager: AnalysisManager) -> dict[int, frozenset[str]]:
        roots = view_roots(ir)
        names = set(roots) | {n for n, t in ir.locals if isinstance(t, ops.ArrayType)}
        keys = {n: frozenset(roots.get(n) or {n}) for n in names}
        fwd, bwd = _Dirty(keys, reverse=False), _Dirty(keys, reverse=True)
        fwd.block(ir.body, set())
        bwd.block(ir.body, set())
        out: dict[int, frozenset[str]] = {}
        for stmt in ops.walk_stmts(ir.body):
            dirty = fwd.at.get(id(stmt), set()) | bwd.at.get(id(stmt), set()) | {_MALLOC}
            out[id(stmt)] = frozenset(n for n, k in keys.items() if k & dirty)
        return out
