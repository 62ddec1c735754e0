"""A leaf's constant-shape ``np.zeros`` is a thread-private array on ``cuda``
(``backends/cuda/local_arrays.py``): numba-cuda cannot allocate arrays in device code."""

from __future__ import annotations

import ast
import textwrap

import numpy as np
import pytest

import hpvm
from hpvm.backends.cuda.local_arrays import CUDA_NAME, lower_local_arrays
from markers import needs_backend
from running import run_tracked

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hpvm_runtime")]


class FakeCuda:
    """Stands for numba.cuda: ``local.array`` is an uninitialised array, as on a GPU."""

    class local:  # noqa: N801 (numba.cuda's spelling)
        @staticmethod
        def array(shape, dtype):
            return np.full(shape, 77, dtype)  # garbage: the rewrite must zero it


def lowered(source: str) -> tuple[str, dict]:
    func = ast.parse(textwrap.dedent(source)).body[0]
    bindings = lower_local_arrays(func, {"np": np}, FakeCuda)
    return ast.unparse(func), bindings


def test_constant_shapes_become_local_arrays_set_to_zero():
    text, bindings = lowered(
        """
        def leaf(a):
            t = np.zeros(4, np.int32)
            m = np.zeros((2, 3), dtype=np.float32)
            d = np.zeros(5)
            t[1] = a[0]
            return t[1] + m[1, 2] + d[4]
        """
    )
    assert text.count(f"{CUDA_NAME}.local.array(") == 3
    assert "np.zeros" not in text
    namespace = dict(bindings, np=np)
    exec(text, namespace)
    assert namespace["leaf"](np.array([5], np.int32)) == 5  # no 77 left anywhere
    assert set(bindings) == {CUDA_NAME, "__hpvm_float64"}


def test_other_allocations_are_left_as_written():
    text, bindings = lowered(
        """
        def leaf(n):
            t = np.zeros(n, np.int32)
            u = np.empty(4)
            v = w = np.zeros(4)
            return t, u, v, w
        """
    )
    assert "local.array" not in text and bindings == {}


@hpvm.leaf(ins=("a",), outs=("out",))
def running_sums(a: hpvm.f32[:], out: hpvm.f32[:]) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    window = np.zeros(4, np.float32)
    for k in range(4):
        window[k] = a[i] * (k + 1)
    total = np.float32(0)
    for k in range(4):
        total += window[k]
    out[i] = total


@hpvm.internal(ins=("a",), outs=("out",))
def sums_root(a: hpvm.f32[:], out: hpvm.f32[:]):
    node = hpvm.create_node_1d(running_sums, a.shape[0])
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


@needs_backend("cuda")
def test_a_leaf_with_a_scratch_array_runs_on_cuda_as_on_interp():
    a = np.arange(8, dtype=np.float32)
    results = {}
    for target in ("interp", "cuda"):
        out = np.zeros(8, np.float32)
        run_tracked(sums_root, (a, out), target)
        hpvm.request_memory(out)
        results[target] = out
    np.testing.assert_array_equal(results["cuda"], results["interp"])
    np.testing.assert_array_equal(results["cuda"], a * 10)
