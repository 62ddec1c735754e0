"""EXTRACT of other compilers' directive regions (``foreign.py``): OmpSs-2's taskloop and
task, and Intel's OpenMP parallel loop, in the forms their front ends write (test programs
of our own in ``foreign/``), become a root creating one leaf, and run; what does not map
onto a graph is a located ``LLVMExtractError``."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpvm
import hpvm.backends.interp as interp
from hpvm import llvm
from hpvm.ir.printer import print_program

HERE = Path(__file__).parent / "foreign"
TASKLOOP = (HERE / "oss_taskloop.ll").read_text()
PARALLEL_LOOP = (HERE / "omp_parallel_loop.ll").read_text()


def _launch(root, args: tuple, arrays: list[np.ndarray], target: str) -> None:
    hpvm.init()
    for a in arrays:
        hpvm.track_memory(a)
    try:
        hpvm.wait(hpvm.launch(root, args, target=target))
        for a in arrays:
            hpvm.request_memory(a)
    finally:
        for a in arrays:
            hpvm.untrack_memory(a)


def _taskloop_sum(text: str, lb: int, ub: int, step: int) -> int:
    """The taskloop's ``sum`` on interp, instances one at a time in order, its race detector
    off: ``sum += i`` from every instance is a data race (the test below), and these tests
    count the iterations, which a sequential run shows."""
    root = llvm.extract(text)
    total = np.zeros(1, np.int32)
    previous = interp.configure(races=False)
    try:
        _launch(root, (total, np.int32(lb), np.int32(ub), np.int32(step)), [total], "interp")
    finally:
        interp.configure(**previous)
    return int(total[0])


def test_an_ompss_taskloop_is_a_leaf_replicated_over_its_iteration_space() -> None:
    root = llvm.extract(TASKLOOP)
    text = print_program(root, bodies=False)
    assert re.search(r'%task = node @"taskloop.task"\[max\(0, .*\)\]', text), text
    assert 'taskloop.task"(sum: i32[:], lb: i32, ub: i32, step: i32)' in text
    # one instance at a time (interp): for (i = -55; i < 31; i += 2) sum += i
    assert _taskloop_sum(TASKLOOP, -55, 31, 2) == sum(range(-55, 31, 2)) == -559


def test_the_taskloop_sum_is_a_data_race_interp_reports() -> None:
    root = llvm.extract(TASKLOOP)
    total = np.zeros(1, np.int32)
    with pytest.raises(hpvm.DataRaceError) as info:
        _launch(root, (total, np.int32(-55), np.int32(31), np.int32(2)), [total], "interp")
    message = str(info.value)
    # instance 1 reads the sum instance 0 wrote (no debug info: the instructions' text)
    assert message.startswith("node taskloop/task[1] (leaf 'taskloop.task', ")
    assert (
        "at `%.v3 = load i32, ptr %.v2, align 4`: data race: reads array 'sum' (root argument 'sum') "
        in message
    )
    assert "at index [0], which node taskloop/task[0] (leaf 'taskloop.task', " in message
    assert (
        "at `store i32 %add, ptr %.v2, align 4` wrote; the instances of node taskloop/task run concurrently"
        in message
    )


@pytest.mark.parametrize(
    ("kind", "lb", "ub", "step", "expected"),
    [
        (0, 0, 0, 1, []),  # i < ub, empty
        (1, 3, 9, 3, [3, 6, 9]),  # i <= ub
        (2, 10, 1, -4, [10, 6, 2]),  # i > ub
        (3, 10, 2, -4, [10, 6, 2]),  # i >= ub
        (3, 1, 2, -1, []),  # i >= ub, empty
    ],
)
def test_each_loop_type_counts_its_iterations(
    kind: int, lb: int, ub: int, step: int, expected: list[int]
) -> None:
    text = TASKLOOP.replace('"QUAL.OSS.LOOP.TYPE"(i64 0,', f'"QUAL.OSS.LOOP.TYPE"(i64 {kind},')
    assert _taskloop_sum(text, lb, ub, step) == sum(expected)


def test_constant_bounds_and_an_ompss_task() -> None:
    constant = re.sub(
        r'"QUAL\.OSS\.LOOP\.LOWER\.BOUND"\([^)]*\)', '"QUAL.OSS.LOOP.LOWER.BOUND"(i32 1)', TASKLOOP
    )
    constant = re.sub(r'"QUAL\.OSS\.LOOP\.STEP"\([^)]*\)', '"QUAL.OSS.LOOP.STEP"(i32 1)', constant)
    constant = constant.replace('"QUAL.OSS.LOOP.TYPE"(i64 0,', '"QUAL.OSS.LOOP.TYPE"(i64 1,')
    assert _taskloop_sum(constant, 99, 4, 99) == 1 + 2 + 3 + 4
    task = re.sub(
        r'c"TASKLOOP\\00"\)[^\]]*\]', 'c"TASK\\\\00"), "QUAL.OSS.PRIVATE"(ptr %i, i32 undef) ]', TASKLOOP
    )
    task = task.replace("[9 x i8]", "[5 x i8]")
    root = llvm.extract(task)
    assert re.search(r'%task = node @"taskloop.task"$', print_program(root, bodies=False), re.M)


def test_an_intel_parallel_loop_with_branches_in_its_body_runs() -> None:
    root = llvm.extract(PARALLEL_LOOP)
    text = print_program(root, bodies=False)
    assert '%task = node @"twice.task"[max(0, n - 1 + 1)]' in text, text
    assert 'twice.task"(a: i32[:], n: i32)' in text
    for target in ("interp", "cpu"):
        a = np.array([3, -1, 4, -1, 5, 9, 2], np.int32)
        want = 2 * a + (a < 0)
        _launch(root, (a, np.int32(6)), [a], target)
        assert a[:6].tolist() == want[:6].tolist() and a[6] == 2


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('c"TASKLOOP\\00"', 'c"CRITICAL\\00"'), "the directive CRITICAL does not map"),
        (
            lambda t: t.replace('"QUAL.OSS.PRIVATE"(ptr %i, i32 undef)', '"QUAL.OSS.REDUCTION"(ptr %i)'),
            'the qualifier "QUAL.OSS.REDUCTION" has no meaning',
        ),
        (
            lambda t: t.replace("(i64 0, i64 1, i64 1, i64 1, i64 1)", "(i64 7, i64 1, i64 1, i64 1, i64 1)"),
            "LOOP.TYPE 7",
        ),
        (
            lambda t: t.replace(
                '"QUAL.OSS.LOOP.IND.VAR"(ptr %i)', '"QUAL.OSS.LOOP.IND.VAR"(ptr %i, ptr %lb.addr)'
            ),
            "2 induction variables",
        ),
    ],
)
def test_what_does_not_map_is_a_located_error(edit, message: str) -> None:
    with pytest.raises(llvm.LLVMExtractError) as info:
        llvm.extract(edit(TASKLOOP))
    assert message in str(info.value) and "@taskloop: '%0 = call token @llvm.directive.region.entry()" in str(
        info.value
    )


def test_an_unknown_intel_directive_is_a_located_error() -> None:
    text = PARALLEL_LOOP.replace("DIR.OMP.PARALLEL.LOOP", "DIR.OMP.TARGET.TEAMS")
    with pytest.raises(
        llvm.LLVMExtractError, match=r"@twice: .*the directive DIR\.OMP\.TARGET\.TEAMS does not map"
    ):
        llvm.extract(text)


@settings(max_examples=15, deadline=None)
@given(
    kind=st.integers(0, 3),
    lb=st.integers(-40, 40),
    span=st.integers(-30, 30),
    step=st.integers(1, 7),
)
def test_a_taskloop_runs_the_iterations_c_would(kind: int, lb: int, span: int, step: int) -> None:
    """For every loop type and bounds, the leaf's instances run exactly the iterations of
    the C loop (``<``, ``<=``: counting up by ``step``; ``>``, ``>=``: down by it)."""
    ub = lb + span
    down = kind >= 2
    iterations, i = [], lb
    while (i < ub, i <= ub, i > ub, i >= ub)[kind]:
        iterations.append(i)
        i += -step if down else step
    text = TASKLOOP.replace('"QUAL.OSS.LOOP.TYPE"(i64 0,', f'"QUAL.OSS.LOOP.TYPE"(i64 {kind},')
    assert _taskloop_sum(text, lb, ub, -step if down else step) == sum(iterations)
