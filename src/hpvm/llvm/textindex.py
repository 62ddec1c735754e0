"""The text of an HPVM IR module, indexed: where each function is defined, its
instructions listed once with their texts and the intrinsic each calls, and the line of
an instruction.

Why a class of its own: every step through llvmlite is a foreign call, and an import walks
the graph builders several times; reading the module's text once (``outline.FunctionIndex``
per function, the ``define`` lines, a filter on a function's text before walking it) keeps
an import fast, and gives every error and every node the line it is at.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import SourceLocation
from . import abi
from .outline import FunctionIndex


class ModuleText:
    """The module text ``text`` (read from ``file``), indexed."""

    def __init__(self, text: str, file: str):
        self.text = text
        self.file = file
        self.lines = {
            m.group(1) or m.group(2): text.count("\n", 0, m.start()) + 1
            for m in re.finditer(r'^define\b[^@\n]*@(?:"([^"]*)"|([\w.$-]+))\(', text, re.M)
        }
        self.walked: dict[str, list[Any]] = {}  # instructions, by function (kept: ids below stay theirs)
        self.texts: dict[int, str] = {}
        self.intrinsics: dict[int, str | None] = {}
        self.offsets = [0, *(m.end() for m in re.finditer("\n", text))]  # where each line starts
        self.text_lines = text.splitlines()

    def instructions(self, fn: Any) -> list[Any]:
        """``fn``'s instructions, listed once with their texts (``outline.FunctionIndex``:
        the function printed once, not each instruction; every step through llvmlite is a
        foreign call, and the import walks the graph builders several times)."""
        found = self.walked.get(fn.name)
        if found is None:
            index = FunctionIndex(fn)
            found = self.walked[fn.name] = [
                ins for block in index.blocks for ins in index.instructions[block]
            ]
            for ins in found:
                self.texts[id(ins)] = index.text[ins]
                callee = index.callee(ins)
                self.intrinsics[id(ins)] = (
                    callee[len(abi.PREFIX) :]
                    if callee is not None and callee.startswith(abi.PREFIX)
                    else None
                )
        return found

    def text_of(self, ins: Any) -> str:
        """The text of an instruction of ``instructions``."""
        return self.texts[id(ins)]

    def intrinsic_of(self, ins: Any) -> str | None:
        """``createNode1D`` for an instruction of ``instructions`` calling
        ``llvm.hpvm.createNode1D``, else ``None``."""
        return self.intrinsics[id(ins)]

    def where(self, name: str) -> SourceLocation:
        """The line of the function's ``define`` in the text."""
        return SourceLocation(self.file, self.lines.get(name, 0))

    def mentions(self, function: str, *intrinsics: str) -> bool:
        """Whether ``function``'s text names any of ``intrinsics`` (``llvm.hpvm.`` left out),
        read from the module's text: a filter before walking its instructions, each of which
        costs several calls into LLVM (on edge detection, reading every leaf's instructions
        to find none of these was most of an import's time). ``True`` where the function is
        not found in the text (then its instructions are looked at)."""
        start = self.lines.get(function)
        if start is None:
            return True
        end = self.text.find("\n}", self.offsets[start - 1])
        body = self.text[self.offsets[start - 1] : None if end < 0 else end]
        return any(f"{abi.PREFIX}{name}" in body for name in intrinsics)

    def may_build(self, function: str) -> bool:
        """Whether ``function``'s text calls a graph intrinsic."""
        return self.mentions(function, "createNode", "createEdge", "bind.")

    def where_in(self, function: str, instruction: str, alike: int = 0) -> SourceLocation:
        """The line of ``instruction`` (as llvmlite prints it) in ``function``'s body in the
        text; the function's ``define`` line if it is not found there. ``alike``: how many
        instructions before it in the function print the same but for their ``!dbg`` (whose
        numbers llvmlite prints anew): it is the line after as many matching ones (two
        identical ``bindIn`` calls of a C function are two lines; the second was named by
        the first's)."""
        start = self.lines.get(function, 0)
        head = instruction.split(", !dbg")[0].strip()
        lines = self.text_lines
        found = None
        for k in range(start, len(lines)):
            if lines[k].startswith("}"):
                break
            if lines[k].strip().startswith(head):
                if alike == 0:
                    return SourceLocation(self.file, k + 1)
                found, alike = k, alike - 1
        return SourceLocation(self.file, found + 1) if found is not None else self.where(function)


def return_type(fn: Any) -> str:
    """The return type of a function, from its ``define`` (or ``declare``) line."""
    head = define_line(fn)
    before = head.split(f"@{abi.quote(fn.name)}(", 1)[0]
    before = re.sub(r"^\s*(?:define|declare)\s+", "", before).strip()
    if before.endswith("}"):
        return before[before.rfind("{") :]
    return before.split()[-1] if before else "void"


def define_line(fn: Any) -> str:
    """A function's ``define`` (or ``declare``) line."""
    for line in str(fn).splitlines():
        if line.startswith(("define", "declare")):
            return line
    return ""


_VALUE = re.compile(rf"[%@]?{abi.NAME}$")


def call_arguments(text: str) -> list[tuple[str, str]]:
    """``(type, value)`` of each argument of the call instruction ``text``, as written
    (``ptr %n1``, ``i32 0``; parameter attributes between them left out): how the graph
    intrinsics' arguments are read without a call into LLVM per operand."""
    start = text.find("(", text.find("@"))
    parts: list[str] = []
    depth, quoted, begin = 0, False, start + 1
    for k in range(start + 1, len(text)):
        c = text[k]
        if quoted:
            quoted = c != '"' or text[k - 1] == "\\"
        elif c == '"':
            quoted = True
        elif c in "([{<":
            depth += 1
        elif c in ")]}>" and depth:
            depth -= 1
        elif c == ")" or (c == "," and depth == 0):
            parts.append(text[begin:k].strip())
            begin = k + 1
            if c == ")":
                break
    found = []
    for part in parts:
        if part:
            value = _VALUE.search(part)
            found.append((part.split(" ", 1)[0], value.group(0) if value else part))
    return found


def defined_value(text: str) -> str:
    """The value an instruction's text defines (``%n1`` of ``%n1 = call …``), else ``""``."""
    m = abi.DEFINES.match(text)
    return f"%{m.group(1)}" if m else ""


def integer(value: str) -> int | None:
    """An integer constant as a call argument writes it (``true`` is 1), else ``None``."""
    if value in ("true", "false"):
        return int(value == "true")
    return int(value) if re.fullmatch(r"-?\d+", value) else None
