"""The host API of seed 000: init/cleanup, the memory tracker, launch/wait, push/pop.

The state lives in a ``Runtime`` object, not in module globals: the functions of the fixed
API (``hpvm.init``, ``hpvm.launch``, ...) act on the process's default runtime, and a test,
a tool or a server can make more (``Runtime()``), each with its own memory tracker, worker
pool and handles. Back ends get what they need from a runtime through the ``RunContext``
each run is handed.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..backends.base import RunContext, collecting_warnings, reissue_warnings
from ..backends.memory import MemoryTracker, TrackedArray, Transfers
from ..errors import (
    HPVMError,
    LaunchError,
    MemoryTrackingError,
    NodeExecutionError,
    RuntimeStateError,
    StreamError,
)
from ..ir.graph import InternalFunction
from .handle import FINISHED, LaunchHandle
from .launch import PushCheck, array_args, check_args, check_root, choose_backend
from .plan import LaunchPlan, plan_for, record_replay
from .quick import Runs, arg_key, entry, keyed_run, runs_in_wait, waited_for
from .streaming import Stream, streaming_root
from .workers import WorkerPool

DEFAULT_STREAM_CAPACITY = 16


def _may_run_here(backend: Any) -> bool:
    """Whether ``wait`` may run a launch on the calling thread. Not on the main thread when
    the run sits in native code: Python delivers Ctrl-C only to the main thread, between
    bytecodes, so a compiled graph running there would hold off ``KeyboardInterrupt``
    until it ends (hours, for a long leaf). There the run goes to a worker thread and
    ``wait`` blocks on a lock, which Ctrl-C interrupts."""
    return threading.current_thread() is not threading.main_thread() or getattr(
        backend, "interruptible_on_host", False
    )


def _short_in_wait(handle: Any) -> bool:
    """Whether ``wait`` may run this launch on the main thread although its back end runs
    native code: a bounded graph whose last run with the same run key was short
    (``quick.runs_in_wait``), so Ctrl-C waits no longer than that."""
    return handle.quick is not None and runs_in_wait(*handle.quick)


class Runtime:
    """One host runtime: its memory tracker, its worker pool and the launches it runs.

    Handles are not kept in a registry: a handle is valid while its ``generation`` is the
    runtime's current one (cleanup starts a new one), and the runtime holds on only to the
    launches and streams that may still have threads running (``active``), for cleanup to
    end them. (Keeping every handle until cleanup made a host that launches in a loop hold
    every result ever computed, and made each wait scan them all.)
    """

    def __init__(self) -> None:
        self.initialized = False
        self.tracker = MemoryTracker()
        self.generation = 0
        self.active: set[LaunchHandle] = set()
        self.lock = threading.Lock()
        self.workers = WorkerPool()
        self.dask: Any = None  # what init(dask=...) named: an address, a Client, or None
        self._cluster: Any = None  # backends.dask.cluster.Cluster, made on first use
        self._cluster_lock = threading.Lock()
        # The contexts of quick runs on the host (``_run_quick``), per thread count.
        self._quick_ctx = {
            n: RunContext(self.tracker, cluster=self.dask_client, threads=n, checked=True) for n in (None, 1)
        }

    def require(self, api: str) -> None:
        if not self.initialized:
            raise RuntimeStateError(f"hpvm.{api}() before hpvm.init(); call hpvm.init() first")

    def init(self, dask: Any = None) -> None:
        """Start the runtime. Calling it again while running does nothing.

        ``dask``: the cluster ``target="dask"`` runs on — a scheduler address
        (``"tcp://host:8786"``, connected now, with a short timeout: an unreachable one is a
        ``ClusterError`` here rather than a hang at the first launch) or a
        ``distributed.Client`` (used as it is, never closed by hpvm). Without it, the first
        ``dask`` launch connects to ``$HPVM_DASK_SCHEDULER`` or starts a local cluster;
        ``cleanup`` closes what hpvm opened. Nothing of Dask is imported unless used.
        """
        if dask is not None:
            from ..backends.dask.cluster import Cluster

            with self._cluster_lock:
                if self._cluster is not None:
                    raise RuntimeStateError(
                        "hpvm.init(dask=...) while the runtime already uses a Dask cluster "
                        f"({self._cluster.describe()}); call hpvm.cleanup() first"
                    )
                cluster = Cluster(dask)
                cluster.client()  # connect now: a bad address is reported by init
                self._cluster = cluster
            self.dask = dask
        self.initialized = True

    def dask_client(self) -> Any:
        """The Dask client of this runtime (the ``RunContext.cluster`` hook), connecting or
        starting a local cluster on first use."""
        with self._cluster_lock:
            if self._cluster is None:
                from ..backends.dask.cluster import Cluster

                self._cluster = Cluster(None)
            cluster = self._cluster
        return cluster.client()

    def cleanup(self) -> None:
        """Stop the runtime: end every stream, wait for running launches, forget tracked memory.

        Idempotent. Handles from before cleanup can no longer be used. Cleanup always
        finishes: an array whose device contents cannot be copied back is forgotten like the
        others, and reported once, by a ``MemoryTrackingError`` raised after everything is
        done (a second cleanup has nothing left to report).
        """
        with self.lock:
            handles, self.active = self.active, set()
            self.generation += 1
        try:
            for h in handles:
                if h.stream is not None:
                    h.stream.stop()
            self.workers.stop()  # finishes the launches still running, then ends every worker
        finally:
            lost = self.tracker.clear()
            self.initialized = False
            with self._cluster_lock:
                cluster, self._cluster, self.dask = self._cluster, None, None
            if cluster is not None:
                cluster.close()
        if lost:
            raise MemoryTrackingError(
                "hpvm.cleanup() finished (every array forgotten, every thread ended), but the "
                f"latest contents of {len(lost)} array(s) could not be copied back to the host "
                "and are lost: " + "; ".join(lost)
            )

    def track_memory(self, array: Any) -> None:
        """Start tracking ``array`` so that it can be passed to graphs."""
        self.require("track_memory")
        self.tracker.track(array)

    def untrack_memory(self, array: Any) -> None:
        """Stop tracking ``array``."""
        self.require("untrack_memory")
        self.tracker.untrack(array)

    def request_memory(self, array: Any) -> Any:
        """Make the host copy of ``array`` current (copying it back from a device if needed)."""
        self.require("request_memory")
        return self.tracker.request(array)

    def mark_host_modified(self, array: Any) -> None:
        """Declare that the host wrote ``array`` (tracked) after a launch: its device copies are
        stale and the next GPU launch copies it again. ``request_memory`` it before writing."""
        self.require("mark_host_modified")
        self.tracker.host_modified(array)

    def memory_stats(self) -> Transfers:
        """Bytes this runtime moved between host and devices (a copy)."""
        return self.tracker.totals()

    def launch(
        self,
        root: Any,
        args: Any,
        stream: bool = False,
        target: str | None = None,
        *,
        capacity: int = DEFAULT_STREAM_CAPACITY,
    ) -> LaunchHandle:
        """Start executing ``root``; returns a handle for ``wait`` (and ``push``/``pop`` if
        streaming).

        The graph, the arguments and the tracking of arrays are checked before this
        returns; errors raised inside nodes surface at ``wait`` (or ``pop``).
        """
        if stream is False and target != "svm" and self.tracker.replays and not self.active:
            # A recorded quick launch again (``plan.Replay``)? The plan's generated replay
            # runs it and makes its handle, in one frame: after a step that streamed
            # megabytes through the core, every frame and object of the host path is a
            # cache miss (docs/backends/cpu-performance.md). (Records exist only while the
            # runtime is initialized: cleanup clears the tracker first.)
            handle = plan_for(root, target).replay(args, self)
            if handle is not None:
                return handle
        return self._launch(root, args, stream, target, capacity)

    def _launch(self, root: Any, args: Any, stream: Any, target: Any, capacity: int) -> LaunchHandle:
        """``launch`` past its replay (which ``hpvm.launch`` tries in its own frame)."""
        if not self.initialized:
            self.require("launch")
        if stream is not False and stream is not True:
            stream = _stream_flag(root, stream)
        if not stream and target != "svm":
            return self._launch_once(plan_for(root, target), root, args)
        root = check_root(root)
        if target == "svm":
            return _launch_svm(self, root, args, stream, capacity)
        staged = streaming_root(root)  # nested pipelines inlined up to the root's stages
        backend = choose_backend(staged, target)
        _check_stream_args(args, capacity)
        if getattr(backend, "needs_cluster", False):
            self.dask_client()  # connect now: an unreachable scheduler is launch's error
        stream_ = Stream(staged, backend, capacity, self.tracker, self.dask_client)
        handle = LaunchHandle(self, root, backend, stream=stream_)
        handle.check_push = PushCheck(root, self.tracker)
        self._activate(handle)
        return handle

    def _launch_once(self, plan: LaunchPlan, root: InternalFunction, args: Any) -> LaunchHandle:
        """A non-streaming launch, with what does not change between launches of its root
        resolved once in ``plan`` (``plan.py``): per launch, the arguments' acceptors, one
        tracker lock, the sizes once per argument key, the run key."""
        backend, tracker = plan.backend, self.tracker  # (``root``: the plan's, as ``plan_for`` found it)
        accepted = plan.accept(args)
        if accepted is not None:
            values, args_key, arrays = accepted
        else:  # (what the acceptors do not take: accepted here, or explained)
            values = check_args(root, args, tracker, "launch")
            args_key, arrays = arg_key(values), array_args(values)
        if args_key is None or args_key not in plan.checked:  # (checked once per key)
            plan.check_sizes(values, args_key)
        if plan.needs_cluster:
            self.dask_client()  # connect now: an unreachable scheduler is launch's error
        entries = tracker.hold_arrays(arrays)
        if entries is None:  # an untracked array: check_args names it (or it was tracked since)
            tracked: list[TrackedArray] = []
            check_args(root, values, tracker, "launch", tracked)
            entries = tracker.hold(tracked)
        runs, times, known = None, plan.times, None  # (durations only where it may run here: quick.py)
        if times is not None:
            run_args = plan.run_args  # (the values of scalars that change no work left out)
            if run_args is not None and args_key is not None:
                args_key = run_args(args_key)  # (the sizes were checked with the whole key)
            key = keyed_run(backend.name, args_key, entries)
            if key is not None:
                runs = entry(times, key)  # (found once: the run adds to it)
                known = (times, key)
        # Quick: it cannot wait on anything, nothing else is in flight, and the last run
        # with the same run key was short. Done here, without a worker's wake-up (and on
        # one thread where that measured faster: ``quick.Runs.threads``).
        if runs is not None and not self.active and runs.quick():
            handle = self._run_quick(root, backend, values, arrays, entries, runs, known)
            if handle.error is None and tracker.host_only():  # the next launch like it replays this one
                record_replay(tracker, plan.ident(args), plan, root, args, entries, arrays, runs, known)
            return handle
        handle = LaunchHandle(self, root, backend)
        handle.arrays, handle.quick = arrays, known
        if runs is not None:  # (the host's CPU time from here to its wait: ``quick.waited_for``)
            handle.launched = (threading.get_ident(), time.thread_time(), runs)
        handle.job = self._job(handle, values, entries, runs)
        handle.queue()
        self._activate(handle)
        # The queued start holds the handle weakly: ``active`` keeps it alive until it has
        # run, and nothing keeps its results alive after the host dropped it.
        ref = weakref.ref(handle)

        def start() -> None:
            h = ref()
            if h is not None and h.job is not None and h.claim():
                h.job()

        handle.slot = self.workers.submit(start)
        return handle

    def _activate(self, handle: LaunchHandle) -> None:
        """Hold on to ``handle`` until its run (or stream) ends: cleanup ends what is active."""
        with self.lock:
            self.active.add(handle)

    def _run_quick(
        self,
        root: InternalFunction,
        backend: Any,
        values: Sequence[Any],
        arrays: list[Any],
        entries: list[TrackedArray],
        runs: Runs,
        known: tuple[dict[Any, Runs], Any] | None,
    ) -> LaunchHandle:
        """A quick launch, run inside ``launch`` on the calling thread (``quick.py``), and its
        handle: the job's run (``_job``) without what only a queued run needs (a closure, a
        completion lock, a worker counted idle, ``active``); with nothing on a device, one
        shared ``RunContext`` per thread count (the back ends that run quick only read its
        ``threads``). Each object touched is a cache miss after a step that streamed
        megabytes through the core (``docs/backends/cpu.md``); a replay (``plan.Replay``)
        does less again, in ``launch`` itself. Ctrl-C is raised here, not at a ``wait``
        that may never come."""
        handle = LaunchHandle(self, root, backend, done=FINISHED)
        handle.arrays, handle.quick = arrays, known
        threads = runs.threads()
        try:
            with collecting_warnings() as caught:
                handle.warnings = caught
                # A host back end with nothing on a device shares one context (the handle keeps
                # its defaults); a device back end's run gets its own and residency handling.
                if self.tracker.host_only() and backend.device == "host":
                    self._run_with(handle, values, self._quick_ctx[threads], runs, residency=False)
                else:
                    ctx = RunContext(self.tracker, cluster=self.dask_client, threads=threads, checked=True)
                    handle._transfers, handle.notes = ctx.transfers, ctx.notes
                    self._run_with(handle, values, ctx, runs)
        except BaseException as e:  # delivered to the host at wait()
            handle.error = e
        finally:
            self.tracker.release(entries)
            if isinstance(handle.error, KeyboardInterrupt):
                raise handle.error  # (a ``return`` above is overridden by this)
        return handle

    def _run_with(
        self,
        handle: LaunchHandle,
        values: list[Any],
        ctx: RunContext,
        runs: Runs | None,
        residency: bool = True,
    ) -> None:
        """Run the launch's graph: stale host copies of its arrays brought back from the
        devices first, what it wrote marked host-only after (unless ``residency`` is false:
        the tracker has nothing on a device, ``host_only``), its time added to ``runs`` (its
        run key's record, ``quick.py``; ``None``: a launch that never runs on the host)."""
        tracker, backend, root = self.tracker, handle.backend, handle.root
        token = tracker.prepare_for(backend, root, values, ctx.transfers) if residency else None
        try:
            start = time.perf_counter()
            handle.outputs = backend.run(root, values, ctx)
            if runs is not None:
                runs.add(time.perf_counter() - start, ctx.threads)
        finally:
            if token is not None:
                tracker.finished(token)

    def _job(
        self,
        handle: LaunchHandle,
        values: list[Any],
        entries: list[TrackedArray],
        runs: Runs | None,
    ) -> Callable[[], None]:
        """The run of one queued launch, as a job for a worker or for ``wait``, using the
        tracker's ``entries`` (held by the launch; released when the run ends)."""

        def run() -> None:
            # Claimed: nobody runs it again. Dropping it breaks the cycle handle -> job ->
            # handle, which left every launch (its handle, arrays and outputs: 30-odd
            # objects) to the cyclic garbage collector — a gen-0 collection every ~20
            # launches, and the arrays held until then.
            handle.job = None
            ctx = RunContext(self.tracker, cluster=self.dask_client, checked=True)
            try:
                with collecting_warnings() as caught:
                    handle.warnings, handle._transfers, handle.notes = caught, ctx.transfers, ctx.notes
                    self._run_with(handle, values, ctx, runs)
            except BaseException as e:  # delivered to the host at wait()
                handle.error = e
            finally:
                self.tracker.release(entries)
                self.workers.finishing()  # idle before the host can launch again
                with self.lock:  # (and no longer in flight: its next launch may be quick)
                    self.active.discard(handle)
                handle.done.set()

        return run

    def wait(self, handle: Any) -> tuple[Any, ...] | None:
        """Block until the launch completes; return the root's outputs (``None`` for a stream)."""
        h = handle
        if not (
            type(h) is LaunchHandle
            and h.runtime is self
            and h.generation == self.generation
            and self.initialized
        ):  # (``_check_handle``'s tests of a good handle, without its calls)
            h = _check_handle(self, handle, "wait")
        if h.done is not FINISHED:  # (a quick launch's is: it ran inside launch(), nothing to wait for)
            if h.stream is not None:
                try:
                    h.stream.wait()
                finally:
                    if h.stream.finished():
                        with self.lock:
                            self.active.discard(h)
                    reissue_warnings(h.stream.take_warnings(), stacklevel=4)
                return None
            if h.launched is not None:  # (a queued launch with a run key: did its host wait at once?)
                waited_for(h)
            if (
                h.job is not None
                and not h.done.is_set()
                and (_may_run_here(h.backend) or _short_in_wait(h))
                and h.claim()
            ):
                if h.slot is not None:
                    self.workers.withdraw(h.slot)  # the worker it was queued for is free again
                h.job()  # not started yet: run it here rather than wait for a worker to wake
            try:
                h.done.wait()  # (a lock: Ctrl-C interrupts it on the main thread)
            except KeyboardInterrupt:
                if h.slot is not None:
                    self.workers.abandon(h.slot)  # cleanup() will not wait for the run
                self.tracker.abandon(h.arrays)  # nor copy back what it may still be writing
                raise
        if h.warnings and not h.waited:  # the run's warnings, issued once, on the host thread
            h.waited = True
            reissue_warnings(h.warnings, stacklevel=4)
        if h.error is not None:
            err = h.error
            if isinstance(err, (HPVMError, KeyboardInterrupt)):
                raise err
            raise NodeExecutionError(f"running '{h.root.name}' raised {type(err).__name__}: {err}") from err
        return h.outputs

    def push(self, handle: Any, args: Any) -> None:
        """Send the inputs of one execution to a streaming launch (blocks while its buffer is full)."""
        h = _check_handle(self, handle, "push")
        if h.stream is None:
            raise StreamError(
                f"hpvm.push(): the launch of '{h.root.name}' is not streaming; launch it with stream=True"
            )
        assert h.check_push is not None
        h.stream.push(h.check_push(args))

    def pop(self, handle: Any, timeout: float | None = None) -> tuple[Any, ...]:
        """The outputs of the oldest execution not yet popped (blocks until it is ready)."""
        h = _check_handle(self, handle, "pop")
        if h.stream is None:
            raise StreamError(
                f"hpvm.pop(): the launch of '{h.root.name}' is not streaming; use hpvm.wait(handle) "
                "for its outputs"
            )
        outputs = h.stream.pop(timeout)
        reissue_warnings(h.stream.take_warnings(), stacklevel=4)
        return outputs


def _check_handle(runtime: Runtime, handle: Any, api: str) -> LaunchHandle:
    """``handle`` if it is a launch handle of ``runtime``, valid since its last cleanup, for
    the call ``api`` (a module function, not a method: the ``Runtime`` class stays within
    the size bar)."""
    runtime.require(api)
    if not isinstance(handle, LaunchHandle):
        raise LaunchError(f"hpvm.{api}() needs a handle returned by hpvm.launch(), not {handle!r}")
    if handle.runtime is not runtime:
        raise RuntimeStateError(f"hpvm.{api}(): this handle belongs to another runtime")
    if handle.generation != runtime.generation:
        raise RuntimeStateError(
            f"hpvm.{api}(): this handle was made before hpvm.cleanup() and is no longer valid"
        )
    return handle


def _launch_svm(
    runtime: Runtime, root: InternalFunction, args: Any, stream: bool, capacity: int
) -> LaunchHandle:
    """A streaming launch compiled onto the Streaming Virtual Machine (``svm_target``,
    imported only here: ``import hpvm`` loads nothing of it)."""
    if not stream:
        raise LaunchError(
            f"launch(target='svm'): '{root.name}' is not launched as a stream; the SVM target "
            "maps pipeline stages onto stream processors, so launch it with stream=True and "
            "push/pop items (or use target='cpu' / 'interp' for a single run)"
        )
    _check_stream_args(args, capacity)
    from .svm_target import launch_stream

    label, svm_stream = launch_stream(root, capacity, runtime.tracker)
    handle = LaunchHandle(runtime, root, label, stream=svm_stream)  # type: ignore[arg-type]
    handle.check_push = PushCheck(root, runtime.tracker)
    runtime._activate(handle)
    return handle


def _stream_flag(root: Any, stream: Any) -> bool:
    """``launch``'s ``stream`` as a bool. Anything else there is most often a root's argument
    passed outside ``args`` (``hpvm.launch(root, a, b)``), which NumPy would refuse to test."""
    if isinstance(stream, (bool, np.bool_)) or (isinstance(stream, int) and stream in (0, 1)):
        return bool(stream)
    name = getattr(root, "name", None) or getattr(root, "__name__", "root")
    raise LaunchError(
        f"hpvm.launch({name}, args, stream, target): stream must be True or False, not "
        f"{type(stream).__name__}; the root's arguments go in one tuple: "
        f"hpvm.launch({name}, (a, b, ...))"
    )


def _check_stream_args(args: Any, capacity: Any) -> None:
    """A streaming launch takes no arguments (pushes do) and a positive capacity."""
    # (``args != ()`` would compare element-wise when args is an array)
    if args is not None and not (isinstance(args, (tuple, list)) and len(args) == 0):
        raise LaunchError(
            "launch(..., stream=True) takes args=None: each hpvm.push(handle, args) "
            "supplies the inputs of one execution"
        )
    if not isinstance(capacity, int) or capacity < 1:
        raise LaunchError(f"capacity must be a positive int, not {capacity!r}")


# ---------------------------------------------------------------------------------------
# The fixed API of DESIGN.md: the process's default runtime

_default = Runtime()


def default_runtime() -> Runtime:
    """The runtime that ``hpvm.init``, ``hpvm.launch`` and the other API functions use."""
    return _default


def init(dask: Any = None) -> None:
    """Start the runtime. Calling it again while running does nothing.

    ``dask``: the cluster of ``target="dask"`` (a scheduler address or a
    ``distributed.Client``; see ``Runtime.init``).
    """
    _default.init(dask)


def cleanup() -> None:
    """Stop the runtime: end every stream, wait for running launches, forget tracked memory.

    Idempotent. Handles from before cleanup can no longer be used.
    """
    _default.cleanup()


def track_memory(array: Any) -> None:
    """Start tracking ``array`` so that it can be passed to graphs."""
    _default.track_memory(array)


def untrack_memory(array: Any) -> None:
    """Stop tracking ``array``."""
    _default.untrack_memory(array)


def request_memory(array: Any) -> Any:
    """Make the host copy of ``array`` current (copying it back from a device if needed)."""
    return _default.request_memory(array)


def mark_host_modified(array: Any) -> None:
    """Declare that the host wrote ``array`` (tracked) after a launch: its device copies are
    stale and the next GPU launch copies it again. ``request_memory`` it before writing."""
    _default.mark_host_modified(array)


def memory_stats() -> Transfers:
    """Bytes moved between host and devices by the default runtime (a copy)."""
    return _default.memory_stats()


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
    runtime = _default
    # (``Runtime.launch``'s replay in this frame, not a frame further: a replayed launch of a
    # tiny graph is a microsecond and a half in all, the frame a tenth of it)
    if stream is False and target != "svm" and runtime.tracker.replays and not runtime.active:
        handle = plan_for(root, target).replay(args, runtime)
        if handle is not None:
            return handle
    return runtime._launch(root, args, stream, target, capacity)


def wait(handle: Any) -> tuple[Any, ...] | None:
    """Block until the launch completes; return the root's outputs (``None`` for a stream)."""
    if type(handle) is not LaunchHandle:
        return _handle_runtime(handle).wait(handle)
    runtime = handle.runtime
    if (
        handle.done is FINISHED
        and handle.error is None
        and not handle.warnings
        and handle.generation == runtime.generation
        and runtime.initialized
    ):  # (``Runtime.wait`` of a quick launch that ran without an error or a warning, in this frame)
        return handle.outputs
    return runtime.wait(handle)


def push(handle: Any, args: Any) -> None:
    """Send the inputs of one execution to a streaming launch (blocks while its buffer is full)."""
    _handle_runtime(handle).push(handle, args)


def pop(handle: Any, timeout: float | None = None) -> tuple[Any, ...]:
    """The outputs of the oldest execution not yet popped (blocks until it is ready)."""
    return _handle_runtime(handle).pop(handle, timeout)


def _handle_runtime(handle: Any) -> Runtime:
    """The runtime a handle belongs to (the default one for anything that is not a handle,
    which then reports the mistake)."""
    return handle.runtime if isinstance(handle, LaunchHandle) else _default
