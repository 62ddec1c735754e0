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

import functools
import re
from collections.abc import Callable
from typing import Any

from . import abi
from .errors import LLVMExtractError

_LABEL = re.compile(rf"label %({abi.NAME})")
_ALLOCA = re.compile(rf"^%{abi.NAME} = alloca ([^,]+)")
# A local value's name in an instruction's text (``%x``, ``%"a b"``), unless it is a
# block's (``label %x``) or inside metadata (``metadata ptr %x``), which are no operands.
_LOCAL = re.compile(rf"(label |metadata [^%,()]*)?%({abi.NAME})")
_CALLEE = re.compile(rf"^(?:%\S+ = )?(?:tail |musttail |notail )?call [^@]*?@({abi.NAME})\(")


class FunctionIndex:
    """A function's blocks and instructions, read through llvmlite once: every llvmlite
    call crosses into LLVM, and outlining each of a program's regions by walking the whole
    function again made EXTRACT quadratic (edge detection: 0.3 s became 2 s). Instructions
    are keys as they are (llvmlite compares and hashes them by the LLVM object)."""

    def __init__(self, fn: Any):
        self.fn = fn
        self.blocks = list(fn.blocks)
        self.name_of_block = {b: b.name for b in self.blocks}
        self.by_name = {n: b for b, n in self.name_of_block.items()}
        self.instructions = {b: list(b.instructions) for b in self.blocks}
        self.block_of = {i: b for b, ins in self.instructions.items() for i in ins}
        self._successors: dict[Any, list[Any]] = {}
        self.text = self._texts()
        self.name = {i: self._name(i) for i in self.block_of}
        self.named = {n: i for i, n in self.name.items() if n}

    def _name(self, ins: Any) -> str:
        """The name of the value ``ins`` defines (``""``: none), read from its text where
        the name is written plainly."""
        m = abi.DEFINES.match(self.text[ins])
        if m is None:
            return ""
        return ins.name if m.group(1).startswith('"') else m.group(1)

    def _texts(self) -> dict[Any, str]:
        """Each instruction's text, from the function's printing (one call into LLVM, not
        one per instruction): its lines in block order, debug records left out; a block
        whose lines do not match its instructions one for one is asked one by one."""
        lines: dict[str, list[str]] = {}
        block = None
        for line in str(self.fn).splitlines():
            label = abi.LABEL_LINE.match(line)
            if label:
                block = label.group(1).strip('"')
                lines[block] = []
            elif line.startswith("  ") and not line.lstrip().startswith(("#dbg_", ";")) and block is not None:
                lines[block].append(line.strip())
        texts: dict[Any, str] = {}
        for b, ins in self.instructions.items():
            mine = lines.get(self.name_of_block[b], [])
            if len(mine) == len(ins):
                texts.update(zip(ins, mine))
            else:
                texts.update((i, str(i).strip()) for i in ins)
        return texts

    @functools.cached_property
    def arguments(self) -> dict[str, Any]:
        return {a.name: a for a in self.fn.arguments}

    def operands(self, ins: Any) -> list[Any]:
        """The arguments and instructions ``ins`` uses, read from its text (llvmlite's
        operand walk costs a few calls into LLVM per operand; it is what made EXTRACT slow),
        in the order they appear; llvmlite's walk for an instruction whose text names a
        value neither an argument nor an instruction of this function (a quoted name with
        escapes, say)."""
        text = self.text[ins]
        body = text.split(" = ", 1)[1] if text.startswith("%") and " = " in text else text
        found: list[Any] = []
        for m in _LOCAL.finditer(body):
            if m.group(1):
                continue
            name = m.group(2)
            value = self.arguments.get(name) if not name.startswith('"') else None
            value = value if value is not None else self.named.get(name)
            if value is None:
                return [op for op in ins.operands if op.value_kind.name in ("instruction", "argument")]
            found.append(value)
        return found

    def callee(self, ins: Any) -> str | None:
        """The function instruction ``ins`` calls directly, read from its text."""
        m = _CALLEE.search(self.text[ins])
        return m.group(1).strip('"') if m else None

    def successors(self, block: Any) -> list[Any]:
        if block not in self._successors:
            term = self.text[self.instructions[block][-1]]
            self._successors[block] = [self.by_name[n.strip('"')] for n in _LABEL.findall(term)]
        return self._successors[block]

    def cut(self, block: Any, first: Any | None, end: Any) -> list[Any]:
        """``block``'s instructions after ``first`` (if given, and in it) up to ``end``."""
        ins = self.instructions[block]
        lo = ins.index(first) + 1 if first is not None and first in ins else 0
        hi = ins.index(end) if end in ins else len(ins)
        return ins[lo:hi]


