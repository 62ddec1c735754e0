"""The running SVM: one ``Context`` per ``svm.init()`` — the machine, its memories as
bytes, its FIFOs' state, one worker thread per kernel slot of each processor, and the one
lock and condition every blocking operation waits on.

Why one lock: stream, kernel and scheduling state change together (a pop may unblock a
pusher and finish a kernel that frees a processor), and one condition lets the runtime
decide, under the lock, that *every* agent is blocked — then a pop that nothing can ever
satisfy raises instead of hanging. Agents are the control thread and every thread running
a kernel; a waiter registers the predicate it waits for, so the decision is exact.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .errors import SVMError
from .machine import Machine, Processor
from .ring import NOTIFIED, WAITERS, Ring

if TYPE_CHECKING:
    from .kernels import Kernel

KERNEL_UNSTARTED = 0
KERNEL_WAITING = 1
KERNEL_RUNNING = 2
KERNEL_PAUSED = 3
KERNEL_FINISHED = 4
STATUS_NAMES = ("UNSTARTED", "WAITING", "RUNNING", "PAUSED", "FINISHED")
LIVE = (KERNEL_WAITING, KERNEL_RUNNING, KERNEL_PAUSED)


class TraceEvent(NamedTuple):
    """A kernel entering a state, ``time`` seconds after ``svm.init`` (``trace=True``)."""

    time: float
    kernel: str
    processor: str
    status: str


@dataclass
class ProgramUse:
    """What a run did with one stream or block: who wrote it and who read it (kernel
    names, or "control code"). Kept for ``svm.draw_program``."""

    kind: str  # "stream" or "block"
    name: str
    location: str
    writers: set[str] = field(default_factory=set)
    readers: set[str] = field(default_factory=set)
    obj: object = field(default=None, repr=False)  # keeps the id unique while recorded


class KernelStop(BaseException):
    """Unwinds a work function: ``kernel_end`` (``cleanup=False``) or ``svm.cleanup()``.
    A BaseException so that a work function's ``except Exception`` does not swallow it."""

    def __init__(self, cleanup: bool = False):
        super().__init__("kernel stopped")
        self.cleanup = cleanup


_tls = threading.local()


def holds(items: list[Kernel], kernel: Kernel) -> bool:
    """``kernel in items`` by identity."""
    return any(item is kernel for item in items)


def drop(items: list[Kernel], kernel: Kernel) -> None:
    """Remove ``kernel`` from ``items`` by identity (if there)."""
    for i, item in enumerate(items):
        if item is kernel:
            del items[i]
            return


def poke(state: object) -> None:
    """Tell a compiled kernel to call back into Python at its next stream or block
    operation (a pause, end or cleanup is pending): set its control word."""
    ctl = getattr(state, "ctl", None)
    if ctl is not None:
        ctl[0] = 1


def current_kernel() -> Kernel | None:
    """The kernel whose work function runs on this thread (None in control code)."""
    return getattr(_tls, "kernel", None)


class _Worker:
    """One thread of a processor: runs the kernels the scheduler assigns to it."""

    def __init__(self, ctx: Context, proc: Processor, index: int):
        self.ctx, self.proc = ctx, proc
        self.kernel: Kernel | None = None
        self.thread = threading.Thread(target=self._loop, name=f"svm-{proc.name}-{index}", daemon=True)

    def _loop(self) -> None:
        ctx = self.ctx
        while True:
            with ctx.cond:
                while self.kernel is None and not ctx.stopping:
                    ctx.cond.wait()
                if self.kernel is None:
                    return
                kernel = self.kernel
                kernel._svm.started = True
            _tls.kernel = kernel
            error: BaseException | None = None
            try:
                state = kernel._svm
                if state.jit is not None:  # a compiled kernel (jit_kernel.py)
                    state.jit.run()
                else:
                    state.work(kernel)
            except KernelStop:
                pass
            except BaseException as exc:  # reported at kernel_wait, naming the kernel (even SystemExit:
                error = exc  # a thread that died here would leave its kernel RUNNING for ever)
            finally:
                _tls.kernel = None
            with ctx.cond:
                ctx.finish(kernel, error)
                self.kernel = None
                ctx.schedule()
                ctx.cond.notify_all()


