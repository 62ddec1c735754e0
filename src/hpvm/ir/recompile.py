"""Compiling a leaf's rewritten ``def`` so that it runs where the leaf runs.

The interpreter runs leaves outside the leaf IR's dialect rewritten (arithmetic with Numba's
types by ``ir/oplowering.py``, barriers as ``yield``); it lives here, below the back ends,
with the syntax-tree lowering it compiles, so that no back end builds or reads a tree. The
rewritten function must see what the original sees when it runs — the leaf's live
module globals and its closure cells, not a snapshot — must define nothing in the leaf's
module, and must carry the leaf's file and line numbers, so that tracebacks and the
interpreter's messages name the line the user wrote.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from typing import Any

from . import pyast
from .graph import LeafFunction


def recompile(fn: LeafFunction, func: ast.FunctionDef, names: dict[str, Any]) -> Callable[..., Any]:
    """``func`` (the leaf's ``def``, rewritten, with the leaf's line numbers) as a function in
    the leaf's globals with the leaf's closure; ``names`` are the extra names the rewritten
    code calls, bound as closure cells of their own."""
    pyfunc = fn.pyfunc
    env = pyfunc.__globals__
    func.decorator_list = []  # not decorated again: it is the leaf's body, not a new leaf
    func.returns = None
    for arg in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs):
        arg.annotation = None
    freevars = pyfunc.__code__.co_freevars
    # A factory taking the free variables and the extra names as parameters keeps them free
    # variables of the recompiled function; they are then bound to the right cells.
    params = [*freevars, *sorted(names)]
    factory = pyast.parse(f"def __hpvm_factory__({', '.join(params)}):\n    pass\n").body[0]
    assert isinstance(factory, ast.FunctionDef)
    factory.body = [func, ast.Return(ast.Name(func.name, ast.Load()))]
    module = ast.fix_missing_locations(ast.Module(body=[factory], type_ignores=[]))
    namespace: dict[str, Any] = {}
    exec(pyast.compile_tree(module, fn.code_file, "exec"), env, namespace)
    inner = namespace["__hpvm_factory__"](*(None for _ in params))
    cells = dict(zip(freevars, pyfunc.__closure__ or ()))
    cells.update((name, types.CellType(value)) for name, value in names.items())
    closure = tuple(cells[name] for name in inner.__code__.co_freevars)
    return types.FunctionType(inner.__code__, env, inner.__name__, inner.__defaults__, closure)
