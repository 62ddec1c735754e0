"""``llvm.hpvm.malloc``'s native allocator (``backends/llvm_native/host.py``): pieces of
zeroed chunks, 64-byte aligned, never overlapping, from many threads at once, held by the
host heap until the last launch ends."""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from hpvm.backends.llvm_native.host import CHUNK, HEAP, register_host_symbols
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
