"""Streams: sequences of fixed-size elements in a RAM memory (the seed's circular buffer
at ``address``) or in a hardware FIFO, with the stalling push / pop / peek of the seed.

Every operation takes the runtime's lock; a stalled one waits on its condition (no
polling) and raises an ``SVMError`` if nothing can ever un-stall it. The bulk forms
(``stream_push_many`` / ``stream_pop_many``) move whole NumPy arrays with slice copies.
"""

from __future__ import annotations

import threading
from typing import Annotated, Any

import numpy as np

from . import checks, elements
from .errors import SVMError, SVMRestrictionError
from .ring import Ring
from .runtime import Context, context, current_kernel
from .where import caller_line, user_name

STREAM_UNORDERED = 0x1
STREAM_UNALIASED_RAM = 0x2
STREAM_NEVER_WRAPS = 0x4
STREAM_ONE_EOS = 0x8
_ALL_FLAGS = STREAM_UNORDERED | STREAM_UNALIASED_RAM | STREAM_NEVER_WRAPS | STREAM_ONE_EOS
STREAM_LENGTH_ALL = -1


class Stream:
    """A stream variable; give it a place with ``stream_init_ram`` / ``_with_data_ram`` /
    ``_fifo``. (``IStream``, ``OStream`` and ``IOStream`` are this class, annotated: as the
    annotation of a kernel's member they declare how the kernel uses it, restriction A7.)"""

    def __init__(self) -> None:
        self._ring: Ring | None = None
        self.name = "stream"
        self.location = ""
        self.address = 0
        self.flags = 0
        self.dtype: np.dtype | None = None
        self._signature: tuple[str, str, int] | None = None
        self._init_line = ""
        self._holds: list[Any] = []  # the executions that read or write it (roles.Hold, A7)
        self._ctx: Context | None = None  # the svm.init() it was initialised under

    @property
    def capacity(self) -> int:
        return self._ring.capacity if self._ring is not None else 0

    def __len__(self) -> int:
        """Elements stored now (an extension: the seed has no such query)."""
        return self._ring.count if self._ring is not None else 0

    def __bool__(self) -> bool:
        """A stream is a variable, never false (not even when empty): ``if k.in_:`` tests
        that a member is set, as a pointer test would in C."""
        return True

    def __repr__(self) -> str:
        if self._ring is None:
            return f"<Stream {self.name} (not initialised)>"
        return f"<Stream {self.name} on {self.location}: {self._ring.count}/{self._ring.capacity} of {self.dtype}>"


# The seed's typedefs of Stream: the same class at run time. As the annotation of a kernel's
# member they declare its role on that stream (restriction A7, roles.py).
IStream = Annotated[Stream, "IStream"]
OStream = Annotated[Stream, "OStream"]
IOStream = Annotated[Stream, "IOStream"]


def _begin_init(ctx: Context, s: Any, function: str, location: str, dtype: np.dtype, flags: int) -> None:
    if not isinstance(s, Stream):
        raise SVMError(f"{function}: expected an svm.Stream, got {type(s).__name__} (at {caller_line()})")
    if not isinstance(flags, int) or flags & ~_ALL_FLAGS:
        raise SVMError(f"{function}: flags {flags!r} are not a combination of the STREAM_* flags")
    s.name = user_name(s, s.name)
    if s._ctx is not ctx:  # a new svm.init(): a new machine, nothing to compare with (B2, A7)
        s._signature = None
        s._holds = []
    if ctx.check:
        checks.init_checks(ctx, s, function, (location, str(dtype), flags))
    s._signature = (location, str(dtype), flags)
    s._ctx = ctx
    s._init_line = caller_line()
    s.location, s.flags, s.dtype = location, flags, dtype


def stream_init_ram(
    s: Stream, ram_location: str, address: int, capacity: int, element_size: Any, flags: int = 0
) -> None:
    """Map ``s`` to memory ``ram_location``: a circular buffer of ``capacity`` elements at
    byte ``address``, empty."""
    _init_ram(s, ram_location, address, capacity, element_size, 0, False, flags, "stream_init_ram")


