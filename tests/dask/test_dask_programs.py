"""The shared program suite on ``dask``, against ``interp`` and the NumPy references.

On an in-process cluster of two workers: the split path (a leaf owning its rows) and the
whole-graph path both run here; which one each program took is checked in
test_dask_split.py.
"""

from __future__ import annotations

import warnings

import pytest

from markers import needs_backend
from programs import PROGRAMS, assert_matches, expected, run_program

pytestmark = [needs_backend("dask"), pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning")]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_program_matches_interp_and_reference(program, dask_runtime):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = expected(program)
        oracle = run_program(program, "interp")
        got = run_program(program, "dask")
    assert_matches(program, got, want)
    assert_matches(program, got, oracle)
