"""Python read from a program file, looked at without being run; run when it must run.

A program file — a ``.hpvm`` file, the text form with bodies — carries Python: each leaf's
module text, the host's. Looking at a program (``hpvm verify``, ``hpvm show``, parsing it)
must not run code someone sent; running it (``launch``, ``hpvm run``) runs its Python, as
running a Python file does. A ``ModuleText`` is that boundary:

* when it is read it is *compiled*, not run: a syntax error is a ``ParseError`` at its line
  then, and its last ``def`` (the leaf's, or the host's ``main``) is found in its syntax tree;
* ``function()`` runs it, once, as importing a module does, and returns that ``def``'s
  function — what a back end compiling or calling a leaf, ``launch`` and ``hpvm run`` ask
  for. An exception its module-level code raises is a ``ParseError`` at the failing line;
* until then, the analyses that look at a leaf resolve its names in ``static_names()``:
  what the text's own top-level statements bind that can be known without running anything
  the user wrote — hpvm's own modules and objects (``import hpvm``, ``from hpvm import
  barrier``, ``from hpvm.tensor import relu``: hpvm is the program doing the looking, so
  importing it is trusted) and the text's own top-level ``def``s, as ``StaticDef`` objects
  whose syntax trees the helper analysis (``helpercalls.py``) reads. Every other name is unknown,
  and the checks that need it are skipped until the code has run (``launch`` runs every
  leaf's code before it verifies the program).
"""

from __future__ import annotations
import __future__

import ast
import builtins
import importlib
import threading
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import HPVMError, ParseError
from . import pyast

COMPILE_FLAGS = __future__.annotations.compiler_flag

#: What a module's code sees besides its own names: a mapping, or a function giving one when
#: the code runs (a clone sees its leaf's module, which exists only once that has run).
Names = Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None

_UNKNOWN: Any = object()
_ANY = "*"  # bound to _UNKNOWN: a star import of another module may have bound any name


@dataclass(frozen=True, eq=False)
class StaticDef:
    """A top-level ``def`` of a module text that has not run: its syntax tree (with the
    file's line numbers) and the module it belongs to. What ``static_names`` binds a def's
    name to, so that the analyses can follow a call into it without a function object."""

    name: str
    tree: ast.FunctionDef
    module: ModuleText

    @property
    def file(self) -> str:
        return self.module.file

    def __repr__(self) -> str:
        return f"<def {self.name} at {self.file}:{self.tree.lineno}, not run>"


