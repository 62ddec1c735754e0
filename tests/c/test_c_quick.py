"""HPVM-C launches on the launching thread (``runtime/quick.py``, ``ir/llvmbounded.py``): a
repeated launch of a graph whose C leaves are straight-line code, or loop a number of times
the host determines (a scalar, the instance id), runs inside ``launch``, as a Python leaf's
does, with the interpreter's results; a C leaf whose loop runs as many times as an element
says still goes to a worker (Ctrl-C must reach a host whose leaf could run long)."""

from __future__ import annotations

import numpy as np
import pytest
from hpvmc_helpers import EXAMPLES, ROW_SUM_LEAF, needs_clang, needs_llvm_leaves

import hpvm
from hpvm import c
from hpvm.runtime import quick
from running import every_run_quick

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

# A 1-D leaf whose instance sums its row of `src` in a loop of `w` turns: bounded by a scalar.
LOOPING = (
    ROW_SUM_LEAF
    + """
void root(float *src, size_t bytes_src, float *dst, size_t bytes_dst, int w) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, src, 1, dst);
  void *n = __hpvm__createNodeND(1, row_sum, bytes_dst / sizeof(float));
  for (int p = 0; p < 5; p++)
    __hpvm__bindIn(n, p, p, 0);
}
"""
)

# The same sum over the first `lens[y]` elements of the row: a loop as long as an element says.
LOADED_BOUND = """
#include "hpvm.h"

void row_sum(float *src, size_t bytes_src, int *lens, size_t bytes_lens, float *dst, size_t bytes_dst, int w) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, src, lens, 1, dst);
  long y = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  float s = 0.0f;
  for (int k = 0; k < lens[y]; k++)
    s += src[y * w + k];
  dst[y] = s;
}

void root(float *src, size_t bytes_src, int *lens, size_t bytes_lens, float *dst, size_t bytes_dst, int w) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, src, lens, 1, dst);
  void *n = __hpvm__createNodeND(1, row_sum, bytes_dst / sizeof(float));
  for (int p = 0; p < 7; p++)
    __hpvm__bindIn(n, p, p, 0);
}
"""


@pytest.fixture(autouse=True)
def generous_limit(monkeypatch):
    """Every run counts as quick here: a loaded machine must not decide where one runs."""
    every_run_quick(monkeypatch)


def _stencil(root, target: str, shape: tuple[int, int, int], launches: int) -> tuple[np.ndarray, list]:
    nz, ny, nx = shape
    a0 = np.random.default_rng(1).standard_normal(shape, dtype=np.float32)
    anext = np.zeros_like(a0)
    hpvm.init()
    views = [v.reshape(-1).view(np.uint8) for v in (a0, anext)]
    for v in views:
        hpvm.track_memory(v)
    handles = []
    for _ in range(launches):
        handle = hpvm.launch(root, (np.float32(0.5), np.float32(0.25), *views, nx, ny, nz), target=target)
        handles.append(handle.slot is None and handle.done.is_set())
        hpvm.wait(handle)
    hpvm.request_memory(views[1])
    for v in views:
        hpvm.untrack_memory(v)
    hpvm.cleanup()
    return anext, handles


def test_a_repeated_hpvm_c_stencil_launch_runs_inside_launch_with_interps_results():
    root = c.compile(EXAMPLES / "stencil.c").roots[0]
    assert quick.bounded_graph(root) is None
    got, inside = _stencil(root, "cpu", (5, 6, 7), 3)
    assert inside == [False, True, True]  # the first one compiles, on a worker
    want, _ = _stencil(root, "interp", (5, 6, 7), 1)
    np.testing.assert_array_equal(got, want)
    assert np.any(got != 0.0)


def _row_sums(root, arrays: list[np.ndarray], w: int, launches: int) -> list[bool]:
    """``launches`` launches of ``root`` over byte views of ``arrays`` (the last one the
    output, read back) with ``w``; whether each ran inside ``launch``."""
    hpvm.init()
    views = [v.view(np.uint8) for v in arrays]
    for v in views:
        hpvm.track_memory(v)
    inside = []
    for _ in range(launches):
        handle = hpvm.launch(root, (*views, w), target="cpu")
        inside.append(handle.slot is None and handle.done.is_set())
        hpvm.wait(handle)
    hpvm.request_memory(views[-1])
    for v in views:
        hpvm.untrack_memory(v)
    return inside


def test_a_c_leaf_looping_as_often_as_a_scalar_says_runs_inside_launch(write_c):
    root = c.compile(write_c(LOOPING)).roots[0]
    assert quick.bounded_graph(root) is None
    src = np.arange(12, dtype=np.float32)
    dst = np.zeros(3, dtype=np.float32)
    assert _row_sums(root, [src, dst], 4, 3) == [False, True, True]  # the first one compiles, on a worker
    np.testing.assert_array_equal(dst, src.reshape(3, 4).sum(axis=1))


def test_a_c_leaf_looping_as_often_as_an_element_says_never_runs_inside_launch(write_c):
    root = c.compile(write_c(LOADED_BOUND)).roots[0]
    reason = quick.bounded_graph(root)
    assert "leaf 'row_sum'" in reason and "has a loop that leaves on a value read from memory" in reason
    src = np.arange(12, dtype=np.float32)
    lens = np.array([4, 2, 0], dtype=np.int32)
    dst = np.full(3, -1.0, dtype=np.float32)
    assert _row_sums(root, [src, lens, dst], 4, 3) == [False, False, False]  # a worker, however quick
    np.testing.assert_array_equal(dst, [src[0:4].sum(), src[4:6].sum(), 0.0])
