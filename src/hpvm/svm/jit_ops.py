"""The stream and block operations inside compiled kernels: ``svm.stream_pop`` and the
others, overloaded for Numba so that a work function compiled with ``nogil=True`` runs them
as ring-buffer operations on the memories' bytes, without the GIL and without the
runtime's lock.

A stream is seen by compiled code as a ``CStream`` tuple: the ring's typed data view, its
counters (``Ring.state``), its tag ring, the kernel's control word and a key. The ring is
single-producer single-consumer (restriction A7: one reader, one writer): each side keeps
a cached copy of the other side's counter in its own cache line and reloads it (acquire)
only when the cache says the ring is empty (reader) or full (writer), so a busy stream's
operations touch no line the other core writes. Data (and tags) are written before the
counter that publishes them (release).

Blocking: an operation that must wait re-reads the counters ``SPINS`` times, then calls
back into Python (``jit_callbacks.py``, with ``numba.objmode``) where it waits on the
runtime's condition like any Python kernel — registered as a waiter, so the runtime's
"nothing can ever satisfy this" detection, pause, end and ``cleanup`` all work unchanged.
Every pop, push, block access and wait also reads the kernel's control word (set by
``kernel_pause``, ``kernel_end`` and ``cleanup``) and calls back when it is set. A Python side that waits on a ring says so in its ``WAITERS`` word;
a compiled writer or reader that sees it set wakes it (and waiting is also bounded by the
runtime's short poll while compiled kernels exist, so a wake-up lost between the two
never hangs anything). Errors found in compiled code (an index out of bounds) are built
in Python with the kernel's and stream's names, stashed, and raised by the runner.

How it is compiled: each operation below is a Numba function with ``forceinline=True``
(LLVM's ``alwaysinline``), compiled once per process and element type and inlined by LLVM
into every work function; the slow paths are called out of line (``jit_cold.cold``). Numba's
own inlining (``inline="always"``) gave the same machine code but copied and re-typed the
operations' IR at every call site, nested six deep: the FIR pipeline's three kernels took
19-52 s to compile instead of about 8 s. Without any forced inlining LLVM declines to
inline the operations (they are over its size threshold): the FIR pipeline ran at 1.9 M
elements/s instead of 8-14 (measured on a loaded machine).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numba
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload

from . import blocks, elements, streams
from .jit_atomics import element_load, element_store, load, load_acquire, load_relaxed, store, store_release
from .jit_callbacks import (
    FAIL_BLOCK_READ,
    FAIL_BLOCK_WRITE,
    FAIL_PEEK,
    FAIL_UNORDERED,
    FLOAT,
    READ,
    SIGNED,
    UNSIGNED,
    WRITE,
    _call_checkpoint,
    _call_fail,
    _call_misfit,
    _call_notify,
    _call_use,
    _call_wait,
)
from .jit_cold import cold
from .jit_hints import likely, unlikely
from .jit_sleep import sleep_us
from .ring import (
    NOTIFIED,
    POPPED,
    PUSHED,
    R_PUSHED,
    R_TAGS_PUSHED,
    TAGS_POPPED,
    TAGS_PUSHED,
    W_POPPED,
    WAITERS,
)

# Addresses (ints) of the ring's data, counters, tags and the kernel's control word; ``proto``
# is a zero of the element type (it gives compiled code the type).
# ``seen``: the address of the kernel's two words for this stream, set once its first pop /
# peek and push have taken the reader / writer role in Python (restriction A7).
CStream = namedtuple(
    "CStream", ["data", "state", "tags", "ctl", "seen", "capacity", "mask", "unordered", "key", "proto"]
)
CBlock = namedtuple("CBlock", ["data", "capacity", "ctl", "key", "proto"])

SPINS = 2000  # counter re-reads before a stalled operation waits in Python
BATCH_MIN = 8192  # rings of at least this many elements wait for half a ring (batched waits)
NAP_SPINS = 200  # re-reads with a partial batch, the other side still at work, before napping
NAP_MIN, NAP_MAX = 20, 2000  # microseconds: the bounds of one nap of a batched wait
STILL = 50  # re-reads without progress after which a partial batch is taken
FAIL_PUSH = -1  # _misfit's ``what`` for a push (FAIL_BLOCK_WRITE for a block write)
_INLINE = {"nogil": True, "forceinline": True}  # the overloads' options (see the module's doc)


# -- values that do not fit an element (elements.py says what fits) ------------------------


def fits(value: Any, proto: Any) -> bool:
    """Whether ``value`` fits an element of ``proto``'s type (compiled: the overload below)."""
    return elements.fits(value, np.asarray(proto).dtype)


