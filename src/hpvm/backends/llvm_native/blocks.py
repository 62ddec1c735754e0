"""Which blocks of a node function's LLVM run to their end for which instances: what makes
an access a fact for ``access.py`` (the bounds pre-check).

A load or store says something about every instance only where every instance makes it:
in a block every call runs to its end (``certain_blocks``: the entry block, and each block
on every path from it to one that ends the call), or, for the instances meeting a block's
conditions, in a block every call meeting them runs (``guarded_blocks``: ``if (i < n)``'s
body, everything after ``if (row >= n) return;``). Reads the function as LLVM prints it.
"""

from __future__ import annotations

import re

from ...ir.llvm_text import DEFINITION

_TERMINATORS = frozenset(
    {"ret", "br", "switch", "indirectbr", "invoke", "resume", "unreachable", "callbr", "cleanupret",
     "catchret", "catchswitch"}
)  # fmt: skip

_LABEL = re.compile(r'^\s*("[^"]*"|[-a-zA-Z$._0-9]+):\s*(;.*)?$')
_TARGET = re.compile(r'\blabel %("[^"]*"|[-a-zA-Z$._0-9]+)')


#: A block: its label, its instructions (the terminator left out), its successors, and for
#: ``br i1 %c, label %t, label %f`` the condition and its two targets.
_Block = tuple[str, list[str], list[str], tuple[str, str, str] | None]
_BRANCH = re.compile(
    r'\bbr i1 (%[-a-zA-Z$._0-9]+), label %("[^"]*"|[-a-zA-Z$._0-9]+), label %("[^"]*"|[-a-zA-Z$._0-9]+)'
)
#: A condition a block is reached under: (the ``i1`` value, the side taken).
Condition = tuple[str, bool]


def _blocks(lines: list[str]) -> list[_Block]:
    """The function's blocks, in order (the entry block first)."""
    blocks: list[_Block] = []
    start = next((k for k, line in enumerate(lines) if line.startswith("define")), len(lines))
    label, body, targets, branch, ended = "", [], [], None, False
    for line in lines[start + 1 :]:
        text = line.strip()
        if not text or text.startswith((";", "#dbg_")):
            continue
        found = _LABEL.match(line)
        if found is not None or text == "}":
            if blocks or label or body or targets:  # (not before the entry block's own label)
                blocks.append((label, body, targets, branch))
            if found is None:
                break
            label, body, targets, branch, ended = found.group(1).strip('"'), [], [], None, False
            continue
        m = DEFINITION.match(line)
        opcode = (m.group(2) if m else text).split(" ", 1)[0]
        if ended or opcode in _TERMINATORS:
            ended = True
            targets += [t.strip('"') for t in _TARGET.findall(text)]
            two = _BRANCH.search(text)
            if two is not None and branch is None:
                branch = (two.group(1), two.group(2).strip('"'), two.group(3).strip('"'))
        else:
            body.append(line)
    return blocks


def _reaches_an_end(entry: str, successors: dict[str, list[str]], avoid: str | None) -> bool:
    """Whether some path from ``entry`` not through ``avoid`` reaches a block without
    successors (one that ends the call)."""
    seen, todo = set(), [entry]
    while todo:
        name = todo.pop()
        if name in seen or name == avoid:
            continue
        seen.add(name)
        if successors.get(name) == []:
            return True
        todo.extend(successors.get(name, []))
    return False


def certain_blocks(lines: list[str]) -> list[str]:
    """The instructions of the blocks every call of the function runs to their end (module
    docstring): the entry block, and each block on every path from it to a block that
    ends the call (``ret``, ``unreachable``, ``resume``: no successor). Their terminators
    are left out; blocks whose call cannot end (no path to such a block) add nothing."""
    blocks = _blocks(lines)
    if not blocks:
        return []
    successors = {name: after for name, _, after, _ in blocks}
    entry = blocks[0][0]
    if not _reaches_an_end(entry, successors, None):
        return blocks[0][1]
    return [line for name, body, _, _ in blocks if name == entry or not _reaches_an_end(entry, successors, name)
            for line in body]  # fmt: skip


def guarded_blocks(lines: list[str]) -> list[tuple[list[str], frozenset[Condition]]]:
    """The other blocks that every call meeting their conditions runs to their end: each
    block's instructions and the conditions every path to it took (``br i1 %c``'s side),
    where every path from the entry to an end that keeps to those sides passes through it —
    ``if (i < n) b[i] = ...``'s store, or everything after ``if (row >= n) return;``.
    Whether an instance meets them is for the caller to read (``access.py``'s ``_byte_accesses``: only a
    condition on its ids and the arguments, the same in every iteration of any loop, is
    used)."""
    blocks = _blocks(lines)
    if not blocks or not _reaches_an_end(blocks[0][0], {n: a for n, _, a, _ in blocks}, None):
        return []
    entry = blocks[0][0]
    successors = {name: after for name, _, after, _ in blocks}
    branches = {
        name: branch for name, _, _, branch in blocks if branch is not None and branch[1] != branch[2]
    }
    predecessors: dict[str, list[str]] = {}
    for name, after in successors.items():
        for target in dict.fromkeys(after):
            predecessors.setdefault(target, []).append(name)
    # the conditions every path to a block took: an intersection over its predecessors
    taken: dict[str, frozenset[Condition] | None] = {name: None for name in successors}
    taken[entry] = frozenset()
    changed = True
    while changed:
        changed = False
        for name, *_ in blocks[1:]:
            sets = []
            for p in predecessors.get(name, []):
                if taken.get(p) is None:
                    continue
                branch = branches.get(p)
                side = (
                    ()
                    if branch is None
                    else (((branch[0], True),) if branch[1] == name else ((branch[0], False),))
                )
                sets.append(taken[p] | frozenset(side))  # type: ignore[operator]
            now = frozenset.intersection(*sets) if sets else None
            if now != taken[name]:
                taken[name], changed = now, True
    found = []
    for name, body, _, _ in blocks[1:]:
        conditions = taken[name]
        if not conditions or not _reaches_an_end(entry, successors, name):
            continue  # (none, or a block every call runs: ``certain_blocks``)
        kept = dict(conditions)
        pruned = {
            n: (
                [b[1] if kept[b[0]] else b[2]]
                if (b := branches.get(n)) is not None and b[0] in kept
                else after
            )
            for n, after in successors.items()
        }
        if _reaches_an_end(entry, pruned, None) and not _reaches_an_end(entry, pruned, name):
            found.append((body, conditions))
    return found
