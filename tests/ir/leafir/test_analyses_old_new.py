"""(Removed with the syntax-tree readings.) Old and new, side by side, on every suite leaf."""

from __future__ import annotations

import analysis_answers as aa
import pytest

from hpvm.backends.bounds import leaf_accesses, unconditional_accesses
from hpvm.backends.cpu.privatize import _atomic_only_params_ast, atomic_only_params
from hpvm.backends.dask.ownership import analyse, analyse_ast
from hpvm.errors import CompileError
from hpvm.passes.clone_leaves import clone_of

LEAVES = aa.leaves()


@pytest.mark.parametrize("key", sorted(LEAVES))
def test_old_and_new_agree(key: str) -> None:
    fn = LEAVES[key]
    want = aa.CHANGED.get((key, "ownership"), aa.ownership_answer(analyse_ast(fn)))
    assert aa.ownership_answer(analyse(fn)) == want
    if not aa.python(fn):
        return
    try:
        clone = clone_of(fn)
    except CompileError:
        return
    assert aa.bounds_answer(leaf_accesses(clone.leaf, clone)) == aa.bounds_answer(
        unconditional_accesses(clone)
    )
    assert atomic_only_params(clone) == _atomic_only_params_ast(clone)