def stream_init_with_data_ram(
    s: Stream,
    ram_location: str,
    address: int,
    capacity: int,
    element_size: Any,
    init_length: int,
    init_eos: bool,
    flags: int = 0,
) -> None:
    """As ``stream_init_ram``, with the ``init_length`` elements already at ``address``
    taken as pushed (the last tagged EOS when ``init_eos``)."""
    if flags & STREAM_UNALIASED_RAM:
        raise SVMError(
            f"stream_init_with_data_ram at {caller_line()}: STREAM_UNALIASED_RAM cannot be set here: "
            "the elements already in memory must stay where they are"
        )
    _init_ram(
        s,
        ram_location,
        address,
        capacity,
        element_size,
        init_length,
        init_eos,
        flags,
        "stream_init_with_data_ram",
    )


def _init_ram(s, location, address, capacity, element_size, init_length, init_eos, flags, function) -> None:
    ctx = context()
    dtype = elements.element_dtype(element_size, function)
    if not isinstance(capacity, int | np.integer) or capacity <= 0:
        raise SVMError(
            f"{function} at {caller_line()}: capacity must be a positive number of elements, got {capacity!r}"
        )
    if not 0 <= init_length <= capacity:
        raise SVMError(
            f"{function} at {caller_line()}: init_length {init_length} must be between 0 and the capacity {capacity}"
        )
    with ctx.cond:
        _begin_init(ctx, s, function, location, dtype, flags)
        region = ctx.region(location, int(address), int(capacity) * dtype.itemsize, f"{function}({s.name})")
        ring = Ring(region, int(capacity), dtype)
        ring.fill(int(init_length), bool(init_eos))
        s._ring, s.address = ring, int(address)


