"""Clang's LLVM text cut into what the rewrite works on: functions (their ``define`` line,
their parameters, their body lines) and the ``__hpvm__*`` calls in them.

The rewrite edits text, not an in-memory module: llvmlite reads LLVM IR but cannot change a
function's signature, and HPVM's GenHPVM changes exactly that (the return type of every
node function). Clang's output is regular enough for it — one instruction per line, each
``define`` closed by a ``}`` alone on a line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_DEFINE = re.compile(r"^define\b[^@]*@(\"[^\"]*\"|[-\w.$]+)\(")
_GLOBAL = re.compile(r"^@(\"[^\"]*\"|[-\w.$]+) = ")
_CALL = re.compile(
    r"^(?P<indent>\s*)(?:(?P<result>%[-\w.$]+) = )?(?:(?:tail|musttail|notail) )?call "
    r"(?P<type>.*?)@(?P<callee>[-\w.$]+)\((?P<rest>.*)$"
)
_FUNC_REF = re.compile(r"@(\"[^\"]*\"|[-\w.$]+)")
_INT = re.compile(r"^-?\d+$")


def split_top(text: str) -> tuple[list[str], str]:
    """The comma-separated items of ``text`` up to its unmatched ``)``, and what follows."""
    items, depth, current = [], 0, ""
    for k, c in enumerate(text):
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            if depth == 0 and c == ")":
                if current.strip():
                    items.append(current.strip())
                return items, text[k + 1 :]
            depth -= 1
        elif c == "," and depth == 0:
            items.append(current.strip())
            current = ""
            continue
        current += c
    return items, ""


@dataclass
class Value:
    """One argument of a call or a parameter: its LLVM type, attributes and value (or name)."""

    type: str
    attrs: list[str]
    value: str

    @staticmethod
    def parse(text: str) -> Value:
        words = text.split()
        if text.startswith("{"):
            close = text.index("}") + 1
            return Value(text[:close], text[close:].split()[:-1], text.split()[-1])
        return Value(words[0], words[1:-1], words[-1] if len(words) > 1 else "")

    def const(self) -> int | None:
        if self.value in ("true", "false"):
            return int(self.value == "true")
        return int(self.value) if _INT.match(self.value) else None


@dataclass
class Call:
    """A call instruction on one line."""

    line: str
    indent: str
    result: str | None
    type: str
    callee: str
    args: list[Value]
    tail: str  # what follows the argument list: attribute groups, ``!dbg``

    @staticmethod
    def parse(line: str) -> Call | None:
        m = _CALL.match(line)
        if m is None:
            return None
        items, tail = split_top(m.group("rest"))
        return Call(
            line, m.group("indent"), m.group("result"), m.group("type").strip(), m.group("callee"),
            [Value.parse(i) for i in items], tail,
        )  # fmt: skip

    def dbg(self) -> str:
        m = re.search(r"!dbg !\d+", self.tail)
        return f", {m.group(0)}" if m else ""


@dataclass
class Function:
    """One ``define``: its name, the ``define`` line, its parameters and body lines."""

    name: str
    define: str
    params: list[Value]
    body: list[str]
    start: int = 0
    end: int = 0
    refs: set[str] = field(default_factory=set)

    def calls(self) -> list[Call]:
        return [c for c in (Call.parse(line) for line in self.body) if c is not None]

    def return_type(self) -> str:
        before = self.define.split(f"@{self.name}(", 1)[0].split()
        return before[-1] if before else "void"


@dataclass
class Global:
    """One global variable or alias (a line ``@name = ...``): its line and what it names."""

    name: str
    index: int
    refs: set[str]


def _refs(text: str) -> set[str]:
    return {r.strip('"') for r in _FUNC_REF.findall(text)}


@dataclass
class Module:
    """A module's lines, its defined functions and its globals, by name."""

    lines: list[str]
    functions: dict[str, Function]
    globals: dict[str, Global] = field(default_factory=dict)

    def closure(self, roots: set[str] | list[str]) -> set[str]:
        """The functions and globals ``roots`` reach: what they call or name, and what the
        globals they name name in turn (a vtable's functions, a table's strings)."""
        seen: set[str] = set()
        todo = list(roots)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            if name in self.functions:
                seen.add(name)
                todo.extend(self.functions[name].refs)
            elif name in self.globals:
                seen.add(name)
                todo.extend(self.globals[name].refs)
        return seen

    @staticmethod
    def parse(text: str) -> Module:
        lines = text.splitlines()
        functions: dict[str, Function] = {}
        globals_: dict[str, Global] = {}
        k = 0
        while k < len(lines):
            m = _DEFINE.match(lines[k])
            if m is None:
                g = _GLOBAL.match(lines[k])
                if g is not None:
                    name = g.group(1).strip('"')
                    globals_[name] = Global(name, k, _refs(lines[k][g.end() :]))
                k += 1
                continue
            name = m.group(1).strip('"')
            end = k + 1
            while end < len(lines) and lines[end] != "}":
                end += 1
            head = lines[k]
            params, _ = split_top(head[m.end() :])
            body = lines[k + 1 : end]
            refs = _refs(head[m.end() :]) | {r for line in body for r in _refs(line)}
            functions[name] = Function(name, head, [Value.parse(p) for p in params], body, k, end, refs)
            k = end + 1
        return Module(lines, functions, globals_)


__all__ = ["Call", "Function", "Global", "Module", "Value", "split_top"]
