"""Outlining a single-entry code region of an LLVM function into a function of its own, by
copying its blocks' text: how EXTRACT turns another compiler's directive region
(``foreign.py``) into a leaf node function.

The region runs from an instruction (after a directive's entry call, in its block) or the
top of a block, to an end instruction (the region's exit call, or the first instruction of
a loop's latch), through every block reachable in between. The copy keeps every name, so
nothing in the copied text is renamed; what the region uses from outside is defined again
at the top of the new function under the same name: allocas (each instance gets its own,
with the value a callback says it starts with), other values (a callback writes them), and
the function's arguments (the new function takes the same). The end becomes a ``ret``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from . import abi
from .errors import LLVMExtractError

_LABEL = re.compile(r'label %("(?:[^"\\]|\\.)*"|[-\w.$]+)')


def _key(ins: Any) -> str:
    return ins.name or str(ins)


class Outline:
    """The region of ``fn`` after ``first`` (or from the top of ``start``) up to ``end``."""

    def __init__(self, fn: Any, first: Any | None, end: Any, start: Any | None = None):
        self.fn = fn
        self.first = first
        self.end = end
        self.by_name = {b.name: b for b in fn.blocks}
        self.block_of = {_key(i): b for b in fn.blocks for i in b.instructions}
        self.start = start if start is not None else self.block_of[_key(first)]
        self.end_block = self.block_of[_key(end)].name
        self.blocks = self._walk()

    def fail(self, ins: Any, why: str) -> LLVMExtractError:
        return LLVMExtractError(f"@{self.fn.name}: '{str(ins).strip()[:200]}': {why}")

    def successors(self, block: Any) -> list[Any]:
        term = list(block.instructions)[-1]
        return [self.by_name[n.strip('"')] for n in _LABEL.findall(str(term))]

    def _walk(self) -> list[Any]:
        seen: set[str] = set()
        stack = [self.start]
        while stack:
            b = stack.pop()
            if b.name in seen:
                continue
            seen.add(b.name)
            if b.name != self.end_block:
                for s in self.successors(b):
                    if s.name == self.start.name and self.first is not None:
                        raise self.fail(self.first, "the region's code branches back to its entry's block")
                    stack.append(s)
        if self.end_block not in seen:
            raise self.fail(self.end, "the region's end is not reached from its entry")
        rest = [b for b in self.fn.blocks if b.name in seen and b.name != self.start.name]
        return [self.start, *rest]  # (the region's first block first: the new function's entry)

    def part(self, block: Any) -> list[Any]:
        """``block``'s instructions inside the region."""
        return Outline.cut(block, self.first if block.name == self.start.name else None, self.end)

    @staticmethod
    def cut(block: Any, first: Any | None, end: Any) -> list[Any]:
        """``block``'s instructions after ``first`` (if given, and in it) up to ``end``."""
        started = first is None or all(_key(i) != _key(first) for i in block.instructions)
        out = []
        for ins in block.instructions:
            if _key(ins) == _key(end):
                return out
            if started:
                out.append(ins)
            elif _key(ins) == _key(first):
                started = True
        return out

    def text(
        self,
        head: str,
        ret: str,
        prologue: list[str],
        allocas: Callable[[str], str | None],
        outside: Callable[[Any, Any], str],
        label: str | None = None,
        epilogue: tuple[list[str], str] = ([], "zeroinitializer"),
        replace: dict[str, str] | None = None,
    ) -> list[str]:
        """The region as function ``head`` (its ``define`` line without ``{``) returning
        ``ret``. ``allocas(name)``: the value an alloca from outside starts with (``None``:
        none; after ``prologue``); ``outside(value, user)``: the lines defining another value
        (or argument) from outside under its own name, ``""`` for an argument the new function
        takes too (or an ``LLVMExtractError``). ``label``: the entry block's (default the
        region's first block's when it starts after an instruction). ``epilogue``: lines
        before the ``ret`` and the value it returns. ``replace``: instructions of the region,
        by name, written otherwise (what they compute, as the new function can say it)."""
        inside = {i.name for b in self.blocks for i in self.part(b) if i.name}
        own, inits, defined = [], [], []
        done: set[str] = set()
        named = {i.name: i for b in self.fn.blocks for i in b.instructions if i.name}
        for b in self.blocks:
            for ins in self.part(b):
                for op in ins.operands:
                    kind = op.value_kind.name
                    if kind not in ("instruction", "argument") or op.name in inside or op.name in done:
                        continue
                    done.add(op.name)
                    d = named.get(op.name) if kind == "instruction" else None
                    if d is not None and d.opcode == "alloca":
                        own.append(f"  {str(d).strip()}")
                        init = allocas(op.name)
                        if init:
                            t = re.search(r"= alloca ([^,]+)", str(d)).group(1).strip()  # type: ignore[union-attr]
                            inits.append(f"  store {t} {init}, ptr %{abi.quote(op.name)}")
                    elif lines := outside(op, ins):
                        defined.append(lines)
        if label is None:
            label = self.start.name if self.first is not None else ".x.entry"
        lines = [f"{head} {{", f"{abi.quote(label)}:", *own, *prologue, *inits, *defined]
        if self.first is None:
            lines.append(f"  br label %{abi.quote(self.start.name)}")
        for k, b in enumerate(self.blocks):
            if not (k == 0 and self.first is not None):
                lines.append(f"{abi.quote(b.name)}:")
            lines += [f"  {(replace or {}).get(i.name) or str(i).strip()}" for i in self.part(b)]
            if b.name == self.end_block:
                lines += [*epilogue[0], f"  ret {ret} {epilogue[1]}"]
        return [*lines, "}"]


def same_value(t: str, operand: str) -> str:
    """An instruction (its text after ``=``) whose value is ``operand``, of type ``t``: how
    a value from outside a region is defined again under its own name."""
    if t == "ptr":
        return f"getelementptr i8, ptr {operand}, i64 0"
    if t in ("float", "double", "half"):
        return f"fadd {t} {operand}, -0.0"
    return f"add {t} {operand}, 0"


__all__ = ["Outline", "same_value"]