def stream_init_fifo(s: Stream, fifo_location: str, element_size: Any, flags: int = 0) -> None:
    """Map ``s`` to hardware FIFO ``fifo_location``. The FIFO keeps its elements across
    initialisations (restriction A8: it should be empty when re-mapped)."""
    ctx = context()
    function = "stream_init_fifo"
    dtype = elements.element_dtype(element_size, function)
    fifo = ctx.machine.fifos.get(fifo_location)
    if fifo is None:
        kind = ctx.machine.kind_of(fifo_location)
        raise SVMError(
            f"{function} at {caller_line()}: {fifo_location!r} is not a FIFO of machine {ctx.machine.name!r} "
            f"(FIFOs: {', '.join(ctx.machine.fifos) or 'none'})" + (f"; it is a {kind}" if kind else "")
        )
    slots_per_element = -(-dtype.itemsize // fifo.element_size)
    capacity = fifo.depth // slots_per_element
    if capacity == 0:
        raise SVMError(
            f"{function} at {caller_line()}: FIFO {fifo.name} holds {fifo.depth} slots of {fifo.element_size} bytes; "
            f"an element of {dtype.itemsize} bytes does not fit"
        )
    with ctx.cond:
        old = ctx.fifo_rings.get(fifo.name)
        if old is not None and old.count:
            if ctx.check:
                raise SVMRestrictionError(
                    "A8",
                    f"stream_init_fifo({user_name(s, 'stream')}) at {caller_line()}: FIFO {fifo.name} still holds "
                    f"{old.count} element(s) of a previous stream; pop them (make its state empty) before mapping "
                    "another stream to it",
                )
            if old.dtype != dtype:
                raise SVMError(
                    f"{function} at {caller_line()}: FIFO {fifo.name} still holds {old.count} element(s) of type "
                    f"{old.dtype}; empty it before mapping a stream of type {dtype}"
                )
        _begin_init(ctx, s, function, fifo.name, dtype, flags)
        if old is None or old.count == 0 or old.dtype != dtype:
            old = Ring(np.zeros(capacity * dtype.itemsize, np.uint8), capacity, dtype)
            ctx.fifo_rings[fifo.name] = old
        s._ring, s.address = old, 0
        ctx.fifo_streams[fifo.name] = (s.name, s._init_line)


# -- operations -------------------------------------------------------------------------------


def _ring(ctx: Context, s: Any, function: str, role: str) -> Ring:
    """The ring of initialised stream ``s``; registers the calling kernel's role (checks
    A6/A7 in assertion mode) and honours pause/end requests. Holds ``cond``."""
    _check_initialised(s, function)
    if s._ctx is not ctx:
        raise SVMError(
            f"{function}: stream {s.name} was initialised before the last svm.init() (at {s._init_line}); "
            "initialise it again on the machine in use"
        )
    if ctx.check and ctx.fifo_rings.get(s.location, s._ring) is not s._ring:
        _a8_remapped(ctx, s, function)
    kernel = current_kernel()
    if kernel is None:
        if threading.current_thread() is not ctx.control_thread:
            ctx.note_control_thread()
    else:
        ctx.checkpoint(kernel)
        if ctx.check:
            checks.kernel_uses_stream(ctx, kernel, s, role)
    ctx.observe(s, "stream", role, kernel)
    return s._ring


def _a8_remapped(ctx: Context, s: Stream, function: str) -> None:
    """``s`` was mapped to a FIFO that another stream has been mapped to since (when it was
    empty): the FIFO's state is the other stream's now (restriction A8)."""
    name, line = ctx.fifo_streams[s.location]
    raise SVMRestrictionError(
        "A8",
        f"{function}({s.name}) at {caller_line()}: stream {s.name} was mapped to FIFO {s.location} at "
        f"{s._init_line}, and stream {name} has been mapped to it since (at {line}); only the stream mapped "
        f"last may hold the FIFO's state: initialise {s.name} again (stream_init_fifo) before using it",
    )


def _describe(s: Stream, verb: str) -> Any:
    ring = s._ring
    return lambda: (
        f"waits to {verb} stream {s.name} ({s.location}: {ring.count} of {ring.capacity} elements stored)"
    )


def _push_values(ctx: Context, streams: list[Stream], values: np.ndarray, eos: bool, function: str) -> None:
    rings = [_ring(ctx, s, function, "writer") for s in streams]
    n, done = len(values), 0
    if ctx.check:
        for s, ring in zip(streams, rings):
            checks.push_flags(s, ring, n, eos)
    while done < n:
        if not all(r.space > 0 for r in rings):
            ctx.wait_until(
                lambda: all(r.space > 0 for r in rings),
                _describe(_fullest(streams), "push onto"),
                tuple(rings),
            )
        k = min(min(r.space for r in rings), n - done)
        last = done + k == n
        for ring in rings:
            ring.push(values[done : done + k], eos_last=eos and last)
        done += k
        ctx.notify()


def _fullest(streams: list[Stream]) -> Stream:
    return min(streams, key=lambda s: s._ring.space)


def _check_initialised(s: Any, function: str) -> None:
    """``s`` is a Stream that ``stream_init_*`` initialised (B1), else an error naming
    ``function`` and the control-code line."""
    if not isinstance(s, Stream):
        raise SVMError(f"{function}: expected an svm.Stream, got {type(s).__name__} (at {caller_line()})")
    if s._ring is None:
        raise SVMRestrictionError(
            "B1",
            f"{function} on a stream that was never initialised, at {caller_line()}: call stream_init_* first",
        )


def _check_dtype(s: Stream, function: str) -> np.dtype:
    _check_initialised(s, function)
    return s._ring.dtype


def stream_push(s: Stream, element: Any) -> None:
    """Push ``element`` onto ``s``; stalls while ``s`` is full."""
    _push_one([s], element, False, "stream_push")


def stream_push_with_eos(s: Stream, element: Any) -> None:
    """Push ``element`` tagged EOS; stalls while ``s`` is full."""
    _push_one([s], element, True, "stream_push_with_eos")


def stream_push_multicast(element: Any, *streams: Stream) -> None:
    """Push ``element`` onto every stream; stalls while any of them is full."""
    _push_one(list(streams), element, False, "stream_push_multicast")


def stream_push_multicast_with_eos(element: Any, *streams: Stream) -> None:
    """Push ``element`` tagged EOS onto every stream; stalls while any is full."""
    _push_one(list(streams), element, True, "stream_push_multicast_with_eos")


def _push_one(streams: list[Stream], element: Any, eos: bool, function: str) -> None:
    ctx = context()
    if not streams:
        raise SVMError(f"{function}: give at least one stream (at {caller_line()})")
    dtypes = {_check_dtype(s, function) for s in streams}
    if len(dtypes) > 1:
        raise SVMError(
            f"{function}: the streams have different element types ({', '.join(map(str, dtypes))})"
        )
    values = elements.one(element, dtypes.pop(), f"{function}({streams[0].name})")
    with ctx.cond:
        _push_values(ctx, streams, values, eos, function)


def stream_push_many(s: Stream, values: Any, eos: bool = False) -> None:
    """Extension: push a whole array (in slice copies, stalling as the stream fills); with
    ``eos`` the last element is tagged EOS."""
    ctx = context()
    arr = elements.many(values, _check_dtype(s, "stream_push_many"), f"stream_push_many({s.name})")
    with ctx.cond:
        _push_values(ctx, [s], arr, eos, "stream_push_many")


def stream_pop(s: Stream) -> Any:
    """Pop the front element of ``s`` (and its EOS tag); stalls while ``s`` is empty."""
    ctx = context()
    with ctx.cond:
        ring = _ring(ctx, s, "stream_pop", "reader")
        if not ring.count:
            ctx.wait_until(lambda: ring.count > 0, _describe(s, "pop from"), (ring,))
        item = ring.get(0)
        ring.discard(1)
        ctx.notify()
    return elements.item_value(item, ring.dtype)


def stream_pop_many(s: Stream, n: int) -> np.ndarray:
    """Extension: pop ``n`` elements as an array (stalling until all came), or with
    ``STREAM_LENGTH_ALL`` every element up to and including the first EOS-tagged one. If
    the rest can never come, the ``SVMError`` carries what was popped as ``.partial``."""
    ctx = context()
    parts: list[np.ndarray] = []
    with ctx.cond:
        ring = _ring(ctx, s, "stream_pop_many", "reader")
        if n != STREAM_LENGTH_ALL and n < 0:
            raise SVMError(f"stream_pop_many({s.name}, {n}): n must be >= 0 or STREAM_LENGTH_ALL")
        remaining = None if n == STREAM_LENGTH_ALL else n
        try:
            while remaining is None or remaining:
                if not ring.count:
                    ctx.wait_until(lambda: ring.count > 0, _describe(s, "pop from"), (ring,))
                if remaining is None:
                    end = ring.first_eos(ring.count)
                    values, _ = ring.pop(ring.count if end < 0 else end + 1)
                else:
                    end = -1
                    values, _ = ring.pop(min(ring.count, remaining))
                    remaining -= len(values)
                parts.append(values)
                ctx.notify()
                if end >= 0:
                    break
        except SVMError as exc:
            exc.partial = _joined(parts, ring)  # type: ignore[attr-defined]
            raise
    return _joined(parts, ring)


def _joined(parts: list[np.ndarray], ring: Ring) -> np.ndarray:
    if not parts:
        return np.empty((0, *ring.dtype.shape), ring.dtype.base)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _peek_ring(ctx: Context, s: Stream, n: int, function: str) -> Ring:
    ring = _ring(ctx, s, function, "reader")
    if s.flags & STREAM_UNORDERED:
        raise SVMError(
            f"{function}({s.name}) at {caller_line()}: peek cannot be used on a STREAM_UNORDERED stream"
        )
    if not isinstance(n, int | np.integer) or not 0 <= n < ring.capacity:
        raise SVMError(
            f"{function}({s.name}, {n}) at {caller_line()}: index must be in [0, {ring.capacity}) — the stream holds "
            f"at most {ring.capacity} elements, so index {n} could never be available"
        )
    if ring.count <= n:
        ctx.wait_until(lambda: ring.count > n, _describe(s, f"peek element {n} of"), (ring,))
    return ring


def stream_peek(s: Stream, n: int) -> Any:
    """Element ``n`` from the front (0 is what ``stream_pop`` would give); stalls until
    ``n + 1`` elements are there."""
    ctx = context()
    with ctx.cond:
        ring = _peek_ring(ctx, s, n, "stream_peek")
        item = ring.get(int(n))
    return elements.item_value(item, ring.dtype)


def stream_peek_eos(s: Stream, n: int) -> bool:
    """Whether element ``n`` from the front carries an EOS tag; stalls like ``stream_peek``."""
    ctx = context()
    with ctx.cond:
        ring = _peek_ring(ctx, s, n, "stream_peek_eos")
        return ring.peek_eos(int(n))


stream_get_eos = stream_peek_eos  # the seed's SumKernel example calls it streamGetEOS
