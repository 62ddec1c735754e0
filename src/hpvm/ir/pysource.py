"""Leaf Python as self-contained module text, and back: what makes a leaf's code portable.

A leaf written in Python lives in its module: it sees that module's imports, constants and
helper functions. To write it down on its own — in a saved ``.hpvm`` program, or as a body
in the text form — ``module_source`` collects what the function needs into one small module
(imports, constants, helpers, then the ``def``, always the last one). The reverse, reading
such a module text back, is ``ir/moduletext.py``: compiled when it is read, run only when
the leaf must run. A leaf read that way is written out again as the text it was read from.
"""

from __future__ import annotations

import ast
import dis
import inspect
import linecache
import math
import os
import sys
import sysconfig
import textwrap
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import VerificationError
from . import pyast
from .bodies import GeneratedBody, PythonBody
from .graph import NodeFunction, function_source
from .moduletext import ModuleText, Names

if TYPE_CHECKING:
    from .graph import LeafFunction

MAX_ARRAY_ELEMENTS = 65536


def leaf_module_source(fn: LeafFunction) -> str:
    """The leaf's def with the imports, constants and helpers it needs, as a module: the
    module text it was read from, if it was (whether or not that has run), else collected."""
    body = fn.body
    if isinstance(body, PythonBody) and body.module is not None:
        return _ensure_newline(body.module.text)
    what = f"leaf '{fn.name}' ({fn.location})"
    try:
        source = fn.source
    except (OSError, TypeError) as e:
        raise VerificationError(f"{what} has no Python source to save ({e})") from None
    return module_source(fn.pyfunc, what, source)


def module_source(func: Callable[..., Any], what: str, source: str | None = None) -> str:
    """``func``'s def (``source``, or its own) preceded by what it needs from its globals."""
    if not isinstance(func, types.FunctionType):
        raise VerificationError(f"{what} is {type(func).__name__}, not a Python function; it cannot be saved")
    if source is None:
        try:
            source = function_source(func)[0]
        except (OSError, TypeError) as e:
            raise VerificationError(f"{what} has no Python source to save ({e})") from None
    writer = _ModuleWriter(what)
    writer.need_function(func, source, is_main=True)
    if func.__name__ in writer.values:
        writer.problems.append(
            f"{what} is defined as '{func.__name__}', the name of a global it uses; rename one of them"
        )
    return writer.render(source)


