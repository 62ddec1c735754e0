"""Barriers some instances may not reach: the barrier-placement check on the leaf IR.

Why: every instance of one parent instance must reach the same barriers — on a GPU anything
else hangs or computes garbage (seed 000 leaves it undefined), and a back end that runs a
group phase by phase (``phases.py``) cannot split such a leaf. A barrier is *divergent* when
it stands under an ``if``/``while``/``for`` whose condition (or bounds) may differ between
the instances (``analyses.Uniformity``, barrier intervals included); when a
``break``/``continue`` under such a condition leaves or skips part of a loop holding
barriers; or when it may run after a ``return`` under such a condition. The GPU back ends
check it before they build a kernel (``passes/uniformity.py``); the phase split refuses
the same leaves with its own words (``phases.py``). Both write the sentence here.
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass

from . import ops
from .analyses import Uniform, uniformity


def is_barrier(stmt: ops.Stmt) -> bool:
    return (
        isinstance(stmt, ops.ExprStmt)
        and isinstance(stmt.value, ops.IntrinsicOp)
        and stmt.value.intrinsic.kind == "barrier"
    )


def barrier_lines(block: ops.Block) -> list[int]:
    """The lines of the barriers in ``block`` and the blocks nested in it, sorted."""
    return sorted(s.line for s in ops.walk_stmts(block) if is_barrier(s))


def heads(stmt: ops.Stmt) -> tuple[ops.Expr, ...]:
    """The condition of an ``if``/``while``, the bounds of a ``for``."""
    if isinstance(stmt, ops.For):
        return (stmt.start, stmt.stop, stmt.step)
    if isinstance(stmt, (ops.If, ops.While)):
        return (stmt.test,)
    return ()


def varies(uniform: Uniform, stmt: ops.Stmt) -> bool:
    """Whether the condition or bounds of ``stmt`` may differ between instances."""
    return not all(uniform.is_uniform(h, stmt) for h in heads(stmt))


@dataclass(frozen=True)
class Divergence:
    """Why some instances of one parent instance may not reach a barrier."""

    what: str  # the sentence's subject, up to "under a condition that differs"
    line: int  # the line to point at: the barrier, or the jump
    control: ops.Stmt  # the `if` / `while` / `for` whose condition differs between instances
    fix: str


def divergence_message(ir: ops.LeafIR, found: Divergence, middle: str) -> str:
    """``leaf 'name' (file:line): <what> under a condition that differs ... <middle> — <fix>``:
    ``middle`` says which back end needs what."""
    control = found.control
    varying = uniformity(ir).varying
    names = sorted(
        {
            e.name
            for h in heads(control)
            for e in ops.walk_expr(h)
            if isinstance(e, ops.Var) and e.name in varying
        }
    )
    through = f" (through {', '.join(f'`{n}`' for n in names)})" if names else ""
    text = linecache.getline(ir.file, control.line).strip()
    return (
        f"leaf '{ir.name}' ({ir.file}:{found.line}): {found.what} under a condition that differs between "
        f"instances: line {control.line} (`{text}`) depends on the instance id{through}. {middle} — {found.fix}"
    )


def divergent_barrier(ir: ops.LeafIR) -> Divergence | None:
    """The first barrier of ``ir`` that some instances may not reach, or ``None`` (module doc)."""
    return _Search(uniformity(ir)).block(ir.body, None, None, None, ())


class _Search:
    """Statements in order, with what encloses them: ``ctrl``, the outermost enclosing
    statement with a varying condition; ``loop_ctrl``, the same inside the innermost
    enclosing ``loop``; ``after``, what may run once a block is done (later statements of
    enclosing blocks, enclosing loops again)."""

    def __init__(self, uniform: Uniform):
        self.uniform = uniform

    def block(
        self,
        block: ops.Block,
        ctrl: ops.Stmt | None,
        loop_ctrl: ops.Stmt | None,
        loop: ops.Stmt | None,
        after: tuple[ops.Stmt, ...],
    ) -> Divergence | None:
        for k, s in enumerate(block):
            found = self.stmt(s, ctrl, loop_ctrl, loop, (*block[k + 1 :], *after))
            if found is not None:
                return found
        return None

    def stmt(
        self,
        s: ops.Stmt,
        ctrl: ops.Stmt | None,
        loop_ctrl: ops.Stmt | None,
        loop: ops.Stmt | None,
        later: tuple[ops.Stmt, ...],
    ) -> Divergence | None:
        if is_barrier(s):
            if ctrl is None:
                return None
            return Divergence(
                f"hpvm.barrier() on line {s.line} is",
                s.line,
                ctrl,
                "move the barrier out of the branch or loop",
            )
        if isinstance(s, ops.Return):
            lines = barrier_lines(later)
            if ctrl is None or not lines:
                return None
            return Divergence(
                f"hpvm.barrier() on line {min(lines)} may run after the `return` on line {s.line}, which is",
                min(lines),
                ctrl,
                "return after the last barrier, or make the `return` condition uniform",
            )
        if isinstance(s, (ops.Break, ops.Continue)):
            if loop_ctrl is None or loop is None or not barrier_lines((loop,)):
                return None
            word = type(s).__name__.lower()
            return Divergence(
                f"`{word}` on line {s.line} of a loop with barriers (line {min(barrier_lines((loop,)))}) is",
                s.line,
                loop_ctrl,
                f"make the `{word}` condition uniform",
            )
        c = s if varies(self.uniform, s) else None
        if isinstance(s, ops.If):
            return self.block(s.body, ctrl or c, loop_ctrl or c, loop, later) or self.block(
                s.orelse, ctrl or c, loop_ctrl or c, loop, later
            )
        if isinstance(s, (ops.For, ops.While)):
            return self.block(s.body, ctrl or c, c, s, (s, *later))
        return None
