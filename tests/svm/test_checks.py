"""The assertion mode (``svm.init(machine, check=True)``): one test per restriction the
runtime checks. Each error names the restriction, the kernel, the stream or block, and the
line of the user's code."""

from __future__ import annotations

import numpy as np
import pytest

from hpvm import svm

HERE = __file__


class Task(svm.Kernel):
    pass


def restriction(code: str, *fragments: str):
    """pytest.raises for SVMRestrictionError ``code`` whose message holds ``fragments``."""
    return pytest.raises(svm.SVMRestrictionError, match=f"^{code}: .*" + ".*".join(fragments))


def local_stream(proc: int, address: int, capacity: int = 8) -> svm.Stream:
    s = svm.Stream()
    svm.stream_init_ram(s, f"LOCALMEM{proc}", address, capacity, np.int32)
    return s


def pop_forever(k):
    while True:
        svm.stream_pop(k.src)


def test_a1_initialising_a_live_kernel(tiled):
    src = local_stream(1, 0)
    k = Task()
    svm.kernel_init(k, "PROC1", None, pop_forever)
    k.src = src
    svm.kernel_run(k)
    with restriction("A1", "kernel_init on kernel k", "test_checks.py:"):
        svm.kernel_init(k, "PROC1", None, pop_forever)
    svm.kernel_end(k)
    svm.kernel_wait(k)


def test_a2_reinitialising_a_stream_a_live_kernel_uses(tiled):
    src = local_stream(1, 0)
    k = Task()
    svm.kernel_init(k, "PROC1", None, pop_forever)
    k.src = src
    svm.kernel_run(k)
    with restriction(
        "A2", r"stream_init_ram\(src\)", "test_checks.py:", "stream src is used by kernel k, which is"
    ):
        svm.stream_init_ram(src, "LOCALMEM1", 0, 8, np.int32)
    svm.kernel_end(k)
    svm.kernel_wait(k)
    svm.stream_init_ram(src, "LOCALMEM1", 0, 8, np.int32)  # once it is FINISHED: allowed


def test_a2_for_blocks(tiled):
    b = svm.Block()
    svm.block_init(b, "LOCALMEM1", 0, 4, np.int32)
    k = Task()
    svm.kernel_init(k, "PROC1", None, pop_forever)
    k.src, k.table = local_stream(1, 64), b
    svm.kernel_run(k)
    with restriction("A2", r"block_init\(b\)", "block b is used by kernel k"):
        svm.block_init(b, "LOCALMEM1", 0, 4, np.int32)
    svm.kernel_end(k)
    svm.kernel_wait(k)


def test_a2_for_a_stream_a_kernel_touched_without_holding_it(tiled):
    hidden = svm.Stream()
    svm.stream_init_ram(hidden, "LOCALMEM1", 0, 8, np.int32)
    gate = local_stream(1, 512)

    def work(k):
        svm.stream_push(hidden, 1)  # not a data member: known once used
        svm.stream_pop(gate)

    k = Task()
    svm.kernel_init(k, "PROC1", None, work)
    svm.kernel_run(k)
    assert svm.stream_pop(hidden) == 1
    with restriction("A2", r"stream_init_ram\(hidden\)", "used by kernel k"):
        svm.stream_init_ram(hidden, "LOCALMEM1", 0, 8, np.int32)
    svm.kernel_end(k)
    svm.kernel_wait(k)


def test_a3_initialisation_and_control_only_in_control_code(tiled):
    other = Task()
    svm.kernel_init(other, "PROC2", None, lambda k: None)

    def init_in_work(k):
        svm.stream_init_ram(svm.Stream(), "LOCALMEM1", 0, 4, 4)

    def run_in_work(k):
        svm.kernel_run(other)

    for work, fragment in (
        (init_in_work, r"stream_init_ram\(stream\) called from the work function of kernel k"),
        (run_in_work, "kernel_run on kernel other called from the work function of kernel k"),
    ):
        k = Task()
        svm.kernel_init(k, "PROC1", None, work)
        svm.kernel_run(k)
        with restriction("A3", fragment, r"\[in kernel k"):
            svm.kernel_wait(k)


def test_a3_allows_kernel_pause_and_end_from_the_work_function(tiled):
    def work(k):
        svm.kernel_pause(k)
        svm.kernel_end(k)

    k = Task()
    svm.kernel_init(k, "PROC1", None, work)
    svm.kernel_run(k)
    svm.kernel_wait(k)
    svm.kernel_run(k)
    svm.kernel_wait(k)
    assert svm.kernel_get_status(k) == svm.KERNEL_FINISHED


