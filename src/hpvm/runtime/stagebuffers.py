"""The pieces a stream is built of (``streaming.py``): stages, the channels between them,
the signals their waiters sleep on, and who may still push.

Kept apart from ``Stream`` (which wires them together and runs the host side) because they
are plain state with no policy of their own, and the SVM target (``svm_target.py``) shares
the producer tracking and the failure and end-of-stream rules with it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import HPVMError, StreamError
from ..ir.graph import Node
from .workers import is_internal

if TYPE_CHECKING:
    from .replicas import StagePolicy

FAILED = object()  # sent downstream (and to the host) in place of the item that failed


class Signal:
    """A condition on the stream's lock that is notified only when someone waits on it:
    notifying costs a lock round trip, and items arrive far more often than anyone waits."""

    __slots__ = ("_cond", "_waiting", "_woken")

    def __init__(self, lock: threading.Lock) -> None:
        self._cond = threading.Condition(lock)
        self._waiting = 0
        self._woken = False  # every thread waiting now has been woken already

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a ``wake`` (the stream's lock held, released while waiting)."""
        self._waiting += 1
        self._woken = False
        try:
            self._cond.wait(timeout)
        finally:
            self._waiting -= 1

    def wake(self) -> None:
        """Wake whoever waits (the stream's lock held)."""
        if self._waiting and not self._woken:
            self._woken = True
            self._cond.notify_all()


@dataclass(eq=False)
class Channel:
    """The streaming edges from one stage to another: the producer's outputs, one entry per
    item, then ``FAILED`` if the producer failed (always the last entry)."""

    producer: Stage
    consumer: Stage
    items: deque[Any] = field(default_factory=deque)


@dataclass(eq=False)
class Stage:
    """One stage of a stream: its nodes, the items waiting for it, its channels, and its
    thread (or, fused, the one stage every host call runs)."""

    index: int
    nodes: list[Node]
    ready: Signal  # the stage's threads wait here to take items: for inputs, or for their turn
    # ... and here for room downstream. Apart from ``ready`` so that a stage taking items
    # wakes its producer only when that one waits for room: with one signal it woke every
    # producer waiting for inputs of its own, once per item taken — a wake-up, a context
    # switch and a turn of the GIL for nothing (issue 24, item 2).
    room: Signal
    args: deque[Any] = field(default_factory=deque)  # root arguments of items not taken yet
    inputs: list[Channel] = field(default_factory=list)  # from upstream stages
    outputs: list[Channel] = field(default_factory=list)  # to downstream stages
    results: deque[Any] | None = None  # to the host: root outputs per item, then maybe FAILED
    batch: int = 1  # how many items to take next: what its last batch says fits BATCH_SECONDS
    stopped: bool = False  # every thread of the stage has ended (or is about to)
    threads: list[threading.Thread] = field(default_factory=list)  # the first, then its replicas
    live: int = 0  # threads of the stage not ended yet
    slow: int = 0  # fused: how many batches in a row were slow
    # Replicas (``replicas.py``): several threads of one stage run batches at once and hand
    # them on in the order they were taken. ``taken`` numbers the batches taken so far,
    # ``delivered`` those handed on; ``inflight`` holds, per number, the root arguments and
    # upstream values of a batch taken and not yet handed on. ``halted``: the stage failed
    # (or stopped) at a batch, so the later ones are dropped. ``marker``: the failure marker
    # of an upstream stage was taken (by one thread: it passes it on, in order). ``parked``:
    # batches that ended before an earlier one, by number, with what ``_deliver`` hands on
    # (still in ``inflight``: their arrays are not handed on yet); the thread that hands on
    # the batch before one hands it on too.
    policy: StagePolicy | None = None  # None: one item at a time
    seconds: float | None = None  # its time per item, as ``_Batches.run`` keeps it (None: none ran)
    prior: float | None = None  # until then: its time in the root's last stream (replicas.remembered)
    taken: int = 0
    delivered: int = 0
    inflight: dict[int, tuple[list[Any], list[Any]]] = field(default_factory=dict)
    parked: dict[int, tuple[Any, list[Any], bool]] = field(default_factory=dict)
    halted: bool = False
    marker: bool = False

    def fed(self) -> bool:
        """Whether every input channel holds something (an item, or its failure): only then
        can an item arriving — pushed, or from one of its producers — let the stage take one,
        so only then is it woken for it (waking a stage that waits for the other inputs of a
        frame cost it a context switch and a turn of the GIL, up to once per input and push:
        issue 24, item 2). Stopping, failing and ending wake every stage (``wake_all``)."""
        return all(channel.items for channel in self.inputs)

    @property
    def running(self) -> list[Any]:
        """Root arguments of the items its threads run now (the stream's lock held)."""
        return [item for args, _ in self.inflight.values() for item in args]


class Producers:
    """The threads that can push to a stream: the one that launched it, every one that has
    pushed to it, and every thread started since the launch (a producer thread may not have
    pushed yet) that is not hpvm's own. A pop that nothing is in flight for waits only while
    one of them other than the popping thread is alive; anything else would wait forever.
    (Threads alive before the launch — Jupyter's, Dask's — cannot become producers without
    pushing, and then they are tracked.)"""

    def __init__(self, ignore: Callable[[threading.Thread], bool] = lambda t: False):
        self._pushers: set[threading.Thread] = {threading.current_thread()}
        self._bystanders: set[threading.Thread] = set(threading.enumerate())
        self._ignore = ignore  # other threads of the runtime's own (the SVM's processors)
        self._last: int | None = None  # the ident of the thread added last

    def add_current(self) -> None:
        # (An ident is cheaper than current_thread(), once per push. A dead pusher's ident
        # reused by a thread started later is still counted: it was no bystander.)
        ident = threading.get_ident()
        if ident != self._last:
            self._pushers.add(threading.current_thread())
            self._last = ident

    def other_alive(self) -> bool:
        """Whether a thread other than the calling one could still push."""
        me = threading.current_thread()
        if any(t is not me and t.is_alive() for t in self._pushers):
            return True
        return any(
            t is not me and t not in self._bystanders and not is_internal(t) and not self._ignore(t)
            for t in threading.enumerate()
        )


def check_can_arrive(closed: bool, pushed: int, producers: Producers) -> None:
    """Raise instead of letting ``pop`` wait for ever, when nothing is in flight and nothing
    can be pushed any more (the stream has ended, or no producer is left)."""
    if closed:
        raise StreamError(f"pop(): all {pushed} pushed item(s) have been popped and the stream has ended")
    if not producers.other_alive():
        raise StreamError(
            f"pop(): all {pushed} pushed item(s) have been popped and no other thread "
            "that launched or pushed to this stream is running, so this pop would wait "
            "forever; push before popping"
        )


def raise_stream_failure(err: BaseException | None, api: str) -> None:
    """Raise a stream's failure from ``api`` (push, pop, wait): an hpvm error as it is,
    anything else as a ``StreamError`` caused by it."""
    if isinstance(err, HPVMError):
        raise err
    raise StreamError(f"{api}(): the stream failed: {err}") from err
