"""A pool of reusable worker threads for non-streaming launches.

Starting a thread per launch costs more than a small compiled graph takes to run; a pool
keeps launch + wait cheap. Workers are created when every existing one is busy (so
concurrent launches never wait on each other), idle ones block on a queue, and ``stop``
ends them all (``hpvm.cleanup``).
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable

_STOP = object()


class WorkerPool:
    def __init__(self, prefix: str = "hpvm-worker") -> None:
        self._prefix = prefix
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()
        self._ids = itertools.count()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._idle == 0:
                thread = threading.Thread(
                    target=self._work, name=f"{self._prefix}-{next(self._ids)}", daemon=True
                )
                self._threads.append(thread)
                self._idle += 1
                thread.start()
            self._idle -= 1
        self._jobs.put(job)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                return
            try:
                job()
            finally:
                job = None  # drop the finished launch (and its results) before blocking again
                with self._lock:
                    self._idle += 1

    def stop(self) -> None:
        """End every worker after the jobs already queued (they finish first)."""
        with self._lock:
            threads, self._threads = self._threads, []
            self._idle = 0
        for _ in threads:
            self._jobs.put(_STOP)
        for thread in threads:
            thread.join()