def test_a4_and_a5_are_kept_by_the_scheduler(tiled):
    """Not errors: a second user kernel on a busy stream processor stays WAITING (A4), a
    DMA engine runs at most its metadata's max_concurrent_kernels (A5, test_kernels)."""
    src = local_stream(1, 0)
    a, b = Task(), Task()
    svm.kernel_init(a, "PROC1", None, pop_forever)
    a.src = src
    svm.kernel_init(b, "PROC1", None, lambda k: None)
    svm.kernel_run(a)
    svm.kernel_run(b)
    assert svm.kernel_get_status(b) == svm.KERNEL_WAITING
    svm.kernel_end(a)
    svm.kernel_wait(b)


def test_a6_a_kernel_uses_a_stream_its_processor_does_not_reach(tiled):
    far = svm.Stream()
    svm.stream_init_ram(far, "LOCALMEM1", 0, 8, np.int32)
    k = Task()
    svm.kernel_init(k, "PROC2", None, pop_forever)
    k.src = far
    with restriction(
        "A6",
        r"kernel_run\(k\)",
        "kernel k on PROC2 uses stream far in LOCALMEM1",
        "reaches: FIFO12, FIFO23, LOCALMEM2",
    ):
        svm.kernel_run(k)


def test_a6_found_at_the_first_access_of_a_stream_the_kernel_was_not_given(tiled):
    hidden = svm.Stream()
    svm.stream_init_ram(hidden, "LOCALMEM3", 0, 8, np.int32)

    def work(k):
        svm.stream_push(hidden, 1)  # not a data member: found when used

    k = Task()
    svm.kernel_init(k, "PROC2", None, work)
    svm.kernel_run(k)
    with restriction("A6", "kernel k on PROC2 uses stream hidden in LOCALMEM3"):
        svm.kernel_wait(k)


def test_a6_for_blocks(tiled):
    b = svm.Block()
    svm.block_init(b, "GLOBALMEM1", 0, 4, np.int32)

    def work(k):
        svm.block_read(b, 0)

    k = Task()
    svm.kernel_init(k, "PROC1", None, work)
    svm.kernel_run(k)
    with restriction("A6", "block b in GLOBALMEM1"):
        svm.kernel_wait(k)


def test_a7_two_live_readers_of_one_stream(tiled):
    src = svm.Stream()
    svm.stream_init_ram(src, "GLOBALMEM1", 0, 8, np.int32)
    d1, d2 = svm.Stream(), svm.Stream()
    svm.stream_init_ram(d1, "LOCALMEM1", 0, 8, np.int32)
    svm.stream_init_ram(d2, "LOCALMEM2", 0, 8, np.int32)
    move1, move2 = svm.Move(), svm.Move()
    svm.move_init(move1, "DMA1", src, d1, 1, False)
    svm.move_init(move2, "DMA2", src, d2, 1, False)
    svm.kernel_run(move1)
    with restriction(
        "A7",
        "stream src already has a (WAITING|RUNNING) reader, kernel move1",
        "move2",
        r"kernel_run\(move2\)",
    ):
        svm.kernel_run(move2)
    svm.stream_push(src, 1)
    svm.kernel_wait(move1)
    svm.kernel_run(move2)  # move1 is FINISHED: move2 may read now
    svm.stream_push(src, 2)
    svm.kernel_wait(move2)


def test_a7_a_finished_writer_releases_the_stream(tiled):
    out = local_stream(1, 0, 64)
    gate = local_stream(1, 512)

    def writer(k):
        svm.stream_push(out, 1)
        svm.stream_pop(gate)

    w1, w2 = Task(), Task()
    svm.kernel_init(w1, "PROC1", None, writer)
    svm.kernel_init(w2, "PROC1", None, writer)
    svm.kernel_run(w1)
    assert svm.stream_pop(out) == 1  # w1 has pushed: it holds the writer role
    svm.kernel_end(w1)
    svm.kernel_wait(w1)
    svm.kernel_run(w2)  # w1 FINISHED: no conflict
    svm.stream_pop(out)
    svm.kernel_end(w2)
    svm.kernel_wait(w2)


def test_a7_dynamic_conflict_between_user_kernels(tiled):
    shared = svm.Stream()
    svm.stream_init_fifo(shared, "FIFO12", np.int32)
    gate1, gate2 = local_stream(1, 0), local_stream(2, 0)

    def w1_work(k):
        svm.stream_push(shared, 1)
        svm.stream_pop(gate1)

    def w2_work(k):
        svm.stream_push(shared, 2)
        svm.stream_pop(gate2)

    w1, w2 = Task(), Task()
    svm.kernel_init(w1, "PROC1", None, w1_work)
    svm.kernel_init(w2, "PROC2", None, w2_work)
    svm.kernel_run(w1)
    assert svm.stream_pop(shared) == 1
    svm.kernel_run(w2)
    with restriction(
        "A7", "stream shared already has a (RUNNING|PAUSED) writer, kernel w1", "w2 cannot also be its writer"
    ):
        svm.kernel_wait(w2)
    svm.kernel_end(w1)
    svm.kernel_wait(w1)


