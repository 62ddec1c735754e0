"""EXTRACT of another front end's parallel loop: seed 004's Tapir example (a loop whose body
is marked detach_task / reattach_task, local_barrier after it) becomes a root creating one
1-D replicated leaf — before and after LLVM's -O2 — and runs (its pointer an input and an
output: the loop says nothing of what it writes); what does not map onto a graph is a located
``LLVMExtractError``, never a crash."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import llvm
from hpvm.errors import HPVMError
from hpvm.ir.printer import print_program

SCALE = (Path(__file__).parent / "tapir_scale.ll").read_text()
GRAPH = """# hpvm IR v1
leaf @"scale.task"(x: i32[:], n: i32, a: i32) -> () ins(x) outs(x)
internal @scale(x: i32[:], n: i32, a: i32) ins(x) outs(x) {
  %task = node @"scale.task"[n]
  bind in 0 -> %task.0
  bind in 1 -> %task.1
  bind in 2 -> %task.2
}
"""


@pytest.mark.parametrize("level", [None, 2, 3])
def test_the_rfcs_tapir_loop_becomes_a_replicated_leaf(level: int | None) -> None:
    text = SCALE if level is None else llvm.optimize(SCALE, level)
    root = llvm.extract(text)
    assert print_program(root, bodies=False) == GRAPH
    assert "call i64 @llvm.hpvm.getNodeInstanceID.x" in print_program(root, bodies=True)  # the index


def _run(root, n: np.integer) -> list[int]:
    x = np.arange(10, dtype=np.int32)
    hpvm.init()
    hpvm.track_memory(x)
    try:
        hpvm.wait(hpvm.launch(root, (x, n, np.int32(3)), target="cpu"))
        hpvm.request_memory(x)
    finally:
        hpvm.untrack_memory(x)
    return x.tolist()


def test_the_extracted_loop_runs_on_cpu() -> None:
    """(With an i64 trip count: see the next test for the RFC's i32 one.)"""
    wide = SCALE.replace("i32 %n", "i64 %n").replace("zext i64 %n to i64", "add i64 %n, 0")
    root = llvm.extract(llvm.optimize(wide, 2))
    assert _run(root, np.int64(7)) == [3 * v if v < 7 else v for v in range(10)]


def test_the_extracted_loop_with_an_i32_trip_count_runs_on_cpu() -> None:
    """The RFC's loop counts with an i32: the cpu back end widens the replication size it
    computes from an i32 port before storing it in the leaf's i64 context (it failed with
    'cannot store i32 to i64*')."""
    root = llvm.extract(llvm.optimize(SCALE, 2))
    assert _run(root, np.int32(7)) == [3 * v if v < 7 else v for v in range(10)]


def _edited(old: str, new: str) -> str:
    assert old in SCALE
    return SCALE.replace(old, new)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (_edited('["reattach_task"()]', '["other"()]'), ["@scale", "a marker EXTRACT reads is detach_task"]),
        (_edited("[ 0, %pfor.detach.lr.ph ]", "[ 1, %pfor.detach.lr.ph ]"), ["no loop index EXTRACT reads"]),
        (
            _edited("  br label %pfor.detach\n", "  store i32 0, ptr %x\n  br label %pfor.detach\n"),
            ["'store i32 0, ptr %x", "side effects outside the parallel loop's task"],
        ),
        (
            _edited("  %mul3 = mul nsw i32 %0, %a", "  %mul3 = mul nsw i32 %0, %wide.trip.count.t\n").replace(
                "  %wide.trip.count = zext",
                "  %wide.trip.count.t = trunc i64 0 to i32\n  %wide.trip.count = zext",
            ),
            ["computed outside its region (seed 004's property C1"],
        ),
        (
            SCALE + SCALE.split("\n", 1)[1].replace("@scale(", "@other("),
            ["several functions hold parallel loops"],
        ),
    ],
    ids=["unknown marker", "index from 1", "side effect outside", "value from outside", "two loops"],
)
def test_loops_that_are_no_graph_are_located_errors(text: str, words: list[str]) -> None:
    with pytest.raises(llvm.LLVMExtractError) as info:
        llvm.extract(text)
    for w in words:
        assert w in str(info.value)


