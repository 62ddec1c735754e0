"""A leaf's ``int`` index arithmetic in 64 bits: ``sext i32 (a op nsw b) to i64`` that an
address (``getelementptr``) uses becomes ``(sext a) op nsw (sext b)`` in ``i64``, down the
chain of ``nsw`` adds, subs and muls.

Why: C computes ``a[x + nx * (y + ny * z)]`` with ``int`` operands in 32 bits and
sign-extends the sum for the address. Inside a C loop, LLVM's induction-variable widening
rewrites such a chain in 64 bits, because every signed add and multiply is ``nsw`` (signed
overflow is undefined in C). A leaf is compiled alone, with no loop around it; instcombine
(in the front end's ``-O1``, and again in the back end's ``-O3`` after it inlines the leaf
into its instance loop) reassociates the chain first (``(ny*z + (y + 1)) + 1`` becomes
``(ny*z + y) + 2``) and drops the ``nsw`` of the adds it moves; what is left cannot be
widened, and every access computes its index in 32 bits and
sign-extends it in every vector iteration (docs/hpvm-c.md). Distributing the extension
while every ``nsw`` is still there is exact: where no 32-bit operation overflows, the
64-bit one computes the same value (and cannot overflow); where one does, the 32-bit
result was poison, which any value refines. What reaches the address is then 64-bit
arithmetic of sign-extended leaves (parameters, the instance id truncated to ``int``),
which instcombine may reorder freely.

Only functions without loops: inside a loop, LLVM's own induction-variable widening
handles the chains that vary with it, and widening them first changes what it does
(examples/c/sgemm.c's tile loop got an exit count with ``umin`` in 32 bits instead of a
64-bit counter; not measured further). The leaves this is for are the loop-free ones,
replicated over instances, whose instance loop the back end vectorizes.

On the text of functions in SSA form (``passes.py`` runs it after SROA, before ``-O1``):
each widened operation gets its 64-bit twin right after it (its operands' twins are defined
before it, so they dominate the twin), each extension becomes a copy of the twin (``add i64
twin, 0``); the 32-bit chain stays for its other users, and ``-O1`` removes what has none.
"""

from __future__ import annotations

import re

_NAME = r"%[-a-zA-Z$._][-a-zA-Z$._0-9]*|%[0-9]+"
_OPERAND = rf"(?:{_NAME}|-?[0-9]+|poison|undef)"
_OP = re.compile(rf"^  ({_NAME}) = (add|sub|mul) (?:nuw )?nsw i32 ({_OPERAND}), ({_OPERAND})((?:, !.*)?)$")
_SEXT = re.compile(rf"^  ({_NAME}) = sext i32 ({_NAME}) to i64((?:, !.*)?)$")
_DEFINE = re.compile(r"^define ")
_PREFIX = "%w64."
_LABEL = re.compile(r"^([-a-zA-Z$._0-9]+):")
_TARGET = re.compile(r"label %([-a-zA-Z$._0-9]+)")


def widen(text: str) -> str:
    """``text`` with the ``nsw`` chains its functions sign-extend to ``i64`` computed in
    ``i64`` (module docstring)."""
    lines = text.splitlines()
    out: list[str] = []
    k = 0
    while k < len(lines):
        m = _DEFINE.match(lines[k])
        if m is None or not lines[k].endswith("{"):
            out.append(lines[k])
            k += 1
            continue
        end = lines.index("}", k)
        out += [lines[k], *_widen_body(lines[k + 1 : end]), "}"]
        k = end + 1
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _widen_body(body: list[str]) -> list[str]:
    """One function's lines, widened (unchanged if it already uses the twins' prefix, or
    has a loop: module docstring)."""
    if any(_PREFIX in line for line in body) or has_loop(body):
        return body
    ops: dict[str, tuple[str, str, str]] = {}
    for line in body:
        m = _OP.match(line)
        if m is not None:
            ops[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    wide: set[str] = set()
    indices = {v for line in body if " getelementptr " in line for v in re.findall(_NAME, line)}
    todo = [
        m.group(2)
        for m in map(_SEXT.match, body)
        if m is not None and m.group(2) in ops and m.group(1) in indices
    ]
    while todo:
        name = todo.pop()
        if name not in wide:
            wide.add(name)
            todo += [v for v in ops[name][1:] if v in ops]
    if not wide:
        return body
    out: list[str] = []
    for line in body:
        m = _SEXT.match(line)
        if m is not None and m.group(2) in wide and m.group(1) in indices:
            out.append(f"  {m.group(1)} = add i64 {_twin(m.group(2))}, 0{m.group(3)}")
            continue
        out.append(line)
        m = _OP.match(line)
        if m is None or m.group(1) not in wide:
            continue
        name, (op, a, b) = m.group(1), ops[m.group(1)]
        operands = []
        for j, v in enumerate((a, b)):
            if v in wide:
                operands.append(_twin(v))
            elif v.startswith("%"):
                ext = f"{_twin(name)}.s{j}"
                out.append(f"  {ext} = sext i32 {v} to i64")
                operands.append(ext)
            else:
                operands.append(v)  # (a constant, or poison: the same in 64 bits)
        out.append(f"  {_twin(name)} = {op} nsw i64 {operands[0]}, {operands[1]}{m.group(5)}")
    return out


def has_loop(body: list[str]) -> bool:
    """Whether a branch in a function's lines goes back to a block above it (clang lays
    out blocks in source order: every loop has such a branch)."""
    seen: set[str] = set()
    for line in body:
        m = _LABEL.match(line)
        if m is not None:
            seen.add(m.group(1))
        elif line.lstrip().startswith(("br ", "switch ")) and seen & set(_TARGET.findall(line)):
            return True
    return False


def _twin(name: str) -> str:
    """The 64-bit twin of the 32-bit value ``name``."""
    return _PREFIX + name[1:]


__all__ = ["has_loop", "widen"]
