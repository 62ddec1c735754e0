"""HPVM intrinsics in the helper functions a leaf calls: seed 000 forbids them.

Seed 000: "The node function may call additional, auxiliary functions. However, the
auxiliary functions are not allowed to include any HPVM intrinsics, as they are not
considered to be part of the HPVM node hierarchy." The interpreter would run such a call
(the intrinsic finds the running instance on the thread) and ``cpu`` would refuse the
helper when it compiles, so the verifier checks the rule for every back end: it follows
the leaf's calls of the user's Python functions — names resolved in the leaf's namespace
(``leafinfo.leaf_namespace``), then in each helper's — recursively, and reports every
intrinsic or builder call found in one, with the chain of calls that reaches it.

What it follows: calls ``f(...)`` and ``module.f(...)`` of plain functions, and of the
functions inside decorated ones (``@numba.njit`` helpers: ``py_func``, or ``__wrapped__``),
whose source can be read and which are the user's (not hpvm's, the standard library's or
an installed package's) — and, in a leaf read from a program file whose code has not run,
the ``def`` statements of its own module text (``StaticDef``: their syntax trees; names
are resolved as ``leafinfo.visible_names`` says). A function reached another way (stored
in a container, passed as an argument) is not seen; the interpreter still reports a
barrier called from one.
"""

from __future__ import annotations

import ast
import builtins
import copy
import textwrap
import types
from dataclasses import dataclass
from typing import Any

from . import pyast
from .graph import LeafFunction, function_source
from .leafinfo import intrinsic_name, parse_leaf, visible_names
from .moduletext import StaticDef
from .pysource import is_library

MAX_DEPTH = 16  # helpers calling helpers: deeper chains are not followed


@dataclass(frozen=True)
class Step:
    """One call on the way from the leaf to the helper: ``name`` called at ``file:line``."""

    name: str
    file: str
    line: int
    defined_at: str  # "file:line" of the called function's def


@dataclass(frozen=True)
class HelperIntrinsic:
    """An intrinsic called at ``file:line`` in the last helper of ``chain``."""

    intrinsic: str
    file: str
    line: int
    chain: tuple[Step, ...]  # the leaf's call first


def helper_intrinsics(leaf: LeafFunction) -> list[HelperIntrinsic]:
    """Every intrinsic called in a helper function ``leaf`` reaches.

    Cached on the leaf (``set_source`` and running its text clear it) once every name the
    leaf and its helpers call is defined: ``@hpvm.leaf`` verifies the leaf when its ``def``
    runs, and a helper defined further down the module is found when the program is
    verified again (at ``launch``, by ``hpvm.verify``).
    """
    found = leaf.__dict__.get("_helper_intrinsics")
    if found is None:
        found, complete = _find(leaf)
        if complete:
            leaf.__dict__["_helper_intrinsics"] = found
    return found


def _find(leaf: LeafFunction) -> tuple[list[HelperIntrinsic], bool]:
    """What ``helper_intrinsics`` returns, and whether every called name was defined."""
    tree = parse_leaf(leaf)
    if tree is None:
        return [], True
    try:
        env = visible_names(leaf)
    except Exception:  # a body without a callable (never for Python bodies)
        return [], True
    found: list[HelperIntrinsic] = []
    complete = True
    pending = leaf.pending_code
    own = env.get(pending.name) if pending is not None else leaf.pyfunc
    seen: set[Any] = {_key(own)} if isinstance(own, (types.FunctionType, StaticDef)) else set()
    where = leaf.where

    def visit(tree: ast.AST, env: dict[str, Any], chain: tuple[Step, ...], locate: Any) -> None:
        nonlocal complete
        local = _assigned(tree)
        for call in _calls(tree):
            base = _base_name(call.func)
            if base is not None and base not in env and base not in local and not hasattr(builtins, base):
                complete = False  # (not defined yet: the module is still being run)
            if intrinsic_name(call, env) is not None:
                continue  # the leaf's own intrinsics are legal; a helper's were recorded below
            func = _helper(call.func, env)
            if func is None or _key(func) in seen or len(chain) >= MAX_DEPTH:
                continue
            seen.add(_key(func))
            parsed = _parse(func)
            if parsed is None:
                continue
            body, file = parsed
            at = locate(call.lineno)
            step = Step(_name(call.func), at.file, at.line, f"{file}:{body.lineno}")
            inner_env = _namespace(func)
            for inner in _calls(body):
                name = intrinsic_name(inner, inner_env)
                if name is not None:
                    found.append(HelperIntrinsic(name, file, inner.lineno, (*chain, step)))
            visit(body, inner_env, (*chain, step), lambda line, file=file: _Place(file, line))

    visit(tree, env, (), where)
    return found, complete


@dataclass(frozen=True)
class _Place:
    file: str
    line: int


def _calls(tree: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)]


def _base_name(expr: ast.expr) -> str | None:
    """``f`` for ``f(...)`` and ``m.f(...)``: the name the call looks up first."""
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def _assigned(tree: ast.AST) -> set[str]:
    """Names bound inside a function (parameters, assignments, loops, imports, defs)."""
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    names |= {
        a.arg
        for n in ast.walk(tree)
        if isinstance(n, ast.arguments)
        for a in (*n.posonlyargs, *n.args, *n.kwonlyargs)
    }
    names |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    names |= {
        (a.asname or a.name).split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    return names


def _name(expr: ast.expr) -> str:
    return ast.unparse(expr)


Helper = types.FunctionType | StaticDef


def _key(func: Helper) -> Any:
    """What tells helpers apart (a function's code; a def's place in its module text)."""
    return (func.file, func.tree.lineno) if isinstance(func, StaticDef) else id(func.__code__)


def _helper(expr: ast.expr, env: dict[str, Any]) -> Helper | None:
    """The user's Python function a call refers to (``f`` or ``module.f``), or None."""
    if isinstance(expr, ast.Name):
        value = env.get(expr.id)
        if isinstance(value, StaticDef):
            return value
    elif isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        module = env.get(expr.value.id)
        if not isinstance(module, types.ModuleType):
            return None
        value = getattr(module, expr.attr, None)
    else:
        return None
    inner = getattr(value, "py_func", None) or getattr(value, "__wrapped__", None)
    func = inner if isinstance(inner, types.FunctionType) else value
    if not isinstance(func, types.FunctionType) or func.__name__ == "<lambda>":
        return None
    module_name = getattr(func, "__module__", "") or ""
    if module_name == "hpvm" or module_name.startswith("hpvm.") or is_library(func):
        return None
    return func


user_function = _helper  # (for ``bounded.py``, which refuses a leaf calling one)


def _parse(func: Helper) -> tuple[ast.FunctionDef, str] | None:
    """The function's ``def`` with the line numbers of its file (without its decorators),
    and the file."""
    if isinstance(func, StaticDef):
        tree = copy.copy(func.tree)  # (shallow: the module's tree is shared)
        tree.decorator_list = []
        return tree, func.file
    try:
        source, line = function_source(func)
        tree = pyast.parse(textwrap.dedent(source))
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    ast.increment_lineno(tree, line - 1)
    body = tree.body[0] if tree.body else None
    if not isinstance(body, ast.FunctionDef):
        return None
    return body, func.__code__.co_filename


def _namespace(func: Helper) -> dict[str, Any]:
    """The names a helper's code sees: its module's globals and its closure's values (a
    ``def`` of a module text that has not run: what that text binds statically)."""
    if isinstance(func, StaticDef):
        return func.module.static_names()
    namespace = dict(func.__globals__)
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            namespace[name] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    return namespace
