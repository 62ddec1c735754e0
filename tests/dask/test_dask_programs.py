"""The shared program suite on ``dask``, against ``interp`` and the NumPy references.

On an in-process cluster of two workers: the split path (a leaf owning its rows) and the
whole-graph path both run here; which one each program took is checked in
test_dask_split.py.
"""

from __future__ import annotations

import pytest

from markers import needs_backend
from programs import PROGRAMS, check_against_interp

pytestmark = [needs_backend("dask"), pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning")]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_program_matches_interp_and_reference(program, dask_runtime):
    check_against_interp(program, "dask")
