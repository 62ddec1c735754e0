"""What clang's debug metadata says about the C source: the file and line of an
instruction, the C name of a function and of a local variable.

The rewrite and the importer name an instruction by its text; its ``!dbg !N`` points at a
``!DILocation(line: L, scope: !S)``, whose scope (a subprogram or a lexical block) names
its ``!DIFile``, so every error can say ``file.c:L``. A program of several files is one
linked module with one ``DIFile`` per source and header: the file is found per location,
never assumed to be the first one (an error in ``io.cc`` names ``io.cc``; a call inlined
from a header names the header). What a user reads about an access (``place``) names first
the line of the function it ran in and then, for code LLVM inlined into it (``std::min``'s
comparison, a helper of the program's), where that code is: ``graph.cpp:25 (in
comp.h:42, inlined)``.

In ``hpvm.ir``, not ``hpvm.c``, because the back ends read it too: the bounds pre-check
names the C line of an LLVM leaf's access (``backends/llvm_native/access.py``).
"""

from __future__ import annotations

import os
import re

_LOCATION = re.compile(
    r"^!(\d+) = (?:distinct )?!DILocation\(line: (\d+)(?:, column: (\d+))?, scope: !(\d+)", re.M
)
_NODE = re.compile(
    r"^!(\d+) = (?:distinct )?!(DIFile|DISubprogram|DILexicalBlock|DILexicalBlockFile|DILocalVariable)\((.*)\)\s*$",
    re.M,
)
_INLINED = re.compile(r"^!(\d+) = (?:distinct )?!DILocation\([^\n]*\binlinedAt: !(\d+)", re.M)
_LINE = re.compile(r"\bline: (\d+)")
_FILE = re.compile(r"\bfile: !(\d+)")
_NAME = re.compile(r'\bname: "([^"]*)"')
_LINKAGE = re.compile(r'\blinkageName: "([^"]*)"')
_FILENAME = re.compile(r'\bfilename: "([^"]*)"')
_DIRECTORY = re.compile(r'\bdirectory: "([^"]*)"')


def _source_path(name: str, directory: str) -> str:
    """A ``DIFile``'s file as the user can find it: clang may record a name relative to a
    directory other than the one it ran in (the compile unit of a file outside the working
    folder: ``filename: "dbg/s.c", directory: "/tmp"``), and then the name alone points
    nowhere. Names relative to the working folder stay as given (what the user typed). (The
    C front end names its sources' files by absolute paths: ``c.clang.absolute_files``.)"""
    if not name or not directory or os.path.isabs(name):
        return name
    if os.path.abspath(directory) == os.getcwd():
        return name
    return os.path.join(directory, name)


_DBG = re.compile(r"!dbg !(\d+)")


class DebugInfo:
    """The debug metadata of one module's text."""

    def __init__(self, text: str):
        self.lines: dict[int, int] = {}  # DILocation → its line
        self.columns: dict[int, int] = {}  # DILocation → its column (when clang gave one)
        self.scopes: dict[int, int] = {}  # DILocation → its scope
        self.files: dict[int, str] = {}  # DIFile → its file name (as clang was given it)
        self.scope_files: dict[int, int] = {}  # subprogram, lexical block... → its DIFile
        self.subprograms: dict[int, tuple[str, int]] = {}  # DISubprogram → (name, line)
        self.c_names: dict[str, str] = {}  # mangled symbol → C++ name
        self.variables: dict[int, str] = {}  # DILocalVariable → its name
        self.inlined_at: dict[int, int] = {}  # DILocation of inlined code → its call's
        for node, line, column, scope in _LOCATION.findall(text):
            self.lines[int(node)] = int(line)
            if column:
                self.columns[int(node)] = int(column)
            self.scopes[int(node)] = int(scope)
        for node, call in _INLINED.findall(text):
            self.inlined_at[int(node)] = int(call)
        for m in _NODE.finditer(text):
            node, kind, fields = int(m.group(1)), m.group(2), m.group(3)
            if kind == "DIFile":
                name = _FILENAME.search(fields)
                folder = _DIRECTORY.search(fields)
                self.files[node] = _source_path(
                    name.group(1) if name else "", folder.group(1) if folder else ""
                )
                continue
            file = _FILE.search(fields)
            line = _LINE.search(fields)
            if file and kind != "DILocalVariable":
                self.scope_files[node] = int(file.group(1))
            name = _NAME.search(fields)
            if kind == "DISubprogram" and name:
                self.subprograms[node] = (name.group(1), int(line.group(1)) if line else 0)
                linkage = _LINKAGE.search(fields)
                if linkage:
                    self.c_names[linkage.group(1)] = name.group(1)
            elif kind == "DILocalVariable" and name:
                self.variables[node] = name.group(1)

    @staticmethod
    def _dbg(text: str) -> int | None:
        m = _DBG.search(text)
        return int(m.group(1)) if m else None

    def line_of(self, instruction: str) -> int | None:
        """The source line of an instruction's text (its ``!dbg``), if it has one."""
        node = self._dbg(instruction)
        return self.lines.get(node) if node is not None else None

    def column_of(self, instruction: str) -> int | None:
        """The source column of an instruction's text (its ``!dbg``; for a call, where the
        call's expression starts), if it has one."""
        node = self._dbg(instruction)
        return self.columns.get(node) if node is not None else None

    def where(self, instruction: str) -> str | None:
        """``file:line`` of an instruction's text, if its ``!dbg`` says."""
        node = self._dbg(instruction)
        line = self.lines.get(node) if node is not None else None
        if not line:
            return None
        file = self.file_of_scope(self.scopes.get(node))  # type: ignore[arg-type]
        return f"{file}:{line}" if file else None

    def place(self, instruction: str) -> str | None:
        """Where an instruction's text is, as an access's message says it: ``where``'s
        ``file:line``, or for code inlined into its function the line of the outermost call
        first — the function's own line — and then where the inlined code is."""
        node = self._dbg(instruction)
        inner = self.where(instruction)
        if node is None or inner is None or node not in self.inlined_at:
            return inner
        seen = {node}
        while node in self.inlined_at and self.inlined_at[node] not in seen:  # (a cycle: malformed)
            node = self.inlined_at[node]
            seen.add(node)
        line, file = self.lines.get(node), self.file_of_scope(self.scopes.get(node))
        outer = f"{file}:{line}" if line and file else None
        return f"{outer} (in {inner}, inlined)" if outer and outer != inner else inner

    def file_of_scope(self, scope: int | None) -> str | None:
        file = self.scope_files.get(scope) if scope is not None else None
        return self.files.get(file) if file is not None else None

    def function_line(self, define: str) -> int | None:
        """The line of a function's definition, from the ``!dbg`` of its ``define`` line."""
        node = self._dbg(define)
        found = self.subprograms.get(node) if node is not None else None
        return found[1] if found else None

    def function_where(self, define: str) -> str | None:
        """``file:line`` of a function's definition, if its ``define`` line has a ``!dbg``."""
        node = self._dbg(define)
        line = self.function_line(define)
        file = self.file_of_scope(node)
        return f"{file}:{line}" if line and file else None

    def function_file(self, define: str) -> str | None:
        """The file a function is defined in, if its ``define`` line has a ``!dbg``."""
        return self.file_of_scope(self._dbg(define))

    def c_name(self, symbol: str) -> str:
        """The C++ name of a mangled symbol (the C name is the symbol itself)."""
        return self.c_names.get(symbol, symbol)


__all__ = ["DebugInfo"]