class _ModuleWriter:
    """Collects what a function needs from its globals: imports, constants, helpers.

    Names are found in the bytecode (``LOAD_GLOBAL``, in nested code too) and, for the
    expressions run when a ``def`` executes, in its defaults and decorators. Each name is
    resolved in the globals of the function that uses it; helpers are followed recursively.
    """

    def __init__(self, what: str):
        self.what = what
        self.imports: dict[str, str] = {}  # name -> import line
        self.constants: dict[str, str] = {}  # name -> assignment
        self.helpers: dict[str, str] = {}  # name -> def source (+ alias)
        self.values: dict[str, Any] = {}  # name -> the object it stands for
        self.visited: set[int] = set()
        self.problems: list[str] = []

    def render(self, main_source: str) -> str:
        if self.problems:
            raise VerificationError(self.problems)
        head = "\n".join(
            "\n".join(group.values()) + "\n" for group in (self.imports, self.constants) if group
        )
        blocks = [head] if head else []
        blocks.extend(self.helpers.values())
        blocks.append(_ensure_newline(main_source))
        return "\n\n".join(blocks)  # two blank lines between top-level blocks, as PEP 8 has it

    def need_function(self, func: types.FunctionType, source: str, is_main: bool = False) -> None:
        if id(func) in self.visited:
            return
        self.visited.add(id(func))
        owner = self.what if is_main else f"{self.what}: helper '{func.__name__}'"
        if func.__code__.co_freevars:
            names = ", ".join(func.__code__.co_freevars)
            self.problems.append(
                f"{owner} uses closure variable(s) {names} of an enclosing function; a saved "
                "program cannot capture them — make them module-level constants or parameters"
            )
            return
        names = dict.fromkeys(_global_names(func.__code__))
        names.update(dict.fromkeys(_def_time_names(source)))
        for name in names:
            self.need(name, func.__globals__, owner)

    def need(self, name: str, env: dict[str, Any], owner: str) -> None:
        if name not in env:
            return  # a builtin, or a name the code never finds (it fails the same way after loading)
        value = env[name]
        if name in self.values:
            if not _same(self.values[name], value):
                self.problems.append(
                    f"{owner} uses global '{name}', which means different things in the modules "
                    "of this leaf and its helpers; rename one of them"
                )
            return
        self.values[name] = value
        line = _import_line(name, value)
        if line is not None:
            self.imports[name] = line
            return
        literal = _literal(value)
        if literal is not None:
            self.constants[name] = f"{name} = {literal}"
            return
        if isinstance(value, NodeFunction):
            self.problems.append(
                f"{owner} uses node function '{name}'; leaves cannot call node functions — "
                "connect them with edges, or move shared code into a plain helper function"
            )
            return
        inner = getattr(value, "py_func", None) or getattr(value, "__wrapped__", None)
        if isinstance(inner, types.FunctionType) and inner is not value:
            self.need_decorated(name, value, inner, owner)
        elif isinstance(value, types.FunctionType):
            self.need_plain(name, value, owner)
        else:
            self.problems.append(
                f"{owner} uses global '{name}' ({type(value).__name__}), which cannot be written "
                "to a saved program; use a module, an int/float/bool/str constant, a NumPy "
                "array or a helper function, or pass the value as a parameter"
            )

    def need_plain(self, name: str, func: types.FunctionType, owner: str) -> None:
        if is_library(func):
            self.problems.append(
                f"{owner} uses '{name}', a library function that cannot be imported by its name; "
                "import its module instead (e.g. 'import numpy as np', then np.<function>)"
            )
            return
        if func.__name__ == "<lambda>":
            self.problems.append(f"{owner} uses '{name}', a lambda; write it as a def to save it")
            return
        try:
            source = function_source(func)[0]
        except (OSError, TypeError):
            self.problems.append(f"{owner} uses helper '{name}', whose source cannot be found")
            return
        alias = f"\n{name} = {func.__name__}\n" if func.__name__ != name else ""
        self.add_helper(name, func, _ensure_newline(source) + alias)

    def need_decorated(self, name: str, value: Any, inner: types.FunctionType, owner: str) -> None:
        """A decorated helper (``@numba.njit``, ``functools.wraps``): keep its decorators."""
        try:
            source = textwrap.dedent(inspect.getsource(inner))
        except (OSError, TypeError):
            self.problems.append(f"{owner} uses helper '{name}', whose source cannot be found")
            return
        if inner.__name__ != name:
            self.problems.append(
                f"{owner} uses '{name}', a decorated function defined as '{inner.__name__}'; "
                "it cannot be saved under another name"
            )
            return
        self.add_helper(name, inner, _ensure_newline(source))

    def add_helper(self, name: str, func: types.FunctionType, source: str) -> None:
        """Emit ``source`` after what its def line needs (decorators, defaults), then
        collect what its body needs (functions look globals up only when called)."""
        owner = f"{self.what}: helper '{name}'"
        for dep in _def_time_names(source):
            self.need(dep, func.__globals__, owner)
        self.helpers[name] = source
        self.need_function(func, source)


