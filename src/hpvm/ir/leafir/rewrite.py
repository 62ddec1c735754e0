"""Rewriting a leaf IR expression by expression: the one traversal leaf passes share.

Why: a pass that changes some expressions of a leaf (``dask/offsets.py`` shifts a chunk's
instance ids) rebuilds every statement and expression around them; written once here,
over the dialect's frozen dataclasses, so no pass walks the IR by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any

from . import ops

#: Called on each expression after its operands were rewritten: the replacement, or the
#: expression itself.
ExprRule = Callable[[ops.Expr], ops.Expr]


def rewrite_expr(e: ops.Expr, rule: ExprRule) -> ops.Expr:
    """``e`` with ``rule`` applied bottom-up to it and every expression inside it."""
    return rule(_rebuild(e, rule))


def rewrite_block(block: ops.Block, rule: ExprRule) -> ops.Block:
    """Every statement of ``block`` (nested blocks included) with its expressions rewritten."""
    return tuple(_rebuild(stmt, rule) for stmt in block)


#: A statement rule: the statements that replace ``stmt``, or ``None`` to keep it (its nested
#: blocks rewritten).
StmtRule = Callable[[ops.Stmt], "list[ops.Stmt] | tuple[ops.Stmt, ...] | None"]


def rewrite_stmts(block: ops.Block, rule: StmtRule) -> ops.Block:
    """``block`` with ``rule`` applied to every statement, nested blocks (loops, ifs) too: a
    statement the rule replaces is replaced as it is (its replacement is not visited), one it
    keeps has its nested blocks rewritten. The statement-level passes (privatization,
    private arrays) are this walk and their rule."""
    out: list[ops.Stmt] = []
    for stmt in block:
        replaced = rule(stmt)
        if replaced is not None:
            out += replaced
        elif isinstance(stmt, (ops.For, ops.While)):
            out.append(replace(stmt, body=rewrite_stmts(stmt.body, rule)))
        elif isinstance(stmt, ops.If):
            out.append(
                replace(stmt, body=rewrite_stmts(stmt.body, rule), orelse=rewrite_stmts(stmt.orelse, rule))
            )
        else:
            out.append(stmt)
    return tuple(out)


def rewrite_own_exprs(stmt: ops.Stmt, rule: ExprRule) -> ops.Stmt:
    """``stmt`` with the expressions it holds itself rewritten; its nested blocks (a loop's
    body, an if's branches) as they are — for a pass that treats each statement on its own
    (``leafir/lowering.py`` names each problem's line)."""
    return _rebuild(stmt, rule, deep=False)


def _rebuild(node: Any, rule: ExprRule, deep: bool = True) -> Any:
    changes = {}
    for f in fields(node):
        if not f.init:
            continue
        value = getattr(node, f.name)
        if not deep and isinstance(value, tuple) and value and isinstance(value[0], ops.Stmt):  # type: ignore[arg-type]
            continue
        new = _field(value, rule)
        if new is not value:
            changes[f.name] = new
    return replace(node, **changes) if changes else node


def _field(value: Any, rule: ExprRule) -> Any:
    if isinstance(value, ops.Expr):  # type: ignore[arg-type]
        new = rewrite_expr(value, rule)
        return value if new == value else new
    if isinstance(value, ops.Stmt):  # type: ignore[arg-type]
        return _rebuild(value, rule)
    if isinstance(value, tuple) and value and isinstance(value[0], (ops.Expr, ops.Stmt)):  # type: ignore[arg-type]
        new = tuple(_field(v, rule) for v in value)
        return value if all(a is b for a, b in zip(new, value)) else new
    return value


__all__ = ["ExprRule", "rewrite_block", "rewrite_expr", "rewrite_own_exprs"]
