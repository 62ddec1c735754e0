"""Kernels: the five states and every transition of the seed's execution model,
dependences, pause / end from control code and from the work function, waiting, errors
from work functions, the per-processor limits, and no thread left behind."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from hpvm import svm


class Task(svm.Kernel):
    """A user kernel whose work function is given at init; ``log`` records progress."""


def task_init(k: Task, proc: str, work, **members) -> Task:
    svm.kernel_init(k, proc, None, work)
    k.log = []
    for name, value in members.items():
        setattr(k, name, value)
    return k


def ram_stream(address: int, capacity: int = 8, dtype=np.int32) -> svm.Stream:
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", address, capacity, dtype)
    return s


def copy_work(k):
    """Doubles what it pops from ``k.src`` onto ``k.dst``; a negative value ends it (and is
    passed on, tagged EOS)."""
    while True:
        x = svm.stream_pop(k.src)
        if x < 0:
            svm.stream_push_with_eos(k.dst, x)
            return
        svm.stream_push(k.dst, x * 2)


def test_a_kernel_goes_unstarted_waiting_running_finished(computer):
    gate = ram_stream(0)
    k = task_init(Task(), "PROC0", lambda k: k.log.append(svm.stream_pop(k.gate)), gate=gate)
    assert svm.kernel_get_status(k) == svm.KERNEL_UNSTARTED
    svm.kernel_wait(k)  # ignored for UNSTARTED kernels
    svm.kernel_run(k)
    deadline = time.monotonic() + 5
    while svm.kernel_get_status(k) != svm.KERNEL_RUNNING and time.monotonic() < deadline:
        time.sleep(0.001)
    assert svm.status_name(svm.kernel_get_status(k)) == "RUNNING"
    svm.kernel_run(k)  # already running: no effect
    svm.stream_push(gate, 42)
    svm.kernel_wait(k)
    assert svm.kernel_get_status(k) == svm.KERNEL_FINISHED and k.log == [42]
    assert k.kernel is k and "FINISHED" in repr(k)


def test_two_kernels_joined_by_a_small_stream_need_no_dependence(computer):
    src, mid, out = ram_stream(0, 64), ram_stream(512, 2), ram_stream(1024, 64)
    svm.stream_push_many(src, list(range(40)) + [-1])
    a = task_init(Task(), "PROC0", copy_work, src=src, dst=mid)
    b = task_init(Task(), "PROC1", copy_work, src=mid, dst=out)
    svm.kernel_run(a)
    svm.kernel_run(b)
    svm.kernel_wait(b)
    svm.kernel_wait(a)
    assert svm.stream_pop_many(out, svm.STREAM_LENGTH_ALL).tolist() == [4 * i for i in range(40)] + [-1]


def test_a_dependent_kernel_waits_for_the_last_execution_of_the_other(computer):
    gate = ram_stream(0)
    block = svm.Block()
    svm.block_init(block, "RAM", 4096, 4, np.int32)

    def writer(k):
        svm.stream_pop(k.gate)
        svm.block_write(k.b, 0, 7)

    def reader(k):
        k.log.append(svm.block_read(k.b, 0))

    k1 = task_init(Task(), "PROC0", writer, gate=gate, b=block)
    k2 = task_init(Task(), "PROC1", reader, b=block)
    svm.kernel_run(k1)
    svm.kernel_add_dependence(k2, k1)
    svm.kernel_run(k2)
    time.sleep(0.02)
    assert svm.kernel_get_status(k2) == svm.KERNEL_WAITING  # PROC1 is free: the dependence holds it
    svm.stream_push(gate, 0)
    svm.kernel_wait(k2)
    assert k2.log == [7]


def test_a_dependence_on_an_unstarted_kernel_is_ignored(computer):
    never = task_init(Task(), "PROC0", lambda k: None)
    k = task_init(Task(), "PROC1", lambda k: k.log.append("ran"))
    svm.kernel_add_dependence(k, never)
    svm.kernel_run(k)
    svm.kernel_wait(k)
    assert k.log == ["ran"] and svm.kernel_get_status(never) == svm.KERNEL_UNSTARTED


def test_dependences_can_only_be_added_to_unstarted_kernels(computer):
    a, b = Task(), Task()
    task_init(a, "PROC0", lambda k: None)
    task_init(b, "PROC1", lambda k: None)
    svm.kernel_run(a)
    svm.kernel_wait(a)
    with pytest.raises(svm.SVMError, match=r"kernel_add_dependence\(a, b\).*a is FINISHED.*UNSTARTED"):
        svm.kernel_add_dependence(a, b)


def test_dependent_kernels_rerun_in_a_loop_alternate(computer):
    """The seed's loop: each kernel_add_dependence binds the last execution of the other."""
    block = svm.Block()
    svm.block_init(block, "RAM", 0, 1, np.int64)
    trace: list[str] = []

    def step(name, factor):
        def work(k):
            value = svm.block_read(k.b, 0)
            svm.block_write(k.b, 0, value * factor + 1)
            trace.append(name)

        return work

    k1, k2 = Task(), Task()
    for _ in range(5):
        svm.kernel_wait(k1)
        task_init(k1, "PROC0", step("k1", 2), b=block)
        svm.kernel_add_dependence(k1, k2)
        svm.kernel_run(k1)
        svm.kernel_wait(k2)
        task_init(k2, "PROC1", step("k2", 3), b=block)
        svm.kernel_add_dependence(k2, k1)
        svm.kernel_run(k2)
    svm.kernel_wait(k2)
    expected = 0
    for _ in range(5):
        expected = (expected * 2 + 1) * 3 + 1
    assert trace == ["k1", "k2"] * 5 and svm.block_read(block, 0) == expected


