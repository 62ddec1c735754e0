"""Kernels: the base type, its five states, and the control functions of the seed.

A user kernel subclasses ``Kernel`` and calls ``kernel_init(k, proc, scratch, work)`` from
its init function; ``work(k)`` runs on a thread of processor ``proc``. The states follow
the seed's execution model: UNSTARTED →run→ WAITING →(dependences FINISHED, a free slot on
the processor)→ RUNNING ⇄ PAUSED (``kernel_pause`` / ``kernel_run``) → FINISHED (the work
function returns, or ``kernel_end``); ``kernel_init`` again → UNSTARTED.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import checks, runtime
from .errors import SVMError, SVMRestrictionError
from .machine import Processor
from .runtime import (
    KERNEL_FINISHED,
    KERNEL_PAUSED,
    KERNEL_RUNNING,
    KERNEL_UNSTARTED,
    KERNEL_WAITING,
    LIVE,
    STATUS_NAMES,
    Context,
    KernelStop,
    context,
    current_kernel,
    drop,
    holds,
)
from .where import caller_line, user_name


class KernelState:
    """What the runtime keeps about a kernel (on ``kernel._svm``; not part of the API)."""

    def __init__(self) -> None:
        self._status = KERNEL_UNSTARTED
        self.proc: str | None = None
        self.work: Callable[[Any], None] | None = None
        self.scratch: Any = None
        self.name = "kernel"
        self.kind = "USER_DEFINED_KERNEL"
        self.runs = 0  # executions started (kernel_run from UNSTARTED)
        self.finished_runs = 0  # executions FINISHED; a dependence waits for one of these
        self.deps: list[tuple[Kernel, int]] = []
        self.pause_requested = False
        self.end_requested = False
        self.started = False  # the work function was entered in this execution
        self.error: BaseException | None = None
        self.initialised = False
        self.init_line = ""
        self.resources: frozenset[int] = frozenset()  # ids of the streams/blocks it was given
        # B3: its stream and block members when kernel_init was called again, compared at kernel_run
        self.previous_arguments: dict[str, Any] | None = None
        self.previous_init_line = ""
        self.run_tick = 0  # Context.tick at this execution's kernel_run (A7)
        self.run_line = ""  # where kernel_run started this execution
        self.roles: list[Any] = []  # the roles.Hold of this execution (A7)
        self.role_keys: set[tuple[int, str]] = set()  # (id(stream), role) of those holds
        self.ctx: Context | None = None  # the svm.init() it was initialised under
        self.compiled = False  # kernel_init(..., compiled=True): Numba, nogil (jit_kernel.py)
        self.jit: Any = None  # the compiled execution (a jit_kernel.JitRun) while it runs
        self.ctl: Any = None  # a compiled kernel's control word (int64 array; runtime.poke)

    @property
    def status(self) -> int:
        return self._status

    @status.setter
    def status(self, value: int) -> None:
        self._status = value
        ctx = runtime._context
        if ctx is not None and ctx.trace is not None:
            ctx.record(self.name, self.proc, value)

    def release_roles(self, tick: int) -> None:
        """The execution is over at ``tick``: it no longer reads or writes its streams (A7)."""
        for hold in self.roles:
            hold.end = tick
        self.roles = []
        self.role_keys = set()


class Kernel:
    """Base of every kernel (user-defined, predefined, black box). Subclass it and give
    the subclass the kernel's data members; ``k.kernel`` is ``k`` (the seed's
    ``&k.kernel``). Data members may be read by control code when the kernel is not
    WAITING or RUNNING (the seed's SumKernel)."""

    kind = "USER_DEFINED_KERNEL"  # a black box or predefined kernel overrides it with its name

    def __new__(cls, *args: Any, **kwargs: Any) -> Kernel:
        self = super().__new__(cls)
        state = KernelState()
        state.owner = self  # type: ignore[attr-defined]
        object.__setattr__(self, "_svm", state)
        return self

    @property
    def kernel(self) -> Kernel:
        return self

    def __repr__(self) -> str:
        state = self._svm
        return f"<{type(self).__name__} {state.name} {STATUS_NAMES[state.status]} on {state.proc}>"


def _state(k: Any, function: str) -> KernelState:
    if not isinstance(k, Kernel):
        raise SVMError(f"{function}: expected an svm.Kernel, got {type(k).__name__} (at {caller_line()})")
    return k._svm


def _need_init(ctx: Context, k: Kernel, function: str, always: bool = True) -> KernelState:
    """``k``'s state, initialised on this ``svm.init()`` (restriction B1: always where the
    function needs a processor, in the assertion mode where an UNSTARTED kernel would do)."""
    state = _state(k, function)
    _same_init(ctx, state, function)
    if not state.initialised and (always or ctx.check):
        raise SVMRestrictionError(
            "B1",
            f"{function}({type(k).__name__}) before its initialisation function, at {caller_line()}: "
            "call kernel_init (or the kernel's *_init) first",
        )
    return state


def _same_init(ctx: Context, state: KernelState, function: str) -> None:
    if state.initialised and state.ctx is not ctx:
        raise SVMError(
            f"{function}: kernel {state.name} was initialised before the last svm.init() (at {state.init_line}); "
            "initialise it again on the machine in use"
        )


def _control_only(ctx: Context, function: str, k: Kernel | None = None) -> None:
    running = current_kernel()
    if ctx.check and running is not None:
        target = f" on kernel {k._svm.name}" if k is not None else ""
        raise SVMRestrictionError(
            "A3",
            f"{function}{target} called from the work function of kernel {running._svm.name} "
            f"({caller_line()}); initialisation and kernel control (except kernel_pause) belong "
            "in control code",
        )


def kernel_init(
    k: Kernel,
    proc_location: str,
    scratch: Any,
    work: Callable[[Any], None],
    *,
    name: str | None = None,
    compiled: bool = False,
) -> None:
    """Make ``k`` a kernel on processor ``proc_location`` with work function ``work``
    (called as ``work(k)``), spilling to block ``scratch`` (or None); back to UNSTARTED.
    ``compiled=True``: ``work`` is compiled with Numba (``nogil``) at ``kernel_run`` and
    runs without the GIL (docs/svm.md, "Compiled kernels")."""
    ctx = context()
    state = _state(k, "kernel_init")
    _control_only(ctx, "kernel_init", k)
    if state.status in LIVE:
        raise SVMRestrictionError(
            "A1",
            f"kernel_init on kernel {state.name}, which is {STATUS_NAMES[state.status]}, at "
            f"{caller_line()}: kernel_wait for it (or kernel_end it) before initialising it again",
        )
    if not callable(work):
        raise SVMError(
            f"kernel_init: work must be a function taking the kernel, got {work!r} (at {caller_line()})"
        )
    proc = _processor(ctx, proc_location, type(k).kind, "kernel_init")
    if state.ctx is not ctx:  # a new svm.init(): a new machine, nothing to compare with (B2, B3)
        state.initialised, state.resources, state.previous_arguments = False, frozenset(), None
    from .blocks import Block

    if scratch is not None and not isinstance(scratch, Block):
        raise SVMError(f"kernel_init: scratch must be an svm.Block or None, got {type(scratch).__name__}")
    if ctx.check:
        checks.b6_not_recursive("kernel_init")
        if state.initialised and state.proc != proc.name:
            raise SVMRestrictionError(
                "B2",
                f"kernel {state.name} initialised on {proc.name} at {caller_line()} but on "
                f"{state.proc} before ({state.init_line}); use the same processor every time",
            )
        if state.initialised:  # a re-initialisation: the same stream and block arguments (B3)
            checks.b3_same_scratch(k, scratch)
            state.previous_arguments = checks.kernel_arguments(k)
            state.previous_init_line = state.init_line
    state.proc = proc.name
    state.work = work
    state.scratch = scratch
    state.kind = type(k).kind
    state.name = name or user_name(k, f"{type(k).__name__.lower()}@{id(k):x}")
    state.status = KERNEL_UNSTARTED
    state.deps = []
    state.pause_requested = state.end_requested = state.started = False
    state.error = None
    state.compiled = bool(compiled)
    state.jit = None
    state.initialised = True
    state.ctx = ctx
    state.init_line = caller_line()


def _processor(ctx: Context, location: str, kind: str, function: str) -> Processor:
    machine = ctx.machine
    proc = machine.processors.get(location)
    if proc is None:
        raise SVMError(
            f"{function}: {location!r} is not a processor of machine {machine.name!r} "
            f"(processors: {', '.join(machine.processors)}), at {caller_line()}"
        )
    user = kind == "USER_DEFINED_KERNEL"
    if not proc.supports(kind, user):
        raise SVMError(
            f"{function}: processor {proc.name} does not support {'user-defined kernels' if user else 'kernel ' + kind} "
            f"(its supported_kernels: {', '.join(proc.supported_kernels) or 'none'}), at {caller_line()}; "
            "pick a processor whose metadata lists it"
        )
    if ctx.control.name not in proc.master:
        raise SVMError(
            f"{function}: processor {proc.name} is controlled by {', '.join(proc.master)}, not by the "
            f"control processor {ctx.control.name} (at {caller_line()})"
        )
    return proc


def kernel_add_dependence(k: Kernel, depends_on: Kernel) -> None:
    """``k`` will not start its work function before the current (last) execution of
    ``depends_on`` is FINISHED; ignored when ``depends_on`` is UNSTARTED."""
    ctx = context()
    state = _need_init(ctx, k, "kernel_add_dependence")
    other = _need_init(ctx, depends_on, "kernel_add_dependence", always=False)
    _control_only(ctx, "kernel_add_dependence", k)
    if state.status != KERNEL_UNSTARTED:
        raise SVMError(
            f"kernel_add_dependence({state.name}, {other.name}) at {caller_line()}: {state.name} is "
            f"{STATUS_NAMES[state.status]}; a dependence can only be added to an UNSTARTED kernel "
            "(before kernel_run)"
        )
    if other.status == KERNEL_UNSTARTED:
        return
    if ctx.check:
        checks.a9_common_memory(ctx, k, depends_on)
    with ctx.cond:
        state.deps.append((depends_on, other.runs))


def kernel_ready(k: Kernel) -> None:
    """A hint that ``k`` will run soon: starts its processor's thread ahead of time (the
    seed's loading of the kernel into instruction memory)."""
    ctx = context()
    state = _need_init(ctx, k, "kernel_ready")
    _control_only(ctx, "kernel_ready", k)
    with ctx.cond:
        proc = ctx.procs[state.proc]
        if not proc.workers:
            proc.idle_worker()


def kernel_run(k: Kernel) -> None:
    """Start ``k`` (UNSTARTED → WAITING, RUNNING once its dependences are FINISHED and its
    processor has a free slot) or resume it (PAUSED → RUNNING). Non-blocking."""
    ctx = context()
    state = _need_init(ctx, k, "kernel_run")
    _control_only(ctx, "kernel_run", k)
    jit = None
    if state.compiled and state.status == KERNEL_UNSTARTED:
        try:
            from . import jit_kernel  # imports Numba: only programs with compiled kernels pay for it
        except ImportError as exc:
            raise SVMError(
                f"kernel_run({state.name}): a compiled kernel (kernel_init(..., compiled=True)) needs Numba, "
                f"which cannot be imported ({exc}); install it (pip install 'hpvm[cpu]') or drop compiled=True"
            ) from exc
        jit = jit_kernel.prepare(ctx, k)
    with ctx.cond:
        if state.status == KERNEL_UNSTARTED:
            state.jit = jit
            resources = checks.kernel_resources(k)
            if ctx.check:
                state.run_tick, state.run_line = ctx.tick + 1, caller_line()
                checks.on_run(ctx, k, resources)
                ctx.tick += 1
            state.previous_arguments = None
            state.resources = frozenset(id(r) for r in resources)
            state.runs += 1
            state.status = KERNEL_WAITING
            ctx.kernels[id(k)] = k
            ctx.program_kernels[state.name] = state.proc
            ctx.procs[state.proc].queue.append(k)
            ctx.schedule()
        elif state.status == KERNEL_PAUSED:
            if state.started or holds(ctx.procs[state.proc].held, k):
                state.status = KERNEL_RUNNING
            else:
                state.status = KERNEL_WAITING
                ctx.procs[state.proc].queue.append(k)
                ctx.schedule()
            ctx.cond.notify_all()
        elif state.status == KERNEL_FINISHED:
            raise SVMError(
                f"kernel_run({state.name}) at {caller_line()}: the kernel is FINISHED; call its "
                "initialisation function again to run it again"
            )


def kernel_pause(k: Kernel) -> None:
    """Pause ``k`` on a best-effort basis: a RUNNING kernel pauses at its next stream or
    block operation (at once when its own work function calls this); a WAITING kernel is
    held back. Follow with ``kernel_wait`` to be sure it has paused."""
    ctx = context()
    state = _need_init(ctx, k, "kernel_pause")
    with ctx.cond:
        if current_kernel() is k:
            state.status = KERNEL_PAUSED
            ctx.cond.notify_all()
            ctx.checkpoint(k)
        elif state.status == KERNEL_RUNNING:
            state.pause_requested = True
            runtime.poke(state)
            ctx.cond.notify_all()
        elif state.status == KERNEL_WAITING:
            drop(ctx.procs[state.proc].queue, k)
            state.status = KERNEL_PAUSED
            ctx.cond.notify_all()


def kernel_end(k: Kernel) -> None:
    """End ``k``: at once when its own work function calls this, or when it is not
    running; else at its next stream or block operation. Follow with ``kernel_wait``."""
    ctx = context()
    state = _need_init(ctx, k, "kernel_end")
    if current_kernel() is k:
        raise KernelStop()
    _control_only(ctx, "kernel_end", k)
    with ctx.cond:
        if state.status in (KERNEL_RUNNING, KERNEL_PAUSED) and holds(ctx.procs[state.proc].held, k):
            state.end_requested = True
            runtime.poke(state)
        elif state.status != KERNEL_FINISHED:
            if state.status == KERNEL_UNSTARTED:
                state.runs += 1
            ctx.finish(k, None)
            ctx.schedule()
        ctx.cond.notify_all()


def _stopped(state: KernelState) -> bool:
    return state.status in (KERNEL_PAUSED, KERNEL_FINISHED)


def _raise_failure(state: KernelState) -> None:
    error = state.error
    if error is None:
        return
    where = f"kernel {state.name} (on {state.proc}, initialised at {state.init_line})"
    if isinstance(error, SVMRestrictionError):
        raise SVMRestrictionError(
            error.restriction, f"{str(error).split(': ', 1)[1]} [in {where}]"
        ) from error
    if isinstance(error, SVMError):
        raise SVMError(f"{where} failed: {error}") from error
    raise SVMError(f"{where} failed: its work function raised {type(error).__name__}: {error}") from error


def kernel_wait(k: Kernel) -> None:
    """Block until ``k`` is PAUSED or FINISHED (ignored when UNSTARTED). An exception from
    its work function is raised here as an ``SVMError`` naming the kernel."""
    ctx = context()
    state = _need_init(ctx, k, "kernel_wait", always=False)
    _control_only(ctx, "kernel_wait", k)
    if state.status == KERNEL_UNSTARTED:
        return
    with ctx.cond:
        ctx.wait_until(lambda: _stopped(state), lambda: f"waits for kernel {state.name} in kernel_wait")
    _raise_failure(state)


def kernel_wait_multiple(*ks: Kernel) -> None:
    """Block until at least one of ``ks`` is PAUSED or all are FINISHED (UNSTARTED
    kernels are ignored)."""
    ctx = context()
    _control_only(ctx, "kernel_wait_multiple")
    states = [_need_init(ctx, k, "kernel_wait_multiple", always=False) for k in ks]
    live = [s for s in states if s.status != KERNEL_UNSTARTED]
    if not live:
        return

    def ready() -> bool:
        return any(s.status == KERNEL_PAUSED for s in live) or all(s.status == KERNEL_FINISHED for s in live)

    names = ", ".join(s.name for s in live)
    with ctx.cond:
        ctx.wait_until(ready, lambda: f"waits for kernels {names} in kernel_wait_multiple")
    for s in live:
        if s.status == KERNEL_FINISHED:
            _raise_failure(s)


def kernel_get_status(k: Kernel) -> int:
    """The status of ``k``: one of the ``KERNEL_*`` constants. (In the assertion mode, as
    any kernel control function but ``kernel_pause``, only from control code: A3, B1.)"""
    state = _state(k, "kernel_get_status")
    ctx = runtime._context
    if ctx is not None and ctx.check:  # a kernel of an earlier svm.init() is FINISHED: no error
        _control_only(ctx, "kernel_get_status", k)
        if not state.initialised:
            _need_init(ctx, k, "kernel_get_status", always=False)
    return state.status


def status_name(status: int) -> str:
    """``"RUNNING"`` for ``KERNEL_RUNNING`` and so on."""
    return STATUS_NAMES[status]
