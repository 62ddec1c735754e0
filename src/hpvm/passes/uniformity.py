"""The GPU back ends' barrier-placement check, and for leaves outside the leaf IR's dialect
the syntax-tree uniformity it falls back on.

``check_uniform_barriers`` reads the leaf IR (``ir/leafir/barrier_check.py``, with the IR's
``Uniformity`` analysis). A leaf the IR does not cover keeps the check it had before the IR:
the rest of this module, which reads the leaf's clone. It lives with the passes, below the
back ends, so no back end reads Python (issue 25).

A barrier synchronizes the instances of a leaf within one parent instance, so every one of
them must reach the same barriers. Which locals are *varying* (may differ between the
instances: derived from an instance id, an atomic, ``malloc``, a random number, or assigned
under control flow that depends on one) decides where a barrier may stand. The analysis
reads a leaf's clone (``clone_leaves.py``: barriers are ``__hpvm_barrier()`` statements,
atomics and ``malloc`` are ``__hpvm_<name>`` calls); it lives with the passes, below the
back ends, because back-end packages may not import each other.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import CompileError
from ..ir import instance_context as ictx
from ..ir.graph import LeafFunction
from ..ir.leafir import leaf_ir
from ..ir.leafir.barrier_check import divergence_message
from ..ir.leafir.barrier_check import divergent_barrier as ir_divergent_barrier
from ..ir.leafir.ops import LeafIRUnsupported
from ..ir.pyast import walk_own
from .clone_leaves import BARRIER_MARKER, CTX_PARAM, LeafClone

# Calls whose result differs per instance even with uniform arguments.
_VARYING_CALL = re.compile(r"^__hpvm_(atomic_\w+|malloc)$")
# The context entries of a clone that differ per instance: its own node's ids x, y, z.
_OWN_IDS = frozenset(ictx.index(0, ictx.ID + axis) for axis in range(3))


def is_barrier(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Name)
        and stmt.value.func.id == BARRIER_MARKER
    )


def barrier_lines(node: ast.AST) -> list[int]:
    return sorted(n.lineno for n in walk_own(node) if isinstance(n, ast.stmt) and is_barrier(n))


def stores(node: ast.AST) -> set[str]:
    return {n.id for n in walk_own(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def loads(node: ast.AST) -> Iterator[ast.Name]:
    """Names read by ``node``, leaving out the variables comprehensions bind."""
    bound = {name for n in walk_own(node) if isinstance(n, ast.comprehension) for name in stores(n.target)}
    for n in walk_own(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in bound:
            yield n


def reads_varying(node: ast.AST, varying: set[str]) -> bool:
    """Whether ``node`` reads a varying local or calls something that differs per instance."""
    for n in walk_own(node):
        if isinstance(n, ast.Name) and n.id in varying:
            return True
        if (
            isinstance(n, ast.Subscript)
            and isinstance(n.value, ast.Name)
            and n.value.id == CTX_PARAM
            and isinstance(n.slice, ast.Constant)
            and n.slice.value in _OWN_IDS
        ):
            return True  # an instance id, read from the context (a clone not rewritten further)
        if isinstance(n, ast.Call):
            if isinstance(n.func, ast.Name) and _VARYING_CALL.match(n.func.id):
                return True
            chain = n.func
            while isinstance(chain, ast.Attribute):
                if chain.attr == "random":
                    return True
                chain = chain.value
            if isinstance(chain, ast.Name) and chain.id == "random":
                return True
    return False


class Uniformity:
    """Flow-insensitive varying-ness of locals, to a fixpoint.

    A local is varying when any assignment to it reads a varying value (an instance id, a
    varying local, an atomic, ``malloc``, a random number) or happens under control flow
    that depends on one — including loops that some instances leave early.
    """

    def __init__(self, seeds: set[str]):
        self.varying = set(seeds)
        self.divergent_loops: set[int] = set()
        self.changed = True

    def run(self, body: list[ast.stmt]) -> set[str]:
        while self.changed:
            self.changed = False
            self._block(body, False, None)
        return self.varying

    def expr(self, node: ast.AST) -> bool:
        return reads_varying(node, self.varying)

    def _mark(self, target: ast.AST, varying: bool) -> None:
        if varying:
            new = stores(target) - self.varying
            if new:
                self.varying |= new
                self.changed = True

    def _block(self, stmts: list[ast.stmt], ctrl: bool, loop: ast.stmt | None) -> None:
        for s in stmts:
            self._stmt(s, ctrl, loop)

    def _stmt(self, s: ast.stmt, ctrl: bool, loop: ast.stmt | None) -> None:
        for n in walk_own(s):  # walrus targets, wherever they are
            if isinstance(n, ast.NamedExpr):
                self._mark(n.target, ctrl or self.expr(n.value))
        if isinstance(s, ast.Assign):
            v = ctrl or self.expr(s.value)
            for t in s.targets:
                self._mark(t, v)
        elif isinstance(s, (ast.AugAssign, ast.AnnAssign)):
            if s.value is not None:
                self._mark(s.target, ctrl or self.expr(s.value) or self.expr(s.target))
        elif isinstance(s, ast.If):
            v = ctrl or self.expr(s.test)
            self._block(s.body, v, loop)
            self._block(s.orelse, v, loop)
        elif isinstance(s, (ast.For, ast.While)):
            head = s.iter if isinstance(s, ast.For) else s.test
            v = ctrl or self.expr(head) or id(s) in self.divergent_loops
            if isinstance(s, ast.For):
                self._mark(s.target, v)
            self._block(s.body, v, s)
            self._block(s.orelse, v, loop)
        elif isinstance(s, (ast.Break, ast.Continue, ast.Return)):
            if ctrl and loop is not None and id(loop) not in self.divergent_loops:
                self.divergent_loops.add(id(loop))
                self.changed = True
        else:  # with, try: their bodies run under the same control
            for child in ast.iter_child_nodes(s):
                if isinstance(child, ast.stmt):
                    self._stmt(child, ctrl, loop)
                elif isinstance(child, ast.excepthandler):
                    self._block(child.body, ctrl, loop)


# ---------------------------------------------------------------------------------------
# Barriers some instances may not reach (the GPU back ends' check)


@dataclass(frozen=True)
class Divergence:
    """Why some instances of one parent instance may not reach a barrier."""

    what: str  # the sentence's subject, up to "under a condition that differs"
    line: int  # the line to point at: the barrier, or the jump
    control: ast.stmt  # the `if` / `while` / `for` whose condition differs between instances
    fix: str


def divergent_barrier(clone: LeafClone) -> Divergence | None:
    """The first barrier of ``clone`` that some instances may not reach, or ``None``.

    A barrier is divergent when it stands under an ``if``/``while``/``for`` whose condition
    (or iterable) is varying; when a ``break``/``continue`` under such a condition leaves or
    skips part of a loop holding barriers; or when it may run after a ``return`` under such a
    condition. Varying as ``Uniformity`` decides: instance ids of the leaf's own node (in a
    clone, reads of ``__hpvm_ctx[0..2]``), atomics, ``malloc``, random numbers and what is
    computed from them; parent ids, extents and parameters are uniform.
    """
    body = clone.func.body
    return _Divergences(Uniformity(set()).run(body)).block(body, None, None, None, [])


def check_uniform_barriers(clone: LeafClone, backend: str) -> None:
    """Raise ``CompileError`` naming the barrier and the condition when ``clone``'s leaf has a
    barrier some instances of one parent instance may not reach (read from its leaf IR,
    ``ir/leafir/barrier_check.py``; from the clone, ``divergent_barrier``, for a leaf outside
    the IR's dialect)."""
    leaf = clone.user
    middle = (
        "Every instance of one parent instance must reach the same barriers (on a GPU anything "
        f"else is undefined behaviour: a hang or wrong results), so the {backend} back end needs "
        "barriers under uniform conditions only (parameters, instance counts, parent ids, constants)"
    )
    tail = ", or run with target='interp', which reports what the instances did"
    try:
        ir = leaf_ir(leaf)
    except LeafIRUnsupported:
        ir = None
    if ir is not None:
        found_ir = ir_divergent_barrier(ir)
        if found_ir is not None:
            raise CompileError(divergence_message(ir, found_ir, middle) + tail)
        return
    found = divergent_barrier(clone)
    if found is None:
        return
    stmt = found.control
    cond = stmt.iter if isinstance(stmt, ast.For) else stmt.test  # type: ignore[attr-defined]
    varying = Uniformity(set()).run(clone.func.body)
    names = sorted({n.id for n in loads(cond) if n.id in varying and not n.id.startswith("__hpvm")})
    through = f" (through {', '.join(f'`{n}`' for n in names)})" if names else ""
    raise CompileError(
        f"leaf '{leaf.name}' ({leaf.location.file}:{found.line}): {found.what} under a condition "
        f"that differs between instances: line {stmt.lineno} (`{_line_text(leaf, stmt.lineno)}`) "
        f"depends on the instance id{through}. {middle} — {found.fix}{tail}"
    )


def _line_text(leaf: LeafFunction, line: int) -> str:
    try:
        lines = leaf.source.splitlines()
    except (OSError, TypeError):
        return ""
    index = line - leaf.source_line
    return lines[index].strip() if 0 <= index < len(lines) else ""


class _Divergences:
    """The search of ``divergent_barrier``: statements in order, with what encloses them."""

    def __init__(self, varying: set[str]):
        self.varying = varying

    def block(
        self,
        stmts: list[ast.stmt],
        ctrl: ast.stmt | None,
        loop_ctrl: ast.stmt | None,
        loop: ast.stmt | None,
        after: list[ast.stmt],
    ) -> Divergence | None:
        """``ctrl``: the outermost enclosing statement with a varying condition; ``loop_ctrl``:
        the same inside the innermost enclosing ``loop``; ``after``: what may run once
        ``stmts`` are done (later statements of enclosing blocks, enclosing loops again)."""
        for k, s in enumerate(stmts):
            later = [*stmts[k + 1 :], *after]
            found = self.stmt(s, ctrl, loop_ctrl, loop, later)
            if found is not None:
                return found
        return None

    def stmt(
        self,
        s: ast.stmt,
        ctrl: ast.stmt | None,
        loop_ctrl: ast.stmt | None,
        loop: ast.stmt | None,
        later: list[ast.stmt],
    ) -> Divergence | None:
        if is_barrier(s):
            if ctrl is None:
                return None
            return Divergence(
                f"hpvm.barrier() on line {s.lineno} is",
                s.lineno,
                ctrl,
                "move the barrier out of the branch or loop",
            )
        if isinstance(s, ast.Return):
            lines = [line for t in later for line in barrier_lines(t)]
            if ctrl is None or not lines:
                return None
            return Divergence(
                f"hpvm.barrier() on line {min(lines)} may run after the `return` on line {s.lineno}, "
                "which is",
                min(lines),
                ctrl,
                "return after the last barrier, or make the `return` condition uniform",
            )
        if isinstance(s, (ast.Break, ast.Continue)):
            if loop_ctrl is None or loop is None or not barrier_lines(loop):
                return None
            word = type(s).__name__.lower()
            return Divergence(
                f"`{word}` on line {s.lineno} of a loop with barriers (line {min(barrier_lines(loop))}) is",
                s.lineno,
                loop_ctrl,
                f"make the `{word}` condition uniform",
            )
        if isinstance(s, ast.If):
            c = s if reads_varying(s.test, self.varying) else None
            return self.block(s.body, ctrl or c, loop_ctrl or c, loop, later) or self.block(
                s.orelse, ctrl or c, loop_ctrl or c, loop, later
            )
        if isinstance(s, (ast.For, ast.While)):
            head = s.iter if isinstance(s, ast.For) else s.test
            c = s if reads_varying(head, self.varying) else None
            return self.block(s.body, ctrl or c, c, s, [s, *later]) or self.block(
                s.orelse, ctrl or c, loop_ctrl or c, loop, later
            )
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None
        # with, try: their blocks run under the same control
        blocks = [
            getattr(s, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(s, f, None), list)
        ]
        blocks += [h.body for h in getattr(s, "handlers", [])]
        for b in blocks:
            found = self.block(b, ctrl, loop_ctrl, loop, later)
            if found is not None:
                return found
        return None
