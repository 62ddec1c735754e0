"""Saved programs: one ``.hpvm`` file with the IR text and the Python code of every leaf.

A program built in Python lives in Python objects; saving it writes a file that another
process (``hpvm run``, a colleague, a bug report) can load without the original modules::

    # hpvm program v1 ...
    %%hpvm
    # hpvm IR v1
    leaf @scale(x: f32[:], n: i64) -> () ins(x) outs(x)
    internal @root(x: f32[:], n: i64) { ... }
    %%python leaf @scale
    import numpy as np

    FACTOR = 2.5


    def scale(x, n):
        ...
    %%python host
    def main(root, target):
        ...

Each ``%%python`` section is a small self-contained module: the imports, constants and
helper functions its leaf uses, then the leaf's ``def`` (always the last ``def``). Sections
are separate namespaces, so two leaves from different modules cannot clash. A line in a
section that begins with ``%%`` (possible only inside a string) is written with one more
``%`` and read back without it, so any source round-trips.

Loading runs each section, as importing a module does — load only files you trust. The
code is compiled with the file's own path and line numbers, so tracebacks, ``hpvm.verify``
messages and ``analyze_leaf`` name real lines of the ``.hpvm`` file. Annotations are not
evaluated (``from __future__ import annotations`` semantics): the IR carries the types.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import dis
import inspect
import math
import os
import re
import sys
import sysconfig
import textwrap
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import HPVMError, ParseError, SourceLocation, VerificationError
from .graph import InternalFunction, LeafFunction, NodeFunction, Param, function_source, functions
from .parser import parse_function_ref, parse_program
from .printer import function_refs, print_program
from .types import PortType

FORMAT_HEADER = "# hpvm program v1"
_PREAMBLE = (
    f"{FORMAT_HEADER} (docs/text-format.md): the IR text, then each leaf's Python code.\n"
    "# Loading this file runs its Python sections, as importing a module does.\n"
)
_SECTION = re.compile(r"%%(?P<kind>\w+)(?:[ \t]+(?P<arg>.*?))?[ \t]*$")
_COMPILE_FLAGS = __future__.annotations.compiler_flag
MAX_ARRAY_ELEMENTS = 65536

Host = Callable[[InternalFunction, "str | None"], Any]


@dataclass
class LoadedProgram:
    """A program read from a ``.hpvm`` file."""

    root: InternalFunction
    host: Host | None  # ``main(root, target)``, if the file has a host section
    path: str
    ir_text: str  # the IR section as written in the file
    leaves: dict[str, LeafFunction] = field(default_factory=dict)  # by reference: "@f", "@f.1"


# ---------------------------------------------------------------------------------------
# Saving


def save_program(root: InternalFunction, path: str | os.PathLike[str], host: Host | None = None) -> None:
    """Write ``root``'s program (and optionally a host ``main(root, target)``) to ``path``.

    Raises ``VerificationError`` listing every leaf that cannot be written out: a leaf
    without Python source, a closure, or a global that is neither a module, a constant, a
    library object nor a helper function whose source can be copied.
    """
    fns = list(functions(root))
    refs = function_refs(fns)
    parts = [_PREAMBLE, "\n%%hpvm\n", _escape(print_program(root))]
    problems: list[str] = []
    for fn in fns:
        if isinstance(fn, LeafFunction):
            try:
                parts.append(f"\n%%python leaf {refs[id(fn)]}\n")
                parts.append(_escape(leaf_module_source(fn)))
            except VerificationError as e:
                problems.extend(e.problems)
    if host is not None:
        try:
            parts.append("\n%%python host\n")
            parts.append(_escape(module_source(host, f"the host function '{_name_of(host)}'")))
        except VerificationError as e:
            problems.extend(e.problems)
    if problems:
        raise VerificationError(problems)
    Path(path).write_text("".join(parts), encoding="utf-8", newline="\n")


def leaf_module_source(fn: LeafFunction) -> str:
    """The leaf's def with the imports, constants and helpers it needs, as a module."""
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


def _name_of(func: Any) -> str:
    return getattr(func, "__name__", repr(func))


def _escape(text: str) -> str:
    """Lines beginning with ``%%`` get one more ``%`` so they cannot start a section."""
    lines = text.split("\n")
    return "\n".join("%" + line if line.startswith("%%") else line for line in lines)


def _unescape(line: str) -> str:
    return line[1:] if line.startswith("%%%") else line


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
        if _is_library(func):
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
        tree = ast.parse(source)
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
    if not _is_library(value):
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


def _is_library(value: Any) -> bool:
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
# Loading


@dataclass
class _Section:
    kind: str  # "hpvm", "python"
    arg: str
    header_line: int
    lines: list[str] = field(default_factory=list)

    @property
    def first_line(self) -> int:
        """File line of the section's first content line."""
        return self.header_line + 1

    def padded_text(self) -> str:
        """The content preceded by blank lines, so line numbers are those of the file."""
        return "\n" * (self.first_line - 1) + "\n".join(self.lines)


@dataclass
class _Code:
    func: types.FunctionType
    source: str  # the def alone
    line: int  # file line of the def
    section: _Section


