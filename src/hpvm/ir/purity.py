"""Whether a leaf computes its outputs from its inputs and its own node's grid alone.

The GPU back ends run allocation leaves on the host, once per parent instance; a block
reduction has one parent instance per block (16,384 in the benchmark), and running the leaf
once and copying its result to every parent is what makes that affordable. That is right
only when every run would compute the same thing, so this analysis must be sound: it
answers ``True`` only when it can see the whole computation — the leaf's body and, through
their source, every Python function it calls — and finds nothing that could differ between
runs:

* no ancestor query (``hpvm.get_parent_node``), barrier or atomic — only ``malloc``,
  ``get_node`` and the queries of the leaf's own node;
* no state: no ``global``/``nonlocal``, no ``import`` inside a function, no generator, and
  every name read from a module or closure holds a constant (numbers, strings, ``None``,
  tuples of them), a module or function this analysis accepts, or a type that builds
  values (``int``, ``np.float32``...) — never a list, a dict, an array or another object
  that a run could change or that could change between runs;
* only calls it knows to be pure: Python functions it can read (checked the same way), the
  built-ins below, ``math``/``cmath`` and NumPy's ufuncs and array constructors — not
  ``random``, ``time``, ``np.random``, file input, ``print``, ``id``...

Methods called on the leaf's own values (``buf.view(np.float32)``, ``a.fill(0)``) are
fine: those values come from what was checked. When in doubt the answer is ``False``, and
the leaf runs in every parent instance as written.

A leaf in the leaf IR's dialect is answered from its IR, once per IR
(``leafir/analyses/effects.ParentIndependence``: there, only its intrinsics can make it
depend on the parent). The reading of Python below is for leaves outside the dialect
(helper functions, slices, methods...) and leaves with a ``raise`` (an opaque exception
text in the IR): the analysis must see every function a leaf calls, and those are Python.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types
from typing import Any

import numpy as np

from ..errors import HPVMError
from . import pyast
from .graph import LeafFunction
from .leafinfo import leaf_namespace, parse_leaf
from .leafir.analyses.effects import PARENT_INDEPENDENT_INTRINSICS, parent_independence
from .leafir.build import leaf_ir

_INTRINSICS = PARENT_INDEPENDENT_INTRINSICS
_BUILTINS = frozenset(
    {
        "abs", "all", "any", "bool", "bytes", "complex", "dict", "divmod", "enumerate", "filter",
        "float", "frozenset", "int", "isinstance", "len", "list", "map", "max", "min", "pow",
        "range", "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "zip",
    }
)  # fmt: skip
_NUMPY = frozenset(
    {
        "arange", "array", "asarray", "ascontiguousarray", "concatenate", "copy", "cumsum",
        "dtype", "empty", "empty_like", "finfo", "full", "full_like", "iinfo", "linspace",
        "ones", "ones_like", "prod", "reshape", "stack", "sum", "zeros", "zeros_like",
    }
)  # fmt: skip
_MODULES = frozenset({"math", "cmath", "numpy"})
_CONSTANTS = (type(None), bool, int, float, complex, str, bytes, np.generic, np.dtype)


def parent_independent(fn: LeafFunction) -> bool:
    """Whether every run of ``fn`` with the same inputs over the same grid computes the same
    outputs (see the module doc); decided once per leaf body."""
    cached = fn.__dict__.get("_parent_independent")
    if cached is not None and cached[0] is fn.body:
        return cached[1]
    verdict = _from_ir(fn)
    if verdict is None:  # outside the leaf IR's dialect (helper calls...), or a raise
        func = parse_leaf(fn)
        verdict = func is not None and _Checker(set()).function(func, leaf_namespace(fn))
    fn.__dict__["_parent_independent"] = (fn.body, verdict)
    return verdict


def _from_ir(fn: LeafFunction) -> bool | None:
    """The answer of the leaf IR's analysis (``leafir/analyses/effects.ParentIndependence``)
    for a leaf in its dialect, or ``None``: the syntax-tree reading below decides."""
    try:
        ir = leaf_ir(fn)
    except HPVMError:
        return None
    return parent_independence(ir)


class _Checker:
    """Reads functions and the values they name; ``seen`` holds the code objects being read
    (a recursive call is judged by the rest of the function)."""

    def __init__(self, seen: set[types.CodeType]):
        self.seen = seen

    def function(self, func: ast.FunctionDef, env: dict[str, Any]) -> bool:
        nodes = self._runtime_nodes(func)
        bases = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
        for node in nodes:
            if (
                isinstance(node, (ast.Name, ast.Attribute))
                and id(node) not in bases
                and isinstance(_static_value(node, env), types.ModuleType)
            ):
                return False  # a module held or passed on: its attributes would go unchecked
            if isinstance(
                node,
                (
                    ast.Global,
                    ast.Nonlocal,
                    ast.Import,
                    ast.ImportFrom,
                    ast.Yield,
                    ast.YieldFrom,
                    ast.Await,
                    ast.AsyncFunctionDef,
                    ast.ClassDef,
                ),
            ):
                return False
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                if not self._name(node.id, env):
                    return False
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                base = _static_value(node.value, env)
                if base is not _UNKNOWN and not self.value(getattr(base, node.attr, _UNKNOWN)):
                    return False
        return True

    @staticmethod
    def _runtime_nodes(func: ast.FunctionDef) -> list[ast.AST]:
        """The nodes of ``func`` that run when it is called (not its annotations, decorators
        and defaults: those ran when it was defined)."""
        skip: set[int] = set()
        for n in ast.walk(func):
            if isinstance(n, (ast.FunctionDef, ast.Lambda)):
                args = n.args
                for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                    if a is not None and a.annotation is not None:
                        skip.add(id(a.annotation))
            if isinstance(n, ast.FunctionDef):
                skip.update(id(d) for d in n.decorator_list)
                if n.returns is not None:
                    skip.add(id(n.returns))
        out: list[ast.AST] = []
        todo: list[ast.AST] = [func]
        while todo:
            n = todo.pop()
            if id(n) in skip:
                continue
            out.append(n)
            todo.extend(ast.iter_child_nodes(n))
        return out

    def _name(self, name: str, env: dict[str, Any]) -> bool:
        """A name read: a local (not in ``env`` nor a built-in), or an accepted value."""
        if name in env:
            return self.value(env[name])
        if hasattr(builtins, name):
            return name in _BUILTINS
        return True  # a local of the function: computed from what was checked

    def value(self, obj: Any) -> bool:
        """Whether reading ``obj`` (from a module or a closure) keeps the run pure."""
        if isinstance(obj, _CONSTANTS):
            return True
        if isinstance(obj, (tuple, frozenset)):
            return all(isinstance(v, (*_CONSTANTS, tuple, frozenset)) and self.value(v) for v in obj)
        if isinstance(obj, types.ModuleType):
            return obj.__name__ in _MODULES or obj.__name__ == "hpvm" or obj.__name__.startswith("hpvm.")
        if isinstance(obj, np.ufunc):
            return True
        if isinstance(obj, type):
            return obj.__module__ == "builtins" and obj.__name__ in _BUILTINS or issubclass(obj, np.generic)
        module = getattr(obj, "__module__", None) or ""
        if module == "hpvm" or module.startswith("hpvm."):
            return getattr(obj, "__name__", None) in _INTRINSICS
        if isinstance(obj, types.BuiltinFunctionType):
            if module == "builtins":
                return obj.__name__ in _BUILTINS
            return module in ("math", "cmath") or _numpy_function(obj)
        if _numpy_function(obj):
            return True
        if isinstance(obj, types.FunctionType) and not module.startswith("numpy"):
            return self._python_function(obj)
        return False

    def _python_function(self, obj: types.FunctionType) -> bool:
        """A user's helper: pure if its own code is (read from its source)."""
        code = obj.__code__
        if code in self.seen:
            return True
        if obj.__name__ == "<lambda>" or code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE):
            return False
        defaults = (*(obj.__defaults__ or ()), *(obj.__kwdefaults__ or {}).values())
        if not all(self.value(d) for d in defaults):
            return False
        try:
            tree = pyast.parse(textwrap.dedent(inspect.getsource(obj)))
        except (OSError, TypeError, SyntaxError):
            return False
        func = tree.body[0] if tree.body else None
        if not isinstance(func, ast.FunctionDef):
            return False
        env = dict(obj.__globals__)
        for name, cell in zip(code.co_freevars, obj.__closure__ or ()):
            try:
                env[name] = cell.cell_contents
            except ValueError:  # an empty cell
                return False
        self.seen.add(code)
        return self.function(func, env)


_UNKNOWN = object()


def _static_value(expr: ast.expr, env: dict[str, Any]) -> Any:
    """The value of a name or attribute chain read from ``env`` (a module, a constant...), or
    ``_UNKNOWN`` for anything computed when the function runs."""
    if isinstance(expr, ast.Name):
        if expr.id in env:
            return env[expr.id]
        return getattr(builtins, expr.id, _UNKNOWN)
    if isinstance(expr, ast.Attribute):
        base = _static_value(expr.value, env)
        return _UNKNOWN if base is _UNKNOWN else getattr(base, expr.attr, _UNKNOWN)
    return _UNKNOWN


def _numpy_function(obj: Any) -> bool:
    name = getattr(obj, "__name__", None)
    return name in _NUMPY and getattr(np, name, None) is obj