def test_a8_a_fifo_must_be_empty_before_it_is_remapped(tiled):
    s, t = svm.Stream(), svm.Stream()
    svm.stream_init_fifo(s, "FIFO12", np.int32)
    svm.stream_push(s, 1)
    with restriction("A8", r"stream_init_fifo\(t\)", "FIFO FIFO12 still holds 1 element"):
        svm.stream_init_fifo(t, "FIFO12", np.int32)
    svm.stream_pop(s)
    svm.stream_init_fifo(t, "FIFO12", np.int32)


def test_a9_dependences_need_a_common_memory(tiled):
    a, b = Task(), Task()
    svm.kernel_init(a, "PROC1", None, lambda k: None)
    svm.kernel_init(b, "PROC2", None, lambda k: None)
    svm.kernel_run(b)
    with restriction("A9", r"kernel_add_dependence\(a, b\)", "PROC1", "PROC2", "share no memory"):
        svm.kernel_add_dependence(a, b)
    dma = svm.Move()
    s1, s2 = local_stream(1, 0), local_stream(1, 64)
    svm.move_init(dma, "DMA1", s1, s2, 0, False)
    svm.kernel_run(dma)
    svm.kernel_add_dependence(a, dma)  # DMA1 and PROC1 share LOCALMEM1
    svm.kernel_wait(b)
    svm.kernel_wait(dma)


def test_b1_use_before_initialisation(tiled):
    with restriction("B1", "stream_push on a stream that was never initialised"):
        svm.stream_push(svm.Stream(), 1)
    with restriction("B1", r"kernel_wait|kernel_run\(Task\) before its initialisation"):
        svm.kernel_run(Task())
    k = Task()
    svm.kernel_init(k, "PROC1", None, lambda k: None)
    k.src = svm.Stream()
    with restriction("B1", r"kernel_run\(k\)", "its stream stream was never initialised"):
        svm.kernel_run(k)


def test_b2_same_location_element_size_and_flags_every_time(tiled):
    s = svm.Stream()
    svm.stream_init_ram(s, "LOCALMEM1", 0, 8, np.int32, svm.STREAM_NEVER_WRAPS)
    svm.stream_init_ram(
        s, "LOCALMEM1", 64, 16, np.int32, svm.STREAM_NEVER_WRAPS
    )  # address, capacity may vary
    with restriction("B2", r"stream_init_ram\(s\)", "location LOCALMEM2 \\(was LOCALMEM1\\)"):
        svm.stream_init_ram(s, "LOCALMEM2", 0, 8, np.int32, svm.STREAM_NEVER_WRAPS)
    with restriction("B2", "element type float32 \\(was int32\\)"):
        svm.stream_init_ram(s, "LOCALMEM1", 0, 8, np.float32, svm.STREAM_NEVER_WRAPS)
    with restriction("B2", "flags 0 \\(was 4\\)"):
        svm.stream_init_ram(s, "LOCALMEM1", 0, 8, np.int32)
    b = svm.Block()
    svm.block_init(b, "LOCALMEM1", 0, 8, 4)
    with restriction("B2", r"block_init\(b\)", "element type"):
        svm.block_init(b, "LOCALMEM1", 0, 8, 8)
    k = Task()
    svm.kernel_init(k, "PROC1", None, lambda k: None)
    with restriction("B2", "kernel k initialised on PROC2", "on PROC1 before"):
        svm.kernel_init(k, "PROC2", None, lambda k: None)


def test_b3_reinitialisation_with_other_streams(tiled):
    s1, s2, out = local_stream(1, 0), local_stream(1, 64), local_stream(1, 128)
    for s in (s1, s2):
        svm.stream_push_with_eos(s, 1)
    move = svm.Move()
    svm.move_init(move, "DMA1", s1, out, svm.STREAM_LENGTH_ALL, True)
    svm.kernel_run(move)
    svm.kernel_wait(move)
    svm.move_init(move, "DMA1", s2, out, svm.STREAM_LENGTH_ALL, True)
    with restriction(
        "B3",
        r"kernel_run\(move\)",
        "kernel move was re-initialised at .*test_checks.py:",
        "with another stream s .* as its member 'src_str', its previous initialisation",
        "pass the same ones, or use another kernel variable",
    ):
        svm.kernel_run(move)


def _declare_and_recurse(depth: int) -> None:
    s = svm.Stream()
    svm.stream_init_ram(s, "LOCALMEM1", 0, 4, 4)
    if depth:
        _declare_and_recurse(depth - 1)


def test_b6_functions_declaring_streams_are_not_recursive(tiled):
    with restriction("B6", r"stream_init_ram\(s\)", "inside _declare_and_recurse", "called recursively"):
        _declare_and_recurse(1)
    _declare_and_recurse(0)


def test_restrictions_are_not_checked_outside_assertion_mode(computer):
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 8, np.int32)
    svm.stream_init_ram(s, "RAM", 0, 8, np.float32)  # B2 unchecked
    _ = svm.current_machine()
