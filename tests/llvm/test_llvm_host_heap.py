"""``llvm.hpvm.malloc``'s native allocator (``backends/llvm_native/host.py``): pieces of
zeroed chunks, 64-byte aligned, never overlapping, from many threads at once, held by the
host heap until the last launch ends; each thread's heap released back to a mark (what graph
code does around a parent instance) hands the same pieces out again, zeroed; and a thread's
current chunk is kept for the next launch unless something still views it."""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from hpvm.backends.llvm_native.host import (
    CHUNK,
    HEAP,
    HOST_ENTER,
    HOST_LEAVE,
    HOST_MARK,
    HOST_RELEASE,
    register_host_symbols,
)
from hpvm.backends.llvm_native.native import HOST_MALLOC


def _malloc() -> ctypes._CFuncPtr:  # type: ignore[name-defined]
    import llvmlite.binding as llvm

    register_host_symbols()
    return ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int64)(llvm.address_of_symbol(HOST_MALLOC))


def test_pieces_are_aligned_zeroed_disjoint_and_live_until_the_launch_ends() -> None:
    malloc = _malloc()
    sizes = [1, 7, 64, 100, 256, 4000, CHUNK + 5, 3, CHUNK // 2, 0] * 40
    got: list[list[tuple[int, int]]] = [[] for _ in range(4)]

    def work(k: int) -> None:
        for n in sizes:
            address = malloc(n)
            assert address
            got[k].append((address, n))

    with HEAP.launch():
        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        pieces = sorted(p for ps in got for p in ps)
        for (a, n), (b, _) in zip(pieces, pieces[1:]):
            assert a + max(n, 1) <= b, "two allocations overlap"
        for address, n in pieces:
            assert address % 64 == 0
            owner = HEAP.owner(address)
            assert owner is not None and HEAP.owner(address + max(n, 1) - 1) is owner
            view = np.ctypeslib.as_array((ctypes.c_uint8 * max(n, 1)).from_address(address))
            assert not view.any(), "an allocation is not zeroed"
            view[:] = 0xAB  # every piece writable, none seen by another (checked above)
    # When the last launch ended, each thread's current chunk (1 MiB) was kept for the next
    # launch; its earlier ones and the big ones died.
    kept = {id(HEAP.owner(a)): HEAP.owner(a) for a, _ in pieces if HEAP.owner(a) is not None}
    assert 1 <= len(kept) <= 4 and all(b.nbytes == CHUNK + 64 for b in kept.values())
    with HEAP.launch():  # this thread starts a chunk (it had none); the four threads are gone
        address = malloc(8)
        assert HEAP.owner(address) is not None
        assert ctypes.c_int64.from_address(address).value == 0
    # so theirs died with this launch: a thread that allocated nothing keeps no chunk.
    # (This thread's new chunk is none of theirs, but it may lie where memory that died at
    # the first launch's end lay — a big piece's, an earlier chunk's: the allocator reuses
    # addresses, so an old piece's address may now be inside it.)
    mine = HEAP.owner(address)
    assert all(mine is not chunk for chunk in kept.values())
    assert all(HEAP.owner(a) is None or HEAP.owner(a) is mine for a, _ in pieces)


def test_a_thread_s_chunk_is_handed_out_again_zeroed_at_the_next_launch() -> None:
    malloc = _malloc()
    with HEAP.launch():
        first = malloc(100)
        ctypes.memset(first, 0xAB, 100)
    with HEAP.launch():
        again = malloc(100)
        assert again == first, "the thread's chunk was not kept"
        assert not np.ctypeslib.as_array((ctypes.c_uint8 * 100).from_address(again)).any()


def test_a_chunk_a_launch_s_output_views_is_not_handed_out_again() -> None:
    malloc = _malloc()
    with HEAP.launch():
        first = malloc(100)
        ctypes.memset(first, 0xAB, 100)
        # a root output viewing the piece, as the cpu back end returns one
        output = HEAP.adopt(np.ctypeslib.as_array((ctypes.c_uint8 * 100).from_address(first)))
    with HEAP.launch():
        other = malloc(100)
        ctypes.memset(other, 0xCD, 100)
    assert not first <= other < first + 100
    assert (output == 0xAB).all(), "the output's memory was handed out again"
    assert HEAP.owner(first) is None  # the output holds its chunk now, not the heap


def _mark_release() -> tuple[ctypes._CFuncPtr, ctypes._CFuncPtr]:  # type: ignore[name-defined]
    import llvmlite.binding as llvm

    register_host_symbols()
    mark = ctypes.CFUNCTYPE(ctypes.c_int64)(llvm.address_of_symbol(HOST_MARK))
    release = ctypes.CFUNCTYPE(None, ctypes.c_int64)(llvm.address_of_symbol(HOST_RELEASE))
    return mark, release


def test_a_release_hands_the_thread_s_pieces_out_again_zeroed() -> None:
    malloc = _malloc()
    mark, release = _mark_release()
    with HEAP.launch():
        at = mark()
        first = malloc(100)
        ctypes.memset(first, 0xAB, 100)
        second = malloc(40)
        release(at)
        again = malloc(100)
        assert again == first, "the released piece is not handed out again"
        assert not np.ctypeslib.as_array((ctypes.c_uint8 * 100).from_address(again)).any()
        assert malloc(40) == second  # (the same order, the same pieces)
        inner = mark()
        malloc(8)
        release(inner)  # nested: back to after `second`, not before `first`
        assert malloc(8) == inner
    got: list[int] = []

    def fresh_thread() -> None:  # (a new thread: its heap is empty)
        at = mark()
        first = malloc(100)
        release(at)
        got.extend([at, first, malloc(100)])

    with HEAP.launch():  # a mark taken on an empty heap (0) releases its whole chunk
        thread = threading.Thread(target=fresh_thread)
        thread.start()
        thread.join()
    at, first, again = got
    assert at == 0 and again == first


def test_a_release_past_a_new_chunk_keeps_what_was_handed_out() -> None:
    malloc = _malloc()
    mark, release = _mark_release()
    with HEAP.launch():
        kept = malloc(8)
        at = mark()
        assert at != 0
        big = malloc(CHUNK + 1)  # a chunk of its own: the thread's heap moved on
        release(at)  # to the old chunk: it cannot go back there, and keeps everything
        assert malloc(8) not in (big, kept)
        assert HEAP.owner(big) is not None


def test_threads_have_heaps_of_their_own() -> None:
    malloc = _malloc()
    mark, release = _mark_release()
    got: dict[int, tuple[int, int]] = {}

    def work(k: int) -> None:
        at = mark()
        a = malloc(64)
        release(at)
        got[k] = (a, malloc(64))

    with HEAP.launch():
        threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert all(a == b for a, b in got.values())  # each thread's release reused its own piece
    assert len({a for a, _ in got.values()}) == 3  # and no two threads shared one


class _Mark(ctypes.Structure):
    _fields_ = [("heap", ctypes.c_void_p), ("position", ctypes.c_int64)]


def test_enter_and_leave_release_in_the_heap_found_once() -> None:
    """What graph code calls around a parent instance: the heap and its mark at once, and
    the release in that heap (no second lookup), as mark and release do."""
    import llvmlite.binding as llvm

    malloc = _malloc()
    mark, _ = _mark_release()
    enter = ctypes.CFUNCTYPE(_Mark)(llvm.address_of_symbol(HOST_ENTER))
    leave = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(llvm.address_of_symbol(HOST_LEAVE))
    with HEAP.launch():
        malloc(8)  # (the thread's heap has a chunk)
        at = enter()
        assert at.heap and at.position == mark()
        first = malloc(100)
        ctypes.memset(first, 0xAB, 100)
        leave(at.heap, at.position)
        again = malloc(100)
        assert again == first, "the released piece is not handed out again"
        assert not np.ctypeslib.as_array((ctypes.c_uint8 * 100).from_address(again)).any()
        leave(None, at.position)  # the shared heap (null): nothing is released
        assert malloc(8) == again + 128
    got: list[int] = []

    def other_thread() -> None:  # its own heap, not the first thread's
        here = enter()
        got.extend([here.heap or 0, here.position])

    with HEAP.launch():
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert got[0] not in (0, at.heap) and got[1] == 0
