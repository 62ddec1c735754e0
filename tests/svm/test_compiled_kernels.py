"""Compiled kernels (``kernel_init(..., compiled=True)``): the same work function gives the
same results compiled (Numba, nogil, ring operations on the memories' bytes) and as Python;
stalls, pauses, ends and cleanup behave as for Python kernels; what cannot be compiled is
an ``SVMError`` at ``kernel_run`` naming the kernel."""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest

from hpvm import svm

TAPS = 16
COEFFS = np.arange(1, TAPS + 1, dtype=np.float64) / 136.0


class K(svm.Kernel):
    pass


def source_work(k):
    for i in range(k.n - 1):
        svm.stream_push(k.out, np.float32(i % 7))
    svm.stream_push_with_eos(k.out, np.float32((k.n - 1) % 7))


def fir_work(k):
    for _ in range(k.n - TAPS + 1):
        acc = 0.0
        for j in range(TAPS):
            acc += k.coeffs[j] * float(svm.stream_peek(k.in_, j))
        svm.stream_push(k.out, np.float32(acc))
        svm.stream_pop(k.in_)
    while not svm.stream_peek_eos(k.in_, 0):
        svm.stream_pop(k.in_)
    svm.stream_pop(k.in_)


def sink_work(k):
    for i in range(k.result.shape[0]):
        k.result[i] = svm.stream_pop(k.in_)


def fir_pipeline(n: int, compiled: bool, capacity: int = 64) -> np.ndarray:
    a, b = svm.Stream(), svm.Stream()
    svm.stream_init_ram(a, "RAM", 0, capacity, np.float32)
    svm.stream_init_ram(b, "RAM", 1 << 16, capacity, np.float32)
    src, fir, sink = K(), K(), K()
    svm.kernel_init(src, "PROC0", None, source_work, compiled=compiled)
    src.out, src.n = a, n
    svm.kernel_init(fir, "PROC1", None, fir_work, compiled=compiled)
    fir.in_, fir.out, fir.n, fir.coeffs = a, b, n, COEFFS
    svm.kernel_init(sink, "PROC2", None, sink_work, compiled=compiled)
    sink.in_, sink.result = b, np.zeros(n - TAPS + 1, np.float32)
    for k in (src, fir, sink):
        svm.kernel_run(k)
    for k in (sink, fir, src):
        svm.kernel_wait(k)
    return sink.result


@pytest.fixture
def three():
    return svm.init(svm.this_computer(cores=3))


def test_the_fir_pipeline_gives_the_same_results_compiled_and_in_python(three):
    n = 3000
    python = fir_pipeline(n, compiled=False)
    compiled = fir_pipeline(n, compiled=True)
    x = (np.arange(n) % 7).astype(np.float64)
    expected = np.convolve(x, COEFFS[::-1], mode="valid").astype(np.float32)
    assert np.array_equal(python, expected)
    assert np.array_equal(compiled, expected)
    # A capacity that is not a power of two (slots by division), and a long run that wraps often.
    assert np.array_equal(fir_pipeline(n, compiled=True, capacity=37), expected)
    x = (np.arange(100_000) % 7).astype(np.float64)
    expected = np.convolve(x, COEFFS[::-1], mode="valid").astype(np.float32)
    assert np.array_equal(fir_pipeline(100_000, compiled=True), expected)
    # Rings of jit_ops.BATCH_MIN elements or more: the waits take half a ring at a time.
    assert np.array_equal(fir_pipeline(100_000, compiled=True, capacity=10_000), expected)


def reader_work(k):
    """Pops through the EOS, recording each value, whether peek(1) was there, and tags."""
    i = 0
    while True:
        eos = svm.stream_peek_eos(k.in_, 0)
        k.values[i] = svm.stream_peek(k.in_, 0)
        k.tags[i] = eos
        svm.stream_pop(k.in_)
        i += 1
        if eos:
            break
    k.count[0] = i
    svm.stream_push_with_eos(k.out, i)


