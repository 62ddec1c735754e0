"""Restrictions A7 (one reader and one writer per stream, over whole executions) and B3
(the same stream and block arguments at every initialisation of a kernel), in the
assertion mode, on the shipped ``pca_tiled`` machine."""

from __future__ import annotations

import numpy as np
import pytest
from test_checks import Task, local_stream, restriction

from hpvm import svm


class Reader(svm.Kernel):
    """Declares its role as the seed's struct would: ``IStream* src``."""

    src: svm.IStream


class Writer(svm.Kernel):
    dst: svm.OStream


class Both(svm.Kernel):
    io: svm.IOStream


def named(name: str, address: int, capacity: int = 8) -> svm.Stream:
    """A stream of LOCALMEM1 that messages call ``name``."""
    s = local_stream(1, address, capacity)
    s.name = name
    return s


def drain(k):
    svm.stream_pop_many(k.src, svm.STREAM_LENGTH_ALL)


def blocked(k):
    svm.stream_pop(k.gate)


# -- A7 --------------------------------------------------------------------------------------


def test_a7_a_declared_reader_counts_from_kernel_run(tiled):
    s, gate = local_stream(1, 0), local_stream(1, 64)
    first, second = Reader(), Reader()
    svm.kernel_init(first, "PROC1", None, blocked)
    first.src, first.gate = s, gate
    svm.kernel_init(second, "PROC1", None, drain)
    second.src = s
    svm.kernel_run(first)  # has not popped s, and never will before the gate opens
    with restriction(
        "A7",
        "stream s already has a (WAITING|RUNNING) reader, kernel first",
        r"second cannot also be its reader \(kernel_run\(second\) at .*test_roles_and_arguments.py:",
        r"kernel_wait for first before kernel_run\(second\)",
    ):
        svm.kernel_run(second)
    assert svm.kernel_get_status(second) == svm.KERNEL_UNSTARTED  # refused: nothing held
    svm.stream_push(gate, 0)
    svm.kernel_wait(first)
    svm.kernel_run(second)  # first FINISHED: second may read s now
    svm.stream_push_with_eos(s, 1)
    svm.kernel_wait(second)


def test_a7_declared_writers_and_io_streams(tiled):
    s, gate = local_stream(1, 0), local_stream(1, 64)
    w, io = Writer(), Both()
    svm.kernel_init(w, "PROC1", None, blocked)
    w.dst, w.gate = s, gate
    svm.kernel_init(io, "PROC1", None, blocked)
    io.io, io.gate = s, gate
    svm.kernel_run(w)
    with restriction("A7", "stream s already has a (WAITING|RUNNING) writer, kernel w", "io cannot also"):
        svm.kernel_run(io)  # an IOStream member makes io a reader and a writer of s
    svm.stream_push(gate, 0)
    svm.kernel_wait(w)


def test_a7_an_undeclared_reader_counts_from_kernel_run_too(tiled):
    """``late`` is WAITING (its processor busy) while ``early`` reads s and finishes; when
    ``late`` pops s, both were its live readers at once: A7, though ``early`` is FINISHED."""
    s, gate = svm.Stream(), local_stream(1, 64)
    svm.stream_init_fifo(s, "FIFO12", np.int32)  # PROC1 and PROC2 both reach it
    busy, late, early = Task(), Task(), Task()
    svm.kernel_init(busy, "PROC1", None, blocked)
    busy.gate = gate
    svm.kernel_init(late, "PROC1", None, lambda k: svm.stream_pop(s))  # no roles declared
    svm.kernel_init(early, "PROC2", None, lambda k: svm.stream_pop(s))
    svm.kernel_run(busy)
    svm.kernel_run(late)  # WAITING behind busy (one user kernel per stream processor)
    assert svm.kernel_get_status(late) == svm.KERNEL_WAITING
    svm.stream_push(s, 1)
    svm.kernel_run(early)
    svm.kernel_wait(early)  # early popped s and FINISHED while late was WAITING
    svm.stream_push(s, 2)
    svm.stream_push(gate, 0)
    with restriction(
        "A7",
        "stream s had another reader, kernel early, while kernel late was already live",
        r"since its kernel_run at .*test_roles_and_arguments.py:\d+\): both were its readers at once",
        r"kernel_wait for early before kernel_run\(late\)",
    ):
        svm.kernel_wait(late)
    svm.kernel_wait(busy)


