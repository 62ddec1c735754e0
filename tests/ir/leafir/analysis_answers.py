"""The back ends' answers about every leaf of the suite (``leaf_suite.LEAVES``), in one
comparable, JSON-able form: the bounds facts (``backends/bounds.py``), the ownership by the
instance id x (``backends/dask/ownership.py``) and the privatized atomics
(``backends/cpu/privatize.py``). ``data/analysis_answers.json`` holds the answers the
syntax-tree readings gave before they were replaced by the leaf-IR analyses
(``record_old_answers`` made it, while both existed); the test compares today's with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import leaf_suite
from hpvm.ir.bodies import PYTHON_KINDS
from hpvm.ir.graph import LeafFunction

RECORDED = Path(__file__).parent / "data" / "analysis_answers.json"

#: Where the leaf-IR answers deliberately differ from the recorded syntax-tree ones, and why.
CHANGED: dict[tuple[str, str], Any] = {}  # (none since `raise` joined the dialect)


def key_of(key: tuple[str, str]) -> str:
    return f"{key[0]}:{key[1]}"


def bounds_answer(accesses: Any) -> list[list[Any]]:
    """Facts without their ``where`` (the IR names a statement's first line; the syntax
    tree named the subscript's own line of a statement written over several lines)."""
    return sorted([a.param, a.array, a.dim, a.offset, a.axis, a.stride] for a in accesses)


def ownership_answer(found: Any) -> dict[str, Any]:
    """Whether the leaf is owned, and if so how (problem texts are not compared: the order
    in which problems are found, and so which one is named, changed)."""
    if found.problem is not None:
        return {"owned": False}
    return {
        "owned": True,
        "combined": dict(sorted(found.combined.items())),
        "rows": {k: list(v) for k, v in sorted(found.rows.items())},
        "broadcast": sorted(found.broadcast),
    }


def leaves() -> dict[str, LeafFunction]:
    return {key_of(k): fn for k, fn in sorted(leaf_suite.LEAVES.items())}


def python(fn: LeafFunction) -> bool:
    return fn.body_kind in PYTHON_KINDS


def recorded() -> dict[str, dict[str, Any]]:
    return json.loads(RECORDED.read_text())  # type: ignore[no-any-return]