@pytest.mark.parametrize("compiled", [False, True])
def test_pop_peek_and_eos_semantics_match(computer, compiled):
    s, out = svm.Stream(), svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 32, np.int32)
    svm.stream_init_ram(out, "RAM", 256, 4, np.int64)
    k = K()
    svm.kernel_init(k, "PROC0", None, reader_work, compiled=compiled)
    k.in_, k.out = s, out
    k.values, k.tags, k.count = np.zeros(32, np.int32), np.zeros(32, np.bool_), np.zeros(1, np.int64)
    svm.kernel_run(k)
    svm.stream_push_many(s, np.arange(5), eos=True)  # tagged: element 4
    svm.stream_push_many(s, np.arange(10, 20), eos=True)  # left for later: the kernel stops at 4
    assert svm.stream_peek_eos(out, 0) is True and svm.stream_pop(out) == 5
    svm.kernel_wait(k)
    assert k.count[0] == 5
    assert k.values[:5].tolist() == [0, 1, 2, 3, 4]
    assert k.tags[:5].tolist() == [False, False, False, False, True]
    # What the kernel left in the stream is intact, tag included.
    rest = svm.stream_pop_many(s, svm.STREAM_LENGTH_ALL)
    assert rest.tolist() == list(range(10, 20))


def pop_one(k):
    k.got[0] = svm.stream_pop(k.in_)


def test_a_compiled_pop_that_nothing_can_satisfy_raises_instead_of_hanging(computer):
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 8, np.float32)
    k = K()
    svm.kernel_init(k, "PROC0", None, pop_one, compiled=True)
    k.in_, k.got = s, np.zeros(1, np.float32)
    svm.kernel_run(k)
    start = time.perf_counter()
    with pytest.raises(svm.SVMError, match="nothing can ever make it possible") as info:
        svm.kernel_wait(k)
    assert "pop from stream s" in str(info.value) and time.perf_counter() - start < 10
    svm.cleanup()


def push_forever(k):
    while True:
        svm.stream_push(k.out, 1.0)


def test_a_compiled_push_onto_a_stream_nobody_reads_raises_instead_of_hanging(computer):
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 8, np.float32)
    k = K()
    svm.kernel_init(k, "PROC0", None, push_forever, compiled=True, name="pusher")
    k.out = s
    svm.kernel_run(k)
    # Either side may find the deadlock first: the kernel (its push fails) or control code.
    with pytest.raises(svm.SVMError, match="nothing can ever make it possible") as info:
        svm.kernel_wait(k)
    assert "kernel pusher" in str(info.value) and "waits to push onto stream s" in str(info.value)


def test_cleanup_ends_a_compiled_kernel_blocked_in_a_pop(computer):
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 8, np.float32)
    k = K()
    svm.kernel_init(k, "PROC0", None, pop_one, compiled=True)
    k.in_, k.got = s, np.zeros(1, np.float32)
    svm.kernel_run(k)
    time.sleep(0.2)  # it spins, then waits in Python
    assert svm.kernel_get_status(k) == svm.KERNEL_RUNNING
    start = time.perf_counter()
    svm.cleanup()
    assert time.perf_counter() - start < 2
    assert svm.kernel_get_status(k) == svm.KERNEL_FINISHED
    assert not [t for t in threading.enumerate() if t.name.startswith("svm-")]


def forever_push(k):
    i = 0
    while True:
        svm.stream_push(k.out, i)
        svm.stream_pop(k.back)
        i += 1


def test_pause_resume_and_end_reach_a_compiled_kernel_that_never_blocks(computer):
    out = svm.Stream()
    svm.stream_init_ram(out, "RAM", 0, 4, np.int64)
    k = K()
    svm.kernel_init(k, "PROC0", None, forever_push, compiled=True)
    k.out, k.back = out, out  # pushes one, pops it back: never stalls, never returns
    svm.kernel_run(k)
    svm.kernel_pause(k)
    svm.kernel_wait(k)
    assert svm.kernel_get_status(k) == svm.KERNEL_PAUSED
    svm.kernel_run(k)
    assert svm.kernel_get_status(k) == svm.KERNEL_RUNNING
    svm.kernel_end(k)
    svm.kernel_wait(k)
    assert svm.kernel_get_status(k) == svm.KERNEL_FINISHED