def test_a7_one_after_the_other_is_allowed(tiled):
    s = local_stream(1, 0)
    for value in (1, 2, 3):
        k = Reader()
        svm.kernel_init(k, "PROC1", None, drain)
        k.src = s
        svm.stream_push_with_eos(s, value)
        svm.kernel_run(k)
        svm.kernel_wait(k)


def test_a7_black_boxes_declare_their_streams(tiled):
    src, out, other = named("src", 0, 16), named("out", 128, 16), named("other", 256, 16)
    rle = svm.RLE()
    svm.rle_init(rle, "PROC1", None, src, out)
    move = svm.Move()
    svm.move_init(move, "DMA1", src, other, svm.STREAM_LENGTH_ALL, True)
    svm.kernel_run(rle)
    with restriction("A7", "stream src already has a (WAITING|RUNNING) reader, kernel rle", "move cannot"):
        svm.kernel_run(move)
    svm.stream_push_many(src, np.array([4, 4, 5], np.int32), eos=True)
    svm.kernel_wait(rle)
    assert svm.stream_pop_many(out, svm.STREAM_LENGTH_ALL).tolist() == [4, 2, 5, 1]


def test_annotated_aliases_are_still_streams():
    s = svm.IStream()
    assert isinstance(s, svm.Stream) and repr(s) == "<Stream stream (not initialised)>"


# -- B3 --------------------------------------------------------------------------------------


def _block(name: str, address: int) -> svm.Block:
    b = svm.Block()
    svm.block_init(b, "LOCALMEM1", address, 8, 4)
    b.name = name
    return b


def test_b3_another_scratch_block(tiled):
    scratch, scratch2 = _block("scratch", 512), _block("scratch2", 1024)
    k = Task()
    svm.kernel_init(k, "PROC1", scratch, lambda k: None)
    svm.kernel_run(k)
    svm.kernel_wait(k)
    with restriction(
        "B3",
        r"kernel_init\(k\) at .*test_roles_and_arguments.py:\d+ passes scratch block scratch2",
        r"its initialisation at .*test_roles_and_arguments.py:\d+ passed block scratch",
        "pass the same scratch block",
    ):
        svm.kernel_init(k, "PROC1", scratch2, lambda k: None)
    with restriction("B3", "passes scratch None", "passed block scratch"):
        svm.kernel_init(k, "PROC1", None, lambda k: None)
    svm.kernel_init(k, "PROC1", scratch, lambda k: None)  # the same one: allowed


def test_b3_a_scratch_block_where_there_was_none_even_without_a_run(tiled):
    k = Task()
    svm.kernel_init(k, "PROC1", None, lambda k: None)
    with restriction("B3", "passes scratch block b, its initialisation at .* passed None"):
        svm.kernel_init(k, "PROC1", _block("b", 512), lambda k: None)


def test_b3_members_swapped_or_dropped(tiled):
    a, b = named("a", 0), named("b", 64)
    k = Task()

    def task_init(src, dst):
        svm.kernel_init(k, "PROC1", None, lambda k: None)
        k.src, k.dst = src, dst

    task_init(a, b)
    task_init(b, a)  # the same two streams, in other arguments: not the same arguments
    with restriction("B3", "with stream a as its member 'dst', its previous initialisation .* with stream b"):
        svm.kernel_run(k)
    task_init(b, a)
    del k.dst
    with restriction("B3", "with None as its member 'dst', its previous initialisation .* with stream a"):
        svm.kernel_run(k)
    task_init(b, a)
    task_init(b, a)
    svm.kernel_run(k)  # the same arguments: allowed
    svm.kernel_wait(k)


def test_b3_lists_of_streams_compare_element_by_element(tiled):
    a, b = named("a", 0), named("b", 64)
    k = Task()
    svm.kernel_init(k, "PROC1", None, lambda k: None)
    k.ins = [a, b]
    svm.kernel_init(k, "PROC1", None, lambda k: None)
    k.ins = [a, a]
    with restriction("B3", r"with stream a as its member 'ins\[1\]'"):
        svm.kernel_run(k)


