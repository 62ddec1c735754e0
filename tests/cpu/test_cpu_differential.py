"""The cpu back end runs the shared program suite and every example like the interpreter.

Differential testing: the same programs on ``cpu`` and on ``interp`` (the oracle), and both
against the NumPy references — exact for integers, within a tolerance for floats.
"""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from example_modules import load
from programs import PROGRAMS, check_against_interp

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_program_matches_interp_and_reference(program):
    check_against_interp(program, "cpu")


EXAMPLE_RUNS = {
    "vector_add": {"n": 1001, "seed": 1},
    "sgemm": {"m": 32, "n": 48, "k": 20, "tile": 16, "alpha": 1.5, "beta": 0.5, "seed": 2},
    "stencil": {"rows": 33, "cols": 17, "steps": 4, "seed": 3},
    "histogram": {"n": 20_000, "nbins": 16, "seed": 4},
    "reduction": {"n": 1024, "block": 64, "seed": 5},
    "edge_detection": {"frames": 4, "size": 24, "in_flight": 2, "seed": 6},
}


@pytest.mark.parametrize("name", sorted(EXAMPLE_RUNS))
def test_example_on_cpu(name):
    module = load(name)
    result, reference = module.run(**EXAMPLE_RUNS[name], target="cpu")
    oracle, _ = module.run(**EXAMPLE_RUNS[name], target="interp")
    if np.issubdtype(np.asarray(result).dtype, np.integer):
        np.testing.assert_array_equal(result, reference)
        np.testing.assert_array_equal(result, oracle)
    else:
        np.testing.assert_allclose(result, reference, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(result, oracle, rtol=1e-5, atol=1e-5)


@hpvm.leaf()
def halves(x: hpvm.i32) -> tuple[hpvm.f32, hpvm.i32]:
    return x / 2, x // 2


@hpvm.internal()
def typed_outputs(x: hpvm.i32):
    node = hpvm.create_node(halves)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)
    hpvm.bind_out(node, 1, 1)


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_root_outputs_come_back_as_their_port_types(target):
    half, whole = hpvm.wait(hpvm.launch(typed_outputs, (7,), target=target))
    assert (type(half), type(whole)) == (np.float32, np.int32)
    assert (half, whole) == (3.5, 3)
