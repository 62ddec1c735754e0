"""A pool of reusable worker threads for non-streaming launches.

Starting a thread per launch costs more than a small compiled graph takes to run; a pool
keeps launch + wait cheap. Workers are created when every existing one is busy (so
concurrent launches never wait on each other), idle ones block on a queue and end after
``IDLE_RETIRE_S`` without a job (freeing the OpenMP team a worker's runs made), and
``stop`` ends them all (``hpvm.cleanup``).

A worker counts itself idle when its job says it is finishing (``finishing()``, called by
the job just before it signals its completion to the host), not when the job function
returns: otherwise a host that launches again as soon as its ``wait`` returns finds every
worker still "busy", starts another, and strictly sequential launches grow the pool
without bound (hundreds of threads after 10⁵ launches). So the pool stays at the number of
launches that really run at once. For the same reason a job that someone else ran instead
(``wait`` runs a launch on the host when no worker has started it yet) is ``withdraw``n:
the worker it was queued for counts as idle at once, and skips it when it comes.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable

_STOP = object()
_INTERNAL = "_hpvm_internal"

#: Seconds an idle worker waits for a job before it ends. A worker that ran a parallel
#: region keeps an OpenMP team of its own for as long as it lives; while it does, the
#: process holds more OpenMP threads than cores, and libgomp cuts every team's spinning to
#: its throttled count, so the host's own runs (replays, the user's Numba calls) wake a
#: sleeping team each time (stencil 128×128×32: 115–130 µs a step instead of 83–90 on the
#: 2-core machine). Ending the worker frees its team. A launch queued after that starts a
#: new worker: 0.1–0.2 ms, against the milliseconds a queued run takes.
IDLE_RETIRE_S = 0.05


def internal_thread(target: Callable[..., None], name: str, *args: object) -> threading.Thread:
    """A daemon thread of hpvm's own (a worker, a pipeline stage): marked so that the
    streaming runtime never counts it as a thread of the user's that might push."""
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    setattr(thread, _INTERNAL, True)
    return thread


def is_internal(thread: threading.Thread) -> bool:
    return getattr(thread, _INTERNAL, False)


class _WorkerState(threading.local):
    """Per thread: ``worker``, whether it is one of the pool's; ``done``, whether its job
    was counted idle. Class defaults, so that ``finishing`` on the host thread (every quick
    launch calls it) reads them without an ``AttributeError`` raised and caught."""

    worker = False
    done = True


class Slot:
    """One submitted job, and whether a worker has taken it (``withdraw`` needs to know)."""

    __slots__ = ("job", "state", "abandoned")

    def __init__(self, job: Callable[[], None]) -> None:
        self.job: Callable[[], None] | None = job
        self.state = "queued"  # then "running", or "withdrawn"
        self.abandoned = False  # the host stopped waiting for it (Ctrl-C): stop() does not wait


class WorkerPool:
    def __init__(self, prefix: str = "hpvm-worker") -> None:
        self._prefix = prefix
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._local = _WorkerState()
        self._running: dict[threading.Thread, Slot] = {}  # each busy worker's job

    def submit(self, job: Callable[[], None]) -> Slot:
        slot = Slot(job)
        with self._lock:
            if self._idle == 0:
                thread = internal_thread(self._work, f"{self._prefix}-{next(self._ids)}")
                self._threads.append(thread)
                self._idle += 1
                thread.start()
            self._idle -= 1
        self._jobs.put(slot)
        return slot

    def withdraw(self, slot: Slot) -> None:
        """The job of ``slot`` was run elsewhere: if no worker has taken it yet, the worker
        it was queued for is idle now, and will skip it."""
        with self._lock:
            if slot.state == "queued":
                slot.state = "withdrawn"
                slot.job = None
                self._idle += 1

    def finishing(self) -> None:
        """Called by a job that is about to signal its completion: if it runs on one of this
        pool's workers, that worker counts as idle from now on (once per job) — unless
        ``stop`` has taken the workers meanwhile: that worker ends at its stop, and counting
        it made the pool believe in an idle worker that was gone, so that the first launch
        after ``cleanup`` and ``init`` was queued for nobody and its ``wait`` never returned
        (a GPU launch left running at ``cleanup``)."""
        local = self._local
        if local.worker and not local.done:
            local.done = True
            with self._lock:
                if threading.current_thread() in self._threads:
                    self._idle += 1

    def _retire(self) -> bool:
        """Whether this idle worker may end: only while the pool counts an idle worker
        that no submitted job has claimed (``submit`` claims one before it queues), so the
        jobs already queued keep a worker each; never once ``stop`` has taken the threads
        (it sends this one a stop of its own)."""
        thread = threading.current_thread()
        with self._lock:
            if self._idle < 1 or thread not in self._threads:
                return False
            self._idle -= 1
            self._threads.remove(thread)
            return True

    def _work(self) -> None:
        local = self._local
        local.worker = True
        jobs = self._jobs
        while True:
            try:
                slot = jobs.get(timeout=IDLE_RETIRE_S)
            except queue.Empty:
                if self._retire():
                    return
                continue
            if slot is _STOP:
                return
            with self._lock:
                if slot.state == "withdrawn":
                    continue  # run elsewhere; this worker was counted idle then
                slot.state = "running"
                job, slot.job = slot.job, None
                self._running[threading.current_thread()] = slot
            local.done = False
            try:
                job()  # type: ignore[misc]
            finally:
                with self._lock:
                    self._running.pop(threading.current_thread(), None)
                job = slot = None  # drop the finished launch (and its results) before blocking
                self.finishing()  # (if the job did not say so itself)

    def thread_count(self) -> int:
        """How many workers exist (for tests and tools)."""
        with self._lock:
            return len(self._threads)

    def abandon(self, slot: Slot) -> None:
        """The host stopped waiting for ``slot``'s job (Ctrl-C in ``wait``): ``stop`` will not
        wait for it. A run in native code cannot be stopped from outside; its worker ends
        when the job does (it is a daemon thread: it never keeps the process alive)."""
        slot.abandoned = True

    def stop(self) -> None:
        """End every worker after the jobs already queued (they finish first), except the
        workers still running an abandoned job: they end when it does."""
        with self._lock:
            threads, self._threads = self._threads, []
            self._idle = 0
        for _ in threads:
            self._jobs.put(_STOP)
        for thread in threads:
            while thread.is_alive():
                thread.join(0.05)
                with self._lock:
                    slot = self._running.get(thread)
                if slot is not None and slot.abandoned:
                    break
