"""Edits of LLVM IR text that llvmlite's binding has no API for: how LLVM writes a global's
name (and reading it back), and marking functions ``alwaysinline`` (dropping
``noinline``/``optnone``, which the binding can add to a function but never remove).

Shared by the LLVM front end (``hpvm.llvm``: the export inlines whatever reaches an HPVM
intrinsic into its node function, seed 000) and the LLVM-leaf runtime
(``backends/llvm_native``: a barrier leaf's code is inlined into one coroutine). Both sit
above ``hpvm.ir`` and may not import each other, hence this module here. The readers of
function bodies share their pieces here too (a value-defining line, a value's name, commas
outside brackets, a ``define``'s argument names): ``llvm_native``'s checks and
``ir/scratch.py``'s LLVM forms, one pattern each.
"""

from __future__ import annotations

import re

from .bodies import llvm_name

#: A global's name as LLVM writes it after ``@``: plain, or quoted with ``\XX`` escapes.
WRITTEN_NAME = r'"(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+'
#: An LLVM instruction line that defines a value: group 1 the value's name, group 2 the
#: instruction. One pattern for every reader of function bodies (``llvm_native``'s checks,
#: checked mode and race instrumentation; ``ir/scratch.py``'s allocation form).
DEFINITION = re.compile(r"^\s*(%[-a-zA-Z$._0-9]+|%\"[^\"]*\")\s*=\s*(.*)$")
#: A local value's name as LLVM writes it (``%x``, ``%0``, ``%"a b"``).
VALUE_NAME = re.compile(r"%[-a-zA-Z$._0-9]+|%\"[^\"]*\"")
_GROUP = re.compile(r"^attributes #(\d+) = \{ (.*) \}\s*$")
_INLINE_BLOCKERS = {"noinline", "optnone", "alwaysinline"}
#: The first attribute-group number ``mark_always_inline`` adds (clang, Numba and LLVM's own
#: printer number theirs from 0).
GROUP_BASE = 90000


def global_name(name: str) -> str:
    """``name`` as LLVM text writes a global: ``@name``, or ``@"name"`` escaped as LLVM's
    printer escapes it (``ir.bodies.llvm_name``)."""
    return f"@{llvm_name(name)}"


def name_of(written: str) -> str:
    """A global's name from how LLVM writes it after ``@`` (``WRITTEN_NAME``): ``"a\\20b"``
    is ``a b``; the inverse of ``global_name`` (and of ``ir.bodies.llvm_name``)."""
    if not written.startswith('"'):
        return written
    raw = re.sub(
        rb"\\(\\|[0-9A-Fa-f]{2})",
        lambda m: b"\\" if m.group(1) == b"\\" else bytes([int(m.group(1), 16)]),
        written[1:-1].encode(),
    )
    return raw.decode(errors="replace")


def _attribute_groups(lines: list[str]) -> dict[int, str]:
    groups = {}
    for line in lines:
        m = _GROUP.match(line)
        if m:
            groups[int(m.group(1))] = m.group(2)
    return groups


def _without_blockers(attrs: str) -> str:
    return " ".join(a for a in attrs.split() if a not in _INLINE_BLOCKERS)


def _set_group(line: str, number: int) -> str:
    """``line`` (a ``define``) with its attribute group replaced by ``#number``."""
    if re.search(r"\s#\d+\b", line):
        return re.sub(r"\s#\d+\b", f" #{number}", line, count=1)
    at = line.find(" !dbg ")
    if at < 0:
        at = line.rstrip().rfind("{") - 1
    return line[:at] + f" #{number}" + line[at:]


def mark_always_inline(text: str, names: set[str], like: str = "") -> tuple[str, int | None]:
    """``text`` with every function in ``names`` (global names as ``global_name`` writes
    them) ``alwaysinline``, its ``noinline``/``optnone`` dropped, and the number of a new
    attribute group carrying ``like``'s attributes without those (``None`` without ``like``,
    or when they are empty): what a function made to receive the inlined code should carry,
    so that target features let the inliner inline into it."""
    lines = text.split("\n")
    groups = _attribute_groups(lines)
    added: dict[int, str] = {}
    like_group = None
    fresh = GROUP_BASE
    for k, line in enumerate(lines):
        if not line.startswith("define"):
            continue
        name = next((g for g in names if f"{g}(" in line), None)
        m = re.search(r"\s#(\d+)\b", line)
        old = groups.get(int(m.group(1)), "") if m else ""
        if like and f"{like}(" in line:
            like_group = fresh
            added[fresh] = _without_blockers(old)
            fresh += 1
        if name is None:
            continue
        added[fresh] = (_without_blockers(old) + " alwaysinline").strip()
        lines[k] = _set_group(line, fresh)
        fresh += 1
    lines += [f"attributes #{n} = {{ {a} }}" for n, a in added.items() if a]
    if like_group is not None and not added[like_group]:
        like_group = None
    return "\n".join(lines), like_group


def split_top(text: str) -> list[str]:
    """``text`` split at commas outside brackets (operand lists with aggregate types)."""
    items, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:k].strip())
            start = k + 1
    items.append(text[start:].strip())
    return items


def parameters(define: str) -> list[str]:
    """The parameters of a ``define`` line as written (``ptr noundef %a``...), in order."""
    at = define.find("(", define.find("@"))
    if at < 0:
        return []
    depth = 0
    for end in range(at, len(define)):
        depth += define[end] == "("
        depth -= define[end] == ")"
        if depth == 0:
            break
    return split_top(define[at + 1 : end])


def arguments(define: str) -> list[str]:
    """The names of a ``define`` line's parameters, in order (``""`` for an unnamed one)."""
    names = []
    for item in parameters(define):
        found = VALUE_NAME.findall(item)
        names.append(found[-1] if found and item != "..." else "")
    return names


__all__ = [
    "DEFINITION",
    "GROUP_BASE",
    "VALUE_NAME",
    "WRITTEN_NAME",
    "arguments",
    "parameters",
    "global_name",
    "mark_always_inline",
    "name_of",
    "split_top",
]
