"""Post-dominators of a function's control flow: where every path from a block meets again
before the function ends. Two analyses of LLVM leaves ask it, over blocks of their own
kinds: whether a branch on memory chooses a ``phi``'s value (``llvmbounded.py``) and where a
branch that instances take apart joins again (the work-item loops' uniformity,
``backends/llvm_native/wiuniform.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def immediate_post_dominators(
    blocks: Sequence[Any], succ: Mapping[Any, Sequence[Any]], exit: Any = None
) -> dict[Any, Any]:
    """Each block's immediate post-dominator — the returns and other ends (blocks without a
    successor) joined in one virtual exit, ``exit`` for a block that only it
    post-dominates —; a block that cannot reach an end (a loop that never leaves) has no
    entry. Iterative, the sets as bits."""
    index = {b: k for k, b in enumerate(blocks)}
    every = (1 << len(blocks)) - 1
    ends = [not succ[b] for b in blocks]
    pdom = [1 << k if ends[k] else every for k in range(len(blocks))]
    changed = True
    while changed:
        changed = False
        for k in reversed(range(len(blocks))):
            if ends[k]:
                continue
            meet = every
            for s in succ[blocks[k]]:
                meet &= pdom[index[s]]
            new = meet | (1 << k)
            if new != pdom[k]:
                pdom[k], changed = new, True
    preds: dict[Any, list[Any]] = {b: [] for b in blocks}
    for b in blocks:
        for s in succ[b]:
            preds[s].append(b)
    ending = {b for b, end in zip(blocks, ends) if end}
    todo = list(ending)
    while todo:
        for p in preds[todo.pop()]:
            if p not in ending:
                ending.add(p)
                todo.append(p)
    out: dict[Any, Any] = {}
    for k, block in enumerate(blocks):
        if block not in ending:
            continue  # (cannot reach an end: no post-dominator means anything)
        strict = pdom[k] & ~(1 << k)
        # (the closest: the one post-dominated by all the others, the most bits)
        closest = max(
            (j for j in range(len(blocks)) if strict >> j & 1),
            key=lambda j: pdom[j].bit_count(),
            default=None,
        )
        out[block] = exit if closest is None else blocks[closest]
    return out


__all__ = ["immediate_post_dominators"]
