"""The host API of seed 000: init/cleanup, the memory tracker, launch/wait, push/pop."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from ..backends.base import collecting_warnings, reissue_warnings
from ..errors import HPVMError, LaunchError, NodeExecutionError, RuntimeStateError, StreamError
from .launch import array_args, check_args, check_root, check_sizes, choose_backend
from .memory import MemoryTracker
from .streaming import Stream
from .workers import WorkerPool

DEFAULT_STREAM_CAPACITY = 16


class _Done:
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


class LaunchHandle:
    """What ``launch`` returns: one execution (or one stream) of a root graph."""

    def __init__(self, root: Any, backend: Any, stream: Stream | None = None):
        self.root = root
        self.backend = backend
        self.stream = stream
        self.outputs: tuple[Any, ...] | None = None
        self.error: BaseException | None = None
        self.done = _Done()
        self.job: Callable[[], None] | None = None  # the run, queued on the worker pool
        self._claim = threading.Lock()  # whoever takes it runs the job: a worker, or wait()
        self.waited = False
        self.warnings: list[tuple[str, type[Warning]]] = []  # issued on the host at wait
        self.transfers: Any = None  # bytes the run moved between host and devices (memory.Transfers)
        self.generation = _rt.generation  # valid until the next cleanup

    def claim(self) -> bool:
        """Take the right to run this launch (once): a worker that gets there first, or the
        host in ``wait`` when no worker has started it yet — then launch + wait costs no
        thread hand-off."""
        return self._claim.acquire(blocking=False)

    @property
    def is_stream(self) -> bool:
        return self.stream is not None

    def __repr__(self) -> str:
        kind = "stream" if self.is_stream else "launch"
        state = "done" if self.done.is_set() else "running"
        return f"<hpvm {kind} of '{self.root.name}' on {self.backend.name}, {state}>"


class _Runtime:
    """The runtime's state.

    Handles are not kept in a registry: a handle is valid while its ``generation`` is the
    current one (cleanup starts a new one), and the runtime holds on only to the launches
    and streams that may still have threads running (``active``), for cleanup to end them.
    (Keeping every handle until cleanup made a host that launches in a loop hold every
    result ever computed, and made each wait scan them all.)
    """

    def __init__(self) -> None:
        self.initialized = False
        self.tracker = MemoryTracker()
        self.generation = 0
        self.active: set[LaunchHandle] = set()
        self.lock = threading.Lock()
        self.workers = WorkerPool()

    def require(self, api: str) -> None:
        if not self.initialized:
            raise RuntimeStateError(f"hpvm.{api}() before hpvm.init(); call hpvm.init() first")


_rt = _Runtime()


def init() -> None:
    """Start the runtime. Calling it again while running does nothing."""
    _rt.initialized = True


def cleanup() -> None:
    """Stop the runtime: end every stream, wait for running launches, forget tracked memory.

    Idempotent. Handles from before cleanup can no longer be used.
    """
    with _rt.lock:
        handles, _rt.active = _rt.active, set()
        _rt.generation += 1
    for h in handles:
        if h.stream is not None:
            h.stream.stop()
    _rt.workers.stop()  # finishes the launches still running, then ends every worker
    _rt.tracker.clear()
    _rt.initialized = False


def track_memory(array: Any) -> None:
    """Start tracking ``array`` so that it can be passed to graphs."""
    _rt.require("track_memory")
    _rt.tracker.track(array)


def untrack_memory(array: Any) -> None:
    """Stop tracking ``array``."""
    _rt.require("untrack_memory")
    _rt.tracker.untrack(array)


def request_memory(array: Any) -> Any:
    """Make the host copy of ``array`` current (copying it back from a device if needed)."""
    _rt.require("request_memory")
    return _rt.tracker.request(array)


def mark_host_modified(array: Any) -> None:
    """Declare that the host wrote ``array`` (tracked) after a launch: its device copies are
    stale and the next GPU launch copies it again. ``request_memory`` it before writing."""
    _rt.require("mark_host_modified")
    _rt.tracker.host_modified(array)


def launch(
    root: Any,
    args: Any,
    stream: bool = False,
    target: str | None = None,
    *,
    capacity: int = DEFAULT_STREAM_CAPACITY,
) -> LaunchHandle:
    """Start executing ``root``; returns a handle for ``wait`` (and ``push``/``pop`` if streaming).

    The graph, the arguments and the tracking of arrays are checked before this returns;
    errors raised inside nodes surface at ``wait`` (or ``pop``).
    """
    _rt.require("launch")
    root = check_root(root)
    backend = choose_backend(root, target)
    if stream:
        # (``args != ()`` would compare element-wise when args is an array)
        if args is not None and not (isinstance(args, (tuple, list)) and len(args) == 0):
            raise LaunchError(
                "launch(..., stream=True) takes args=None: each hpvm.push(handle, args) "
                "supplies the inputs of one execution"
            )
        if not isinstance(capacity, int) or capacity < 1:
            raise LaunchError(f"capacity must be a positive int, not {capacity!r}")
        handle = LaunchHandle(root, backend, Stream(root, backend, capacity))
    else:
        values = check_args(root, args, _rt.tracker, "launch")
        check_sizes(root, values, "launch")
        handle = LaunchHandle(root, backend)
        entries = _rt.tracker.acquire(array_args(values))

        def run() -> None:
            try:
                with collecting_warnings() as caught:
                    token = _rt.tracker.prepare_for(backend, root, values)  # host/device residency
                    try:
                        handle.outputs = backend.run(root, values)
                    finally:
                        handle.warnings = caught
                        handle.transfers = _rt.tracker.finished(token)
            except BaseException as e:  # delivered to the host at wait()
                handle.error = e
            finally:
                _rt.tracker.release(entries)
                handle.done.set()
                with _rt.lock:
                    _rt.active.discard(handle)

        handle.job = run
    with _rt.lock:
        _rt.active.add(handle)
    if handle.job is not None:
        # The queued start holds the handle weakly: ``_rt.active`` keeps it alive until it has
        # run, and nothing keeps its results alive after the host dropped it.
        ref = weakref.ref(handle)

        def start() -> None:
            h = ref()
            if h is not None and h.job is not None and h.claim():
                h.job()

        _rt.workers.submit(start)
    return handle


def _check_handle(handle: Any, api: str) -> LaunchHandle:
    _rt.require(api)
    if not isinstance(handle, LaunchHandle):
        raise LaunchError(f"hpvm.{api}() needs a handle returned by hpvm.launch(), not {handle!r}")
    if handle.generation != _rt.generation:
        raise RuntimeStateError(
            f"hpvm.{api}(): this handle was made before hpvm.cleanup() and is no longer valid"
        )
    return handle


def wait(handle: Any) -> tuple[Any, ...] | None:
    """Block until the launch completes; return the root's outputs (``None`` for a stream)."""
    h = _check_handle(handle, "wait")
    if h.stream is not None:
        try:
            h.stream.wait()
        finally:
            h.waited = True
            if h.stream.finished():
                with _rt.lock:
                    _rt.active.discard(h)
            reissue_warnings(h.stream.take_warnings())
        return None
    if h.job is not None and h.claim():
        h.job()  # not started yet: run it here rather than wait for a worker to wake
    h.done.wait()
    if not h.waited:  # the run's warnings, issued once, on the host thread
        h.waited = True
        reissue_warnings(h.warnings)
    if h.error is not None:
        err = h.error
        if isinstance(err, HPVMError):
            raise err
        raise NodeExecutionError(f"running '{h.root.name}' raised {type(err).__name__}: {err}") from err
    return h.outputs


def push(handle: Any, args: Any) -> None:
    """Send the inputs of one execution to a streaming launch (blocks while its buffer is full)."""
    h = _check_handle(handle, "push")
    if h.stream is None:
        raise StreamError(
            f"hpvm.push(): the launch of '{h.root.name}' is not streaming; launch it with stream=True"
        )
    values = check_args(h.root, args, _rt.tracker, "push")
    check_sizes(h.root, values, "push")
    h.stream.push(values)


def pop(handle: Any, timeout: float | None = None) -> tuple[Any, ...]:
    """The outputs of the oldest execution not yet popped (blocks until it is ready)."""
    h = _check_handle(handle, "pop")
    if h.stream is None:
        raise StreamError(
            f"hpvm.pop(): the launch of '{h.root.name}' is not streaming; use hpvm.wait(handle) "
            "for its outputs"
        )
    outputs = h.stream.pop(timeout)
    reissue_warnings(h.stream.take_warnings())
    return outputs
