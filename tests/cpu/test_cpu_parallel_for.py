"""``__hpvm_parallel_for`` (``parallel_for.py``): every chunk runs once, with the packed
locals it was given, on Numba's threading layer — more than one thread where there are
chunks for them — and a single chunk on the launching thread."""

from __future__ import annotations

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from hpvm.backends.cpu.parallel_for import parallel_for_helpers  # noqa: E402

parallel_for = parallel_for_helpers()["__hpvm_parallel_for"]


@numba.njit(nogil=True)
def _record(c, pack):  # type: ignore[no-untyped-def]
    runs, threads, scale, offset = pack
    runs[c] += scale * c + offset  # (each chunk its own slot: a second run would show)
    threads[c] = numba.get_thread_id()


@numba.njit(nogil=True)
def _run(count, runs, threads, scale, offset):  # type: ignore[no-untyped-def]
    parallel_for(_record, count, runs, threads, scale, offset)
    return numba.get_thread_id()


@pytest.mark.parametrize("count", [0, 1, 2, 3, 7, 64])
def test_every_chunk_runs_once_with_its_packed_locals(count: int) -> None:
    runs = np.zeros(max(count, 1), np.int64)
    threads = np.full(max(count, 1), -1, np.int64)
    _run(count, runs, threads, 10, 3)
    want = np.array([10 * c + 3 for c in range(count)], np.int64)
    np.testing.assert_array_equal(runs[:count], want)
    if count == 0:
        assert runs[0] == 0 and threads[0] == -1  # (nothing ran)


def test_one_chunk_runs_on_the_launching_thread() -> None:
    runs, threads = np.zeros(1, np.int64), np.full(1, -1, np.int64)
    caller = _run(1, runs, threads, 1, 0)
    assert threads[0] == caller


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="Numba has one thread on this machine")
def test_chunks_run_on_the_threading_layers_threads() -> None:
    count = numba.config.NUMBA_NUM_THREADS
    runs, threads = np.zeros(count, np.int64), np.full(count, -1, np.int64)
    _run(count, runs, threads, 1, 1)
    assert (runs == np.arange(count) + 1).all()
    # (one chunk per thread: the threading layer hands them to more than one thread)
    assert len(set(threads.tolist())) > 1, threads


def test_a_task_that_does_not_compile_names_its_own_error() -> None:
    from hpvm.backends.cpu.loop_errors import ChunkCompileError

    @numba.njit(nogil=True)
    def broken(c, pack):  # type: ignore[no-untyped-def]
        (a,) = pack
        a[c] = "text"  # a string into an int64 array

    @numba.njit(nogil=True)
    def run(a):  # type: ignore[no-untyped-def]
        parallel_for(broken, 2, a)

    with pytest.raises(ChunkCompileError) as info:
        run(np.zeros(2, np.int64))
    assert "broken" in str(info.value) or "setitem" in str(info.value)


def _meminfo_of():  # type: ignore[no-untyped-def]
    """An intrinsic: an array's meminfo pointer as an integer (0: the array is borrowed)."""
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def meminfo_of(typingctx, array):  # type: ignore[no-untyped-def]
        def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
            value = context.make_array(sig.args[0])(context, builder, value=args[0])
            return builder.ptrtoint(value.meminfo, context.get_value_type(types.int64))

        return types.int64(array), codegen

    return meminfo_of


meminfo_of = _meminfo_of()


@numba.njit(nogil=True)
def _owners(c, pack):  # type: ignore[no-untyped-def]
    a, (b, seen) = pack
    seen[c, 0] = meminfo_of(a)
    seen[c, 1] = meminfo_of(b)


@numba.njit(nogil=True)
def _run_owners(count, a, b, seen):  # type: ignore[no-untyped-def]
    parallel_for(_owners, count, a, (b, seen))
    return meminfo_of(a)


@pytest.mark.parametrize("count", [1, 2, 5])
def test_the_chunks_borrow_the_callers_arrays(count: int) -> None:
    """No reference counting in the chunks (one counter shared by every thread): each
    packed array, nested tuples too, arrives without its meminfo, as a gufunc's do; the
    caller's own arrays keep theirs."""
    a, b = np.zeros(3), np.zeros(4)
    seen = np.full((count, 2), -1, np.int64)
    assert _run_owners(count, a, b, seen) != 0
    assert (seen == 0).all(), seen


@numba.njit(nogil=True)
def _scaled(c, pack):  # type: ignore[no-untyped-def]
    runs, scale = pack
    runs[c] = scale * c


@numba.njit(nogil=True)
def _run_constant(count, runs):  # type: ignore[no-untyped-def]
    scale = 7  # a constant of the caller (a replication size written as a number)
    parallel_for(_scaled, count, runs, scale)


@pytest.mark.parametrize("count", [1, 3])
def test_a_constant_local_reaches_the_task_as_its_number(count: int) -> None:
    """The locals are typed literal first: the task is compiled with ``Literal[int](7)``,
    so LLVM sees the number in the task and in the chunk inlined there (a loop bounded by a
    constant replication size unrolls, as it did in a ``prange`` gufunc), and the value is
    still the one the caller had."""
    from numba.core import types

    runs = np.zeros(count, np.int64)
    _run_constant(count, runs)
    np.testing.assert_array_equal(runs, 7 * np.arange(count))
    (signature,) = _scaled.signatures
    packed = signature[1].types
    assert isinstance(packed[1], types.IntegerLiteral) and packed[1].literal_value == 7, signature
    assert isinstance(packed[0], types.Array)