def load_program(path: str | os.PathLike[str]) -> LoadedProgram:
    """Read a ``.hpvm`` file: parse its IR and run its Python sections (like an import)."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ParseError(f"not a UTF-8 text file ({e.reason} at byte {e.start})", 1, 1, file) from None
    sections = _split_sections(text, file)
    ir = [s for s in sections if s.kind == "hpvm"]
    if len(ir) != 1:
        where = ir[1].header_line if len(ir) > 1 else 1
        raise ParseError(
            f"a .hpvm file has exactly one %%hpvm section, this one has {len(ir)}", where, 1, file
        )
    leaf_code, host = _run_python_sections(sections, file)
    binder = _LeafBinder(file, leaf_code)
    root = parse_program(ir[0].padded_text(), file, binder)
    binder.check_all_used()
    return LoadedProgram(root, host.func if host else None, file, "\n".join(ir[0].lines), binder.leaves)


def _run_python_sections(
    sections: list[_Section], file: str
) -> tuple[dict[tuple[str, int], _Code], _Code | None]:
    """Run every ``%%python`` section: the code of each leaf (by reference) and of the host."""
    leaf_code: dict[tuple[str, int], _Code] = {}
    host: _Code | None = None
    for s in sections:
        if s.kind != "python":
            continue
        role, _, ref = s.arg.partition(" ")
        ref = ref.strip()
        if role == "leaf" and ref.startswith("@"):
            try:
                key = parse_function_ref(ref)
            except ValueError as e:
                raise ParseError(str(e), s.header_line, 1, file) from None
            if key in leaf_code:
                raise ParseError(f"a second %%python section for leaf {ref}", s.header_line, 1, file)
            leaf_code[key] = _run_section(s, file, f"leaf {ref}")
        elif s.arg == "host":
            if host is not None:
                raise ParseError("a second %%python host section", s.header_line, 1, file)
            host = _run_section(s, file, "the host")
        else:
            raise ParseError(
                f"unknown section '%%python {s.arg}'; write '%%python leaf @name' or '%%python host'",
                s.header_line,
                1,
                file,
            )
    return leaf_code, host


class _LeafBinder:
    """The leaf factory of the loader: each IR leaf gets the function of its section."""

    def __init__(self, file: str, code: dict[tuple[str, int], _Code]):
        self.file = file
        self.code = code
        self.used: set[tuple[str, int]] = set()
        self.leaves: dict[str, LeafFunction] = {}

    def __call__(
        self,
        name: str,
        params: list[Param],
        outputs: list[PortType],
        *,
        ref: str,
        hint: str | None,
        ins: tuple[str, ...],
        outs: tuple[str, ...],
        location: SourceLocation,
    ) -> LeafFunction:
        key = parse_function_ref(ref)
        code = self.code.get(key)
        if code is None:
            message = f"leaf {ref} has no '%%python leaf {ref}' section with its code"
            raise ParseError(message, location.line, 1, self.file)
        _check_signature(code, params, ref, self.file)
        self.used.add(key)
        where = SourceLocation(self.file, code.line)
        leaf = LeafFunction(code.func, name, params, outputs, hint=hint, ins=ins, outs=outs, location=where)
        leaf.set_source(code.source, code.line)
        self.leaves[ref] = leaf
        return leaf

    def check_all_used(self) -> None:
        for key, code in self.code.items():
            if key not in self.used:
                raise ParseError(
                    f"section '%%python {code.section.arg}' is for a leaf the IR does not declare",
                    code.section.header_line,
                    1,
                    self.file,
                )


def _split_sections(text: str, file: str) -> list[_Section]:
    sections: list[_Section] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.startswith("%%") and not line.startswith("%%%"):
            m = _SECTION.fullmatch(line)
            if m is None or m["kind"] not in ("hpvm", "python"):
                raise ParseError(
                    f"unknown section header {line!r}; sections are %%hpvm, %%python leaf @name "
                    "and %%python host",
                    number,
                    1,
                    file,
                )
            sections.append(_Section(m["kind"], m["arg"] or "", number))
        elif sections:
            sections[-1].lines.append(_unescape(line))
        elif line.strip() and not line.lstrip().startswith("#"):
            raise ParseError(
                "text before the first section; a .hpvm file starts with %%hpvm", number, 1, file
            )
    return sections


def _run_section(section: _Section, file: str, what: str) -> _Code:
    """Compile and run one Python section in a fresh namespace; return its last def."""
    source = section.padded_text()
    try:
        code = compile(source, file, "exec", flags=_COMPILE_FLAGS, dont_inherit=True)
        tree = ast.parse(source)
    except SyntaxError as e:
        raise ParseError(
            f"invalid Python in the code of {what}: {e.msg}", e.lineno or 0, e.offset or 0, file
        ) from None
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not defs:
        raise ParseError(f"the code of {what} defines no function", section.header_line, 1, file)
    last = defs[-1]
    namespace: dict[str, Any] = {
        "__name__": f"hpvm_program.{last.name}",
        "__file__": file,
        "__builtins__": builtins,
    }
    try:
        exec(code, namespace)
    except HPVMError:
        raise
    except Exception as e:
        line = _error_line(e, file) or section.header_line
        raise ParseError(f"running the code of {what} raised {type(e).__name__}: {e}", line, 1, file) from e
    func = namespace.get(last.name)
    if not isinstance(func, types.FunctionType):
        raise ParseError(
            f"the last def of {what}, '{last.name}', is not a plain function", last.lineno, 1, file
        )
    lines = source.split("\n")
    def_source = "\n".join(lines[last.lineno - 1 : last.end_lineno]) + "\n"
    return _Code(func, def_source, last.lineno, section)


def _error_line(e: BaseException, file: str) -> int | None:
    line = None
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == file:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _check_signature(code: _Code, params: list[Param], ref: str, file: str) -> None:
    names = list(inspect.signature(code.func).parameters)
    expected = [p.name for p in params]
    if names != expected:
        raise ParseError(
            f"the def of leaf {ref} takes ({', '.join(names)}) but the IR declares ({', '.join(expected)})",
            code.line,
            1,
            file,
        )


__all__ = ["LoadedProgram", "leaf_module_source", "load_program", "module_source", "save_program"]
