"""The work-item-loop plan of a barrier leaf (``barriers.py``): its body cut at barriers.

A barrier leaf's group function runs its body as *regions* (barrier-free statements every
instance runs before the next region starts: one work-item loop each) and *driver*
statements (a uniform ``if``/``while``/``for`` holding barriers, run once, whose bodies are
planned recursively). This module holds that plan's pieces, the names the group function
uses for the leaf's instance ids, extents and parent context (``SubstituteCtx`` puts them in
place of the context tuple's reads), and ``Scan``, which finds a region's live-ins: the
values that must cross a barrier. Shared by the analysis (``barriers.py``,
``barrier_locals.py``) and the emission (``barrier_emit.py``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from ...ir import instance_context as ictx
from ...ir import pyast
from ...passes.clone_leaves import CTX_PARAM
from ...passes.uniformity import loads as _loads
from ...passes.uniformity import stores as _stores

# Names of the group function (the leaf's own names never start with "__hpvm").
IDS = ("__hpvm_i", "__hpvm_j", "__hpvm_k")
EXTENTS = ("__hpvm_s0", "__hpvm_s1", "__hpvm_s2")
DIMS = "__hpvm_dims"
# Which of them holds each value of the leaf's own level of the context tuple.
OWN_LEVEL = {
    **{ictx.ID + axis: name for axis, name in enumerate(IDS)},
    **{ictx.EXTENT + axis: name for axis, name in enumerate(EXTENTS)},
    ictx.DIMS: DIMS,
}
PARENT = "__hpvm_ctx_parent"
TOTAL = "__hpvm_total"
FLAT = "__hpvm_f"
RET = "__hpvm_ret"
DONE = "__hpvm_done"
NP = "__hpvm_np"
# Builtins a run-once uniform region may call (pure, no side effects on arrays).
PURE_BUILTINS = {"len", "min", "max", "abs", "int", "float", "bool", "round"}
# Array methods that return a view of their array, not a new array.
VIEW_METHODS = {"view", "reshape", "transpose", "swapaxes", "squeeze"}


# ---------------------------------------------------------------------------------------
# Small AST helpers (the shared ones are in passes/uniformity.py)


def parse(source: str) -> list[ast.stmt]:
    return pyast.parse(source).body


def is_noop(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))


def np_dtype(dtype: Any) -> str:
    return f"{NP}.bool_" if dtype.kind == "b" else f"{NP}.{dtype.name}"


# ---------------------------------------------------------------------------------------
# The leaf's context tuple becomes the group function's loop variables and parameters


class SubstituteCtx(ast.NodeTransformer):
    """``__hpvm_ctx[c]`` → the instance ids, the extents, or ``__hpvm_ctx_parent[c - 7]``."""

    def __init__(self, fail: Any, parent_len: int):
        self.fail, self.parent_len = fail, parent_len

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id == CTX_PARAM:
            c = node.slice.value if isinstance(node.slice, ast.Constant) else None
            if not isinstance(c, int) or not 0 <= c < ictx.STRIDE + self.parent_len:
                raise self.fail(node.lineno, "a structure query the cpu back end cannot place")
            if c < ictx.STRIDE:
                return ast.copy_location(ast.Name(OWN_LEVEL[c], ast.Load()), node)
            read = ast.Subscript(ast.Name(PARENT, ast.Load()), ast.Constant(c - ictx.STRIDE), ast.Load())
            return ast.copy_location(read, node)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == CTX_PARAM:
            raise self.fail(node.lineno, "the node context is used other than by a structure query")
        return node


# ---------------------------------------------------------------------------------------
# The plan: regions (work-item loops) and driver statements


@dataclass
class Region:
    """Barrier-free statements that every instance runs before the next region starts."""

    stmts: list[ast.stmt]
    exposed: dict[str, int] = field(default_factory=dict)  # read before written -> line
    assigned: set[str] = field(default_factory=set)
    definite: set[str] = field(default_factory=set)  # assigned on every path
    final: bool = False  # the last region of the leaf: where `return` may be


@dataclass
class Driver:
    """A uniform ``if``/``while``/``for`` holding barriers, or a ``break``/``continue`` of one."""

    stmt: ast.stmt
    body: list[Region | Driver]
    orelse: list[Region | Driver]


class Scan:
    """Which names a region reads before writing them (its live-ins) and which it writes."""

    def __init__(self) -> None:
        self.exposed: dict[str, int] = {}
        self.assigned: set[str] = set()

    def block(self, stmts: list[ast.stmt], defined: set[str]) -> set[str]:
        for s in stmts:
            defined = self.stmt(s, defined)
        return defined

    def _read(self, node: ast.AST, defined: set[str]) -> None:
        for n in _loads(node):
            if n.id not in defined:
                self.exposed.setdefault(n.id, n.lineno)

    def _define(self, target: ast.AST, defined: set[str]) -> set[str]:
        names = _stores(target)
        self.assigned |= names
        return defined | names

    def stmt(self, s: ast.stmt, defined: set[str]) -> set[str]:
        if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            if s.value is None:
                return defined
            self._read(s.value, defined)
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for t in targets:
                if isinstance(s, ast.AugAssign) and isinstance(t, ast.Name) and t.id not in defined:
                    self.exposed.setdefault(t.id, t.lineno)
                self._read(t, defined)
                defined = self._define(t, defined)
            return defined
        if isinstance(s, ast.If):
            self._read(s.test, defined)
            return self.block(s.body, set(defined)) & self.block(s.orelse, set(defined))
        if isinstance(s, (ast.For, ast.While)):
            inner = set(defined)
            if isinstance(s, ast.For):
                self._read(s.iter, defined)
                inner = self._define(s.target, inner)
            else:
                self._read(s.test, defined)
            self.block(s.body, inner)
            self.block(s.orelse, set(defined))
            return defined  # the body may not run
        # Anything else (expressions, try, with…): reads, and assignments that may not happen.
        self._read(s, defined)
        self.assigned |= _stores(s)
        return defined
