"""What a pointer of an LLVM function points into: the values it is computed from, for the
cpu back end's checked mode (``checked.py``).

Why a set of roots and not one: a pointer reaching an access through a ``phi`` or a
``select`` (a loop's induction pointer, ``c ? &a[i] : &a[j]``) has several sources. When
every source is ``getelementptr``\\s of the *same* array argument, the access is checked
against that array (the compare is against the argument, which every instruction sees);
when the sources are other arguments, or several arrays, or unknown values (a call's
result, an ``inttoptr``, a pointer loaded from memory the leaf does not own alone) the
access cannot be checked and the leaf says so (``checked.py``'s warning).

A pointer stored into a local slot and loaded back (``float *volatile q = &out[i]``, or
an unoptimized leaf's locals) is followed when the slot is an ``alloca`` used only as the
address of whole loads and stores: its loads' roots are the roots of what is stored into it.

The roots: an argument's name (``%out``), ``LOCAL`` (an ``alloca``: the instance's own
memory, or a global: the leaf's module's), and ``UNKNOWN``.
"""

from __future__ import annotations

import re

from ...ir.llvm_text import DEFINITION
from .access import split_top

LOCAL = "<local>"
UNKNOWN = "<unknown>"
_NAME = r"%[-a-zA-Z$._0-9]+|%\"[^\"]*\""
_PHI_IN = re.compile(rf"\[\s*({_NAME}|@[-a-zA-Z$._0-9]+|null|undef|poison)\s*,")
_CONSTANTS = frozenset({"null", "undef", "poison", "zeroinitializer"})


class Roots:
    """The roots of the pointers of one function whose body lines are ``lines``."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.defs: dict[str, str] = {}  # value -> its instruction's text
        for line in lines:
            m = DEFINITION.match(line)
            if m:
                self.defs[m.group(1)] = m.group(2)
        self._slots: dict[str, list[str] | None] = {}

    def of(self, pointer: str) -> frozenset[str]:
        """The roots of ``pointer`` (an SSA value, a global, a constant)."""
        found: set[str] = set()
        seen: set[str] = set()
        todo = [pointer]
        while todo:
            value = todo.pop().strip()
            if value in seen:
                continue
            seen.add(value)
            if len(seen) > 4096:
                return frozenset({UNKNOWN})
            if value in _CONSTANTS:
                continue  # (an access through it fails the check of the other sources' array)
            if value.startswith("@"):
                found.add(LOCAL)
                continue
            if not value.startswith("%"):
                found.add(UNKNOWN)  # (a constant expression)
                continue
            rhs = self.defs.get(value)
            if rhs is None:
                found.add(value)  # an argument
                continue
            sources = self._sources(rhs)
            if sources is None:
                found.add(LOCAL if rhs.startswith("alloca") else UNKNOWN)
            else:
                todo += sources
        return frozenset(found)

    def _sources(self, rhs: str) -> list[str] | None:
        """The values a pointer instruction passes on, or ``None`` when it makes one."""
        op = rhs.split(None, 1)[0] if rhs else ""
        body = rhs[len(op) :]
        if op == "getelementptr":
            parts = split_top(body)
            base = parts[1].split() if len(parts) > 1 else []
            return [base[-1]] if len(base) >= 2 and base[0] == "ptr" else [UNKNOWN]
        if op == "phi":
            return _PHI_IN.findall(rhs) or [UNKNOWN]
        if op == "select":
            parts = split_top(body)
            return [p.split()[-1] for p in parts[1:3]] if len(parts) >= 3 else [UNKNOWN]
        if op in ("bitcast", "addrspacecast", "freeze"):
            words = body.split()
            return [words[1].rstrip(",")] if len(words) >= 2 else [UNKNOWN]
        if op == "load":
            parts = split_top(re.split(r",\s*!", body, maxsplit=1)[0])
            if len(parts) >= 2 and parts[0].split()[-1] == "ptr":
                slot = parts[1].split()[-1]
                stored = self.slot(slot)
                if stored is not None:
                    return stored
            return [UNKNOWN]
        return None

    def slot(self, slot: str) -> list[str] | None:
        """What is stored into ``slot`` when it is an ``alloca`` used only as the address
        of whole loads and stores (``None`` otherwise: it escapes, or is indexed)."""
        if slot in self._slots:
            return self._slots[slot]
        found: list[str] | None = None
        if self.defs.get(slot, "").startswith("alloca"):
            found = []
            use = re.compile(re.escape(slot) + r"(?![-a-zA-Z$._0-9\"])")
            for line in self.lines:
                text = re.split(r",\s*!", line, maxsplit=1)[0]
                hits = list(use.finditer(text))
                if not hits or line.lstrip().startswith("#dbg_"):
                    continue  # (a debug record names the slot; touches nothing)
                rhs = re.sub(rf"^\s*(?:{_NAME})\s*=\s*", "", text).strip()
                if rhs.startswith("alloca") and text.strip().startswith(slot):
                    continue
                if re.search(r"@llvm\.lifetime\.(start|end)", rhs):
                    continue  # (marks where the slot lives; touches nothing)
                parts = split_top(rhs.split(None, 1)[1]) if " " in rhs else []
                if rhs.startswith("load") and len(hits) == 1 and len(parts) >= 2 and parts[1].endswith(slot):
                    continue
                value = [w for w in parts[0].split() if w not in ("volatile", "atomic")] if parts else []
                if (
                    rhs.startswith("store")
                    and len(hits) == 1
                    and len(parts) >= 2
                    and parts[1].split()[-1] == slot
                    and value[:1] == ["ptr"]
                ):
                    found.append(value[-1])
                    continue
                found = None  # any other use: the slot escapes or is indexed
                break
        self._slots[slot] = found
        return found


def pointer_operands(rhs: str) -> list[str]:
    """The ``ptr`` operands of a call's argument list (``call void @f(ptr noundef %a, i64
    %n)``: ``%a``), attributes skipped."""
    m = re.search(r"@(?:\"[^\"]+\"|[-a-zA-Z$._0-9]+)\((.*)\)", re.split(r",\s*!", rhs, maxsplit=1)[0])
    if m is None:
        return []
    out = []
    for arg in split_top(m.group(1)):
        words = arg.split()
        if len(words) >= 2 and words[0] == "ptr" and words[-1].startswith(("%", "@")):
            out.append(words[-1])
    return out


__all__ = ["LOCAL", "UNKNOWN", "Roots", "pointer_operands"]