def test_every_one_line_edit_extracts_or_fails_with_an_hpvm_error() -> None:
    """Each line dropped, or its first number changed: a graph or an HPVMError, no crash."""
    lines = SCALE.splitlines()
    for i, line in enumerate(lines):
        for edit in ("", re.sub(r"\b\d+\b", "3", line, count=1), line.replace("i64", "i32", 1)):
            try:
                llvm.extract("\n".join([*lines[:i], edit, *lines[i + 1 :]]))
            except HPVMError:
                pass


NEST = (Path(__file__).parent / "tapir_nest.ll").read_text()


@pytest.mark.parametrize("level", [None, 2])
def test_a_nest_of_marked_loops_with_a_branching_task_becomes_a_2d_leaf(level: int | None) -> None:
    """Two nested cilk_for loops (the inner task branches): one leaf replicated over both
    trip counts, the inner index x; it runs on interp and cpu like the C loops."""
    root = llvm.extract(NEST if level is None else llvm.optimize(NEST, level))
    assert '%task = node @"nest.task"[m, n]' in print_program(root, bodies=False)
    for target in ("interp", "cpu"):
        x = np.arange(-6, 6, dtype=np.int32)
        want = np.where(x < 0, -x, x * 3)
        want[10:] = x[10:]  # n=2 rows of m=5: the last two elements are not touched
        hpvm.init()
        hpvm.track_memory(x)
        try:
            hpvm.wait(hpvm.launch(root, (x, np.int64(2), np.int64(5), np.int32(3)), target=target))
            hpvm.request_memory(x)
        finally:
            hpvm.untrack_memory(x)
        assert x.tolist() == want.tolist()


def _loop(tag: str, after: str) -> str:
    return f"""
{tag}.detach:
  %{tag}.i = phi i64 [ 0, %{tag}.pre ], [ %{tag}.next, %{tag}.inc ]
  %{tag}.c = call i1 @llvm.directive.marker()["detach_task"()]
  br i1 %{tag}.c, label %{tag}.body, label %{tag}.inc
{tag}.body:
  %{tag}.p = getelementptr inbounds i32, ptr %x, i64 %{tag}.i
  store i32 1, ptr %{tag}.p
  %{tag}.r = call i1 @llvm.directive.marker()["reattach_task"()]
  br label %{tag}.inc
{tag}.inc:
  %{tag}.next = add nuw nsw i64 %{tag}.i, 1
  %{tag}.done = icmp eq i64 %{tag}.next, %n
  br i1 %{tag}.done, label %{tag}.sync, label %{tag}.detach
{tag}.sync:
  %{tag}.b = call i1 @llvm.directive.marker()["local_barrier"()]
  br label %{after}
"""


def test_loops_that_do_not_nest_are_a_located_error() -> None:
    """Two marked loops one after the other are no nest (nor one loop)."""
    text = (
        "declare i1 @llvm.directive.marker()\ndefine void @two(ptr %x, i64 %n) {\n"
        "a.pre:\n  br label %a.detach\n" + _loop("a", "b.pre") + "b.pre:\n  br label %b.detach\n"
        + _loop("b", "end") + "end:\n  ret void\n}\n"
    )  # fmt: skip
    with pytest.raises(llvm.LLVMExtractError, match=r"@two: .*several marked loops that do not nest"):
        llvm.extract(text)
    three = NEST.replace("entry:\n", 'entry:\n  %z = call i1 @llvm.directive.marker()["detach_task"()]\n')
    with pytest.raises(llvm.LLVMExtractError, match=r"@nest: 3 detach_task, 2 reattach_task"):
        llvm.extract(three)
