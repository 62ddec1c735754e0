"""Golden text of the leaf IR for four leaves that show its parts: a vector add, the
GPU-convention stencil ``d[z, y, x]``, the block reduction (``while`` + barrier over a
malloc'd buffer seen as float32) and the histogram (an unused-result atomic)."""

from __future__ import annotations

import pytest

import example_modules
import gpu_convention
from hpvm.ir.leafir import leaf_ir
from hpvm.ir.leafir.parser import parse_leaf_ir
from hpvm.ir.leafir.printer import print_leaf
from hpvm.ir.leafir.verify import verify_leaf

VECTOR_ADD = """\
leaf add(a: f32[:], b: f32[:], c: f32[:]) -> () at "FILE":38 {
  var i: i64
  40: i = hpvm.get_node_instance_id_x(hpvm.get_node())
  41: c[i] = a[i] + b[i]
}
"""

STENCIL3 = """\
leaf stencil3(src: i64[:, :, :], dst: i64[:, :, :]) -> () at "FILE":68 {
  var node: node
  var x: i64
  var y: i64
  var z: i64
  69: node = hpvm.get_node()
  70: x = hpvm.get_node_instance_id_x(node) + 1
  71: y = hpvm.get_node_instance_id_y(node) + 1
  72: z = hpvm.get_node_instance_id_z(node) + 1
  73: dst[z, y, x] = (((((((src[z, y, x - 1] + (2 * src[z, y, x + 1])) + (3 * src[z, y - 1, x])) + \
(5 * src[z, y + 1, x])) + (7 * src[z - 1, y, x])) + (11 * src[z + 1, y, x])) + (1000 * z)) + (100 * y)) + x
}
"""

TREE_SUM = """\
leaf tree_sum(data: f32[:], block: i64, buffer: u8[:], partials: f32[:]) -> () at "FILE":53 {
  var node: node
  var lid: i64
  var bid: i64
  var shared: f32[:]
  var stride: i64
  55: node = hpvm.get_node()
  56: lid = hpvm.get_node_instance_id_x(node)
  57: bid = hpvm.get_node_instance_id_x(hpvm.get_parent_node(node))
  58: shared = buffer.view(f32)
  59: shared[lid] = data[(bid * block) + lid]
  60: hpvm.barrier()
  61: stride = block // 2
  62: while stride > 0 {
    63: if lid < stride {
      64: shared[lid] = shared[lid] + shared[lid + stride]
    } else {
    }
    65: hpvm.barrier()
    66: stride = stride // 2
  }
  67: if lid == 0 {
    68: partials[bid] = shared[0]
  } else {
  }
}
"""

HISTOGRAM = """\
leaf bin_value(values: u8[:], bins: i32[:]) -> () at "FILE":33 {
  var i: i64
  var index: i64
  35: i = hpvm.get_node_instance_id_x(hpvm.get_node())
  36: index = (u8(values[i]) * bins.shape[0]) // 256
  37: hpvm.atomic_add(bins, index, 1)
}
"""


def _leaf(name: str):  # type: ignore[no-untyped-def]
    if name == "stencil3":
        return gpu_convention.stencil3
    module, leaf = {
        "add": ("vector_add", "add"),
        "tree_sum": ("reduction", "tree_sum"),
        "bin_value": ("histogram", "bin_value"),
    }[name]
    return getattr(example_modules.load(module), leaf)


@pytest.mark.parametrize(
    "name, golden",
    [("add", VECTOR_ADD), ("stencil3", STENCIL3), ("tree_sum", TREE_SUM), ("bin_value", HISTOGRAM)],
)
def test_golden_text(name: str, golden: str) -> None:
    ir = leaf_ir(_leaf(name))
    assert print_leaf(ir).replace(ir.file, "FILE") == golden
    verify_leaf(ir)
    assert parse_leaf_ir(golden.replace("FILE", ir.file)) == ir


def test_the_histogram_atomic_carries_its_intrinsic_entry() -> None:
    ir = leaf_ir(_leaf("bin_value"))
    atomic = ir.body[-1].value  # type: ignore[union-attr]
    assert atomic.intrinsic.kind == "atomic" and atomic.intrinsic.op == "add"
    assert str(atomic.type) == "i32"  # the element type: what the atomic returns