def test_pause_from_control_and_resume(computer):
    src, out = ram_stream(0), ram_stream(256)
    k = task_init(Task(), "PROC0", copy_work, src=src, dst=out)
    svm.kernel_run(k)
    svm.stream_push(src, 1)
    assert svm.stream_pop(out) == 2
    svm.kernel_pause(k)  # the kernel waits in stream_pop: it pauses there
    svm.kernel_wait(k)
    assert svm.kernel_get_status(k) == svm.KERNEL_PAUSED
    svm.stream_push(src, 5)
    time.sleep(0.02)
    assert len(out) == 0  # paused: it does not pop
    svm.kernel_run(k)
    assert svm.stream_pop(out) == 10
    svm.stream_push(src, -1)
    svm.kernel_wait(k)
    assert svm.kernel_get_status(k) == svm.KERNEL_FINISHED


def test_pause_from_the_work_function_lets_control_read_its_members(computer):
    def work(k):
        k.partial = 10
        svm.kernel_pause(k)
        k.partial += 5

    k = task_init(Task(), "PROC0", work)
    svm.kernel_run(k)
    svm.kernel_wait(k)
    assert svm.kernel_get_status(k) == svm.KERNEL_PAUSED and k.partial == 10
    svm.kernel_run(k)
    svm.kernel_wait(k)
    assert svm.kernel_get_status(k) == svm.KERNEL_FINISHED and k.partial == 15


def test_pausing_a_waiting_kernel_holds_it_back(computer):
    a = task_init(Task(), "PROC0", lambda k: svm.stream_pop(k.src), src=ram_stream(0))
    b = task_init(Task(), "PROC0", lambda k: k.log.append("b"))
    svm.kernel_run(a)
    svm.kernel_run(b)  # PROC0 is busy: b waits
    assert svm.kernel_get_status(b) == svm.KERNEL_WAITING
    svm.kernel_pause(b)
    assert svm.kernel_get_status(b) == svm.KERNEL_PAUSED
    svm.kernel_end(a)
    svm.kernel_wait(a)
    assert b.log == []
    svm.kernel_run(b)
    svm.kernel_wait(b)
    assert b.log == ["b"]


def test_end_from_control_stops_a_blocked_kernel(computer):
    k = task_init(Task(), "PROC0", lambda k: svm.stream_pop(k.src), src=ram_stream(0))
    svm.kernel_run(k)
    svm.kernel_end(k)
    svm.kernel_wait(k)
    assert svm.kernel_get_status(k) == svm.KERNEL_FINISHED
    svm.kernel_end(k)  # already FINISHED: nothing happens


def test_end_from_the_work_function_stops_it_there(computer):
    def work(k):
        k.log.append("before")
        svm.kernel_end(k)
        k.log.append("after")

    k = task_init(Task(), "PROC0", work)
    svm.kernel_run(k)
    svm.kernel_wait(k)
    assert k.log == ["before"]


