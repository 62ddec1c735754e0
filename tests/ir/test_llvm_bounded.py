"""``ir/llvmbounded.py``: whether an LLVM leaf's run is bounded (the runtime runs only such
leaves on the launching thread, ``runtime/quick.py``), on hand-written LLVM. It must never
accept a node function with a loop (however it is written: a back edge, a self loop, a loop
entered from a branch), a call of anything but an LLVM intrinsic or hpvm's queries and
atomics, or code it cannot read; and it should accept straight-line code and branches."""

from __future__ import annotations

import pytest

from hpvm.ir.bodies import LLVMBody
from hpvm.ir.llvmbounded import llvm_unbounded_reason

DECLARES = """
declare ptr @llvm.hpvm.getNode()
declare i64 @llvm.hpvm.getNodeInstanceID.x(ptr)
declare i64 @llvm.hpvm.getNumNodeInstances.x(ptr)
declare i32 @llvm.hpvm.atomic.add(ptr, i32)
declare void @llvm.hpvm.barrier()
declare ptr @llvm.hpvm.malloc(i64)
declare float @llvm.fmuladd.f32(float, float, float)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @helper(ptr)
"""


def _reason(body: str) -> str | None:
    text = f"{DECLARES}\ndefine {{}} @f(ptr %a, i64 %a.size, i64 %n, ptr %fp) {{\n{body}\n}}\n"
    return llvm_unbounded_reason(LLVMBody(text, "f"), "leaf 'f'")


STRAIGHT = """entry:
  %h = call ptr @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %h)
  %c = call i64 @llvm.hpvm.getNumNodeInstances.x(ptr %h)
  %p = getelementptr inbounds float, ptr %a, i64 %x
  %v = load float, ptr %p
  %w = call float @llvm.fmuladd.f32(float %v, float 2.0, float 1.0)
  store float %w, ptr %p
  %old = call i32 @llvm.hpvm.atomic.add(ptr %a, i32 1)
  call void @llvm.memcpy.p0.p0.i64(ptr %a, ptr %p, i64 16, i1 false)
  ret {} zeroinitializer"""

DIAMOND = """entry:
  %h = call ptr @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %h)
  %in = icmp slt i64 %x, %n
  br i1 %in, label %body, label %done
body:
  %p = getelementptr inbounds float, ptr %a, i64 %x
  store float 1.0, ptr %p
  br label %done
done:
  ret {} zeroinitializer"""

# A guard written so that the later block comes first in the text: still acyclic.
BACKWARD_ACYCLIC = """entry:
  %c = icmp slt i64 %n, 4
  br i1 %c, label %last, label %first
last:
  ret {} zeroinitializer
first:
  store float 1.0, ptr %a
  br label %last"""

LOOP = """entry:
  br label %head
head:
  %k = phi i64 [ 0, %entry ], [ %k1, %head ]
  %p = getelementptr inbounds float, ptr %a, i64 %k
  store float 0.0, ptr %p
  %k1 = add i64 %k, 1
  %more = icmp slt i64 %k1, %n
  br i1 %more, label %head, label %done
done:
  ret {} zeroinitializer"""

# A loop whose back edge goes forward in the text (blocks out of order).
LOOP_OUT_OF_ORDER = """entry:
  br label %second
first:
  %more = icmp slt i64 %n, 3
  br i1 %more, label %second, label %done
second:
  store float 0.0, ptr %a
  br label %first
done:
  ret {} zeroinitializer"""

SPIN = """entry:
  br label %wait
wait:
  %v = load volatile i32, ptr %a
  %z = icmp eq i32 %v, 0
  br i1 %z, label %wait, label %done
done:
  ret {} zeroinitializer"""

SWITCH_LOOP = """entry:
  br label %s
s:
  %v = load i32, ptr %a
  switch i32 %v, label %done [ i32 1, label %s ]
done:
  ret {} zeroinitializer"""


@pytest.mark.parametrize(
    "body", [STRAIGHT, DIAMOND, BACKWARD_ACYCLIC], ids=["straight", "diamond", "backward"]
)
def test_straight_line_code_and_branches_are_bounded(body):
    assert _reason(body) is None


@pytest.mark.parametrize(
    "body", [LOOP, LOOP_OUT_OF_ORDER, SPIN, SWITCH_LOOP], ids=["loop", "out-of-order", "spin", "switch"]
)
def test_any_loop_is_refused(body):
    assert _reason(body) == "leaf 'f' has a loop"


@pytest.mark.parametrize(
    ("call", "why"),
    [
        ("call void @helper(ptr %a)", "calls 'helper'"),
        ("call void %fp(ptr %a)", "calls through a pointer"),
        ('call void asm sideeffect "pause", ""()', "calls through a pointer or inline assembly"),
        ("call void @llvm.hpvm.barrier()", "calls 'llvm.hpvm.barrier'"),
        ("%m = call ptr @llvm.hpvm.malloc(i64 64)", "calls 'llvm.hpvm.malloc'"),
        ("call void @llvm.memcpy.p0.p0.i64(ptr %a, ptr %fp, i64 %n, i1 false)", "known only at run time"),
    ],
)
def test_calls_other_than_intrinsics_queries_and_atomics_are_refused(call, why):
    reason = _reason(f"entry:\n  {call}\n  ret {{}} zeroinitializer")
    assert reason is not None and reason.startswith("leaf 'f' ") and why in reason


def test_unreadable_code_is_refused():
    assert llvm_unbounded_reason(LLVMBody("not llvm", "f"), "leaf 'f'") is not None
    text = f"{DECLARES}\ndefine {{}} @f(ptr %a) {{\n{STRAIGHT.replace('%n', '0')}\n}}\n"
    assert llvm_unbounded_reason(LLVMBody(text, "g"), "leaf 'g'") is not None  # no such function
    declared = DECLARES + "declare {} @f(ptr)\n"
    assert "no LLVM body" in llvm_unbounded_reason(LLVMBody(declared, "f"), "leaf 'f'")