class ModuleText:
    """Module ``text`` whose first line is line ``first_line`` of ``file`` (see the module doc).

    ``what`` names it in messages (``leaf @scale``, ``the host``); ``header_line``: where to
    report a problem of the whole text (one without a line of its own); ``namespace``: the
    names its code sees besides its own, when it runs; ``static_base``: the names the
    analyses see besides its own before it runs (a function: they may change, as the module
    a clone reads from runs); ``report_at`` (file, line): where the text itself was read, when
    ``file`` is a name of its own (generated code): problems are reported there.
    """

    def __init__(
        self,
        text: str,
        first_line: int,
        file: str,
        what: str,
        header_line: int | None = None,
        namespace: Names = None,
        static_base: Callable[[], Mapping[str, Any]] | None = None,
        report_at: tuple[str, int] | None = None,
    ):
        self.text = text
        self.first_line = first_line
        self.file = file
        self.what = what
        self.header_line = first_line if header_line is None else header_line
        self.report_at = report_at
        self._namespace = namespace
        self._static_base = static_base
        self._static: dict[str, Any] | None = None
        self._func: types.FunctionType | None = None
        self._lock = threading.Lock()
        self._code: types.CodeType | None = None
        self._code, self.tree = self._compile()
        defs = [n for n in self.tree.body if isinstance(n, ast.FunctionDef)]
        if not defs:
            raise self.error(f"the code of {what} defines no function", self.header_line)
        self.last: ast.FunctionDef = defs[-1]

    # -- what the text says ----------------------------------------------------------------

    @property
    def name(self) -> str:
        """The name of the last ``def``: the function the text stands for."""
        return self.last.name

    @property
    def __name__(self) -> str:  # a host read from a file is called like the function it holds
        return self.last.name

    @property
    def def_line(self) -> int:
        """The file line of the last ``def`` (after its decorators)."""
        return self.last.lineno

    @property
    def def_source(self) -> str:
        """The last ``def`` alone, as written (from its ``def`` line to its end)."""
        lines = self.text.split("\n")
        start, end = self.last.lineno - self.first_line, (self.last.end_lineno or self.last.lineno)
        return "\n".join(lines[start : end - self.first_line + 1]) + "\n"

    def parameters(self) -> list[str]:
        """The last ``def``'s parameters as its signature lists them (``*rest``, ``**kw``)."""
        a = self.last.args
        names = [p.arg for p in (*a.posonlyargs, *a.args)]
        names += [f"*{a.vararg.arg}"] if a.vararg else []
        names += [p.arg for p in a.kwonlyargs]
        names += [f"**{a.kwarg.arg}"] if a.kwarg else []
        return names

    def error(self, message: str, line: int, column: int = 1) -> ParseError:
        """A ``ParseError`` at ``line`` of the text, reported where the text was read."""
        if self.report_at is None:
            return ParseError(message, line, column, self.file)
        file, first = self.report_at
        return ParseError(message, first + line - self.first_line, column, file)

    def _compile(self) -> tuple[types.CodeType, ast.Module]:
        source = "\n" * (self.first_line - 1) + self.text  # so lines are the file's
        try:
            code = compile(source, self.file, "exec", flags=COMPILE_FLAGS, dont_inherit=True)
            tree = pyast.parse(source)
        except SyntaxError as e:
            raise self.error(
                f"invalid Python in the code of {self.what}: {e.msg}", e.lineno or 0, e.offset or 0
            ) from None
        except (RecursionError, MemoryError, ValueError) as e:  # nested too deep; a NUL byte
            reason = str(e) or type(e).__name__
            raise self.error(
                f"Python cannot compile the code of {self.what}: {reason}", self.header_line
            ) from None
        return code, tree

    # -- looking ---------------------------------------------------------------------------

    def static_names(self) -> dict[str, Any]:
        """The names the analyses resolve in before the text runs (see the module doc)."""
        if self._static is None:
            self._static = _static_bindings(self)
        base = dict(self._static_base() if self._static_base is not None else {})
        if _ANY in self._static:
            base = {}
        own = {k: v for k, v in self._static.items() if v is not _UNKNOWN and k != _ANY}
        unknown = {k for k, v in self._static.items() if v is _UNKNOWN}
        return {**{k: v for k, v in base.items() if k not in unknown}, **own}

    # -- running ---------------------------------------------------------------------------

    @property
    def ran(self) -> bool:
        return self._func is not None

    def function(self) -> types.FunctionType:
        """The last ``def``'s function: the text runs the first time (in a fresh namespace, a
        copy of ``namespace``, as importing a module does)."""
        func = self._func
        if func is None:
            with self._lock:
                if self._func is None:
                    self._func = self._run()
                    self._namespace = None  # (what it held lives on in the function's globals)
                func = self._func
        return func

    def __call__(self, *args: Any) -> Any:
        """Call the function (running the text first, if it has not run)."""
        return self.function()(*args)

    def _run(self) -> types.FunctionType:
        code = self._code if self._code is not None else self._compile()[0]
        given = self._namespace() if callable(self._namespace) else self._namespace
        scope: dict[str, Any] = dict(given or {})
        scope.update(
            {"__name__": f"hpvm_program.{self.name}", "__file__": self.file, "__builtins__": builtins}
        )
        try:
            exec(code, scope)
        except HPVMError:
            raise
        except Exception as e:
            line = _error_line(e, self.file) or self.header_line
            raise self.error(f"running the code of {self.what} raised {type(e).__name__}: {e}", line) from e
        func = scope.get(self.name)
        if not isinstance(func, types.FunctionType):
            raise self.error(
                f"the last def of {self.what}, '{self.name}', is not a plain function", self.def_line
            )
        return func

    # -- pickling (a program sent to Dask workers) -----------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lock")
        state["_code"] = None  # compiled again if it runs there
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        state = "run" if self.ran else "not run"
        return f"<code of {self.what} at {self.file}:{self.first_line}, {state}>"


def _error_line(e: BaseException, file: str) -> int | None:
    """The last line of ``file`` the exception came through."""
    line = None
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == file:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


