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


@pytest.mark.parametrize("name", sorted(RUNS))
def test_example_on_dask(name, dask_client, monkeypatch):
    hpvm.cleanup()
    monkeypatch.setenv("HPVM_DASK_SCHEDULER", dask_client.scheduler.address)
    module = load(name)
    result, reference = module.run(**RUNS[name], target="dask")
    if np.issubdtype(np.asarray(result).dtype, np.integer):
        np.testing.assert_array_equal(result, reference)
    else:
        np.testing.assert_allclose(result, reference, rtol=1e-5, atol=1e-5)


def test_edge_detection_streams_on_dask_as_on_interp(dask_client, monkeypatch):
    """Six stages handing frames on to each other: on dask, as interp computes them."""
    hpvm.cleanup()
    monkeypatch.setenv("HPVM_DASK_SCHEDULER", dask_client.scheduler.address)
    module = load("edge_detection")
    run = {"frames": 3, "size": 12, "in_flight": 2, "seed": 7}
    on_dask, reference = module.run(**run, target="dask")
    hpvm.cleanup()
    on_interp, _ = module.run(**run, target="interp")
    np.testing.assert_array_equal(on_dask, on_interp)
    np.testing.assert_array_equal(on_dask, reference)