def test_end_on_unstarted_and_waiting_kernels_finishes_them(computer):
    u = task_init(Task(), "PROC0", lambda k: k.log.append("u"))
    svm.kernel_end(u)
    assert svm.kernel_get_status(u) == svm.KERNEL_FINISHED
    blocker = task_init(Task(), "PROC1", lambda k: svm.stream_pop(k.src), src=ram_stream(0))
    w = task_init(Task(), "PROC1", lambda k: k.log.append("w"))
    svm.kernel_run(blocker)
    svm.kernel_run(w)
    svm.kernel_end(w)
    assert svm.kernel_get_status(w) == svm.KERNEL_FINISHED and w.log == []
    svm.kernel_end(blocker)
    svm.kernel_wait(blocker)


def test_wait_multiple_returns_on_a_pause_or_when_all_finished(computer):
    gate = ram_stream(0)
    pauser = task_init(Task(), "PROC0", lambda k: svm.kernel_pause(k))
    slow = task_init(Task(), "PROC1", lambda k: svm.stream_pop(k.gate), gate=gate)
    unstarted = Task()
    svm.kernel_run(pauser)
    svm.kernel_run(slow)
    svm.kernel_wait_multiple(pauser, slow, unstarted)
    assert svm.kernel_get_status(pauser) == svm.KERNEL_PAUSED
    svm.kernel_run(pauser)
    svm.stream_push(gate, 1)
    svm.kernel_wait_multiple(pauser, slow)
    assert {svm.kernel_get_status(pauser), svm.kernel_get_status(slow)} == {svm.KERNEL_FINISHED}
    svm.kernel_wait_multiple(unstarted)  # only UNSTARTED kernels: returns at once


def test_an_exception_in_a_work_function_reaches_kernel_wait_naming_the_kernel(computer):
    def work(k):
        raise ZeroDivisionError("bad divisor")

    broken = Task()
    task_init(broken, "PROC0", work)
    svm.kernel_run(broken)
    with pytest.raises(
        svm.SVMError, match=r"kernel broken \(on PROC0.*ZeroDivisionError: bad divisor"
    ) as info:
        svm.kernel_wait(broken)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    with pytest.raises(svm.SVMError, match="kernel broken"):
        svm.kernel_wait_multiple(broken)


def test_finished_kernels_rerun_only_after_initialisation(computer):
    k = task_init(Task(), "PROC0", lambda k: None)
    svm.kernel_run(k)
    svm.kernel_wait(k)
    with pytest.raises(svm.SVMError, match="FINISHED; call its initialisation function again"):
        svm.kernel_run(k)
    task_init(k, "PROC0", lambda k: k.log.append(1))
    assert svm.kernel_get_status(k) == svm.KERNEL_UNSTARTED
    svm.kernel_run(k)
    svm.kernel_wait(k)
    assert k.log == [1]


def test_reinitialising_a_live_kernel_is_a1_even_outside_assertion_mode(computer):
    k = task_init(Task(), "PROC0", lambda k: svm.stream_pop(k.src), src=ram_stream(0))
    svm.kernel_run(k)
    with pytest.raises(
        svm.SVMRestrictionError, match=r"A1: kernel_init on kernel k, which is (RUNNING|WAITING)"
    ):
        task_init(k, "PROC0", lambda k: None)
    svm.kernel_end(k)
    svm.kernel_wait(k)


def test_one_user_kernel_at_a_time_per_stream_processor(computer):
    gate = ram_stream(0)
    first = task_init(Task(), "PROC0", lambda k: svm.stream_pop(k.gate), gate=gate)
    second = task_init(Task(), "PROC0", lambda k: None)
    svm.kernel_run(first)
    svm.kernel_run(second)
    time.sleep(0.02)
    assert svm.kernel_get_status(second) == svm.KERNEL_WAITING
    svm.stream_push(gate, 1)
    svm.kernel_wait(second)
    assert svm.kernel_get_status(first) == svm.KERNEL_FINISHED


def test_a_dma_processor_runs_at_most_its_metadata_limit(tiled):
    sources, moves = [], []
    for i in range(5):
        src, dst = svm.Stream(), svm.Stream()
        svm.stream_init_ram(src, "GLOBALMEM1", 64 * i, 4, np.int32)
        svm.stream_init_ram(dst, "GLOBALMEM1", 4096 + 64 * i, 4, np.int32)
        move = svm.Move()
        svm.move_init(move, "DMA1", src, dst, 1, False)
        svm.kernel_run(move)
        sources.append(src)
        moves.append(move)
    statuses = [svm.kernel_get_status(m) for m in moves]
    assert statuses.count(svm.KERNEL_RUNNING) == 4 and statuses[4] == svm.KERNEL_WAITING
    for src in sources:
        svm.stream_push(src, 1)
    svm.kernel_wait_multiple(*moves)
    assert all(svm.kernel_get_status(m) == svm.KERNEL_FINISHED for m in moves)


