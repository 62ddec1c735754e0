"""Work-item loops' per-instance values computed again, and instructions renamed per loop.

A value that is a function of the instance ids and of what no instance changes (argument
slots, the shared context, constants, uniform allocas stored once), kept across loops in a
``reg2mem`` alloca stored once, is computed again from the ids by a loop that needs it
(``Recompute``) instead of being loaded from a per-instance array: the vectorizer then sees
``tile + ty*8 + kk`` (unit stride in x, or uniform) where it would see a gather. The ids
themselves read the loop's variables (``instance_id``; for a jammed call, the calling
instance's id plus the lane: ``wijam.py``). Split from ``wiloops.py``, which emits the loops.
"""

from __future__ import annotations

import re

from .coro import WRITTEN
from .wiuniform import PURE, PURE_INTRINSICS, Analysis, Function, Ins, llvm_local, unquote

_TOKEN = re.compile(rf"%({WRITTEN})")


class Recompute:
    """Per-instance values that are functions of the instance ids and of what no instance
    changes (argument slots, the shared context, constants, uniform allocas stored once),
    kept across loops in a ``reg2mem`` alloca stored once: a loop that needs one computes it
    again from the ids instead of loading it from a per-instance array, so the vectorizer
    sees ``tile + ty*8 + kk`` (unit stride in x, or uniform) where it would see a gather."""

    def __init__(self, f: Function, a: Analysis, jam: int | None = None):
        self.f, self.a, self.jam = f, a, jam
        self.defs = {i.name: i for b in f.blocks for i in b.body if i.name}
        stores: dict[str, list[Ins]] = {}
        for b in f.blocks:
            for i in b.body:
                if i.opcode == "store" and i.operands[1][0] in f.allocas:
                    stores.setdefault(i.operands[1][0], []).append(i)
        self.single = {al: s[0] for al, s in stores.items() if len(s) == 1}
        self.allocas: set[str] = set()
        for al, store in self.single.items():
            if al not in a.uniform_allocas and al not in f.original and self._ok(store.operands[0], {al}):
                self.allocas.add(al)
        self.count = 0

    def _ok(self, op: tuple[str, str], visiting: set[str]) -> bool:
        name, kind = op
        if kind != "instruction":
            return kind != "metadata_as_value"
        i = self.defs.get(name)
        if i is None:
            return False
        if name in self.a.ids:
            return True
        if i.opcode == "load":
            ptr = i.operands[0][0]
            if " volatile " in i.text or " atomic " in i.text:
                return False
            if ptr in self.a.immutable:
                return self._ok(i.operands[0], visiting)
            if ptr in self.a.uniform_allocas:
                return ptr in self.single
            store = self.single.get(ptr)
            if store is None or ptr in visiting or ptr in self.f.original:
                return False
            return self._ok(store.operands[0], visiting | {ptr})
        if i.opcode in PURE:
            return all(self._ok(o, visiting) for o in i.operands)
        if i.opcode == "call" and PURE_INTRINSICS.match(i.operands[-1][0]):
            return all(self._ok(o, visiting) for o in i.operands[:-1])
        return False

    def speculatable(self, i: Ins) -> bool:
        """Whether the value the load ``i`` of a recomputable alloca reads can be computed
        where its instance may not reach (no division that a guard may protect)."""
        todo, seen = [self.single[i.operands[0][0]].operands[0]], set()
        while todo:
            name, kind = todo.pop()
            if kind != "instruction" or name in seen:
                continue
            seen.add(name)
            d = self.defs[name]
            if d.opcode in ("udiv", "sdiv", "urem", "srem"):
                return False
            if d.opcode == "load" and d.operands[0][0] in self.allocas:
                todo.append(self.single[d.operands[0][0]].operands[0])
            elif d.opcode != "alloca":
                todo.extend(d.operands)
        return True

    def load(self, i: Ins, lines: list[str], memo: dict[str, str], renames: dict[str, str], p: str) -> str:
        """The name holding what the load ``i`` of a recomputable alloca reads, its
        computation appended to ``lines``."""
        store = self.single[i.operands[0][0]]
        value, kind = store.operands[0]
        if kind == "instruction":
            return self._value(value, lines, memo, renames, p)
        typed = re.match(r"\s*store (?:[a-z]+ )*(.+), ptr ", store.text)
        assert typed is not None
        return self._fresh(lines, f"select i1 true, {typed.group(1)}, {typed.group(1)}")

    def _fresh(self, lines: list[str], rhs: str) -> str:
        self.count += 1
        new = f"__wirc{self.count}"
        lines.append(f"  %{new} = {rhs}")
        return new

    def _value(
        self, name: str, lines: list[str], memo: dict[str, str], renames: dict[str, str], p: str
    ) -> str:
        if name in memo:
            return memo[name]
        i = self.defs[name]
        if i.opcode == "alloca":  # (a uniform one, read where it is)
            new = name
        elif name in self.a.ids:
            new = self._fresh(lines, instance_id(self.a.ids[name], p, self.jam))
        elif i.opcode == "load" and i.operands[0][0] in self.allocas:
            new = self.load(i, lines, memo, renames, p)
        else:
            names = dict(renames)
            if i.opcode == "getelementptr" and name in self.a.immutable:
                names.pop("ctx", None)  # (the shared part: the first instance's context has it)
            for op, kind in i.operands:
                if kind == "instruction":
                    names[op] = self._value(op, lines, memo, renames, p)
            self.count += 1
            new = f"__wirc{self.count}"
            names[name] = new
            lines.append(rename(i.text, names))
        memo[name] = new
        return new


def instance_id(axis: int, p: str, jam: int | None) -> str:
    """The right-hand side computing an instance's id along ``axis`` in the loop with prefix
    ``p``: the loop's own variable; jammed (``jam`` the axis, ``wijam.py``), the calling
    instance's id (``%__wi.b<axis>``), plus the x loop's variable along ``jam`` — which
    cannot wrap: ids are far below 2^63 (``nuw nsw`` lets LLVM see ``id + lane`` as
    non-negative, as it knows the calling instance's id: ``native.NONNEGATIVE``)."""
    if jam is None:
        return f"add i64 {p}{'xyz'[axis]}, 0"
    return f"add nuw nsw i64 {p}x, %__wi.b{axis}" if axis == jam else f"add i64 %__wi.b{axis}, 0"


def rename(text: str, renames: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        new = renames.get(unquote(m.group(1)))
        return m.group(0) if new is None else llvm_local(new)

    return _TOKEN.sub(sub, text)


__all__ = ["Recompute", "instance_id", "rename"]