# -- a second svm.init -----------------------------------------------------------------------


def test_a_second_init_before_cleanup_is_refused(tiled):
    s = local_stream(1, 0)
    svm.stream_push(s, 5)
    with pytest.raises(
        svm.SVMError,
        match=r"svm.init at .*test_roles_and_arguments.py:\d+: the SVM is already initialised \(machine "
        r"'pca_tiled', by svm.init at .*conftest.py:\d+\); call svm.cleanup\(\) first",
    ):
        svm.init("pca_tiled")
    assert svm.stream_pop(s) == 5  # the running SVM is untouched
    svm.cleanup()
    svm.init("pca_tiled")  # after cleanup: allowed


def pop_one(k):
    svm.stream_pop(k.src)


def test_a7_a_compiled_kernel_takes_its_role_at_its_first_pop(tiled):
    s, gate = svm.Stream(), local_stream(1, 64)
    svm.stream_init_fifo(s, "FIFO12", np.int32)
    holder, compiled = Reader(), Task()
    svm.kernel_init(holder, "PROC1", None, blocked)
    holder.src, holder.gate = s, gate
    svm.kernel_init(compiled, "PROC2", None, pop_one, compiled=True)
    compiled.src = s
    svm.kernel_run(holder)
    svm.stream_push(s, 1)  # there is an element: the compiled pop need not wait in Python
    svm.kernel_run(compiled)
    with restriction(
        "A7", "stream s already has a (WAITING|RUNNING) reader, kernel holder", "compiled cannot"
    ):
        svm.kernel_wait(compiled)
    assert svm.stream_pop(s) == 1  # refused before it popped
    svm.stream_push(gate, 0)
    svm.kernel_wait(holder)


# -- B1 and A3 for the remaining kernel control functions --------------------------------


def test_b1_waiting_for_or_depending_on_a_kernel_never_initialised(tiled):
    never, k = Task(), Task()
    svm.kernel_init(k, "PROC1", None, lambda k: None)
    with restriction("B1", r"kernel_wait\(Task\) before its initialisation function, at .*test_roles"):
        svm.kernel_wait(never)
    with restriction("B1", r"kernel_wait_multiple\(Task\) before its initialisation function"):
        svm.kernel_wait_multiple(k, never)
    with restriction("B1", r"kernel_get_status\(Task\) before its initialisation function"):
        svm.kernel_get_status(never)
    with restriction("B1", r"kernel_add_dependence\(Task\) before its initialisation function"):
        svm.kernel_add_dependence(k, never)


def test_b1_outside_the_assertion_mode_an_uninitialised_kernel_is_unstarted(computer):
    never = Task()
    svm.kernel_wait(never)  # ignored, as for any UNSTARTED kernel
    assert svm.kernel_get_status(never) == svm.KERNEL_UNSTARTED


def test_a3_kernel_get_status_only_in_control_code(tiled):
    other, k = Task(), Task()
    svm.kernel_init(other, "PROC2", None, lambda k: None)
    svm.kernel_init(k, "PROC1", None, lambda k: svm.kernel_get_status(other))
    svm.kernel_run(k)
    with restriction("A3", "kernel_get_status on kernel other called from the work function of kernel k"):
        svm.kernel_wait(k)


def test_a8_a_stream_whose_fifo_was_mapped_to_another_stream_since(tiled):
    s, t = svm.Stream(), svm.Stream()
    svm.stream_init_fifo(s, "FIFO12", np.int32)
    svm.stream_init_fifo(t, "FIFO12", np.int32)  # s is empty: allowed, and FIFO12 is t's now
    with restriction(
        "A8",
        r"stream_push\(s\) at .*: stream s was mapped to FIFO FIFO12 at .*, and stream t has been mapped",
        r"initialise s again \(stream_init_fifo\) before using it",
    ):
        svm.stream_push(s, 1)
    svm.stream_push(t, 2)
    assert svm.stream_pop(t) == 2
    svm.stream_init_fifo(s, "FIFO12", np.int32)  # FIFO12 is empty: s's again
    svm.stream_push(s, 3)
    assert svm.stream_pop(s) == 3
    with restriction("A8", r"stream_pop\(t\)", "stream s has been mapped to it since"):
        svm.stream_pop(t)
