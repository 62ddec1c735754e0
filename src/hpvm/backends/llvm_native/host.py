"""What LLVM leaves get from the host: ``llvm.hpvm.malloc``'s memory, and slot packing.

``malloc`` in an LLVM leaf calls ``__hpvm_host_malloc`` (a ctypes callback registered in
LLVM's symbol table, so both Numba's JIT and ours resolve it): the host allocates a zeroed
NumPy array and keeps it while any launch that runs LLVM leaves is running (``launch``); when
the last one ends, buffers that nothing else holds die with it. That is "memory from the
host, per launch": a buffer lives at least as long as the launch that allocated it, and one
that leaves the launch (a root output) stays valid, since the output holds its array
(``adopt``).

The symbol is a small native allocator (``_ALLOCATOR``): it hands out 64-byte aligned
pieces of a *chunk* (1 MiB, or the request when larger), and only calls back into Python
(``HostHeap.allocate``, which takes the GIL) for a new chunk. One callback per allocation
made every parent instance of a Parboil-style graph (an allocation node per work group)
take the GIL in turn, which serialized the parallel loop over groups. A buffer that leaves
a launch keeps its whole chunk alive.

Each thread has a heap of its own (``THREAD_HEAPS`` of them, found through a pthread key;
later threads share one under a spin lock), so that graph code can free what a parent
instance allocated when it returns (``HOST_ENTER``/``HOST_LEAVE``, the thread's heap found
once for both; called by the ``cpu`` back end where ``MallocFlow`` shows nothing carries the
buffers out; ``HOST_MARK``/``HOST_RELEASE`` look it up each): the next parent
instance on that thread gets the same memory. Why: the block reduction's 65 536 blocks each
took 256 fresh bytes, 16 MiB of new pages a launch, and the page faults were a quarter of
its time. A thread's piece is zero-filled when handed out (it may have been used before);
a release only moves back within the thread's current chunk (memory of an earlier chunk
stays until the launch ends), and a mark taken on an empty heap (0) releases back to the
start of whatever chunk the thread has by then.

**Chunks outlive the launch when nothing holds them** (``HostHeap.launch``). When the last
launch ends, a thread's current chunk (unless bigger than ``CHUNK``) is kept for the next
launch, emptied, if that thread allocated from its heap during the launch (a slot's ``USED`` word; a thread that has died
allocates nothing more, so its chunk goes at the next launch's end) and no array but the heap's
own refers to it (a root output that views the chunk holds it: ``adopt``). Every other chunk
dies, as before. Why: a fresh 1 MiB chunk per thread per launch, asked for through a Python
callback that takes the GIL and zero-filled by NumPy, was 0.1 ms of every launch of the
HPVM-C block reduction (about 0.2 ms in all at 512 floats, 16 KiB chunks: 0.09 ms).
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from ...ir.types import ArrayType, ScalarType
from .native import HOST_MALLOC

#: ``i64(i64 address)``: ``HostHeap.room`` for compiled code (a pointer-only leaf output).
HOST_ROOM = "__hpvm_host_room"


class HostHeap:
    """The buffers ``llvm.hpvm.malloc`` handed out, by address, until launches end."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._buffers: dict[int, np.ndarray] = {}
        self._native: tuple[ctypes.c_int64, ctypes.c_int64, np.ndarray] | None = None  # (bind_native)

    def bind_native(self, cursor: int, end: int, heaps: int, nbytes: int) -> None:
        """The native allocator's state, reset when the chunks die: the addresses of the
        shared heap's cursor and end, and of the threads' heaps (``nbytes`` in all)."""
        slots = np.ctypeslib.as_array((ctypes.c_int64 * (nbytes // 8)).from_address(heaps)).reshape(-1, 8)
        self._native = (ctypes.c_int64.from_address(cursor), ctypes.c_int64.from_address(end), slots)

    def allocate(self, nbytes: int) -> int:
        buf = np.zeros(max(int(nbytes), 1), dtype=np.uint8)
        address = buf.ctypes.data
        with self._lock:
            self._buffers[address] = buf
        return address

    @contextmanager
    def launch(self) -> Iterator[None]:
        """One launch running: buffers allocated meanwhile are released when no launch runs."""
        with self._lock:
            self._active += 1
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1
                if self._active == 0:
                    self._reset()

    def _reset(self) -> None:
        """After the last launch (no leaf runs; the lock held): keep each thread's current
        chunk, emptied, where the thread allocated during the launch, the chunk is no bigger
        than ``CHUNK`` and nothing but the heap refers to its array; let every other chunk go."""
        buffers, self._buffers = self._buffers, {}
        if self._native is None:
            return
        cursor, end, slots = self._native
        cursor.value = end.value = 0  # the shared heap starts a fresh chunk
        starts = {(a + 63) & ~63: a for a in buffers}  # a chunk's aligned start -> its array's
        for i in np.flatnonzero(slots[:, BASE]).tolist():
            _, chunk_end, base, used = slots[i, :4].tolist()
            slots[i] = 0
            address = starts.get(base)
            kept = used and address is not None and chunk_end - base <= CHUNK  # (not a big one)
            buf = buffers.pop(address) if kept else None
            # Two references: ``buf`` and getrefcount's argument. More: something (a root
            # output, adopted) still views the chunk, and it must not be handed out again.
            if buf is not None and sys.getrefcount(buf) == 2:
                slots[i, CURSOR], slots[i, END], slots[i, BASE] = base, chunk_end, base
                self._buffers[address] = buf

    def owner(self, address: int) -> np.ndarray | None:
        """The heap buffer holding ``address``, if any."""
        with self._lock:
            for start, buf in self._buffers.items():
                if start <= address < start + buf.nbytes:
                    return buf
        return None

    def room(self, address: int) -> int:
        """How many bytes the heap holds from ``address`` to the end of its chunk (-1: none).
        A leaf's pointer-only output into ``malloc``'d memory extends that far: the native
        allocator keeps no size per allocation, only its chunks."""
        buf = self.owner(address)
        return -1 if buf is None else buf.ctypes.data + buf.nbytes - address

    def adopt(self, value: Any) -> Any:
        """``value`` (a root output) made to own its memory when it views a heap buffer: the
        same bytes, as a view of the heap's array, so the buffer outlives the launch."""
        if not isinstance(value, np.ndarray) or value.flags.owndata:
            return value
        buf = self.owner(value.ctypes.data)
        if buf is None or value.nbytes == 0:
            return value
        offset = value.ctypes.data - buf.ctypes.data
        return buf[offset : offset + value.nbytes].view(value.dtype).reshape(value.shape)


HEAP = HostHeap()
_MALLOC_TYPE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int64)
_ROOM_TYPE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)
_CALLBACK: Any = None
_ROOM: Any = None
_ENGINE: Any = None
_SYMBOL_LOCK = threading.Lock()
CHUNK = 1 << 20

#: Threads with a heap of their own (more share the locked one).
THREAD_HEAPS = 256
#: The words of a thread's heap slot (8 a slot): the cursor, the current chunk's end and start,
#: and whether the thread allocated since the last launch ended (``HostHeap.launch``).
CURSOR, END, BASE, USED = range(4)
#: ``i64()`` and ``void(i64)``: a thread's heap mark, and the release back to it.
HOST_MARK, HOST_RELEASE = "__hpvm_host_mark", "__hpvm_host_release"
#: ``{ptr, i64}()`` and ``void(ptr, i64)``: the same with the thread's heap found once: the
#: mark with the heap it is in (null: the shared one, never released), and the release back
#: to it in that heap. Graph code calls these around a parent instance (``numba_call``), so
#: that a block of the block reduction looks its heap up twice (here and in ``malloc``)
#: instead of three times.
HOST_ENTER, HOST_LEAVE = "__hpvm_host_enter", "__hpvm_host_leave"

_ALLOCATOR = f"""
@__hpvm_heap_cursor = global i64 0, align 64
@__hpvm_heap_end = global i64 0, align 64
@__hpvm_heap_lock = global i32 0, align 64
@__hpvm_heap_key = global i32 0, align 64  ; the pthread key + 1 (0: no thread heaps)
@__hpvm_heap_next = global i64 0, align 64
@__hpvm_heaps = global [{THREAD_HEAPS} x [8 x i64]] zeroinitializer, align 64
declare ptr @__hpvm_host_chunk(i64)
declare i32 @sched_yield()
declare ptr @pthread_getspecific(i32)
declare i32 @pthread_setspecific(i32, ptr)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

define internal ptr @__hpvm_heap_mine() {{
entry:
  %key1 = load i32, ptr @__hpvm_heap_key, align 4
  %off = icmp eq i32 %key1, 0
  br i1 %off, label %none, label %look
look:
  %key = sub i32 %key1, 1
  %p = call ptr @pthread_getspecific(i32 %key)
  %has = icmp ne ptr %p, null
  br i1 %has, label %done, label %claim
claim:
  %i = atomicrmw add ptr @__hpvm_heap_next, i64 1 monotonic
  %room = icmp ult i64 %i, {THREAD_HEAPS}
  br i1 %room, label %take, label %none
take:
  %h = getelementptr [8 x i64], ptr @__hpvm_heaps, i64 %i
  %r = call i32 @pthread_setspecific(i32 %key, ptr %h)
  br label %done
none:
  ret ptr null
done:
  %mine = phi ptr [ %p, %look ], [ %h, %take ]
  ret ptr %mine
}}

define ptr @__hpvm_host_malloc_native(i64 %n) {{
entry:
  %pos = icmp sgt i64 %n, 0
  %n1 = select i1 %pos, i64 %n, i64 1
  %r = add i64 %n1, 63
  %sz = and i64 %r, -64
  %h = call ptr @__hpvm_heap_mine()
  %shared = icmp eq ptr %h, null
  br i1 %shared, label %lock, label %own
own:
  %oc = load i64, ptr %h, align 8
  %oep = getelementptr i64, ptr %h, i64 1
  %oe = load i64, ptr %oep, align 8
  %oneed = add i64 %oc, %sz
  %oroom = icmp ule i64 %oneed, %oe
  %ovalid = icmp ne i64 %oc, 0
  %ofits = and i1 %oroom, %ovalid
  br i1 %ofits, label %obump, label %orefill
obump:
  store i64 %oneed, ptr %h, align 8
  %oup = getelementptr i64, ptr %h, i64 3
  store i64 1, ptr %oup, align 8
  %op = inttoptr i64 %oc to ptr
  call void @llvm.memset.p0.i64(ptr align 64 %op, i8 0, i64 %n1, i1 false)
  ret ptr %op
orefill:
  %obig = icmp ugt i64 %sz, {CHUNK}
  %ocsz = select i1 %obig, i64 %sz, i64 {CHUNK}
  %oask = add i64 %ocsz, 64
  %ochunk = call ptr @__hpvm_host_chunk(i64 %oask)
  %onone = icmp eq ptr %ochunk, null
  br i1 %onone, label %ofail, label %oaligned
ofail:
  ret ptr null
oaligned:
  %oci = ptrtoint ptr %ochunk to i64
  %ocu = add i64 %oci, 63
  %oca = and i64 %ocu, -64
  %oce = add i64 %oca, %ocsz
  %onext = add i64 %oca, %sz
  store i64 %onext, ptr %h, align 8
  store i64 %oce, ptr %oep, align 8
  %obp = getelementptr i64, ptr %h, i64 2
  store i64 %oca, ptr %obp, align 8
  %oup2 = getelementptr i64, ptr %h, i64 3
  store i64 1, ptr %oup2, align 8
  %ofresh = inttoptr i64 %oca to ptr
  ret ptr %ofresh
lock:
  %got = cmpxchg ptr @__hpvm_heap_lock, i32 0, i32 1 acquire monotonic
  %ok = extractvalue {{ i32, i1 }} %got, 1
  br i1 %ok, label %locked, label %spin
spin:
  %y = call i32 @sched_yield()
  br label %lock
locked:
  %c = load i64, ptr @__hpvm_heap_cursor, align 8
  %e = load i64, ptr @__hpvm_heap_end, align 8
  %need = add i64 %c, %sz
  %room = icmp ule i64 %need, %e
  %valid = icmp ne i64 %c, 0
  %fits = and i1 %room, %valid
  br i1 %fits, label %bump, label %refill
refill:
  %big = icmp ugt i64 %sz, {CHUNK}
  %csz = select i1 %big, i64 %sz, i64 {CHUNK}
  %ask = add i64 %csz, 64
  %chunk = call ptr @__hpvm_host_chunk(i64 %ask)
  %none = icmp eq ptr %chunk, null
  br i1 %none, label %fail, label %aligned
fail:
  store atomic i32 0, ptr @__hpvm_heap_lock release, align 4
  ret ptr null
aligned:
  %ci = ptrtoint ptr %chunk to i64
  %cu = add i64 %ci, 63
  %ca = and i64 %cu, -64
  %ce = add i64 %ca, %csz
  br label %bump
bump:
  %base = phi i64 [ %c, %locked ], [ %ca, %aligned ]
  %lim = phi i64 [ %e, %locked ], [ %ce, %aligned ]
  %next = add i64 %base, %sz
  store i64 %next, ptr @__hpvm_heap_cursor, align 8
  store i64 %lim, ptr @__hpvm_heap_end, align 8
  store atomic i32 0, ptr @__hpvm_heap_lock release, align 4
  %p = inttoptr i64 %base to ptr
  ret ptr %p
}}

define {{ ptr, i64 }} @{HOST_ENTER}() {{
entry:
  %h = call ptr @__hpvm_heap_mine()
  %shared = icmp eq ptr %h, null
  br i1 %shared, label %none, label %own
none:
  ret {{ ptr, i64 }} zeroinitializer
own:
  %c = load i64, ptr %h, align 8
  %r = insertvalue {{ ptr, i64 }} undef, ptr %h, 0
  %r1 = insertvalue {{ ptr, i64 }} %r, i64 %c, 1
  ret {{ ptr, i64 }} %r1
}}

define void @{HOST_LEAVE}(ptr %h, i64 %mark) {{
entry:
  %shared = icmp eq ptr %h, null
  br i1 %shared, label %done, label %own
own:
  %c = load i64, ptr %h, align 8
  %bp = getelementptr i64, ptr %h, i64 2
  %b = load i64, ptr %bp, align 8
  %empty = icmp eq i64 %mark, 0
  %to = select i1 %empty, i64 %b, i64 %mark
  %above = icmp uge i64 %to, %b
  %below = icmp ule i64 %to, %c
  %same = and i1 %above, %below
  %some = icmp ne i64 %b, 0
  %ok = and i1 %same, %some
  br i1 %ok, label %pop, label %done
pop:
  store i64 %to, ptr %h, align 8
  br label %done
done:
  ret void
}}

define i64 @{HOST_MARK}() {{
entry:
  %hc = call {{ ptr, i64 }} @{HOST_ENTER}()
  %c = extractvalue {{ ptr, i64 }} %hc, 1
  ret i64 %c
}}

define void @{HOST_RELEASE}(i64 %mark) {{
entry:
  %h = call ptr @__hpvm_heap_mine()
  call void @{HOST_LEAVE}(ptr %h, i64 %mark)
  ret void
}}
"""


def register_host_symbols() -> None:
    """Make ``__hpvm_host_malloc`` resolvable by every LLVM JIT in the process (once): the
    native allocator, whose chunks come from ``HEAP.allocate``; and ``__hpvm_host_room``
    (``HEAP.room``)."""
    global _CALLBACK, _ENGINE, _ROOM
    with _SYMBOL_LOCK:
        if _CALLBACK is not None:
            return
        import llvmlite.binding as llvm

        from .native import target_machine

        callback = _MALLOC_TYPE(HEAP.allocate)
        llvm.add_symbol("__hpvm_host_chunk", ctypes.cast(callback, ctypes.c_void_p).value)
        module = llvm.parse_assembly(_ALLOCATOR)
        module.verify()
        engine = llvm.create_mcjit_compiler(module, target_machine())
        engine.finalize_object()
        key = ctypes.c_uint(0)  # the pthread key under which each thread finds its heap
        if ctypes.CDLL(None).pthread_key_create(ctypes.byref(key), None) == 0:  # (else all share one)
            ctypes.c_uint32.from_address(engine.get_global_value_address("__hpvm_heap_key")).value = (
                key.value + 1
            )
        HEAP.bind_native(
            engine.get_global_value_address("__hpvm_heap_cursor"),
            engine.get_global_value_address("__hpvm_heap_end"),
            engine.get_global_value_address("__hpvm_heaps"),
            THREAD_HEAPS * 64,
        )
        llvm.add_symbol(HOST_MALLOC, engine.get_function_address("__hpvm_host_malloc_native"))
        for name in (HOST_MARK, HOST_RELEASE, HOST_ENTER, HOST_LEAVE):
            llvm.add_symbol(name, engine.get_function_address(name))
        room = _ROOM_TYPE(HEAP.room)
        llvm.add_symbol(HOST_ROOM, ctypes.cast(room, ctypes.c_void_p).value)
        _CALLBACK, _ENGINE, _ROOM = callback, engine, room


def _dtype(llvm_type: str, ptype: Any) -> np.dtype:
    if llvm_type == "ptr" or isinstance(ptype, ArrayType):
        return np.dtype(np.int64)
    assert isinstance(ptype, ScalarType)
    return np.dtype(np.bool_) if ptype.name == "bool" else ptype.dtype


def pack(params: Sequence[Any], values: Sequence[Any]) -> np.ndarray:
    """The argument slots of one call: each port's ABI values (docs/llvm.md) in 8-byte slots
    (an array: its address, byte size and, for rank 2 or more, extents; a pointer-only array:
    its address)."""
    slots: list[Any] = []
    for ptype, value in zip(params, values):
        if isinstance(ptype, ArrayType):
            arr = value
            if not arr.flags.c_contiguous:
                raise ValueError(
                    "an LLVM leaf takes C-contiguous arrays, and this one is a strided view; pass np.ascontiguousarray(...)"
                )
            slots.append((np.int64, arr.ctypes.data))
            if ptype.sized:
                slots.append((np.int64, arr.nbytes))
            if ptype.rank > 1:
                slots += [(np.int64, e) for e in arr.shape]
        else:
            slots.append((_dtype("", ptype), value))
    out = np.zeros(max(1, len(slots)), dtype=np.uint64)
    for k, (dtype, value) in enumerate(slots):
        out[k : k + 1].view(dtype)[0] = value
    return out


def unpack(out_types: Sequence[Any], slots: np.ndarray, arrays: Sequence[np.ndarray]) -> tuple[Any, ...]:
    """The outputs from their slots. An array output is the input array at that address
    (the same object, as a Python leaf returns it) or a heap buffer; a pointer-only output,
    from its address alone, the memory from there to the end of the input or heap chunk
    holding it; anything else is a ``ValueError`` the caller reports with the leaf."""
    values: list[Any] = []
    k = 0
    for t in out_types:
        if isinstance(t, ArrayType) and not t.sized:
            values.append(_region_at(t, int(slots[k : k + 1].view(np.int64)[0]), arrays))
            k += 1
        elif isinstance(t, ArrayType):
            address, nbytes = (
                int(slots[k : k + 1].view(np.int64)[0]),
                int(slots[k + 1 : k + 2].view(np.int64)[0]),
            )
            shape: tuple[int, ...] = (nbytes // t.dtype.itemsize,)
            if t.rank > 1:
                shape = tuple(int(v) for v in slots[k + 2 : k + 2 + t.rank].view(np.int64))
            k += 2 + (t.rank if t.rank > 1 else 0)
            values.append(_array_at(t, address, shape, arrays))
        else:
            values.append(slots[k : k + 1].view(_dtype("", t))[0])
            k += 1
    return tuple(values)


def _region_at(t: ArrayType, address: int, arrays: Sequence[np.ndarray]) -> np.ndarray:
    """A pointer-only output: the input at ``address`` itself, else the memory from
    ``address`` to the end of the input or heap chunk holding it."""
    for arr in arrays:
        if arr.ctypes.data == address and arr.dtype == t.dtype and arr.ndim == 1:
            return arr
    owners = [a for a in arrays if a.flags.c_contiguous] + [b for b in [HEAP.owner(address)] if b is not None]
    for owner in owners:
        start = owner.ctypes.data
        if start <= address < start + owner.nbytes:
            flat = owner.reshape(-1).view(np.uint8)[address - start :]
            return flat[: flat.nbytes // t.dtype.itemsize * t.dtype.itemsize].view(t.dtype)
    raise ValueError(
        f"returned a pointer {address:#x}, which is neither in one of its array inputs nor memory "
        "from llvm.hpvm.malloc"
    )


def _array_at(t: ArrayType, address: int, shape: tuple[int, ...], arrays: Sequence[np.ndarray]) -> np.ndarray:
    for arr in arrays:
        if arr.ctypes.data == address and arr.dtype == t.dtype and arr.shape == shape:
            return arr
    count = int(np.prod(shape, dtype=np.int64))
    nbytes = count * t.dtype.itemsize
    owners = [a for a in arrays if a.flags.c_contiguous] + [b for b in [HEAP.owner(address)] if b is not None]
    for owner in owners:  # a part of an input (a row of a matrix) or of a malloc'd buffer
        start = owner.ctypes.data
        if start <= address and address + nbytes <= start + owner.nbytes:
            flat = owner.reshape(-1).view(np.uint8)
            return flat[address - start : address - start + nbytes].view(t.dtype).reshape(shape)
    raise ValueError(
        f"returned an array at address {address:#x} ({nbytes} bytes), which is neither in one of its "
        "array inputs nor memory from llvm.hpvm.malloc"
    )
