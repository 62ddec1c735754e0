"""A leaf's clone without its debug metadata, for the code it is compiled into.

Why. A leaf compiled from C or C++ by clang with ``-g`` carries its compile unit's whole
debug metadata: every type, subprogram and ``using`` declaration of the headers it
includes. In parboil's sad (C++ with ``<vector>`` and ``<string>``), each of the three
leaves' clones was 570-650 kB of LLVM text, of which 11 kB were code. The cpu back end links
a clone into every Numba library that calls it, and Numba clones, links, optimizes and
pickles (for its disk cache) those modules several times a graph: 82 module clones and
about 20 s of a 24 s cold compile. Nothing reads a clone's debug metadata once it is made:
the lines hpvm's messages name are read from the user's module before (``checked.py``,
``access.py``, ``instrument.py`` use ``ir.debuginfo``), and a leaf's raised errors and
checks carry their sites as constants.

What. The text loses what LLVM's own ``StripDebugInfo`` drops: ``!dbg`` attachments, debug
records (``#dbg_value``...) and ``llvm.dbg.*`` calls, ``!llvm.dbg.cu``, the ``DI*`` nodes, and
the debug locations inside loop metadata (``!llvm.loop`` keeps its other properties).
Metadata nodes nothing refers to any more are dropped. Where a node other than a plain
tuple still refers to a debug node (a form this does not know), the text is returned as it
was: correct, only larger.
"""

from __future__ import annotations

import re

_DEF = re.compile(r"^!(\d+) = (?:distinct )?(.*)$")
_NAMED = re.compile(r"^!([-a-zA-Z$._][-a-zA-Z$._0-9]*) = ")
_REF = re.compile(r"!(\d+)\b")
_STRING = re.compile(r'"[^"]*"')  # (LLVM escapes a quote in a string as \22)
_ATTACHED = re.compile(r",? !dbg !\d+")
_RECORD = re.compile(r"^\s*#dbg_\w+\(")
_DBG_CALL = re.compile(r"^\s*(?:tail |notail |musttail )?call void @llvm\.dbg\.\w+\(")
_DBG_DECLARE = re.compile(r"^declare void @llvm\.dbg\.\w+\(")


def _refs(text: str) -> list[int]:
    return [int(n) for n in _REF.findall(_STRING.sub('""', text))]


def without_debug_info(text: str) -> str:
    """``text`` (an LLVM module) without debug metadata (module doc)."""
    if "!DICompileUnit" not in text and "!dbg" not in text:
        return text
    code: list[str] = []
    defs: dict[int, str] = {}  # node number -> its definition's right-hand side (after distinct)
    lines: dict[int, str] = {}
    for line in text.split("\n"):
        m = _DEF.match(line)
        if m:
            defs[int(m.group(1))] = m.group(2)
            lines[int(m.group(1))] = line
            continue
        named = _NAMED.match(line)
        if named and named.group(1).startswith("llvm.dbg."):
            continue
        if _RECORD.match(line) or _DBG_CALL.match(line) or _DBG_DECLARE.match(line):
            continue
        code.append(_ATTACHED.sub("", line) if "!dbg" in line else line)
    debug = {n for n, rhs in defs.items() if rhs.startswith("!DI")}
    live: set[int] = set()
    todo = [n for line in code for n in _refs(line)]
    while todo:
        n = todo.pop()
        if n in live or n in debug or n not in defs:
            continue
        live.add(n)
        todo.extend(_refs(defs[n]))
    kept: dict[int, str] = {}
    for n in sorted(live):
        line = lines[n]
        dropped = [r for r in _refs(defs[n]) if r in debug]
        if dropped:
            edited = _without_operands(line, set(dropped)) if defs[n].startswith("!{") else None
            if edited is None:
                return text  # (a debug node used by a node of a form this does not edit)
            line = edited
        kept[n] = line
    return "\n".join(code).rstrip("\n") + "\n\n" + "\n".join(kept.values()) + "\n"


def _without_operands(line: str, dropped: set[int]) -> str | None:
    """The tuple node ``line`` (``!N = [distinct] !{...}``) without its operands ``!k`` for
    ``k`` in ``dropped``; ``None`` where a string operand holds a comma (not split here)."""
    head, _, rest = line.partition("!{")
    body = rest[: rest.rindex("}")]
    if any("," in s for s in _STRING.findall(body)):
        return None
    operands = [o.strip() for o in body.split(",")] if body.strip() else []
    keep = [o for o in operands if not (o.startswith("!") and o[1:].isdigit() and int(o[1:]) in dropped)]
    return f"{head}!{{{', '.join(keep)}}}"


__all__ = ["without_debug_info"]
