"""Barriers in the interpreter: leaves become generators that pause at each barrier.

A leaf that calls ``hpvm.barrier()`` is recompiled with every barrier statement replaced by
``yield <line>``. The interpreter then runs all instances of the leaf within one parent
instance in lock step: each phase advances every instance to its next barrier. That gives
barriers their real semantics deterministically, and lets the interpreter catch instances
that reach different barriers, or that finish while others wait.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from typing import Any

from ...errors import CompileError
from ...ir.graph import LeafFunction
from ...ir.leafinfo import intrinsic_name, parse_leaf


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

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.decorator_list = []
        node.returns = None
        for arg in node.args.args:
            arg.annotation = None
        return self.generic_visit(node)


def barrier_generator(fn: LeafFunction) -> Callable[..., Any]:
    """``fn`` as a generator function that yields the line of each barrier it reaches.

    The recompiled function shares the leaf's live module globals and its closure cells, so
    it sees what the original would see when it runs (not a snapshot taken when it was
    first recompiled), and defines nothing in the leaf's module.
    """
    pyfunc = fn.pyfunc
    env = pyfunc.__globals__
    func = parse_leaf(fn)
    if func is None:
        raise CompileError(f"leaf '{fn.name}' ({fn.location}) uses barrier() but its source is unavailable")
    func = _BarrierToYield(fn, env).visit(func)
    freevars = pyfunc.__code__.co_freevars
    if freevars:
        # Nest the def in a factory taking the free variables as parameters, so that they
        # stay free variables of the recompiled function; then bind them to the original cells.
        factory = ast.parse(f"def __hpvm_factory__({', '.join(freevars)}):\n    pass\n").body[0]
        assert isinstance(factory, ast.FunctionDef)
        factory.body = [func, ast.Return(ast.Name(func.name, ast.Load()))]
        body: list[ast.stmt] = [factory]
    else:
        body = [func]
    module = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
    namespace: dict[str, Any] = {}
    exec(compile(module, fn.location.file, "exec"), env, namespace)
    if not freevars:
        return namespace[func.name]
    inner = namespace["__hpvm_factory__"](*(None for _ in freevars))
    cells = dict(zip(freevars, pyfunc.__closure__ or ()))
    closure = tuple(cells[name] for name in inner.__code__.co_freevars)
    return types.FunctionType(inner.__code__, env, inner.__name__, inner.__defaults__, closure)
