"""Uniformity: which values of a cloned leaf may differ between its instances.

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

from .clone_leaves import BARRIER_MARKER

# Calls whose result differs per instance even with uniform arguments.
_VARYING_CALL = re.compile(r"^__hpvm_(atomic_\w+|malloc)$")


def walk_own(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` that does not enter nested functions, lambdas or classes."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if n is node or not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(n))


def is_barrier(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Name)
        and stmt.value.func.id == BARRIER_MARKER
    )


def barrier_lines(node: ast.AST) -> list[int]:
    return sorted(n.lineno for n in walk_own(node) if isinstance(n, ast.stmt) and is_barrier(n))


def escaping_jump(stmt: ast.stmt) -> ast.stmt | None:
    """The first ``break``/``continue`` in ``stmt`` that leaves a loop enclosing ``stmt``."""
    if isinstance(stmt, (ast.Break, ast.Continue)):
        return stmt
    if isinstance(stmt, (ast.For, ast.While)):
        children = stmt.orelse  # a loop's own body breaks the loop itself
    elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return None
    else:
        children = [s for s in ast.iter_child_nodes(stmt) if isinstance(s, ast.stmt)]
    return next((j for j in map(escaping_jump, children) if j is not None), None)


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
