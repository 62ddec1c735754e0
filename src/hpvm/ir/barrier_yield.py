"""A barrier leaf's ``def`` with every ``hpvm.barrier()`` statement a ``yield <line>``.

Why here, below the back ends: the interpreter runs a barrier leaf as a generator that
pauses at each barrier (``backends/interp/barriers.py``), made from the leaf's syntax tree
with its arithmetic rewritten to Numba's types (``arith_rewrite.py``). No back end reads
Python (issue 25), so the one syntax-tree rewrite this needs lives with the other readings
of a leaf's Python (``leafinfo.py``). A barrier leaf in the leaf IR's dialect does not come
here: the interpreter writes its barriers as ``yield`` in the code it writes from the IR
(``backends/interp/from_ir.py``); this serves the barrier leaves outside the dialect.
"""

from __future__ import annotations

import ast
from typing import Any

from ..errors import CompileError
from .graph import LeafFunction
from .leafinfo import intrinsic_name, parse_leaf


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


def yielding_def(fn: LeafFunction) -> ast.FunctionDef:
    """``fn``'s ``def`` (the leaf's lines) with each barrier statement ``yield <its line>``."""
    func = parse_leaf(fn)
    if func is None:
        raise CompileError(f"leaf '{fn.name}' ({fn.location}) uses barrier() but its source is unavailable")
    result = _BarrierToYield(fn, fn.pyfunc.__globals__).visit(func)
    assert isinstance(result, ast.FunctionDef)
    return result
