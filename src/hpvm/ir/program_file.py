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

Loading runs none of the file's code: each section is compiled (a syntax error is reported
then) and runs when it must — a leaf's when the leaf runs (``launch``, a back end compiling
it), the host's when ``hpvm run`` calls it (``ir/moduletext.py``). Running a program runs its
Python, as running a Python file does; looking at it (``hpvm verify``, ``hpvm show``) does
not. The code is compiled with the file's own path and line numbers, so tracebacks,
``hpvm.verify`` messages and ``analyze_leaf`` name real lines of the ``.hpvm`` file.
Annotations are not evaluated (``from __future__ import annotations`` semantics): the IR
carries the types.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ParseError, SourceLocation, VerificationError
from .bodies import PythonBody
from .graph import InternalFunction, LeafFunction, Param, functions
from .moduletext import ModuleText
from .parser import (
    ParsedBody,
    leaf_from_body,
    parse_function_ref,
    parse_program,
    python_leaf,
    register_code_view,
)
from .printer import function_refs, print_program
from .pysource import leaf_module_source, module_source
from .types import PortType

FORMAT_HEADER = "# hpvm program v1"
_PREAMBLE = (
    f"{FORMAT_HEADER} (docs/text-format.md): the IR text, then each leaf's Python code.\n"
    "# Running this program runs its Python sections; loading it (to verify or show it) does not.\n"
)
_SECTION = re.compile(r"%%(?P<kind>\w+)(?:[ \t]+(?P<arg>.*?))?[ \t]*$")

Host = Callable[[InternalFunction, "str | None"], Any]


@dataclass
class _Code:
    """A ``%%python`` section, compiled (not run), and the section (for messages)."""

    module: ModuleText
    section: _Section


@dataclass
class LoadedProgram:
    """A program read from a ``.hpvm`` file (none of its code has run)."""

    root: InternalFunction
    host: Host | None  # ``main(root, target)``, if the file has a host section: its section runs when called
    path: str
    ir_text: str  # the IR section as written in the file
    leaves: dict[str, LeafFunction] = field(default_factory=dict)  # by reference: "@f", "@f.1"


# ---------------------------------------------------------------------------------------
# Saving


def save_program(
    root: InternalFunction, path: str | os.PathLike[str], host: Host | str | None = None
) -> None:
    """Write ``root``'s program (and optionally a host ``main(root, target)``) to ``path``.

    Python leaves are written as ``%%python leaf`` sections; leaves with other bodies
    (tensor operations, LLVM IR, generated code) carry their body in the IR section itself.
    ``host`` is a function, or the text of a module whose last ``def`` is ``main`` (or the
    host of a loaded program: its section is written as it was read).

    Raises ``VerificationError`` listing every leaf that cannot be written out: a leaf
    without Python source, a closure, or a global that is neither a module, a constant, a
    library object nor a helper function whose source can be copied.
    """
    fns = list(functions(root))
    refs = function_refs(fns)
    parts = [_PREAMBLE, "\n%%hpvm\n", _escape(print_program(root, bodies=_inline_body))]
    problems: list[str] = []
    for fn in fns:
        if isinstance(fn, LeafFunction) and not _inline_body(fn):
            try:
                parts.append(f"\n%%python leaf {refs[id(fn)]}\n")
                parts.append(_escape(leaf_module_source(fn)))
            except VerificationError as e:
                problems.extend(e.problems)
    if host is not None:
        try:
            parts.append("\n%%python host\n")
            if isinstance(host, (str, ModuleText)):
                text = host.text if isinstance(host, ModuleText) else host
                parts.append(_escape(text if text.endswith("\n") else text + "\n"))
            else:
                parts.append(_escape(module_source(host, f"the host function '{_name_of(host)}'")))
        except VerificationError as e:
            problems.extend(e.problems)
    if problems:
        raise VerificationError(problems)
    Path(path).write_text("".join(parts), encoding="utf-8", newline="\n")