def block_work(k):
    for i in range(k.n):
        svm.block_write(k.b, i, svm.block_read(k.b, i) * 2 + k.add)


@pytest.mark.parametrize("compiled", [False, True])
def test_blocks_read_and_write_the_memory_compiled_and_in_python(computer, compiled):
    b = svm.Block()
    svm.block_init(b, "RAM", 0, 10, np.int16)
    b.data[:] = np.arange(10)
    k = K()
    svm.kernel_init(k, "PROC0", None, block_work, compiled=compiled)
    k.b, k.n, k.add = b, 10, 3
    svm.kernel_run(k)
    svm.kernel_wait(k)
    assert svm.memory_view("RAM", 0, 10, np.int16).tolist() == [2 * i + 3 for i in range(10)]


def test_a_block_index_out_of_bounds_in_compiled_code_names_kernel_block_and_index(computer):
    b = svm.Block()
    svm.block_init(b, "RAM", 0, 10, np.int16)
    k = K()
    svm.kernel_init(k, "PROC0", None, block_work, compiled=True, name="doubler")
    k.b, k.n, k.add = b, 11, 0
    svm.kernel_run(k)
    with pytest.raises(
        svm.SVMError, match=r"kernel doubler .*block_read\(b, 10\) in compiled kernel doubler: index out"
    ):
        svm.kernel_wait(k)


def peek_far(k):
    svm.stream_peek(k.in_, k.n)


def test_a_peek_beyond_the_capacity_in_compiled_code_is_an_error(computer):
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 8, np.float32)
    k = K()
    svm.kernel_init(k, "PROC0", None, peek_far, compiled=True)
    k.in_, k.n = s, 8
    svm.kernel_run(k)
    with pytest.raises(
        svm.SVMError, match=r"stream_peek\(s, 8\) in compiled kernel k: index must be in \[0, 8\)"
    ):
        svm.kernel_wait(k)


def uses_a_string(k):
    svm.stream_push(k.out, len(k.label))


def test_members_compiled_code_cannot_take_are_errors_at_kernel_run(computer):
    out, rec = svm.Stream(), svm.Stream()
    svm.stream_init_ram(out, "RAM", 0, 8, np.float32)
    svm.stream_init_ram(rec, "RAM", 64, 4, np.dtype([("a", np.int32), ("b", np.float32)]))
    k = K()
    svm.kernel_init(k, "PROC0", None, uses_a_string, compiled=True, name="labeller")
    k.out, k.label = out, "x"
    with pytest.raises(svm.SVMError, match="compiled kernel labeller: member 'label' is a str"):
        svm.kernel_run(k)
    k.label, k.rec = 1, rec
    with pytest.raises(svm.SVMError, match="member 'rec' is stream rec of element type .*scalar numeric"):
        svm.kernel_run(k)
    assert svm.kernel_get_status(k) == svm.KERNEL_UNSTARTED


def calls_python(k):
    svm.stream_pop_many(k.out, 2)


def test_a_work_function_numba_cannot_compile_is_an_error_at_kernel_run_naming_it(computer):
    out = svm.Stream()
    svm.stream_init_ram(out, "RAM", 0, 8, np.float32)
    k = K()
    svm.kernel_init(k, "PROC0", None, calls_python, compiled=True, name="multi")
    k.out = out
    with pytest.raises(
        svm.SVMError, match=r"kernel_run\(multi\): its work function 'calls_python' cannot be compiled"
    ):
        svm.kernel_run(k)


