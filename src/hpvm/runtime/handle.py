"""What ``launch`` returns (``LaunchHandle``) and the completion flags it waits on.

Its own module so that a launch plan's generated replay (``plan.py``) makes handles itself,
without importing the runtime (``api.py`` imports the plans).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..backends.memory import Transfers

if TYPE_CHECKING:
    from .api import Runtime
    from .launch import PushCheck
    from .quick import Runs
    from .streaming import Stream
    from .workers import Slot

_NONE: tuple[Any, ...] = ()  # (a handle's lists until its run assigns them)


class Done:
    """A one-shot completion flag: cheaper to make than ``threading.Event`` (no Condition),
    which matters when launch + wait is a few tens of microseconds."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()

    def set(self) -> None:
        self._lock.release()

    def is_set(self) -> bool:
        return not self._lock.locked()

    def wait(self) -> None:
        with self._lock:
            pass


class Finished:
    """The completion flag of a launch that ran inside ``launch`` (a quick one): done before
    anyone saw its handle, so one shared flag serves them all — no lock made, taken and
    released per launch."""

    __slots__ = ()

    def set(self) -> None:
        pass

    def is_set(self) -> bool:
        return True

    def wait(self) -> None:
        pass


FINISHED = Finished()


class LaunchHandle:
    """What ``launch`` returns: one execution (or one stream) of a root graph.

    What every launch sets is slotted. What only a queued launch or a stream sets (its job,
    its worker slot, its stream, warnings and notes of a run with a context) are class-level
    defaults, assigned in the instance's ``__dict__``, made only then: a quick launch —
    most of them, a replayed one after a step that streamed megabytes through the core —
    stores nine attributes instead of eighteen (``docs/backends/cpu-performance.md``)."""

    __slots__ = (
        "runtime",
        "root",
        "backend",
        "outputs",
        "error",
        "done",
        "arrays",
        "generation",
        "quick",
        "__dict__",
        "__weakref__",
    )

    stream: Stream | None = None
    job: Callable[[], None] | None = None  # the run, queued on the worker pool
    slot: Slot | None = None  # its place in the worker pool's queue
    #: whoever takes it runs the job: a worker, or wait(); made by ``queue`` (a launch
    #: run inside ``launch`` is never seen by anyone else before it has run)
    _claim: threading.Lock | None = None
    warnings: Sequence[tuple[str, type[Warning]]] = _NONE  # issued on the host at wait
    _transfers: Transfers | None = None  # (``transfers``)
    notes: Sequence[str] = _NONE  # how the back end ran it (RunContext.notes)
    waited = False  # its ``warnings`` issued (by the first ``wait``)
    check_push: PushCheck | None = None  # a stream's: checks what each push supplies
    #: a queued launch with a run key: (the launching thread, its CPU time then, the key's
    #: ``Runs``), for ``wait`` to tell whether the host waited at once (``quick.waited_for``)
    launched: tuple[int, float, Any] | None = None

    def __init__(
        self,
        runtime: Runtime,
        root: Any,
        backend: Any,
        done: Done | Finished | None = None,
        stream: Stream | None = None,
    ):
        self.runtime = runtime
        self.root = root
        self.backend = backend
        self.outputs: tuple[Any, ...] | None = None
        self.error: BaseException | None = None
        self.done = done if done is not None else Done()
        self.arrays: Sequence[Any] = _NONE  # the arrays the run uses
        self.generation = runtime.generation  # valid until the runtime's next cleanup
        #: a bounded cpu launch's durations and run key (``quick.py``): may ``wait`` run it here
        self.quick: tuple[dict[Any, Runs], Any] | None = None
        if stream is not None:
            self.stream = stream

    def queue(self) -> None:
        """Make the launch claimable (``claim``) before anyone else can see it: a worker, or
        ``wait``."""
        self._claim = threading.Lock()

    def claim(self) -> bool:
        """Take the right to run this launch (once): a worker that gets there first, or the
        host in ``wait`` when no worker has started it yet — then launch + wait costs no
        thread hand-off."""
        return self._claim is not None and self._claim.acquire(blocking=False)

    @property
    def transfers(self) -> Transfers:
        """Bytes the run moved between host and devices. A quick run (``quick.py``) moves
        none and records nothing: its zero count is made when first read, not per launch."""
        transfers = self._transfers
        if transfers is None:
            transfers = self._transfers = Transfers()
        return transfers

    @property
    def is_stream(self) -> bool:
        return self.stream is not None

    def __repr__(self) -> str:
        kind = "stream" if self.is_stream else "launch"
        state = "done" if self.done.is_set() else "running"
        return f"<hpvm {kind} of '{self.root.name}' on {self.backend.name}, {state}>"
