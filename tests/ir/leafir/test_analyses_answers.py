"""The back ends read the leaf-IR analyses and give, on every leaf of the suite (the shared
programs, the GPU-convention leaves, the mixed programs, the examples, HBIR's), the answers
their syntax-tree readings gave: the recorded ones (``analysis_answers.py``), but for the
deliberate changes listed in ``CHANGED``. A leaf outside the dialect gets the conservative
answer: no bounds facts, not owned, nothing privatized."""

from __future__ import annotations

import analysis_answers as aa
import pytest

from hpvm.backends.bounds import leaf_accesses
from hpvm.backends.cpu.privatize import atomic_only_params
from hpvm.backends.dask.ownership import analyse
from hpvm.errors import CompileError
from hpvm.passes.clone_leaves import clone_of

LEAVES = aa.leaves()
RECORDED = aa.recorded()


def _expected(key: str, what: str) -> object:
    return aa.CHANGED.get((key, what), RECORDED[key][what])


def test_every_leaf_has_recorded_answers() -> None:
    assert set(RECORDED) == set(LEAVES) and len(LEAVES) > 80
    assert sum(e["ownership"]["owned"] for e in RECORDED.values()) >= 15  # (not all refusals)
    assert sum(bool(e.get("bounds")) for e in RECORDED.values()) >= 30
    assert sum(bool(e.get("privatized")) for e in RECORDED.values()) >= 2


@pytest.mark.parametrize("key", sorted(LEAVES))
def test_same_answers_as_the_syntax_tree_readings(key: str) -> None:
    fn = LEAVES[key]
    assert aa.ownership_answer(analyse(fn)) == _expected(key, "ownership")
    if not aa.python(fn):
        return
    try:
        clone = clone_of(fn)
    except CompileError:
        clone = None
    if clone is not None:
        assert aa.bounds_answer(leaf_accesses(clone.leaf, clone)) == _expected(key, "bounds")
        assert {str(k): v for k, v in atomic_only_params(clone).items()} == _expected(key, "privatized")