class Outline:
    """The region of ``fn`` after ``first`` (or from the top of ``start``) up to ``end``;
    ``index``: the function's, when several regions of it are outlined."""

    def __init__(
        self,
        fn: Any,
        first: Any | None,
        end: Any,
        start: Any | None = None,
        index: FunctionIndex | None = None,
    ):
        self.fn = fn
        self.index = index or FunctionIndex(fn)
        self.first = first
        self.end = end
        self.start = start if start is not None else self.index.block_of[first]
        self.end_block = self.index.block_of[end]
        self.blocks = self._walk()

    def fail(self, ins: Any, why: str) -> LLVMExtractError:
        return LLVMExtractError(f"@{self.fn.name}: '{str(ins).strip()[:200]}': {why}")

    def _walk(self) -> list[Any]:
        seen: set[Any] = set()
        stack = [self.start]
        while stack:
            b = stack.pop()
            if b in seen:
                continue
            seen.add(b)
            if b != self.end_block:
                for s in self.index.successors(b):
                    if s == self.start and self.first is not None:
                        raise self.fail(self.first, "the region's code branches back to its entry's block")
                    stack.append(s)
        if self.end_block not in seen:
            raise self.fail(self.end, "the region's end is not reached from its entry")
        rest = [b for b in self.index.blocks if b in seen and b != self.start]
        return [self.start, *rest]  # (the region's first block first: the new function's entry)

    def part(self, block: Any) -> list[Any]:
        """``block``'s instructions inside the region."""
        return self.index.cut(block, self.first if block == self.start else None, self.end)

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
        names = self.index.name
        inside = {names[i] for b in self.blocks for i in self.part(b) if names[i]}
        own, inits, defined = [], [], []
        done: set[str] = set()
        named = self.index.named
        for b in self.blocks:
            for ins in self.part(b):
                for op in self.index.operands(ins):
                    if op.name in inside or op.name in done:
                        continue
                    done.add(op.name)
                    d = named.get(op.name) if op.value_kind.name == "instruction" else None
                    text = self.index.text.get(d) if d is not None else None
                    if text is not None and (alloca := _ALLOCA.match(text)):
                        own.append(f"  {text}")
                        init = allocas(op.name)
                        if init:
                            inits.append(
                                f"  store {alloca.group(1).strip()} {init}, ptr %{abi.quote(op.name)}"
                            )
                    elif lines := outside(op, ins):
                        defined.append(lines)
        block = self.index.name_of_block
        if label is None:
            label = block[self.start] if self.first is not None else ".x.entry"
        lines = [f"{head} {{", f"{abi.quote(label)}:", *own, *prologue, *inits, *defined]
        if self.first is None:
            lines.append(f"  br label %{abi.quote(block[self.start])}")
        for k, b in enumerate(self.blocks):
            if not (k == 0 and self.first is not None):
                lines.append(f"{abi.quote(block[b])}:")
            lines += [f"  {(replace or {}).get(names[i]) or self.index.text[i]}" for i in self.part(b)]
            if b == self.end_block:
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


__all__ = ["FunctionIndex", "Outline", "same_value"]