# ---------------------------------------------------------------------------------------
# What a module text binds, known without running it


def _static_bindings(module: ModuleText) -> dict[str, Any]:
    """Each name the module's code binds at its top level: hpvm's object or a ``StaticDef``
    where that is all it can be when the code has run, else ``_UNKNOWN``.

    The top-level statements are followed in order, as running them would: an import of
    hpvm binds hpvm's object, a ``def`` its ``StaticDef``, anything else (an assignment, a
    loop, an import of another module, a statement nesting bindings of its own) makes the
    names it binds unknown — a star import from another module every name so far. A name
    some function declares ``global`` may change whenever that function runs: unknown.
    """
    bound: dict[str, Any] = {}
    for stmt in module.tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                name = alias.asname or alias.name.split(".")[0]
                if alias.asname is None:
                    bound[name] = _hpvm_module(alias.name) and _hpvm_module(name)
                else:
                    bound[name] = _hpvm_module(alias.name)
        elif isinstance(stmt, ast.ImportFrom):
            bound.update(_import_from(stmt, bound))
        elif isinstance(stmt, ast.FunctionDef):
            for name in _bound_names(stmt, skip_self=True):  # (a walrus in a decorator...)
                bound[name] = _UNKNOWN
            bound[stmt.name] = StaticDef(stmt.name, stmt, module)
        else:
            if any(isinstance(n, ast.ImportFrom) and n.names[0].name == "*" for n in ast.walk(stmt)):
                bound.update(dict.fromkeys([*bound, _ANY], _UNKNOWN))  # (inside an if: any name)
            for name in _bound_names(stmt):
                bound[name] = _UNKNOWN
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Global):
            for name in node.names:
                bound[name] = _UNKNOWN
    return {k: (_UNKNOWN if v is None else v) for k, v in bound.items()}


def _is_hpvm(module_name: str) -> bool:
    return module_name == "hpvm" or module_name.startswith("hpvm.")


def _hpvm_module(module_name: str) -> Any:
    """hpvm's module of that name (imported: hpvm is trusted), or ``None``."""
    if not _is_hpvm(module_name):
        return None
    try:
        return importlib.import_module(module_name)
    except Exception:  # a module hpvm does not have, or one that cannot load here
        return None


def _import_from(stmt: ast.ImportFrom, bound: dict[str, Any]) -> dict[str, Any]:
    """What ``from m import a as b, ...`` binds: hpvm's objects, else unknown names."""
    module = _hpvm_module(stmt.module or "") if stmt.level == 0 else None
    names = [a for a in stmt.names if a.name != "*"]
    out: dict[str, Any] = {}
    if len(names) < len(stmt.names):  # from m import *
        if module is None:
            out.update(dict.fromkeys([*bound, _ANY], _UNKNOWN))  # it may rebind any name
        else:
            public = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
            out.update({n: _attribute(module, n) for n in public})
    for alias in names:
        out[alias.asname or alias.name] = None if module is None else _attribute(module, alias.name)
    return out


def _attribute(module: types.ModuleType, name: str) -> Any:
    """``from module import name``: an attribute of the module, or its submodule."""
    try:
        return getattr(module, name)
    except Exception:  # (a lazy attribute that fails to load)
        pass
    return _hpvm_module(f"{module.__name__}.{name}")


def _bound_names(stmt: ast.stmt, skip_self: bool = False) -> set[str]:
    """Every name a statement binds in the module's namespace: assignment targets, loop and
    ``with`` variables, imports, nested ``def``/``class`` names, ``except ... as``, match
    captures (not the names bound inside functions and classes it defines). ``skip_self``:
    leave out a ``def``'s own name (the caller binds it)."""
    names: set[str] = set()
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not (skip_self and node is stmt):
                names.add(node.name)
            # Only what runs in the module's scope: decorators, defaults, bases.
            inner: list[ast.AST] = list(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                inner += [*node.bases, *node.keywords]
            else:
                inner += [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
            todo.extend(inner)
            continue
        if isinstance(node, ast.Lambda):
            todo.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)])
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        todo.extend(ast.iter_child_nodes(node))
    return names


__all__ = ["COMPILE_FLAGS", "ModuleText", "Names", "StaticDef"]