def test_control_code_and_a_compiled_kernel_share_one_stream_both_ways(computer):
    """Control code pushes (Python side of the ring) while a compiled kernel pops, and pops
    what a compiled kernel pushes: the counters and tags are one state."""
    s, out = svm.Stream(), svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 16, np.int32)
    svm.stream_init_ram(out, "RAM", 1024, 16, np.int32)
    k = K()

    def copy_until_eos(k):
        while not svm.stream_peek_eos(k.in_, 0):
            svm.stream_push(k.out, svm.stream_pop(k.in_) + 1)
        svm.stream_push_with_eos(k.out, svm.stream_pop(k.in_) + 1)

    svm.kernel_init(k, "PROC0", None, copy_until_eos, compiled=True)
    k.in_, k.out = s, out
    svm.kernel_run(k)
    got = []
    for start in range(0, 1000, 10):
        svm.stream_push_many(s, np.arange(start, start + 10), eos=start == 990)
        got.extend(svm.stream_pop_many(out, 10).tolist())
    svm.kernel_wait(k)
    assert got == list(range(1, 1001))


def ask_work(k):
    for i in range(k.n):
        svm.stream_push(k.out, i)
        k.answers[i] = svm.stream_pop(k.in_)  # waits for the one reply to the one request


def answer_work(k):
    for _ in range(k.n):
        svm.stream_push(k.out, 3 * svm.stream_pop(k.in_) + 1)


@pytest.mark.parametrize("capacity", [16, 1 << 13])
def test_compiled_kernels_in_lock_step_exchange_one_element_at_a_time(three, capacity):
    """Each side waits for exactly one element that the other pushes and then waits for the
    reply to: the batched waits of large rings (half a ring while the other side keeps
    pushing) must take a lone element, never wait for a batch that cannot come."""
    req, rep = svm.Stream(), svm.Stream()
    svm.stream_init_ram(req, "RAM", 0, capacity, np.int64)
    svm.stream_init_ram(rep, "RAM", 1 << 17, capacity, np.int64)
    ask, answer = K(), K()
    svm.kernel_init(ask, "PROC0", None, ask_work, compiled=True)
    ask.out, ask.in_, ask.n, ask.answers = req, rep, 300, np.zeros(300, np.int64)
    svm.kernel_init(answer, "PROC1", None, answer_work, compiled=True)
    answer.in_, answer.out, answer.n = req, rep, 300
    svm.kernel_run(answer)
    svm.kernel_run(ask)
    svm.kernel_wait(ask)
    svm.kernel_wait(answer)
    assert ask.answers.tolist() == [3 * i + 1 for i in range(300)]
    assert len(req) == len(rep) == 0


def multicast_work(k):
    for i in range(k.n - 1):
        svm.stream_push_multicast(i, k.a, k.b)
    svm.stream_push_multicast_with_eos(k.n - 1, k.a, k.b)


@pytest.mark.parametrize("compiled", [False, True])
def test_multicast_pushes_reach_every_stream_with_the_eos_tag(computer, compiled):
    a, b = svm.Stream(), svm.Stream()
    svm.stream_init_ram(a, "RAM", 0, 4, np.int32)
    svm.stream_init_ram(b, "RAM", 64, 4, np.int32)
    k = K()
    svm.kernel_init(k, "PROC0", None, multicast_work, compiled=compiled)
    k.a, k.b, k.n = a, b, 30
    svm.kernel_run(k)
    got_a, got_b = [], []
    for _ in range(29):
        got_a.append(int(svm.stream_pop(a)))
        got_b.append(int(svm.stream_pop(b)))
    assert svm.stream_peek_eos(a, 0) and svm.stream_peek_eos(b, 0)
    got_a.append(int(svm.stream_pop(a)))
    got_b.append(int(svm.stream_pop(b)))
    svm.kernel_wait(k)
    assert got_a == got_b == list(range(30))


def test_a_compiled_multicast_onto_streams_of_different_types_is_refused_as_in_python(computer):
    a, b = svm.Stream(), svm.Stream()
    svm.stream_init_ram(a, "RAM", 0, 4, np.int32)
    svm.stream_init_ram(b, "RAM", 64, 4, np.float64)
    k = K()
    svm.kernel_init(k, "PROC0", None, multicast_work, compiled=True, name="mc")
    k.a, k.b, k.n = a, b, 3
    with pytest.raises(svm.SVMError, match=r"(?s)kernel_run\(mc\).*the streams have different element types"):
        svm.kernel_run(k)