class _ProcRuntime:
    def __init__(self, ctx: Context, proc: Processor):
        self.proc = proc
        self.ctx = ctx
        self.slots = proc.max_concurrent_kernels if proc.is_dma else 1
        self.workers: list[_Worker] = []
        self.queue: list[Kernel] = []  # WAITING kernels, in kernel_run order
        self.held: list[Kernel] = []  # RUNNING or PAUSED kernels (each holds a slot)

    def idle_worker(self) -> _Worker | None:
        for worker in self.workers:
            if worker.kernel is None:
                return worker
        if len(self.workers) < self.slots:
            worker = _Worker(self.ctx, self.proc, len(self.workers))
            self.workers.append(worker)
            worker.thread.start()
            return worker
        return None


class Context:
    """The state of one initialised SVM (see the module docstring)."""

    def __init__(self, machine: Machine, check: bool, trace: bool = False):
        self.machine = machine
        self.check = check
        self.init_line = "<unknown>"  # where svm.init() was called (the message of a second init)
        self.tick = 0  # counts kernel_runs and finishes: the clock of restriction A7 (roles.py)
        self.trace: list[TraceEvent] | None = [] if trace else None
        self.program: dict[int, ProgramUse] = {}  # id(stream or block) -> its use
        self.program_kernels: dict[str, str] = {}  # kernel name -> processor
        self._observed: set[tuple[int, int, str]] = set()
        self.t0 = time.perf_counter()
        self.control = machine.control_processor
        self.cond = threading.Condition(threading.Lock())
        self.buffers: dict[str, np.ndarray] = {}
        self.fifo_rings: dict[str, Ring] = {}
        self.fifo_streams: dict[str, tuple[str, str]] = {}  # FIFO -> (its stream's name, init line): A8
        self.procs = {name: _ProcRuntime(self, p) for name, p in machine.processors.items()}
        self.control_thread = threading.current_thread()
        # Other threads outside kernels that have used a stream: more control code. While
        # alive and not waiting in an SVM operation, they might still push or pop.
        self.helper_threads: set[threading.Thread] = set()
        self.waiters: dict[threading.Thread, tuple[Callable[[], bool], Callable[[], str]]] = {}
        self.stopping = False
        # None: waits sleep until notified. Once a compiled kernel has run, at most this many
        # seconds, so a wake-up that compiled code's lock-free ring operations could miss
        # costs a short delay, never a hang (jit_ops.py).
        self.poll: float | None = None
        # Every kernel ever run here, by id: kernels compare by identity everywhere, since a
        # user's kernel type may define __eq__ (a dataclass does).
        self.kernels: dict[int, Kernel] = {}

    # -- memories ------------------------------------------------------------------------

    def memory(self, name: str, purpose: str) -> np.ndarray:
        """The bytes of RAM memory ``name`` (allocated on first use; zeroed pages are
        committed by the OS only when touched)."""
        buf = self.buffers.get(name)
        if buf is None:
            if name not in self.machine.memories:
                raise SVMError(
                    f"{purpose}: {name!r} is not a memory of machine {self.machine.name!r} "
                    f"(memories: {', '.join(self.machine.memories) or 'none'}"
                    + (f"; {name!r} is a {self.machine.kind_of(name)}" if self.machine.kind_of(name) else "")
                    + ")"
                )
            buf = self.buffers[name] = np.zeros(self.machine.memories[name].size, dtype=np.uint8)
        return buf

    def region(self, name: str, address: int, nbytes: int, purpose: str) -> np.ndarray:
        buf = self.memory(name, purpose)
        if address < 0 or nbytes < 0 or address + nbytes > len(buf):
            raise SVMError(
                f"{purpose}: bytes [{address:#x}, {address + nbytes:#x}) are outside memory {name} "
                f"(size {len(buf):#x} = {len(buf)} bytes): address {address:#x}, {nbytes} bytes; "
                "use a smaller address or count"
            )
        return buf[address : address + nbytes]

    # -- waiting ---------------------------------------------------------------------------

    def wait_until(
        self, ready: Callable[[], bool], describe: Callable[[], str], rings: tuple[Ring, ...] = ()
    ) -> None:
        """Block (holding ``cond`` on entry and exit) until ``ready()``; in a kernel, honour
        pause and end requests while waiting; raise ``SVMError`` if no agent can ever make
        ``ready()`` true. ``rings``: the rings waited on, whose ``WAITERS`` words tell compiled
        kernels to wake us when they change them."""
        me = threading.current_thread()
        kernel = current_kernel()
        woken = ready
        if kernel is not None:  # a pause or end request also wakes a kernel: it has something to do
            state = kernel._svm

            def woken() -> bool:
                return ready() or state.pause_requested or state.end_requested

        while True:
            if kernel is not None:
                self.checkpoint(kernel)
            elif self.stopping:
                raise SVMError("the SVM was cleaned up while control code waited")
            if ready():
                return
            if self._all_blocked(ready):
                raise SVMError(self._deadlock_message(describe()))
            self.waiters[me] = (woken, describe)
            for ring in rings:
                ring.state[WAITERS] += 1
                ring.state[NOTIFIED] = 0
            try:
                self.cond.wait(self.poll)
            finally:
                del self.waiters[me]
                for ring in rings:
                    ring.state[WAITERS] -= 1

    def record(self, kernel: str, processor: str | None, status: int) -> None:
        """Add a trace event (``trace=True`` only; under ``cond`` or from control code)."""
        if self.trace is not None:
            self.trace.append(
                TraceEvent(time.perf_counter() - self.t0, kernel, processor or "", STATUS_NAMES[status])
            )

    def observe(self, obj: object, kind: str, role: str, kernel: Kernel | None) -> None:
        """Record that ``kernel`` (None: control code) is a ``role`` ("writer" /
        "reader") of stream or block ``obj`` — once per pair (holds ``cond``)."""
        key = (id(kernel), id(obj), role)
        if key in self._observed:
            return
        self._observed.add(key)
        who = "control code" if kernel is None else kernel._svm.name
        use = self.program.get(id(obj))
        if use is None:
            use = self.program[id(obj)] = ProgramUse(kind, obj.name, obj.location, obj=obj)  # type: ignore[attr-defined]
        (use.writers if role == "writer" else use.readers).add(who)

    def notify(self) -> None:
        """Wake the threads waiting in SVM operations after a stream changed (holds
        ``cond``); nobody waiting, nothing to do — the common case on a busy stream."""
        if self.waiters:
            self.cond.notify_all()

    def note_control_thread(self) -> None:
        """Record a thread outside kernels that uses streams (holds ``cond``)."""
        me = threading.current_thread()
        if me is not self.control_thread and me not in self.helper_threads:
            self.helper_threads = {t for t in self.helper_threads if t.is_alive()} | {me}

    def checkpoint(self, kernel: Kernel) -> None:
        """Called by a kernel's thread at each SVM operation: stop, end, or pause here."""
        state = kernel._svm
        if self.stopping:
            raise KernelStop(cleanup=True)
        if state.end_requested:
            raise KernelStop()
        if state.pause_requested:
            state.pause_requested = False
            state.status = KERNEL_PAUSED
            self.cond.notify_all()
        if state.status == KERNEL_PAUSED:
            me = threading.current_thread()
            self.waiters[me] = (
                lambda: state.status != KERNEL_PAUSED or state.end_requested,
                lambda: "is PAUSED",
            )
            try:
                while state.status == KERNEL_PAUSED and not state.end_requested and not self.stopping:
                    self.cond.wait()
            finally:
                del self.waiters[me]
            if self.stopping:
                raise KernelStop(cleanup=True)
            if state.end_requested:
                raise KernelStop()

    def _agents(self) -> list[threading.Thread]:
        agents = [w.thread for p in self.procs.values() for w in p.workers if w.kernel is not None]
        if self.control_thread.is_alive():
            agents.append(self.control_thread)
        agents.extend(t for t in self.helper_threads if t.is_alive() and t is not self.control_thread)
        for thread in self.waiters:
            if thread not in agents:
                agents.append(thread)
        return agents

    def _all_blocked(self, ready: Callable[[], bool]) -> bool:
        me = threading.current_thread()
        for thread in self._agents():
            if thread is me:
                continue
            waiter = self.waiters.get(thread)
            if waiter is None or waiter[0]():
                return False
        return True

    def _deadlock_message(self, what: str) -> str:
        me = threading.current_thread()
        kernel = current_kernel()
        who = f"kernel {kernel._svm.name}" if kernel is not None else "control code"
        lines = [f"{who} {what}, and nothing can ever make it possible:"]
        for thread, (_, describe) in self.waiters.items():
            if thread is me:
                continue
            lines.append(f"  - {self.describe_thread(thread)} {describe()}")
        if not self.waiters or list(self.waiters) == [me]:
            lines.append("  - no kernel is running that could write or read it")
        lines.append(
            "Run the kernel that produces (or consumes) the stream first, push the data from "
            "control code, or end the stream with an EOS tag the reader checks."
        )
        return "\n".join(lines)

    def describe_thread(self, thread: threading.Thread) -> str:
        for p in self.procs.values():
            for w in p.workers:
                if w.thread is thread and w.kernel is not None:
                    return (
                        f"kernel {w.kernel._svm.name} ({STATUS_NAMES[w.kernel._svm.status]} on {p.proc.name})"
                    )
        return "control code" if thread is self.control_thread else f"thread {thread.name}"

    # -- kernels ---------------------------------------------------------------------------

    def deps_done(self, kernel: Kernel) -> bool:
        return all(dep._svm.finished_runs >= run for dep, run in kernel._svm.deps)

    def schedule(self) -> None:
        """Start every WAITING kernel whose dependences are FINISHED on a free slot of its
        processor (in kernel_run order per processor). Holds ``cond``."""
        for proc in self.procs.values():
            for kernel in list(proc.queue):
                if len(proc.held) >= proc.slots:
                    break
                if not self.deps_done(kernel):
                    continue
                worker = proc.idle_worker()
                if worker is None:
                    break
                drop(proc.queue, kernel)
                proc.held.append(kernel)
                kernel._svm.status = KERNEL_RUNNING
                worker.kernel = kernel
        self.cond.notify_all()

    def finish(self, kernel: Kernel, error: BaseException | None) -> None:
        state = kernel._svm
        proc = self.procs[state.proc]
        drop(proc.held, kernel)
        drop(proc.queue, kernel)
        state.status = KERNEL_FINISHED
        state.finished_runs = state.runs
        state.end_requested = state.pause_requested = False
        self.tick += 1
        state.release_roles(self.tick)
        if error is not None:
            state.error = error

    def stop(self, timeout: float) -> list[str]:
        """End every kernel and join every worker; names of threads that would not stop."""
        with self.cond:
            self.stopping = True
            for kernel in self.kernels.values():
                poke(kernel._svm)
            self.cond.notify_all()
        stuck = []
        for proc in self.procs.values():
            for worker in proc.workers:
                worker.thread.join(timeout)
                if worker.thread.is_alive():
                    stuck.append(worker.thread.name)
        with self.cond:  # kernels still queued (WAITING, or PAUSED before starting) end here
            for proc in self.procs.values():
                for kernel in list(proc.queue):
                    self.finish(kernel, None)
        return stuck


