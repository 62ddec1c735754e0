"""Barriers in the interpreter: leaves become generators that pause at each barrier.

A leaf that calls ``hpvm.barrier()`` is recompiled with every barrier statement replaced by
``yield <line>``. The interpreter then runs all instances of the leaf within one parent
instance in lock step: each phase advances every instance to its next barrier. That gives
barriers their real semantics deterministically, and lets the interpreter catch instances
that reach different barriers, or that finish while others wait.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from ...errors import CompileError
from ...ir.graph import LeafFunction
from ...ir.leafinfo import intrinsic_name, leaf_namespace, parse_leaf
from .arith_rewrite import rewrite_arithmetic
from .recompile import recompile


class _BarrierToYield(ast.NodeTransformer):
    def __init__(self, fn: LeafFunction, env: dict[str, Any]):
        self.fn, self.env = fn, env

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        call = node.value
        if isinstance(call, ast.Call) and intrinsic_name(call, self.env) == "barrier":
            return ast.copy_location(ast.Expr(ast.Yield(ast.Constant(node.lineno))), node)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if intrinsic_name(node, self.env) == "barrier":
            raise CompileError(
                f"leaf '{self.fn.name}' ({self.fn.location.file}:{node.lineno}): hpvm.barrier() "
                "must be a statement of its own"
            )
        return self.generic_visit(node)


def barrier_generator(fn: LeafFunction) -> Callable[..., Any]:
    """``fn`` as a generator function that yields the line of each barrier it reaches, its
    arithmetic rewritten to Numba's types as every leaf's is (``arith_rewrite.py``)."""
    func = parse_leaf(fn)
    if func is None:
        raise CompileError(f"leaf '{fn.name}' ({fn.location}) uses barrier() but its source is unavailable")
    func = _BarrierToYield(fn, fn.pyfunc.__globals__).visit(func)
    names = rewrite_arithmetic(func, leaf_namespace(fn))
    return recompile(fn, func, names)