def _always(value, proto):  # noqa: ANN001, ANN202
    return True


def _int_range(t: types.Integer) -> tuple[int, int]:
    return (-(1 << (t.bitwidth - 1)), (1 << (t.bitwidth - 1)) - 1) if t.signed else (0, (1 << t.bitwidth) - 1)


@overload(fits, inline="always")
def _ov_fits(value, proto):  # noqa: ANN202 - Numba compares signatures
    """Specialised on the two types at compile time: no code at all where every value of
    ``value``'s type fits (a push of the stream's own type), else one or two comparisons
    with constants of ``value``'s own type (a mixed signed / unsigned comparison would go
    through float64 in Numba and lose the last bits)."""
    value = types.unliteral(value)  # a constant (``stream_push(k.out, 300)``) has a literal type
    if isinstance(value, types.Boolean) or isinstance(proto, types.Boolean):
        return _always
    if isinstance(proto, types.Integer):
        lo, hi = _int_range(proto)
        if isinstance(value, types.Integer):
            vlo, vhi = _int_range(value)
            if lo <= vlo and vhi <= hi:
                return _always
            cast = np.dtype(str(value)).type
            low = cast(max(lo, vlo))
            high = cast(min(hi, vhi))
            return lambda value, proto: value >= low and value <= high
        if isinstance(value, types.Float):
            low, high = float(lo), float(hi) + 1.0  # exact in float64: powers of two, or small
            return lambda value, proto: (value >= low or value > low - 1.0) and value < high
    if isinstance(proto, types.Float) and isinstance(value, types.Integer | types.Float):
        if proto.bitwidth >= 64 or (isinstance(value, types.Float) and value.bitwidth <= proto.bitwidth):
            return _always
        limit = float(elements.float_limit(np.dtype(str(proto))))
        return lambda value, proto: not (abs(np.float64(value)) >= limit and np.isfinite(np.float64(value)))
    return None


def _check_fit(value: Any, proto: Any, key: int, what: int) -> None:
    """Report ``value`` and unwind if it does not fit (compiled: the overload below)."""


@overload(_check_fit, inline="always")
def _ov_check_fit(value, proto, key, what):  # noqa: ANN202 - Numba compares signatures
    """Nothing at all where every value fits: not even the report is compiled then (the
    report's object-mode call-back costs about 0.5 s to compile, and most pushes are of the
    stream's own type)."""
    if _ov_fits(value, proto) is _always:
        return lambda value, proto, key, what: None

    def impl(value, proto, key, what):  # noqa: ANN202
        if unlikely(not fits(value, proto)):
            _misfit(key, value, what)

    return impl


def _misfit(key: int, value: Any, what: int) -> None:
    """Report ``value`` to Python and unwind (compiled: the overload below)."""


@overload(_misfit)
def _ov_misfit(key, value, what):  # noqa: ANN202 - Numba compares signatures
    if isinstance(value, types.Float):
        return lambda key, value, what: _misfit_cold(key, 0, np.float64(value), FLOAT, what)
    kind = SIGNED if getattr(value, "signed", True) else UNSIGNED
    return lambda key, value, what: _misfit_cold(key, np.int64(value), 0.0, kind, what)


# The slow paths, called out of line from the inlined operations (jit_cold.py).
_misfit_cold = cold(_call_misfit, 5)
_checkpoint_cold = cold(_call_checkpoint, 0)
_notify_cold = cold(_call_notify, 0)
_use_cold = cold(_call_use, 2)
_fail_cold = cold(_call_fail, 3)
_wait_cold = cold(_call_wait, 3)


@numba.njit(nogil=True, forceinline=True)
def _control(ctl: int) -> None:
    if unlikely(load_relaxed(ctl, 0) != 0):
        _checkpoint_cold()