_context: Context | None = None
_last_trace: list[TraceEvent] | None = None  # the trace of the last cleaned-up run
_last_program: tuple[dict[str, str], list[ProgramUse]] | None = None  # and what it did
STOP_TIMEOUT = 2.0  # seconds cleanup() waits for each processor thread
_context_lock = threading.Lock()


def context() -> Context:
    """The running SVM; an ``SVMError`` saying to call ``svm.init()`` when there is none."""
    ctx = _context
    if ctx is None:
        raise SVMError("the SVM is not initialised: call svm.init() (or svm.init(machine)) first")
    return ctx


def init(machine: Machine | str | None = None, check: bool = False, trace: bool = False) -> Machine:
    """Start the SVM on ``machine`` (a ``Machine``, a TOML path, a shipped machine's name,
    or None for "this computer"); ``check=True`` turns on the assertion mode; ``trace=True``
    records every kernel state change (``svm.trace_events()``, ``svm.draw_trace(path)``).
    Returns the machine. A second ``init`` while one is running is an ``SVMError``: its
    kernels, streams and blocks would silently lose their machine, so the program must say
    so with ``svm.cleanup()`` first."""
    global _context
    from .machine import load_machine, this_computer
    from .where import caller_line

    running = _context
    if running is not None:
        raise SVMError(
            f"svm.init at {caller_line()}: the SVM is already initialised (machine {running.machine.name!r}, "
            f"by svm.init at {running.init_line}); call svm.cleanup() first to stop its kernels and free "
            "its memories, then svm.init again"
        )

    if machine is None:
        machine = this_computer()
    elif isinstance(machine, str | os.PathLike):
        machine = load_machine(machine)
    elif not isinstance(machine, Machine):
        raise SVMError(
            f"svm.init: machine must be a Machine, a TOML file's path, a shipped machine's name or None, "
            f"got {type(machine).__name__}"
        )
    machine.control_processor  # noqa: B018 — a machine without one cannot run control code
    with _context_lock:
        if _context is not None:  # another thread initialised it meanwhile
            raise SVMError(
                "svm.init: the SVM was initialised by another thread meanwhile; call svm.cleanup() first"
            )
        _context = Context(machine, check, trace)
        _context.init_line = caller_line()
    return machine