def _inline_body(fn: LeafFunction) -> bool:
    """Whether the IR section carries ``fn``'s body (every kind but plain Python, which
    gets a ``%%python leaf`` section: that format predates bodies in the text form)."""
    return not isinstance(fn.body, PythonBody)


def _name_of(func: Any) -> str:
    return getattr(func, "__name__", repr(func))


def _escape(text: str) -> str:
    """Lines beginning with ``%%`` get one more ``%`` so they cannot start a section."""
    lines = text.split("\n")
    return "\n".join("%" + line if line.startswith("%%") else line for line in lines)


def _unescape(line: str) -> str:
    return line[1:] if line.startswith("%%%") else line


# ---------------------------------------------------------------------------------------
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


def load_program(path: str | os.PathLike[str]) -> LoadedProgram:
    """Read a ``.hpvm`` file: parse its IR and compile its Python sections, running none."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ParseError(f"not a UTF-8 text file ({e.reason} at byte {e.start})", 1, 1, file) from None
    if not any(line.startswith("%%") for line in text.splitlines()):
        # The text form alone, as print_program writes it (hpvm show --text, hbir lower, llvm
        # import, c lower): one program, its leaves' code inline (bodies) or absent.
        if "|" in text:
            register_code_view(file, text)
        root = parse_program(text, file)
        leaves = {f"@{f.name}": f for f in functions(root) if isinstance(f, LeafFunction)}
        return LoadedProgram(root, None, file, text, leaves)
    sections = _split_sections(text, file)
    ir = [s for s in sections if s.kind == "hpvm"]
    if len(ir) != 1:
        where = ir[1].header_line if len(ir) > 1 else 1
        raise ParseError(
            f"a .hpvm file has exactly one %%hpvm section, this one has {len(ir)}", where, 1, file
        )
    if "|" in text:  # bodies in the IR section: make their code readable at its lines
        register_code_view(file, text)
    leaf_code, host = _read_python_sections(sections, file)
    binder = _LeafBinder(file, leaf_code)
    root = parse_program(ir[0].padded_text(), file, binder)
    binder.check_all_used()
    return LoadedProgram(root, host.module if host else None, file, "\n".join(ir[0].lines), binder.leaves)


def _read_python_sections(
    sections: list[_Section], file: str
) -> tuple[dict[tuple[str, int], _Code], _Code | None]:
    """Compile every ``%%python`` section: the code of each leaf (by reference) and of the host."""
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
            leaf_code[key] = _read_section(s, file, f"leaf {ref}")
        elif s.arg == "host":
            if host is not None:
                raise ParseError("a second %%python host section", s.header_line, 1, file)
            host = _read_section(s, file, "the host")
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
        body: ParsedBody | None = None,
    ) -> LeafFunction:
        key = parse_function_ref(ref)
        code = self.code.get(key)
        if body is not None:  # the IR carries the leaf's body: a section would be a second one
            if code is not None:
                raise ParseError(
                    f"leaf {ref} has a body in the IR and a '%%python leaf {ref}' section; keep one",
                    code.section.header_line,
                    1,
                    self.file,
                )
            leaf = leaf_from_body(name, params, outputs, hint, ins, outs, location, body, ref=ref)
            self.leaves[ref] = leaf
            return leaf
        if code is None:
            message = f"leaf {ref} has no '%%python leaf {ref}' section with its code"
            raise ParseError(message, location.line, 1, self.file)
        leaf = python_leaf(code.module, ref, name, params, outputs, hint, ins, outs)
        self.used.add(key)
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


def _read_section(section: _Section, file: str, what: str) -> _Code:
    """Compile one Python section (to run, when it must, in a fresh namespace)."""
    text = "\n".join(section.lines)
    return _Code(ModuleText(text, section.first_line, file, what, section.header_line), section)


__all__ = ["LoadedProgram", "leaf_module_source", "load_program", "module_source", "save_program"]
