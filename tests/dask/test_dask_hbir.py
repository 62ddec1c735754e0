"""HBIR programs (generated leaves) run on ``dask`` with the NumPy results of test_hbir_run.

Their leaves are generated code, which the ownership proof does not read: a leaf whose
declared layouts it keeps to is split by them (matmul; test_dask_layouts.py), the others run
whole on one worker and the notes say why (docs/backends/dask.md).
"""

from __future__ import annotations

import importlib.util
import io
import sys
from pathlib import Path

import numpy as np
import pytest

from hpvm import hbir
from markers import needs_backend

pytestmark = needs_backend("dask")

HERE = Path(__file__).resolve().parent
if str(HERE.parent / "hbir") not in sys.path:  # (as pytest puts it there for tests/hbir)
    sys.path.insert(0, str(HERE.parent / "hbir"))
_spec = importlib.util.spec_from_file_location("_hbir_cases", HERE.parent / "hbir" / "test_hbir_run.py")
assert _spec is not None and _spec.loader is not None
_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cases)


@pytest.mark.parametrize("name", sorted(_cases.CASES))
def test_hbir_examples_match_numpy(name: str, dask_runtime) -> None:
    inputs, expected = _cases.CASES[name]()
    program = hbir.load(_cases.EXAMPLES / name)
    outputs = program.run(inputs, target="dask", out=io.StringIO())
    assert set(outputs) == set(expected)
    for key, want in expected.items():
        np.testing.assert_allclose(outputs[key], want, rtol=1e-5)
        assert outputs[key].dtype == program.outputs[key][1]