def cleanup() -> None:
    """Stop every kernel and processor thread and free the memories. Safe to call twice."""
    global _context, _last_trace, _last_program
    with _context_lock:
        ctx, _context = _context, None
    if ctx is not None:
        if ctx.trace is not None:
            _last_trace = ctx.trace
        if ctx.program_kernels or ctx.program:
            _last_program = (dict(ctx.program_kernels), list(ctx.program.values()))
        stuck = ctx.stop(STOP_TIMEOUT)
        if stuck:
            raise SVMError(
                f"svm.cleanup(): the work functions on {', '.join(stuck)} did not stop within {STOP_TIMEOUT:g} s; "
                "a work function that loops without calling any svm function cannot be interrupted"
            )


def trace_events() -> list[TraceEvent]:
    """The kernel state changes recorded since ``svm.init(..., trace=True)`` (after
    ``svm.cleanup()``: those of the last traced run), in order."""
    ctx = _context
    if ctx is not None and ctx.trace is not None:
        with ctx.cond:
            return list(ctx.trace)
    if ctx is None and _last_trace is not None:
        return list(_last_trace)
    raise SVMError("no trace: start the SVM with svm.init(machine, trace=True) to record kernel states")


def program_uses() -> tuple[dict[str, str], list[ProgramUse]]:
    """The kernels (name -> processor) of the running SVM, or of the last run cleaned up,
    and every stream and block they or control code used, with writers and readers."""
    ctx = _context
    if ctx is not None and (ctx.program_kernels or ctx.program):
        with ctx.cond:
            return dict(ctx.program_kernels), list(ctx.program.values())
    if _last_program is not None:
        return _last_program
    raise SVMError("no program has run yet: run kernels (or use streams) after svm.init() first")


def current_machine() -> Machine:
    """The machine the SVM runs on."""
    return context().machine
