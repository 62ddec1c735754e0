"""``llvm.hpvm.malloc``'s native allocator (``backends/llvm_native/host.py``): pieces of
zeroed chunks, 64-byte aligned, never overlapping, from many threads at once, held by the
host heap until the last launch ends; each thread's heap released back to a mark (what graph
code does around a parent instance) hands the same pieces out again, zeroed."""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from hpvm.backends.llvm_native.host import CHUNK, HEAP, HOST_MARK, HOST_RELEASE, register_host_symbols
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
    assert HEAP.owner(pieces[0][0]) is None  # the chunks died with the last launch
    with HEAP.launch():  # and the allocator starts a fresh chunk
        address = malloc(8)
        assert HEAP.owner(address) is not None
        assert ctypes.c_int64.from_address(address).value == 0


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
    with HEAP.launch():  # a mark taken on an empty heap (0) releases its whole chunk
        at = mark()
        assert at == 0
        first = malloc(100)
        release(at)
        assert malloc(100) == first


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