@numba.njit(nogil=True, forceinline=False)
def _nap(missing: int, gained: int, nap: int) -> int:
    """The next nap (microseconds) of a batched wait that still misses ``missing``
    elements and gained ``gained`` during its last nap of ``nap`` µs: as long as that rate
    needs, within [NAP_MIN, NAP_MAX]."""
    if gained <= 0:
        return nap
    return max(NAP_MIN, min(NAP_MAX, nap * missing // gained))


@numba.njit(nogil=True, forceinline=False)
def _wait_readable(s: Any, need: int) -> None:
    """Until more than ``need`` elements are stored (refreshes the reader's caches).

    Batched on rings of ``BATCH_MIN`` elements or more: while the writer keeps pushing,
    wait until half the ring (beyond ``need``) is there rather than returning at the first
    element, spinning ``NAP_SPINS`` re-reads and then sleeping without the GIL
    (``jit_sleep``) for as long as the writer's observed rate needs to fill it. Why:
    returning at every element kept a fast reader in lock-step with a slower writer — it
    spun for ever, never reaching ``SPINS``, re-reading the writer's counter at every
    element (so every store of the writer missed the cache) and taking a core the writer
    needed: the FIR pipeline then cost 130-150 ns of CPU per element instead of 30. Once
    the writer stops (its count unchanged for ``STILL`` re-reads, or over a whole nap),
    whatever is there is taken at once: a reader waiting for one element of a writer that
    then waits for it is not held back."""
    popped = load(s.state, POPPED)
    want = need + 1
    if s.capacity >= BATCH_MIN:
        want = min(s.capacity, need + 1 + s.capacity // 2)
    spins = still = filling = 0
    last = -1
    nap = NAP_MIN
    while True:
        pushed = load_acquire(s.state, PUSHED)
        store(s.state, R_TAGS_PUSHED, load_acquire(s.state, TAGS_PUSHED))  # after PUSHED: covers its tags
        store(s.state, R_PUSHED, pushed)
        still = still + 1 if pushed == last else 0
        gained = pushed - last
        last = pushed
        have = pushed - popped
        if have > need and (have >= want or still >= STILL or (filling > NAP_SPINS and gained == 0)):
            return
        _control(s.ctl)
        if have > need:  # the writer is at work: let it fill the batch
            filling += 1
            if filling >= NAP_SPINS:
                if filling > NAP_SPINS:
                    nap = _nap(want - have, gained, nap)
                sleep_us(nap)
        else:
            spins += 1
            if spins >= SPINS:
                _wait_cold(s.key, need, READ)
                spins = 0


@numba.njit(nogil=True, forceinline=False)
def _wait_writable(s: Any) -> None:
    """Until there is room for one element (refreshes the writer's cache); batched as
    ``_wait_readable`` is: while the reader keeps popping, until half the ring is free."""
    pushed = load(s.state, PUSHED)
    want = 1
    if s.capacity >= BATCH_MIN:
        want = s.capacity // 2
    spins = still = filling = 0
    last = -1
    nap = NAP_MIN
    while True:
        popped = load_acquire(s.state, POPPED)
        store(s.state, W_POPPED, popped)
        still = still + 1 if popped == last else 0
        gained = popped - last
        last = popped
        room = s.capacity - (pushed - popped)
        if room > 0 and (room >= want or still >= STILL or (filling > NAP_SPINS and gained == 0)):
            return
        _control(s.ctl)
        if room > 0:  # the reader is at work: let it free the batch
            filling += 1
            if filling >= NAP_SPINS:
                if filling > NAP_SPINS:
                    nap = _nap(want - room, gained, nap)
                sleep_us(nap)
        else:
            spins += 1
            if spins >= SPINS:
                _wait_cold(s.key, 0, WRITE)
                spins = 0


_wait_readable_cold = cold(_wait_readable, 2)
_wait_writable_cold = cold(_wait_writable, 1)


@numba.njit(nogil=True, forceinline=True)
def _slot(s: Any, seq: int) -> int:
    return seq & s.mask if likely(s.mask >= 0) else seq % s.capacity


@numba.njit(nogil=True, forceinline=True)
def _wake(s: Any, writer: bool, eos: bool) -> None:
    """Wake Python-side waiters on ``s`` once half the capacity is stored (after a push)
    or free (after a pop), or at an EOS: waking them for every element would make both
    sides pay for a lock and the GIL per element. A waiter that needs less is woken by the
    runtime's poll, or when this kernel waits or finishes."""
    if unlikely(load_relaxed(s.state, WAITERS) != 0) and load_relaxed(s.state, NOTIFIED) == 0:
        stored = load_relaxed(s.state, PUSHED) - load_relaxed(s.state, POPPED)
        half = s.capacity // 2
        if eos or (stored >= half if writer else s.capacity - stored >= half):
            store(s.state, NOTIFIED, 1)  # once per wait: the waiter clears it
            _notify_cold()


@numba.njit(nogil=True, forceinline=True)
def _push(s: Any, value: Any, eos: bool) -> None:
    _control(s.ctl)
    if unlikely(load(s.seen, WRITE) == 0):
        _use_cold(s.key, WRITE)
    _check_fit(value, s.proto, s.key, FAIL_PUSH)
    pushed = load(s.state, PUSHED)
    if unlikely(pushed - load(s.state, W_POPPED) >= s.capacity):
        _wait_writable_cold(s)
    element_store(s.data, _slot(s, pushed), value, s.proto)
    if eos:
        tp = load(s.state, TAGS_PUSHED)
        store(s.tags, _slot(s, tp), pushed)
        store_release(s.state, TAGS_PUSHED, tp + 1)
    store_release(s.state, PUSHED, pushed + 1)
    _wake(s, True, eos)


@numba.njit(nogil=True, forceinline=True)
def _ready(s: Any, index: int) -> int:
    """Wait until element ``index`` is there (checking the index first); the current
    POPPED. The fast path is one unsigned comparison against the reader's cached count: a
    negative index wraps to a huge one, and the count is never above the capacity. (Peeks
    do not read the control word: the pop that follows them does, and so does every wait.)"""
    if unlikely(load(s.seen, READ) == 0):
        _use_cold(s.key, READ)
    popped = load(s.state, POPPED)
    if unlikely(np.uint64(index) >= np.uint64(load(s.state, R_PUSHED) - popped)):
        if index < 0 or index >= s.capacity:
            _fail_cold(s.key, index, FAIL_PEEK)
        _wait_readable_cold(s, index)
    return popped


def _pop(s):  # noqa: ANN001, ANN202 - an overload implementation: plain parameters
    _control(s.ctl)
    popped = _ready(s, 0)
    value = element_load(s.data, _slot(s, popped), s.proto)
    tp = load(s.state, TAGS_POPPED)
    if unlikely(tp < load(s.state, R_TAGS_PUSHED)) and load(s.tags, _slot(s, tp)) <= popped:
        store(s.state, TAGS_POPPED, tp + 1)  # published by the release store of POPPED below
    store_release(s.state, POPPED, popped + 1)
    _wake(s, False, False)
    return value


def _peek(s, n):  # noqa: ANN001, ANN202 - an overload implementation: plain parameters, as the overload's
    if unlikely(s.unordered):
        _fail_cold(s.key, n, FAIL_UNORDERED)
    popped = _ready(s, n)
    return element_load(s.data, _slot(s, popped + n), s.proto)


def _peek_eos(s, n):  # noqa: ANN001, ANN202 - an overload implementation: plain parameters
    if unlikely(s.unordered):
        _fail_cold(s.key, n, FAIL_UNORDERED)
    popped = _ready(s, n)
    seq = popped + n
    tp = load(s.state, TAGS_POPPED)
    end = load(s.state, R_TAGS_PUSHED)
    while tp < end:
        tagged = load(s.tags, _slot(s, tp))
        if tagged == seq:
            return True
        if tagged > seq:
            return False
        tp += 1
    return False


@numba.njit(nogil=True, forceinline=True)
def _block_index(b: Any, index: int, what: int) -> None:
    _control(b.ctl)
    if unlikely(index < 0 or index >= b.capacity):
        _fail_cold(b.key, index, what)


# -- the overloads -------------------------------------------------------------------------


def _is(t: types.Type, cls: type) -> bool:
    return isinstance(t, types.BaseNamedTuple) and t.instance_class is cls


def _stream_arg(s: types.Type, function: str) -> None:
    if not _is(s, CStream):
        raise TypingError(f"svm.{function} in a compiled kernel takes one of the kernel's streams, got {s}")


@overload(streams.stream_pop, jit_options=_INLINE)
def _ov_pop(s):  # noqa: ANN202 - Numba compares signatures
    _stream_arg(s, "stream_pop")
    return _pop  # compiled as the overload (forceinline): one function, not a wrapper too


@overload(streams.stream_peek, jit_options=_INLINE)
def _ov_peek(s, n):  # noqa: ANN202 - Numba compares signatures
    _stream_arg(s, "stream_peek")
    return _peek


@overload(streams.stream_peek_eos, jit_options=_INLINE)
def _ov_peek_eos(s, n):  # noqa: ANN202 - Numba compares signatures
    _stream_arg(s, "stream_peek_eos")
    return _peek_eos


@overload(streams.stream_push, jit_options=_INLINE)
def _ov_push(s, element):  # noqa: ANN202 - Numba compares signatures
    _stream_arg(s, "stream_push")
    return lambda s, element: _push(s, element, False)


@overload(streams.stream_push_with_eos, jit_options=_INLINE)
def _ov_push_eos(s, element):  # noqa: ANN202 - Numba compares signatures
    _stream_arg(s, "stream_push_with_eos")
    return lambda s, element: _push(s, element, True)


@numba.njit(nogil=True, forceinline=True)
def _room(s: Any) -> None:
    """Wait until ``s`` has room for one element."""
    _control(s.ctl)
    if unlikely(load(s.state, PUSHED) - load(s.state, W_POPPED) >= s.capacity):
        _wait_writable_cold(s)


def _multicast(eos: bool, function: str) -> Any:
    def typer(element, *streams):  # noqa: ANN202 - Numba compares signatures
        found = streams[0].types if streams and isinstance(streams[0], types.StarArgTuple) else streams
        if not found or not all(_is(t, CStream) for t in found):
            raise TypingError(
                f"svm.{function} in a compiled kernel takes one or more of the kernel's streams"
            )
        if len({t.types[-1] for t in found}) > 1:  # the element types (as the Python form checks)
            raise TypingError(f"svm.{function}: the streams have different element types")
        # As the seed's multicast: room in every stream first, then one push to each (each
        # stream has one writer: its room only grows meanwhile); unrolled by count.
        lines = ["def impl(element, *streams):"]
        lines += [f"    _room(streams[{i}])" for i in range(len(found))]
        lines += [f"    _push(streams[{i}], element, eos)" for i in range(len(found))]
        namespace: dict[str, Any] = {"_room": _room, "_push": _push, "eos": eos}
        exec("\n".join(lines), namespace)  # noqa: S102 - generated from a count, no user text
        return namespace["impl"]

    return typer


overload(streams.stream_push_multicast, jit_options=_INLINE)(_multicast(False, "stream_push_multicast"))
overload(streams.stream_push_multicast_with_eos, jit_options=_INLINE)(
    _multicast(True, "stream_push_multicast_with_eos")
)


@overload(blocks.block_read, jit_options=_INLINE)
def _ov_block_read(b, index):  # noqa: ANN202 - Numba compares signatures
    if not _is(b, CBlock):
        raise TypingError(f"svm.block_read in a compiled kernel takes one of the kernel's blocks, got {b}")

    def impl(b, index):  # noqa: ANN202
        _block_index(b, index, FAIL_BLOCK_READ)
        return element_load(b.data, index, b.proto)

    return impl


@overload(blocks.block_write, jit_options=_INLINE)
def _ov_block_write(b, index, element):  # noqa: ANN202 - Numba compares signatures
    if not _is(b, CBlock):
        raise TypingError(f"svm.block_write in a compiled kernel takes one of the kernel's blocks, got {b}")

    def impl(b, index, element):  # noqa: ANN202
        _block_index(b, index, FAIL_BLOCK_WRITE)
        _check_fit(element, b.proto, b.key, FAIL_BLOCK_WRITE)
        element_store(b.data, index, element, b.proto)

    return impl
