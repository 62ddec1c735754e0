"""Reading seed 004's directive calls: which intrinsic a call is, and its operand bundles.

llvmlite lists a call's bundle operands among its operands (after the arguments, before the
callee) but not their tags, so the tags and how many operands each bundle has come from the
instruction's text, and the operands themselves (values to follow) from llvmlite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ENTRY = "llvm.directive.region.entry"
EXIT = "llvm.directive.region.exit"
MARKER = "llvm.directive.marker"
DIRECTIVES = frozenset({ENTRY, EXIT, MARKER})

_TAG = re.compile(r'"((?:[^"\\]|\\.)*)"\(')


def callee(ins: Any) -> str | None:
    """The name of the function ``ins`` calls directly, else ``None``."""
    if ins.opcode != "call":
        return None
    target = list(ins.operands)[-1]
    return target.name if target.value_kind.name == "function" else None


@dataclass
class Bundles:
    """A directive call's operand bundles: tag → its operands (llvmlite values), in order."""

    tags: dict[str, list[Any]]

    def get(self, tag: str) -> list[Any]:
        return self.tags.get(tag, [])


def bundles(ins: Any, nargs: int = 0) -> Bundles:
    """The bundles of call ``ins``, which has ``nargs`` ordinary arguments."""
    text = str(ins)
    start = text.rfind(" [ ")
    values = list(ins.operands)[nargs:-1]
    found: dict[str, list[Any]] = {}
    if start < 0:
        return Bundles(found)
    pos = start + 3
    taken = 0
    while True:
        m = _TAG.search(text, pos)
        if m is None:
            break
        end, count = _operands(text, m.end())
        found[m.group(1)] = values[taken : taken + count]
        taken += count
        pos = end
    return Bundles(found)


def _operands(text: str, pos: int) -> tuple[int, int]:
    """(index after the closing parenthesis, number of operands) of the list at ``pos``."""
    depth, count, empty = 0, 0, True
    i = pos
    while i < len(text):
        c = text[i]
        if c == '"':
            i = text.index('"', i + 1)
        elif c in "([{<":
            depth += 1
        elif c in ")]}>":
            if depth == 0:
                return i + 1, (0 if empty else count + 1)
            depth -= 1
        elif c == "," and depth == 0:
            count += 1
        if not c.isspace():
            empty = False
        i += 1
    return i, 0 if empty else count + 1


def constant(value: Any) -> int | None:
    """The integer of a constant operand (``i1 true`` is 1), else ``None``."""
    if value.value_kind.name != "constant_int":
        return None
    word = str(value).split()[-1]
    return {"true": 1, "false": 0}[word] if word in ("true", "false") else int(word)


__all__ = ["DIRECTIVES", "ENTRY", "EXIT", "MARKER", "Bundles", "bundles", "callee", "constant"]
