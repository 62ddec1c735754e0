"""Every bind and edge of a module, in LLVM indices, read before the import proper: what
``grouping.py`` needs to decide which ``(ptr, i64)`` pairs are one port.

Why a module of its own: the grouping looks at the whole module at once (a pair is one
port only if every connection carries it together), before any node is made; a call
that cannot be read is left to the import proper, which says what is wrong.
"""

from __future__ import annotations

from typing import Any

from . import grouping
from .textindex import ModuleText, call_arguments, defined_value, integer


def links(index: ModuleText, defined: dict[str, Any]) -> list[grouping.Link]:
    """Every bind and edge of the module, in LLVM indices."""
    found: list[grouping.Link] = []
    for name, fn in defined.items():
        if not index.may_build(name):
            continue
        made: dict[str, str] = {}  # a createNode call's value (%n1) -> the function it creates
        for ins in index.instructions(fn):
            which = index.intrinsic_of(ins)
            if which is None:
                continue
            text = index.text_of(ins)
            args = call_arguments(text)
            if which.startswith("createNode"):
                if args and args[0][1].startswith("@") and (value := defined_value(text)):
                    made[value] = args[0][1][1:].strip('"')
                continue
            if which not in ("createEdge", "bind.input", "bind.output"):
                continue
            keys = tuple(v for t, v in args if t == "ptr")
            nodes = [made.get(v) for v in keys]
            consts = [integer(v) for _, v in args[len(keys) :]]
            if None in nodes or None in consts or len(nodes) != (2 if which == "createEdge" else 1):
                continue
            if which == "createEdge":
                repl, sp, dp, stream = consts
                src = grouping.End(nodes[0], grouping.OUT, sp)  # type: ignore[arg-type]
                dst = grouping.End(nodes[1], grouping.IN, dp)  # type: ignore[arg-type]
                call: tuple[object, ...] = ("edge", name, keys, repl, stream)
            elif which == "bind.input":
                ip, ic, stream = consts
                src = grouping.End(name, grouping.IN, ip)  # type: ignore[arg-type]
                dst = grouping.End(nodes[0], grouping.IN, ic)  # type: ignore[arg-type]
                call = ("in", name, keys, stream)
            else:
                oc, op, stream = consts
                src = grouping.End(nodes[0], grouping.OUT, oc)  # type: ignore[arg-type]
                dst = grouping.End(name, grouping.OUT, op)  # type: ignore[arg-type]
                call = ("out", name, keys, stream)
            found.append(grouping.Link(call, src, dst))
    return found