def test_compiled_kernels_on_fifos_in_assertion_mode_mixed_with_a_python_kernel():
    """pca_tiled: FIFO streams between neighbouring processors, restrictions checked; a
    Python source feeding a compiled FIR feeding a compiled sink."""
    svm.init("pca_tiled", check=True)
    n = 2000
    a, b = svm.Stream(), svm.Stream()
    svm.stream_init_fifo(a, "FIFO12", np.float32)
    svm.stream_init_fifo(b, "FIFO23", np.float32)
    src, fir, sink = K(), K(), K()
    svm.kernel_init(src, "PROC1", None, source_work)
    src.out, src.n = a, n
    svm.kernel_init(fir, "PROC2", None, fir_work, compiled=True)
    fir.in_, fir.out, fir.n, fir.coeffs = a, b, n, COEFFS
    svm.kernel_init(sink, "PROC3", None, sink_work, compiled=True)
    sink.in_, sink.result = b, np.zeros(n - TAPS + 1, np.float32)
    for k in (src, fir, sink):
        svm.kernel_run(k)
    for k in (sink, fir, src):
        svm.kernel_wait(k)
    x = (np.arange(n) % 7).astype(np.float64)
    assert np.array_equal(sink.result, np.convolve(x, COEFFS[::-1], mode="valid").astype(np.float32))


def test_a_compiled_peek_on_an_unordered_stream_is_an_error_as_in_python(computer):
    s = svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 8, np.float32, svm.STREAM_UNORDERED)
    k = K()
    svm.kernel_init(k, "PROC0", None, peek_far, compiled=True)
    k.in_, k.n = s, 0
    svm.kernel_run(k)
    with pytest.raises(
        svm.SVMError,
        match=r"stream_peek\(s, 0\) in compiled kernel k: peek cannot be used on a STREAM_UNORDERED",
    ):
        svm.kernel_wait(k)


def echo_work(k):
    while True:
        eos = svm.stream_peek_eos(k.in_, 0)
        x = svm.stream_pop(k.in_)
        if eos:
            svm.stream_push_with_eos(k.out, x)
            break
        svm.stream_push(k.out, x)


@pytest.mark.parametrize("dtype", [np.bool_, np.float64])  # integers: the other tests
def test_every_scalar_numeric_element_type_goes_through_a_compiled_kernel(computer, dtype):
    s, out = svm.Stream(), svm.Stream()
    svm.stream_init_ram(s, "RAM", 0, 16, dtype)
    svm.stream_init_ram(out, "RAM", 256, 16, dtype)
    k = K()
    svm.kernel_init(k, "PROC0", None, echo_work, compiled=True)
    k.in_, k.out = s, out
    svm.kernel_run(k)
    values = (np.arange(10) % 2).astype(dtype) if dtype is np.bool_ else np.arange(10).astype(dtype) * 3
    svm.stream_push_many(s, values, eos=True)
    got = svm.stream_pop_many(out, svm.STREAM_LENGTH_ALL)
    svm.kernel_wait(k)
    assert got.dtype == np.dtype(dtype) and got.tolist() == values.tolist()


def test_a_compiled_kernel_without_numba_is_an_error_saying_what_to_install(computer, monkeypatch):
    monkeypatch.setitem(sys.modules, "hpvm.svm.jit_kernel", None)  # as if Numba were missing
    monkeypatch.delattr(svm, "jit_kernel", raising=False)
    out = svm.Stream()
    svm.stream_init_ram(out, "RAM", 0, 8, np.float32)
    k = K()
    svm.kernel_init(k, "PROC0", None, push_forever, compiled=True, name="nonumba")
    k.out = out
    with pytest.raises(
        svm.SVMError, match=r"kernel_run\(nonumba\): a compiled kernel .* needs Numba.*hpvm\[cpu\]"
    ):
        svm.kernel_run(k)
    assert svm.kernel_get_status(k) == svm.KERNEL_UNSTARTED
