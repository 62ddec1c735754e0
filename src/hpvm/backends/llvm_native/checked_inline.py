"""Callees inlined into the node function before checked mode rewrites it (``checked.py``).

Why. The check of an access compares its pointer with the array argument it points into,
and only the node function has the array arguments and their sizes. A helper the leaf
calls with an array's pointer (``static void row(float *out, long n)`` that LLVM's ``-O1``
did not inline: a large body, ``__attribute__((noinline))``) sees a bare pointer. In
checked mode such a callee is inlined first — at its call sites in the node function, as
often as the calls it brings in pass array pointers on (up to ``ROUNDS`` rounds) — so its
accesses are the node function's and checked like them. A recursive callee cannot be
inlined: its accesses stay unchecked and the leaf says so (``checked.py``).

How. The callee's ``noinline``/``optnone`` are dropped and ``alwaysinline`` added (in an
attribute group of its own: clang's groups are shared by many functions), then LLVM's
always-inliner runs on the module, in a context of its own (``ir/llvmcontext.py``).
Unchecked code never sees this: only the checked clone's module is inlined.
"""

from __future__ import annotations

import re

from ...ir.llvm_text import global_name
from ...ir.llvmcontext import own_context
from .checked_roots import Roots, pointer_operands
from .native import optimize_module

ROUNDS = 8
_DEFINE = re.compile(r"^define [^@]*@(\"[^\"]+\"|[-a-zA-Z$._0-9]+)\(")
_CALLED = re.compile(r"\bcall [^@]*@(\"[^\"]+\"|[-a-zA-Z$._0-9]+)\(")
_NOINLINE = re.compile(r"\s+\b(noinline|optnone)\b")


def function_lines(lines: list[str], name: str) -> tuple[int, int] | None:
    """The span ``(define line, closing brace)`` of ``name``'s definition in ``lines``."""
    head = f"{global_name(name)}("
    for k, line in enumerate(lines):
        if line.startswith("define ") and head in line:
            end = k + 1
            while end < len(lines) and lines[end] != "}":
                end += 1
            return k, end
    return None


def array_callees(module: str, function: str, arrays: set[str]) -> set[str]:
    """The functions ``module`` defines that ``function`` calls with a pointer into one of
    ``arrays`` (its argument names)."""
    lines = module.split("\n")
    span = function_lines(lines, function)
    defined = {m.group(1) for line in lines if (m := _DEFINE.match(line))}
    if span is None:
        return set()
    body = lines[span[0] + 1 : span[1]]
    roots = Roots(body)
    found = set()
    for line in body:
        called = _CALLED.search(line)
        if called is None or called.group(1) not in defined or called.group(1) == function:
            continue
        if any(roots.of(p) & arrays for p in pointer_operands(line)):
            found.add(called.group(1))
    return found


def inline_array_callees(module: str, function: str, arrays: set[str]) -> str:
    """``module`` with the callees that take ``function``'s array pointers inlined (the
    module docstring); ``module`` as it was when there are none or LLVM refuses."""
    recursive = _recursive(module)
    for _ in range(ROUNDS):
        callees = array_callees(module, function, arrays) - recursive
        if not callees:
            break
        marked = _always_inline(module, callees)
        try:
            with own_context() as parse:
                parsed = parse(marked)
                parsed.verify()
                optimize_module(parsed, 0, ("always_inliner",))
                inlined = str(parsed)
        except RuntimeError:
            break
        if inlined == module:
            break
        module = inlined
    return module


def _recursive(module: str) -> set[str]:
    """The functions ``module`` defines that can call themselves, directly or not."""
    lines = module.split("\n")
    calls: dict[str, set[str]] = {}
    current = None
    for line in lines:
        m = _DEFINE.match(line)
        if m:
            current = m.group(1)
            calls[current] = set()
        elif line == "}":
            current = None
        elif current is not None:
            calls[current].update(_CALLED.findall(line))
    found = set()
    for start in calls:
        seen, todo = set(), list(calls[start])
        while todo:
            f = todo.pop()
            if f == start:
                found.add(start)
                break
            if f in calls and f not in seen:
                seen.add(f)
                todo += calls[f]
    return found


def _always_inline(module: str, callees: set[str]) -> str:
    """``module`` with each of ``callees`` marked ``alwaysinline`` (its ``noinline`` and
    ``optnone`` dropped, in the define line and in a copy of its attribute group)."""
    lines = module.split("\n")
    groups = {
        m.group(1): m.group(2)
        for line in lines
        if (m := re.match(r"^attributes #(\d+) = \{(.*)\}\s*$", line))
    }
    extra: list[str] = []
    number = max((int(n) for n in groups), default=0) + 1
    for name in sorted(callees):
        span = function_lines(lines, name)
        if span is None:
            continue
        head = lines[span[0]]
        cut = head.rindex(")") if ")" in head else len(head)
        params, trailer = head[:cut], head[cut:]
        trailer = _NOINLINE.sub("", trailer)
        group = re.search(r"#(\d+)", trailer)
        if group is not None:
            attrs = _NOINLINE.sub("", " " + groups.get(group.group(1), "")).strip()
            extra.append(f"attributes #{number} = {{ alwaysinline {attrs} }}")
            trailer = trailer[: group.start()] + f"#{number}" + trailer[group.end() :]
            number += 1
        else:
            trailer = trailer.replace(" {", " alwaysinline {", 1)
        lines[span[0]] = params + trailer
    return "\n".join(lines + extra) + "\n"


__all__ = ["array_callees", "function_lines", "inline_array_callees"]
