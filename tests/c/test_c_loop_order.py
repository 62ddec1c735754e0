"""The cpu back end orders a replicated LLVM leaf's instance loops by its accesses
(``graphgen.loop_order``, ``llvm_native/access.py``): the id that indexes arrays with unit
stride runs innermost. A GPU-style leaf (x fastest in memory) gets x innermost (and z
outermost), a row-major one keeps x outermost; either way the results are the
interpreter's."""

from __future__ import annotations

import numpy as np
import pytest
from hpvmc_helpers import EXAMPLES, needs_clang, needs_llvm_leaves

import hpvm
from hpvm import c
from hpvm.backends.cpu.graphgen import loop_order
from hpvm.backends.llvm_native.stride import unit_stride_dimension

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

# One 3-D leaf writing out[i] = 10 * in[i] + (flat id), where the flat index i is built
# from the ids as INDEX says; the root replicates it over nx x ny x nz.
PROGRAM = """
#include "hpvm.h"

void leaf(float *src, size_t bytes_src, float *dst, size_t bytes_dst, int nx, int ny, int nz) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, src, 1, dst);
  void *self = __hpvm__getNode();
  int x = (int)__hpvm__getNodeInstanceID_x(self);
  int y = (int)__hpvm__getNodeInstanceID_y(self);
  int z = (int)__hpvm__getNodeInstanceID_z(self);
  long i = INDEX;
  dst[i] = 10.0f * src[i] + (float)((x * ny + y) * nz + z);
}

void root(float *src, size_t bytes_src, float *dst, size_t bytes_dst, int nx, int ny, int nz) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, src, 1, dst);
  void *n = __hpvm__createNodeND(3, leaf, (long)nx, (long)ny, (long)nz);
  for (int p = 0; p < 7; p++)
    __hpvm__bindIn(n, p, p, 0);
}
"""

CASES = {
    # GPU convention (Parboil): x moves fastest in memory -> x innermost, z outermost.
    "gpu": ("x + (long)nx * (y + (long)ny * z)", 0, (2, 1, 0)),
    # Row-major: z fastest -> today's order, x outermost.
    "row-major": ("z + (long)nz * (y + (long)ny * x)", 2, (0, 1, 2)),
    # y fastest -> y innermost, x and z keeping their order.
    "y-fastest": ("y + (long)ny * (z + (long)nz * x)", 1, (0, 2, 1)),
}


def _leaf_node(root):
    (node,) = root.graph.nodes
    return node


def _run(root, target: str, shape: tuple[int, int, int]) -> np.ndarray:
    nx, ny, nz = shape
    data = np.arange(1, nx * ny * nz + 1, dtype=np.float32)
    out = np.zeros_like(data)
    hpvm.init()
    views = [v.view(np.uint8) for v in (data, out)]
    for v in views:
        hpvm.track_memory(v)
    hpvm.wait(hpvm.launch(root, (*views, nx, ny, nz), target=target))
    hpvm.request_memory(views[1])
    for v in views:
        hpvm.untrack_memory(v)
    hpvm.cleanup()
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_loop_order_follows_unit_stride_and_matches_interp(case, write_c):
    index, dim, order = CASES[case]
    root = c.compile(write_c(PROGRAM.replace("INDEX", index))).roots[0]
    node = _leaf_node(root)
    assert unit_stride_dimension(node.function.body) == dim
    assert loop_order([node]) == order
    shape = (5, 4, 3)
    got = _run(root, "cpu", shape)
    want = _run(root, "interp", shape)
    np.testing.assert_array_equal(got, want)
    # Every element written once, by the instance whose ids build its index.
    assert not np.any(got == 0.0)


def test_stencil_example_runs_x_innermost():
    root = c.compile(EXAMPLES / "stencil.c").roots[0]
    node = _leaf_node(root)
    assert loop_order([node]) == (2, 1, 0)


def test_no_clear_answer_keeps_the_default(write_c):
    # x and z both at unit stride, one access each: a tie -> x outermost as before.
    source = PROGRAM.replace("long i = INDEX;", "long i = x + (long)nx * (y + (long)ny * z); long j = z;")
    source = source.replace("dst[i] = 10.0f * src[i]", "dst[i] = 10.0f * src[j]")
    root = c.compile(write_c(source)).roots[0]
    node = _leaf_node(root)
    assert unit_stride_dimension(node.function.body) is None
    assert loop_order([node]) == (0, 1, 2)
    shape = (3, 2, 4)
    np.testing.assert_array_equal(_run(root, "cpu", shape), _run(root, "interp", shape))


def test_c_parameters_named_like_python_keywords_run_on_cpu(write_c) -> None:
    """A C parameter may be called ``in`` or ``lambda``: the port is ``in_`` / ``lambda_``,
    a name the cpu back end's generated Python can use (it raised SyntaxError)."""
    source = PROGRAM.replace("INDEX", "x + (long)nx * (y + (long)ny * z)")
    root = c.compile(write_c(source.replace("src", "in").replace("dst", "lambda"))).roots[0]
    assert [p.name for p in root.params] == ["in_", "lambda_", "nx", "ny", "nz"]
    shape = (5, 4, 3)
    got = _run(root, "cpu", shape)
    np.testing.assert_array_equal(got, _run(root, "interp", shape))
    assert not np.any(got == 0.0)
