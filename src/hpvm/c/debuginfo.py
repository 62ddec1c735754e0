"""What clang's debug metadata says about the C source: the line of an instruction, the C
name of a function and of a local variable.

The rewrite and the importer name an instruction by its text; its ``!dbg !N`` points at a
``!DILocation(line: L, ...)``, so every error can say ``file.c:L``.
"""

from __future__ import annotations

import re

_LOCATION = re.compile(r"^!(\d+) = !DILocation\(line: (\d+)", re.M)
_SUBPROGRAM = re.compile(
    r"^!(\d+) = (?:distinct )?!DISubprogram\(name: \"([^\"]*)\"(?:, linkageName: \"([^\"]*)\")?[^\n]*?line: (\d+)",
    re.M,
)
_VARIABLE = re.compile(r"^!(\d+) = !DILocalVariable\(name: \"([^\"]*)\"", re.M)
_DBG = re.compile(r"!dbg !(\d+)")


class DebugInfo:
    """The debug metadata of one module's text."""

    def __init__(self, text: str):
        self.lines = {int(m.group(1)): int(m.group(2)) for m in _LOCATION.finditer(text)}
        self.subprograms = {
            int(m.group(1)): (m.group(2), int(m.group(4))) for m in _SUBPROGRAM.finditer(text)
        }
        self.c_names = {m.group(3): m.group(2) for m in _SUBPROGRAM.finditer(text) if m.group(3)}
        self.variables = {int(m.group(1)): m.group(2) for m in _VARIABLE.finditer(text)}

    def line_of(self, instruction: str) -> int | None:
        """The source line of an instruction's text (its ``!dbg``), if it has one."""
        m = _DBG.search(instruction)
        return self.lines.get(int(m.group(1))) if m else None

    def function_line(self, define: str) -> int | None:
        """The line of a function's definition, from the ``!dbg`` of its ``define`` line."""
        m = _DBG.search(define)
        found = self.subprograms.get(int(m.group(1))) if m else None
        return found[1] if found else None

    def c_name(self, symbol: str) -> str:
        """The C++ name of a mangled symbol (the C name is the symbol itself)."""
        return self.c_names.get(symbol, symbol)


__all__ = ["DebugInfo"]
