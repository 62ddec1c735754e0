"""``unit_stride_dimension``: which instance id an LLVM leaf's array accesses move along
with unit stride (the cpu back end runs that id's loop innermost), on hand-written LLVM."""

from __future__ import annotations

import pytest

from hpvm.backends.llvm_native.access import unit_stride_dimension
from hpvm.ir.bodies import LLVMBody

MODULE = """
declare ptr @llvm.hpvm.getNode()
declare i64 @llvm.hpvm.getNodeInstanceID.x(ptr)
declare i64 @llvm.hpvm.getNodeInstanceID.y(ptr)

define {} @f(ptr %a, i64 %a.size, i64 %n) {
entry:
  %h = call ptr @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %h)
  %y = call i64 @llvm.hpvm.getNodeInstanceID.y(ptr %h)
  %r = mul i64 ROW, %n
  %i = add i64 %r, COL
  %o = shl nsw i64 %i, SCALE
  %p = getelementptr inbounds i8, ptr %a, i64 %o
  store float 0.0, ptr %p
  ret {} zeroinitializer
}
"""


def _dimension(row: str, col: str, scale: int = 2, combine: str = "add") -> int | None:
    text = MODULE.replace("ROW", row).replace("COL", col).replace("SCALE", str(scale))
    text = text.replace("%i = add i64", f"%i = {combine} i64")
    return unit_stride_dimension(LLVMBody(text, "f"))


@pytest.mark.parametrize(("row", "col", "want"), [("%y", "%x", 0), ("%x", "%y", 1)])
def test_the_id_added_last_is_unit_stride(row, col, want):
    assert _dimension(row, col) == want


def test_or_disjoint_is_an_add_but_plain_or_is_not():
    assert _dimension("%y", "%x", combine="or disjoint") == 0
    assert _dimension("%y", "%x", combine="or") is None


def test_a_byte_index_scaled_past_an_element_size_is_no_answer():
    assert _dimension("%y", "%x", scale=7) is None


def test_both_ids_scaled_is_no_answer():
    text = MODULE.replace("ROW", "%y").replace("COL", "%x").replace("SCALE", "2")
    text = text.replace("%i = add i64 %r, %x", "%s = mul i64 %x, %n\n  %i = add i64 %r, %s")
    assert unit_stride_dimension(LLVMBody(text, "f")) is None


def test_unreadable_module_is_no_answer():
    assert unit_stride_dimension(LLVMBody("not llvm", "f")) is None
    valid = MODULE.replace("ROW", "%y").replace("COL", "%x").replace("SCALE", "2")
    assert unit_stride_dimension(LLVMBody(valid, "f")) == 0
    assert unit_stride_dimension(LLVMBody(valid, "g")) is None  # no such function
