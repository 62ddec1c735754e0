"""The worker pool stays at the number of launches that really run at once (issue 10,
item 10: strictly sequential launch + wait used to grow it by a thread every few launches)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import hpvm
from hpvm.runtime import Runtime


@hpvm.leaf(ins=("a",), outs=("a",))
def bump(a: hpvm.f32[:]):
    a[0] += 1


@hpvm.internal
def root(a: hpvm.f32[:]):
    node = hpvm.create_node(bump)
    hpvm.bind_in(node, 0, 0)


@hpvm.leaf
def block_until(flag: hpvm.i64) -> hpvm.i64:
    # (interp runs leaves as Python: the test's events are reachable from here)
    RELEASE[flag].wait(5)
    return flag


RELEASE = [threading.Event() for _ in range(4)]


@hpvm.internal
def blocking(flag: hpvm.i64):
    node = hpvm.create_node(block_until)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_sequential_launches_reuse_one_worker(target: str) -> None:
    if target not in hpvm.backends.available_backends():
        pytest.skip(f"{target} is not available here")
    rt = Runtime()
    rt.init()
    try:
        a = np.zeros(1, np.float32)
        rt.track_memory(a)
        for _ in range(500):
            rt.wait(rt.launch(root, (a,), target=target))
        assert a[0] == 500
        assert rt.workers.thread_count() <= 2
    finally:
        rt.cleanup()


def test_concurrent_launches_still_get_a_worker_each() -> None:
    rt = Runtime()
    rt.init()
    try:
        handles = [rt.launch(blocking, (k,), target="interp") for k in range(3)]
        for event in RELEASE[:3]:
            event.set()
        assert [rt.wait(h) for h in handles] == [(0,), (1,), (2,)]
        assert rt.workers.thread_count() <= 3
    finally:
        rt.cleanup()
        for event in RELEASE:
            event.clear()


@pytest.fixture
def retiring_pool(monkeypatch: pytest.MonkeyPatch):
    """A worker pool of its own whose idle workers end after 10 ms, stopped after the test."""
    from hpvm.runtime import workers

    monkeypatch.setattr(workers, "IDLE_RETIRE_S", 0.01)
    pool = workers.WorkerPool("test-retire")
    yield pool
    pool.stop()


def test_an_idle_worker_ends_and_a_later_job_gets_a_new_one(retiring_pool) -> None:
    """A worker idle for ``IDLE_RETIRE_S`` ends (its OpenMP team with it), and the next job
    starts another."""
    pool = retiring_pool
    done = threading.Event()
    pool.submit(done.set)
    assert done.wait(5)
    first = list(pool._threads)
    assert len(first) == 1
    first[0].join(5)
    assert not first[0].is_alive() and pool.thread_count() == 0
    again = threading.Event()
    pool.submit(again.set)
    assert again.wait(5) and pool.thread_count() == 1


def test_a_job_submitted_as_a_worker_gives_up_waiting_still_runs(retiring_pool) -> None:
    """The race a retiring worker must lose: its wait for a job times out, and before it
    ends, the host submits (claiming it as the idle worker, so no new one starts). It must
    stay and run the job: a worker ends only while the pool counts an idle worker that no
    job has claimed."""
    import queue as queue_module

    pool = retiring_pool
    ran = threading.Event()
    inner = pool._jobs

    class SubmitOnTimeout:
        raced = False

        def get(self, timeout: float | None = None) -> object:
            try:
                return inner.get(timeout=timeout)
            except queue_module.Empty:
                if not self.raced:
                    self.raced = True
                    pool.submit(ran.set)
                raise

        def put(self, item: object) -> None:
            inner.put(item)

    first = threading.Event()
    pool._jobs = SubmitOnTimeout()  # type: ignore[assignment]
    pool.submit(first.set)
    assert first.wait(5)
    assert ran.wait(5), "the job submitted as the worker timed out never ran"


def test_stop_after_workers_retired_leaves_no_stop_for_a_new_worker(retiring_pool) -> None:
    """``stop`` sends one stop per living worker: a retired worker gets none, so a worker
    started after ``stop`` (the pool is reused by the next ``init``) is not ended by a stray
    one and runs its job."""
    pool = retiring_pool
    done = threading.Event()
    pool.submit(done.set)
    assert done.wait(5)
    (thread,) = pool._threads
    thread.join(5)
    pool.stop()
    again = threading.Event()
    pool.submit(again.set)
    assert again.wait(5)


def test_a_job_still_running_at_stop_leaves_no_idle_worker_behind() -> None:
    """``stop`` waits for a running job; the job's worker then ends. Counted idle when the
    job finished (after ``stop`` had reset the count), it left the pool believing in a
    worker that was gone: the next job (the first launch after ``cleanup`` and ``init``) was
    queued for nobody, and its ``wait`` never returned."""
    from hpvm.runtime.workers import WorkerPool

    pool = WorkerPool("test-stop-running")
    started, release = threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        release.wait(5)
        pool.finishing()  # (as a launch's job says it before signalling its handle)

    pool.submit(slow)
    assert started.wait(5)
    stopping = threading.Thread(target=pool.stop)
    stopping.start()
    while pool.thread_count():  # (stop has taken the workers: the job still runs)
        threading.Event().wait(0.001)
    release.set()
    stopping.join(5)
    assert not stopping.is_alive()
    ran = threading.Event()
    pool.submit(ran.set)
    try:
        assert ran.wait(5), "a job submitted after stop found no worker"
    finally:
        pool.stop()