def test_waiting_for_a_kernel_that_can_never_finish_raises(computer):
    k = task_init(Task(), "PROC0", lambda k: svm.stream_pop(k.src), src=ram_stream(0))
    svm.kernel_run(k)
    with pytest.raises(svm.SVMError, match="nothing can ever make it possible") as info:
        svm.kernel_wait(k)
    # Whichever of the two blocks last reports it: both are named.
    assert "control code waits for kernel k" in str(info.value)
    assert "waits to pop from stream s (RAM: 0 of 8" in str(info.value)


def test_a_kernel_waiting_while_control_is_busy_is_not_a_deadlock(computer):
    src, out = ram_stream(0), ram_stream(256)
    k = task_init(Task(), "PROC0", copy_work, src=src, dst=out)
    svm.kernel_run(k)
    time.sleep(0.05)  # the kernel waits in stream_pop; control code is busy elsewhere
    svm.stream_push_many(src, [3, -1])
    svm.kernel_wait(k)
    assert svm.stream_pop_many(out, 2).tolist() == [6, -1]


def test_kernel_init_errors(tiled):
    with pytest.raises(svm.SVMError, match=r"'PROC9' is not a processor of machine 'pca_tiled'"):
        svm.kernel_init(Task(), "PROC9", None, lambda k: None)
    with pytest.raises(svm.SVMError, match="processor DMA1 does not support user-defined kernels"):
        svm.kernel_init(Task(), "DMA1", None, lambda k: None)
    with pytest.raises(svm.SVMError, match="processor PROC1 does not support kernel Move"):
        svm.move_init(svm.Move(), "PROC1", svm.Stream(), svm.Stream(), 1, False)
    with pytest.raises(svm.SVMError, match="work must be a function"):
        svm.kernel_init(Task(), "PROC1", None, 3)
    with pytest.raises(svm.SVMError, match="scratch must be an svm.Block"):
        svm.kernel_init(Task(), "PROC1", svm.Stream(), lambda k: None)
    with pytest.raises(svm.SVMError, match="expected an svm.Kernel"):
        svm.kernel_run(object())
    with pytest.raises(
        svm.SVMRestrictionError, match="kernel_run.*before its initialisation function"
    ) as info:
        svm.kernel_run(Task())
    assert info.value.restriction == "B1"


