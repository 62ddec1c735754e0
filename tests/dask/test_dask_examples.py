"""The examples on ``dask`` (through ``$HPVM_DASK_SCHEDULER``: each example's own init and
cleanup connect to the test cluster), against their NumPy references (``interp`` agrees
with those in tests/cpu/test_cpu_differential.py; it is too slow to run again here)."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from example_modules import load
from markers import needs_backend

pytestmark = [needs_backend("dask"), pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning")]

RUNS = {
    "vector_add": {"n": 1001, "seed": 1},
    "sgemm": {"m": 32, "n": 48, "k": 20, "tile": 16, "alpha": 1.5, "beta": 0.5, "seed": 2},
    "stencil": {"rows": 33, "cols": 17, "steps": 4, "seed": 3},
    "histogram": {"n": 20_000, "nbins": 16, "seed": 4},
    "reduction": {"n": 1024, "block": 64, "seed": 5},
    "edge_detection": {"frames": 4, "size": 24, "in_flight": 2, "seed": 6},
}
STREAMING = {
    "edge_detection": "a streaming launch: target='dask' does not run streams yet (docs/backends/dask.md)"
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_example_on_dask(name, dask_client, monkeypatch):
    if name in STREAMING:
        pytest.skip(STREAMING[name])
    hpvm.cleanup()
    monkeypatch.setenv("HPVM_DASK_SCHEDULER", dask_client.scheduler.address)
    module = load(name)
    result, reference = module.run(**RUNS[name], target="dask")
    if np.issubdtype(np.asarray(result).dtype, np.integer):
        np.testing.assert_array_equal(result, reference)
    else:
        np.testing.assert_allclose(result, reference, rtol=1e-5, atol=1e-5)


def test_a_stream_handing_on_frames_is_refused_with_the_reason(dask_client, monkeypatch):
    hpvm.cleanup()
    monkeypatch.setenv("HPVM_DASK_SCHEDULER", dask_client.scheduler.address)
    with pytest.raises(hpvm.LaunchError, match="only when its stages hand on scalars"):
        load("edge_detection").run(**RUNS["edge_detection"], target="dask")
