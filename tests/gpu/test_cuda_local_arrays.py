"""A leaf's constant-shape ``np.zeros`` is a thread-private array on ``cuda``
(``backends/cuda/local_arrays.py``): numba-cuda cannot allocate arrays in device code."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.backends.cuda.local_arrays import CUDA_NAME, local_array_clone
from hpvm.ir.leafir.printer import print_leaf
from hpvm.passes.clone_leaves import clone_leaf
from markers import needs_backend
from running import run_tracked

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hpvm_runtime")]


class FakeCuda:
    """Stands for numba.cuda: ``local.array`` is an uninitialised array, as on a GPU."""

    class local:  # noqa: N801 (numba.cuda's spelling)
        @staticmethod
        def array(shape, dtype):
            return np.full(shape, 77, dtype)  # garbage: the rewrite must zero it


def placed(leaf) -> tuple:  # type: ignore[no-untyped-def]
    """The leaf's cuda clone with its local arrays placed, run as Python: (clone, function)."""
    clone, bindings = local_array_clone(clone_leaf(leaf, "cuda"), FakeCuda)
    namespace = {**clone.namespace(), **bindings}
    exec(clone.source(), namespace)
    return clone, bindings, namespace[clone.symbol]


@hpvm.leaf(ins=("a",), outs=("out",))
def scratch(a: hpvm.i32[:], out: hpvm.f64[:]):
    t = np.zeros(4, np.int32)
    m = np.zeros((2, 3), dtype=np.float32)
    d = np.zeros(5)
    t[1] = a[0]
    out[0] = t[1] + m[1, 2] + d[4]


PLACED = """\
leaf scratch(a: i32[:], out: f64[:]) -> () at "FILE":LINE {
  var t: i32[:]
  var m: f32[:, :]
  var d: f64[:]
  var __hpvm_z0: i64
  var __hpvm_z1: i64
  var __hpvm_z2: i64
  var __hpvm_z3: i64
  L1: t = np.empty<i32>(4)
  L1: for __hpvm_z0 in range(0, 4, 1) {
    L1: t[__hpvm_z0] = #i32(0)
  }
  L2: m = np.empty<f32>(2, 3)
  L2: for __hpvm_z1 in range(0, 2, 1) {
    L2: for __hpvm_z2 in range(0, 3, 1) {
      L2: m[__hpvm_z1, __hpvm_z2] = #f32(0.0)
    }
  }
  L3: d = np.empty<f64>(5)
  L3: for __hpvm_z3 in range(0, 5, 1) {
    L3: d[__hpvm_z3] = 0.0
  }
  L4: t[1] = a[0]
  L5: out[0] = (t[1] + m[1, 2]) + d[4]
}
"""


def test_constant_shapes_become_local_arrays_set_to_zero():
    clone, bindings, run = placed(scratch)
    line = scratch.location.line + 1  # (the def, under its decorator)
    expected = PLACED.replace("FILE", scratch.location.file).replace("LINE", str(line))
    for k in range(5, 0, -1):
        expected = expected.replace(f"L{k}:", f"{line + k}:")
    assert print_leaf(clone.ir) == expected
    text = clone.source()
    assert text.count(f"{CUDA_NAME}.local.array(") == 3 and "np.zeros" not in text
    out = np.zeros(1)
    run(np.array([5], np.int32), out, (0,) * 7)
    assert out[0] == 5  # no 77 left anywhere
    assert set(bindings) == {CUDA_NAME}


@hpvm.leaf(outs=("out",))
def unplaced(n: hpvm.i64, out: hpvm.f64[:]):
    t = np.zeros(n, np.int32)
    u = np.ones(4)
    out[0] = t[0] + u[0]


def test_other_allocations_are_left_as_written():
    clone = clone_leaf(unplaced, "cuda")
    same, bindings = local_array_clone(clone, FakeCuda)
    assert same is clone and bindings == {}
    assert "local.array" not in same.source()


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
