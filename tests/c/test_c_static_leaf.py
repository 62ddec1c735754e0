"""A node function declared ``static`` (internal linkage in LLVM) runs like any other: the
LLVM-leaf clone used to let LLVM's dead-code pass drop it, and LLVM then aborted the whole
process on the freed function (an assertion in ``llvm::cast``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hpvmc_helpers import needs_clang, needs_llvm_leaves

from hpvm import c

pytestmark = [needs_clang, needs_llvm_leaves]

PROGRAM = Path(__file__).parent / "programs" / "static_leaf.c"


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_a_static_leaf_runs(target, capfd):
    assert c.compile(PROGRAM).run(target=target) == 0
    assert capfd.readouterr().out.split() == ["2", "14"]