def _ensure_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _global_names(code: types.CodeType) -> list[str]:
    """Global names the code (and code nested in it) reads or writes, in first-use order."""
    names: list[str] = []
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"):
            names.append(ins.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.extend(_global_names(const))
    return names


def _def_time_names(source: str) -> list[str]:
    """Names in the defaults and decorators of the first def: evaluated when the def runs."""
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return []
    func = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None:
        return []
    roots: list[ast.AST] = [*func.decorator_list, *func.args.defaults]
    roots += [d for d in func.args.kw_defaults if d is not None]
    return [n.id for r in roots for n in ast.walk(r) if isinstance(n, ast.Name)]


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # arrays and other objects without a plain ==
        return False


# -- imports -------------------------------------------------------------------------------


def _import_line(name: str, value: Any) -> str | None:
    """``import m as name`` for modules, ``from m import x as name`` for library objects."""
    if isinstance(value, types.ModuleType):
        module = value.__name__
        if sys.modules.get(module) is not value or module == "__main__":
            return None
        return f"import {module}" if module == name else f"import {module} as {name}"
    if not is_library(value):
        return None
    found = _exporting_module(value)
    if found is None:
        return None
    module, attr = found
    return f"from {module} import {attr}" if attr == name else f"from {module} import {attr} as {name}"


def _exporting_module(value: Any) -> tuple[str, str] | None:
    """The shortest already-imported module path that exports ``value`` under its name."""
    attr = getattr(value, "__name__", None)
    module = getattr(value, "__module__", None)
    if not isinstance(attr, str) or not isinstance(module, str):
        return None
    parts = module.split(".")
    for i in range(1, len(parts) + 1):
        candidate = ".".join(parts[:i])
        mod = sys.modules.get(candidate)
        if mod is not None and getattr(mod, attr, None) is value:
            return candidate, attr
    return None


def _library_roots() -> list[str]:
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the hpvm package
    return [os.path.realpath(r) + os.sep for r in roots]


def is_library(value: Any) -> bool:
    """Whether ``value`` comes from the standard library, an installed package or hpvm.

    Library objects are imported by the saved file; user code is copied into it, so the
    file does not depend on the user's modules being importable where it is loaded.
    """
    module = getattr(value, "__module__", None)
    if not isinstance(module, str) or module == "__main__":
        return False
    mod = sys.modules.get(module)
    if mod is None:
        return False
    file = getattr(mod, "__file__", None)
    if file is None:
        return True  # a built-in module (math, _operator, ...)
    real = os.path.realpath(file)
    return any(real.startswith(root) for root in _library_roots())


# -- constants -----------------------------------------------------------------------------


def _literal(value: Any) -> str | None:
    """Python source that rebuilds ``value``, for plain constants and NumPy values; else None."""
    kind = type(value)
    if value is None or kind in (bool, int, str, bytes):
        return repr(value)
    if kind is float:
        return repr(value) if math.isfinite(value) else f'float("{value}")'
    if kind is complex:
        return f"complex({_literal(value.real)}, {_literal(value.imag)})"
    if kind is tuple:
        items = [_literal(v) for v in value]
        if any(i is None for i in items):
            return None
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"  # type: ignore[arg-type]
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufc" and value.size <= MAX_ARRAY_ELEMENTS:
        return f'__import__("numpy").array({_nested(value.tolist())}, dtype="{_dtype_name(value.dtype)}")'
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        name = type(value).__name__
        maker = (
            name if getattr(np, name, None) is type(value) else f'dtype("{_dtype_name(value.dtype)}").type'
        )
        return f'__import__("numpy").{maker}({_literal(value.item())})'
    return None


def _dtype_name(dtype: np.dtype) -> str:
    return dtype.name if dtype.isnative else dtype.str


def _nested(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_nested(v) for v in value) + "]"
    return _literal(value) or repr(value)


# ---------------------------------------------------------------------------------------
# Generated code


def generated_body(
    name: str,
    text: str,
    origin: str,
    lines: tuple[int, ...],
    written_at: tuple[str, int] | None = None,
    context: str | None = None,
    namespace: Names = None,
    static_base: Callable[[], Any] | None = None,
) -> GeneratedBody:
    """A ``GeneratedBody``: ``text`` compiled as a module under a file name of its own
    (registered with ``linecache``, so tracebacks quote it), line 1 being its first line, to
    run when the leaf must run; ``lines`` maps each of its lines to ``origin``'s.
    ``written_at`` (file, line): where ``text`` was read from, where its problems are
    reported; ``namespace``: the names the code sees besides its own (a clone sees its
    leaf's module), and ``static_base`` those the analyses see before it runs
    (``ModuleText``); ``context``: see ``GeneratedBody``."""
    filename = f"<generated from {origin}: leaf {name}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    module = ModuleText(
        text,
        1,
        filename,
        f"leaf '{name}'",
        namespace=namespace,
        static_base=static_base,
        report_at=written_at,
    )
    return GeneratedBody(None, text, origin, tuple(lines), context, module=module)


def unparse_with_lines(func: ast.FunctionDef) -> tuple[str, tuple[int, ...]]:
    """``func`` as source text, and for each line of it the line of ``func``'s own file it
    came from (0 where none): what a generated body keeps as its source map.

    The text is ``ast.unparse``'s; parsing it back gives the same tree, so the nodes of the
    two trees correspond one to one, and each generated line takes the original line of the
    first node that starts on it.
    """
    source = ast.unparse(func) + "\n"
    lines = [0] * source.count("\n")
    regenerated = pyast.parse(source).body[0]
    for new, old in zip(ast.walk(regenerated), ast.walk(func)):
        if type(new) is not type(old):  # (never expected: unparse round-trips the tree)
            return source, (func.lineno,) * len(lines)
        line = getattr(new, "lineno", None)
        if line is not None and 0 < line <= len(lines) and not lines[line - 1]:
            lines[line - 1] = getattr(old, "lineno", 0) or 0
    return source, tuple(lines)


__all__ = [
    "unparse_with_lines",
    "MAX_ARRAY_ELEMENTS",
    "generated_body",
    "leaf_module_source",
    "module_source",
]