def test_a_processor_controlled_by_another_master_cannot_be_used(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(
        '[machine]\nname = "two"\n[processors.C]\nmaster = "C"\n[processors.D]\nmaster = "D"\n'
        '[processors.P]\nmaster = "D"\nsupported_kernels = ["USER_DEFINED_KERNEL"]\n'
    )
    svm.init(path)
    with pytest.raises(svm.SVMError, match="processor P is controlled by D, not by the control processor C"):
        svm.kernel_init(Task(), "P", None, lambda k: None)


def test_kernel_ready_starts_the_processor_thread(computer):
    k = task_init(Task(), "PROC1", lambda k: None)
    before = threading.active_count()
    svm.kernel_ready(k)
    assert threading.active_count() == before + 1
    svm.kernel_run(k)
    svm.kernel_wait(k)


def test_cleanup_stops_blocked_kernels_and_leaves_no_thread(computer):
    before = threading.active_count()
    ks = []
    for i in range(2):
        k = task_init(Task(), f"PROC{i}", lambda k: svm.stream_pop(k.src), src=ram_stream(64 * i))
        svm.kernel_run(k)
        ks.append(k)
    assert threading.active_count() == before + 2
    svm.cleanup()
    assert threading.active_count() == before


def test_cleanup_names_a_work_function_that_never_calls_the_svm(computer, monkeypatch):
    from hpvm.svm import runtime

    monkeypatch.setattr(runtime, "STOP_TIMEOUT", 0.05)
    release = threading.Event()
    k = task_init(Task(), "PROC0", lambda k: release.wait(10))
    svm.kernel_run(k)
    try:
        with pytest.raises(svm.SVMError, match=r"work functions on svm-PROC0-0 did not stop within"):
            svm.cleanup()
    finally:
        release.set()
    for thread in threading.enumerate():
        if thread.name == "svm-PROC0-0":
            thread.join(5)
    assert not any(t.name.startswith("svm-") for t in threading.enumerate())


def test_init_rejects_what_is_not_a_machine():
    with pytest.raises(svm.SVMError, match="machine must be a Machine, a TOML file's path.*got int"):
        svm.init(42)


def test_objects_from_before_the_last_init_must_be_initialised_again(computer):
    s, b, k = svm.Stream(), svm.Block(), Task()
    svm.stream_init_ram(s, "RAM", 0, 4, np.int32)
    svm.block_init(b, "RAM", 64, 4, np.int32)
    task_init(k, "PROC1", lambda k: svm.stream_pop(k.src), src=s)
    svm.kernel_run(k)
    queued = task_init(Task(), "PROC1", lambda k: None)
    svm.kernel_run(queued)  # WAITING behind k
    with pytest.raises(
        svm.SVMError,
        match=r"svm.init at .*test_kernels.py:\d+: the SVM is already initialised.*"
        r"by svm.init at .*conftest.py:\d+\); call svm.cleanup\(\) first",
    ):
        svm.init(svm.this_computer(cores=1), check=True)
    assert svm.kernel_get_status(k) == svm.KERNEL_RUNNING  # the refused init changed nothing
    svm.cleanup()
    svm.init(svm.this_computer(cores=1), check=True)
    assert svm.kernel_get_status(k) == svm.KERNEL_FINISHED  # ended by the cleanup
    assert svm.kernel_get_status(queued) == svm.KERNEL_FINISHED
    with pytest.raises(svm.SVMError, match="stream s was initialised before the last svm.init"):
        svm.stream_push(s, 1)
    with pytest.raises(svm.SVMError, match="block b was initialised before the last svm.init"):
        svm.block_read(b, 0)
    with pytest.raises(svm.SVMError, match="kernel k was initialised before the last svm.init"):
        svm.kernel_run(k)
    with pytest.raises(svm.SVMError, match="kernel k was initialised before the last svm.init"):
        svm.kernel_wait(k)
    fresh = task_init(Task(), "PROC0", lambda k: None)
    with pytest.raises(svm.SVMError, match="kernel k was initialised before the last svm.init"):
        svm.kernel_add_dependence(fresh, k)
    # Initialised again on the new machine: no B2 against the old machine's locations.
    svm.stream_init_ram(s, "RAM", 0, 4, np.float32)
    task_init(k, "PROC0", lambda k: svm.stream_push(k.src, 1.5), src=s)
    svm.kernel_run(k)
    svm.kernel_wait(k)
    assert svm.stream_pop(s) == 1.5


def test_a_work_function_that_exits_is_a_failed_kernel(computer):
    def work(k):
        raise SystemExit(3)

    k = Task()
    task_init(k, "PROC0", work)
    svm.kernel_run(k)
    with pytest.raises(svm.SVMError, match=r"kernel k .*raised SystemExit: 3"):
        svm.kernel_wait(k)


def test_kernels_that_compare_equal_are_still_different_kernels(computer):
    """A kernel type written as a dataclass (like the seed's structs) compares by value;
    the runtime keeps kernels apart by identity."""
    from dataclasses import dataclass

    @dataclass
    class Scale(svm.Kernel):
        factor: int = 2

    gate = ram_stream(0)
    a, b = Scale(), Scale()
    assert a == b
    svm.kernel_init(a, "PROC0", None, lambda k: svm.stream_pop(gate))
    svm.kernel_init(b, "PROC0", None, lambda k: None)
    svm.kernel_run(a)
    svm.kernel_run(b)  # equal to a, but another kernel: it waits for PROC0
    assert svm.kernel_get_status(b) == svm.KERNEL_WAITING
    svm.kernel_pause(b)
    svm.stream_push(gate, 1)
    svm.kernel_wait(a)
    assert svm.kernel_get_status(b) == svm.KERNEL_PAUSED
    svm.kernel_run(b)
    svm.kernel_wait(b)
    assert svm.kernel_get_status(b) == svm.KERNEL_FINISHED


def test_a_finished_kernel_runs_again_only_after_its_initialisation(computer):
    k = task_init(Task(), "PROC0", lambda k: None)
    svm.kernel_run(k)
    svm.kernel_wait(k)
    with pytest.raises(
        svm.SVMError, match=r"kernel_run\(k\) at .*: the kernel is FINISHED; call its initialisation"
    ):
        svm.kernel_run(k)
    task_init(k, "PROC0", lambda k: None)
    svm.kernel_run(k)
    svm.kernel_wait(k)
