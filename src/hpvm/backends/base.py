"""The back-end interface, the run context and the registry.

A back end runs a whole root graph (``run``) or, for streaming, one pipeline stage: a subset
of the root's children for one pushed item (``run_stage``) or for several waiting items at
once (``run_stage_batch``). What it needs from whoever runs
it — the memory tracker, where to count the bytes it moves, how many pipeline stages share
the machine — comes in a ``RunContext`` argument, never from a global, so a back end runs
the same under the runtime, inside a Dask worker or on an SVM processor (``RunContext()``
with nothing tracked). Back ends register a factory under their name, and optionally a
probe that says whether they can run here; both run only when the back end is first asked
for, so importing hpvm loads no device library.
"""

from __future__ import annotations

import threading
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, NoReturn

from ..errors import BackendUnavailableError, CompileError, HPVMWarning
from ..ir.args import check_arguments
from ..ir.bodies import GENERATED, PYTHON
from ..ir.graph import (
    CPU_TARGET,
    GPU_TARGET,
    TENSOR_TARGET,
    InternalFunction,
    LeafFunction,
    Node,
    NodeFunction,
    functions,
)
from ..ir.types import ArrayType, PortType
from ..passes.base import Pass
from .memory import MemoryTracker, Transfers

# What each hint means, as back ends in order of preference: the first one available runs.
HINT_PREFERENCES: dict[str | None, tuple[str, ...]] = {
    None: ("cpu", "interp"),
    CPU_TARGET: ("cpu", "interp"),
    GPU_TARGET: ("cuda", "opencl"),
    TENSOR_TARGET: ("tensor",),
}


PortKey = tuple[int, str]  # (output port, "each" | "last"): see Backend.export_outputs


@dataclass
class RunContext:
    """What one run of a back end gets from whoever runs it.

    ``tracker``: the host's memory tracker (which arrays are tracked, where each is valid);
    a fresh one when the back end runs on its own. ``transfers``: where the run counts the
    bytes it moves (``handle.transfers``). ``stages``: how many pipeline stages run
    concurrently with this one (a streaming launch), so a back end can share the cores.
    ``cluster``: returns the runtime's Dask client, connecting (or starting a local
    cluster) on first call; ``None`` outside a runtime. A hook, not a client, so that a
    launch on another back end never starts a cluster and back ends never import the
    runtime. ``notes``: what the back end wants the user to know about how it ran the graph
    (``hpvm run --timings`` prints them), such as a node kept on one worker and why.
    ``threads``: the most threads the run's parallel loops may use (``None``: the back
    end's default); the runtime gives a quick launch one thread where that measured
    faster (``runtime/quick.py``). ``instance``: the instance of the root of this run when that root is not the launch's
    but the function of a node that mixes devices (``backends/mixed.py``), one instance of
    which this run is: its level as ``ir/instance_context.py`` lays it out (ids, extents,
    dims); empty for a launch's root. Back ends with ``Backend.outer_instance`` give it to
    the leaves that query their ancestors. ``checked``: whoever made the context checked the
    run's arguments (count, types, read-only arrays the graph writes) — the runtime does at
    every launch; a back end given a context without it checks them itself
    (``Backend.checked_context``).
    """

    tracker: MemoryTracker = field(default_factory=MemoryTracker)
    transfers: Transfers = field(default_factory=Transfers)
    stages: int = 1
    cluster: Callable[[], Any] | None = None
    notes: list[str] = field(default_factory=list)
    instance: tuple[int, ...] = ()
    threads: int | None = None
    checked: bool = False

    def record(self, to_device: int = 0, to_host: int = 0, internal: bool = False, copies: int = 0) -> None:
        """Count bytes this run moved (in the run and in the tracker's totals)."""
        self.tracker.record(self.transfers, to_device, to_host, internal, copies)


@dataclass
class StageBatch:
    """What ``Backend.run_stage_batch`` returns for a list of streamed items.

    ``produced`` and ``outputs`` hold what ``run_stage`` returns, one entry per item that
    ran, in item order. When an item raised, ``error`` is its exception (as ``run_stage``
    raises it: naming the node where the back end can) and it is the item at index
    ``len(produced)``; the items after it did not run.
    """

    produced: list[dict[str, Any]]
    outputs: list[dict[int, Any]]
    error: BaseException | None = None


class NativeCall(NamedTuple):
    """A compiled run callable from C as ``void f(int64_t *block)`` at ``address``, for one
    replay record's arguments: ``template`` is its block (64-bit slots, native byte order)
    with the scalars in place; per argument in order, an array takes ``2 + 2 * ndim`` slots
    — ``flags | ndim << 32`` (NumPy's C-contiguous, Fortran-contiguous, aligned and
    writeable flags the call was compiled for: the caller compares them first), then its
    data pointer, dimensions and strides, which the caller writes —, a scalar one slot;
    the last two slots are a status the call writes (0: done). ``failed(code, info)``
    raises what a nonzero status means, as the function would have raised it. ``kinds``,
    one byte per argument: ``a`` an array, and a scalar, written per call from the argument
    (a replay's key leaves out the values of scalars that change no work, and takes ``-0.0``
    for ``0.0``): ``f`` a float, as a double's bits, ``b`` a bool, 0 or 1, ``s`` an integer,
    its 64 bits.
    The root's outputs, scalars, are the block's last ``len(returns)`` slots, after the
    status: ``returns`` says how each is written (``f`` a double's bits, ``i`` a signed and
    ``u`` an unsigned 64-bit integer, ``b`` 0 or 1), ``makers`` the type each becomes
    (the port's NumPy type, as the runner gives it) and ``codes`` its dtype's character
    (``np.dtype(t).char``: the C makes such a scalar itself). Made by the cpu back end
    (``backends/cpu/native.py``); the replay in C calls it (``runtime/_replay.c``)."""

    address: int
    template: bytes
    failed: Callable[[int, int], NoReturn]
    kinds: bytes
    owner: Any = None  # (what holds the code at ``address``: kept alive with the call)
    returns: bytes = b""
    makers: tuple[Any, ...] = ()
    codes: bytes = b""


class DirectCall(NamedTuple):
    """A root's run as one call (``Backend.direct``): ``entry(*args, tail)`` returns its
    outputs (a tuple, or what ``tuple()`` makes one of), and on an exception ``failed(args,
    error)`` raises what it means to the user, as the runner would. ``single``, where the
    back end has one, is called the same way for a run on one thread (``quick.Runs.threads``:
    the runner's ``threads`` of 1). ``native`` and ``native_single``, where the back end
    made them (``Backend.direct``'s ``native``), are ``entry`` and ``single`` for these
    arguments as ``NativeCall``s. ``results``, where given, makes the outputs of what
    ``entry`` or ``single`` returned (the cpu back end's scalar outputs as their ports'
    NumPy types, as its runner gives them; its native calls make them themselves)."""

    entry: Callable[..., Any]
    tail: Any
    failed: Callable[[Sequence[Any], Exception], NoReturn]
    single: Callable[..., Any] | None = None
    native: NativeCall | None = None
    native_single: NativeCall | None = None
    results: Callable[[Any], tuple[Any, ...]] | None = None


class Backend(ABC):
    """One way of executing HPVM graphs.

    ``accepts``: the kinds of leaf body it runs (``ir.bodies``); a graph with a leaf of
    another kind is a ``CompileError`` naming the leaf. ``pointer_ports``: whether it runs
    pointer-only array ports (``u8[*]``, HPVM's pointer without its size: the memory from its
    address on), else a graph with one is a ``CompileError`` naming the port. ``lowering``: its pass pipeline; a
    back end that has one compiles ``passes.lower(root, lowering)`` and reads what the
    passes wrote (node attributes, cloned leaves) instead of deciding again.
    """

    name: str = "?"
    device: str = "host"  # the address space its arrays live in (the memory tracker's key)
    accepts: frozenset[str] = frozenset({PYTHON, GENERATED})
    pointer_ports: bool = False
    #: The passes a graph goes through before this back end compiles it (``passes.lower``).
    lowering: tuple[Pass, ...] = ()
    #: Whether a run sees Ctrl-C itself when it runs on the host's main thread: it runs
    #: Python between its native calls, so ``KeyboardInterrupt`` stops it there. A back end
    #: whose runs sit in native code (a compiled graph) is run on a worker thread instead,
    #: and ``wait`` blocks where Ctrl-C reaches it (docs/semantics.md, "Ctrl-C").
    interruptible_on_host: bool = False
    #: Whether a launch may run inside ``launch`` itself when its last run with the same
    #: arguments was quick (``runtime/quick.py``): true for back ends whose leaves are
    #: compiled, which cannot wait for something the host does after ``launch`` returns (a
    #: Python leaf on ``interp`` can: it may wait for an event the host sets before ``wait``).
    #: Such a back end's ``run`` on the host (``device`` ``"host"``) reads only ``threads`` of
    #: its context when the tracker has nothing on a device: the runtime then hands quick runs
    #: one shared ``RunContext``. A device back end's quick runs get a context of their own
    #: and the tracker's residency handling, as on a worker.
    runs_quick_on_launch: bool = False
    #: Whether a streaming launch with scalars only at its boundary may run its items fused,
    #: in batches on the host thread (``runtime/streaming.py``, ``fusable``): the back end's
    #: ``run_stage_batch`` runs a batch as one compiled loop (``cpu``).
    fuses_streams: bool = False
    #: Whether ``run_stage`` shows its leaves the root's instance from ``RunContext.instance``
    #: (a part below a replicated mixed node may then query that node's instance).
    outer_instance: bool = False
    #: Whether a run may write its array arguments (then the memory tracker gives the arrays
    #: the graph may write new versions after a host run); false for back ends that only
    #: read them (``tensor``: its operations make new tensors).
    writes_arguments: bool = True
    #: Whether a streaming launch may run two items of one stage at once on threads of
    #: this process (``runtime/replicas.py``): true where a stage runs as compiled code
    #: that releases the GIL (``cpu``), so two calls use two cores; the interpreter's
    #: Python leaves hold the GIL, and Dask and the GPUs run stages elsewhere.
    stage_replicas: bool = False

    def loop_threads(self) -> int:
        """How many of this process's threads a run spreads a replicated node's instances
        over; 0 when it does not (the interpreter runs them one after the other, Dask and
        the GPUs elsewhere). A streaming launch whose stages each fill the machine runs
        them as one stage (``runtime/streaming.py``, ``one_stage``)."""
        return 0

    @abstractmethod
    def run(
        self, root: InternalFunction, args: Sequence[Any], ctx: RunContext | None = None
    ) -> tuple[Any, ...]:
        """Execute ``root`` once with ``args``; return its outputs. Starts with
        ``checked_context``: a run called directly checks its arguments."""

    def checked_context(self, root: InternalFunction, args: Any, ctx: RunContext | None) -> RunContext:
        """The run's context, after checking ``args`` unless whoever made ``ctx`` did.

        The runtime checks every launch's arguments once, and its contexts say so; a back end
        run directly (``get_backend("cpu").run(root, args)``, documented in docs/api.md) would
        otherwise take a missing argument to generated code and fail there with an
        ``IndexError``. One flag test on the runtime's path."""
        if ctx is not None and ctx.checked:
            return ctx
        check_arguments(root, args, f"get_backend('{self.name}').run")
        return ctx if ctx is not None else RunContext(checked=True)

    #: Changes whenever ``runner`` would give another callable for a root it gave one for
    #: before (a mode switched: ``cpu.configure(checked=)``). A replay recorded under another
    #: value is stale: it would run the old mode's code (``runtime/plan.py``, ``Replay``).
    runners_version: int = 0

    def runner(self, root: InternalFunction) -> Callable[[Sequence[Any], int | None], tuple[Any, ...]] | None:
        """``run`` of ``root`` without a ``RunContext``, as one callable ``(args, threads)``
        resolved once, or ``None`` (the default: a back end without one). A back end that
        ``runs_quick_on_launch`` may give one: the runtime then calls it directly for a
        launch that repeats a recorded one while the tracker has nothing on a device
        (``runtime/plan.py``, ``Replay``), skipping ``run``'s per-root look-ups — and its
        warnings' sink: a runner must not call ``warn``."""
        return None

    def direct(
        self, root: InternalFunction, args: Sequence[Any], one_thread: bool = False, native: bool = False
    ) -> DirectCall | None:
        """``runner(root)(args, None)`` as one call of compiled code, for arguments of the
        types of ``args`` (the same scalar types: a replay's key holds them), or ``None``
        (the default: none; or these types need converting, the run a context of its own).
        A replayed launch (``runtime/plan.py``) then calls ``entry`` itself — the runner's
        frame, its thread count and conversions tested per launch, are a good part of a
        warm launch's host cost after a step that evicted them from the core's caches.
        ``one_thread``: the launches may pick one thread (``quick.Runs.plain`` is false), so
        the call's ``single``, ``runner(root)(args, 1)`` as one call, is wanted too.
        ``native``: the record is replayed often (``plan.HOT_REPLAYS``), so ``NativeCall``s
        are wanted too, made now if need be (else only where made already)."""
        return None

    def compile(self, root: InternalFunction, args: Sequence[Any]) -> None:  # noqa: B027 — optional hook
        """Compile ``root`` for these argument types ahead of ``run`` (no-op if nothing to do).

        Lets callers report compile time separately from run time (``hpvm run --timings``).
        """

    # -- values crossing from one back end to another (graphs that mix devices) ----------
    #
    # ``run_stage`` returns each node's outputs in the back end's own form. When the next
    # stage runs on another back end they travel in the exchange form: a dict from
    # ``(output port, mode)`` to a host value, where mode ``"last"`` is the value of the last
    # instance (what all-to-all edges and output binds read) and ``"each"`` is a NumPy array
    # shaped like the node's grid holding every instance's value of a scalar port (what
    # one-to-one edges read). Arrays travel as ``"last"`` only: the instances of a replicated
    # node hand on one shared array. The defaults suit back ends whose own form is that one.

    def export_outputs(
        self, node: Node, sizes: tuple[int, ...], produced: Any, ctx: RunContext | None = None
    ) -> dict[PortKey, Any]:
        """``node``'s outputs from ``run_stage`` in the exchange form."""
        return produced

    def import_outputs(self, node: Node, sizes: tuple[int, ...], values: dict[PortKey, Any]) -> Any:
        """``node``'s outputs in the exchange form as this back end's ``upstream`` entry."""
        return values

    @abstractmethod
    def run_stage(
        self,
        root: InternalFunction,
        args: Sequence[Any],
        nodes: Sequence[Node],
        upstream: dict[str, Any],
        ctx: RunContext | None = None,
    ) -> tuple[dict[str, Any], dict[int, Any]]:
        """Execute ``nodes`` (children of ``root``) for one streamed item.

        ``upstream`` holds the outputs of children run by other stages (by node name). Returns
        the outputs of ``nodes`` (by node name, opaque to the scheduler) and the root outputs
        that ``nodes`` produce (by output index).
        """

    def run_stage_batch(
        self,
        root: InternalFunction,
        args_list: Sequence[Sequence[Any]],
        nodes: Sequence[Node],
        upstream_list: Sequence[dict[str, Any]],
        ctx: RunContext | None = None,
    ) -> StageBatch:
        """Execute ``nodes`` for several streamed items, in order: ``run_stage`` for each.

        The streaming scheduler hands a stage every item waiting for it at once, so that a
        back end can run them in one call (the ``cpu`` back end compiles a loop over the
        items); this default runs them one by one. It stops at the first item that raises:
        the items before it are delivered, and its exception is the failure of the stream.
        """
        ctx = ctx or RunContext()
        batch = StageBatch([], [])
        for args, upstream in zip(args_list, upstream_list):
            try:
                produced, outputs = self.run_stage(root, args, nodes, upstream, ctx)
            except BaseException as e:  # whatever it is, it is this item's failure
                batch.error = e
                break
            batch.produced.append(produced)
            batch.outputs.append(outputs)
        return batch


def check_bodies(backend: Backend, fn: NodeFunction, where: str = "") -> None:
    """A ``CompileError`` naming every leaf below ``fn`` (or ``fn``) whose body ``backend``
    cannot run, or every pointer-only port it cannot run (``Backend.pointer_ports``)."""
    refused = [
        leaf
        for leaf in functions(fn)
        if isinstance(leaf, LeafFunction) and leaf.body_kind not in backend.accepts
    ]
    if refused:
        kinds = ", ".join(sorted(backend.accepts))
        listed = "; ".join(f"leaf '{f.name}' ({f.location}) has a {f.body_kind} body" for f in refused)
        raise CompileError(
            f"{where}the {backend.name} back end runs leaves with {kinds} bodies: {listed}; run "
            "the graph on a back end that accepts them (target=...) or give those leaves a hint "
            "that selects one"
        )
    if backend.pointer_ports:
        return
    pointers = []
    for f in functions(fn):
        found = [f"port '{p.name}'" for p in f.params if _pointer_only(p.type)]
        found += [f"output {k}" for k, t in enumerate(f.out_types) if _pointer_only(t)]
        if found:
            pointers.append(f"'{f.name}' ({f.location}): {', '.join(found)}")
    if pointers:
        raise CompileError(
            f"{where}the {backend.name} back end does not run pointer-only array ports (a pointer "
            f"without its size, such as u8[*]): {'; '.join(pointers)}; run the graph on cpu or "
            "interp (target=...), or pass each pointer together with its size"
        )


def _pointer_only(t: PortType) -> bool:
    return isinstance(t, ArrayType) and not t.sized


# ---------------------------------------------------------------------------------------
# Warnings from a running graph
#
# Graphs run on runtime threads (pool workers, one per pipeline stage), but a warning
# belongs to the host code that launched the graph: Python's warning filters and
# ``warnings.catch_warnings`` (``pytest.warns``) are process-wide and not thread-safe, and a
# warning raised on a worker thread points at back-end internals. So back ends report
# warnings through ``warn``; the runtime collects them per execution and re-issues them on
# the host thread at ``wait`` / ``pop``, pointing at the user's call.


class _Sink(threading.local):
    """Per thread: where ``warn`` collects (``None``: issue at once). A class default
    rather than ``getattr(local, "sink", None)``: a thread that never set it made every
    launch's lookup raise and catch an ``AttributeError`` (about 1 µs)."""

    sink: list[tuple[str, type[Warning]]] | None = None


_collecting = _Sink()


def warn(message: str, category: type[Warning] = HPVMWarning) -> None:
    """Report a warning about the running graph (delivered to the host at wait/pop)."""
    sink = _collecting.sink
    if sink is None:
        warnings.warn(message, category, stacklevel=3)
    else:
        sink.append((message, category))


class collecting_warnings:  # noqa: N801 — used as a function: ``with collecting_warnings() as caught``
    """Collect the ``warn`` calls made on this thread inside the block, instead of issuing them.

    A class rather than a ``@contextmanager`` generator: every launch enters one, and a
    generator-based context manager costs a few microseconds more.
    """

    __slots__ = ("_previous",)

    def __enter__(self) -> list[tuple[str, type[Warning]]]:
        self._previous = _collecting.sink
        sink: list[tuple[str, type[Warning]]] = []
        _collecting.sink = sink
        return sink

    def __exit__(self, *exc: object) -> None:
        _collecting.sink = self._previous


def reissue_warnings(caught: list[tuple[str, type[Warning]]], stacklevel: int = 3) -> None:
    """Issue collected warnings on the calling (host) thread; ``stacklevel`` 3 points at the
    caller of the runtime function that calls this."""
    for message, category in caught:
        warnings.warn(message, category, stacklevel=stacklevel)


_FACTORIES: dict[str, Callable[[], Backend]] = {}
_PROBES: dict[str, Callable[[], str | None]] = {}  # not yet run: says why a back end cannot run here
_INSTANCES: dict[str, Backend] = {}
_MISSING: dict[str, str] = {}  # back ends known but not available here, with the reason
_REGISTRY_LOCK = threading.RLock()
#: Bumped whenever a registration changes (register_backend, mark_unavailable): what a
#: launch resolved once per root and target (``runtime/plan.py``) is valid while it holds.
#: The list itself (``[0]`` the count) is read per launch, without ``registry_version``'s call.
REGISTRY_VERSION = [0]


def registry_version() -> int:
    """How many times the back-end registry changed (a launch plan made before a change is
    made again)."""
    return REGISTRY_VERSION[0]


def register_backend(
    name: str, factory: Callable[[], Backend], probe: Callable[[], str | None] | None = None
) -> None:
    """Make ``name`` available through ``factory`` (called once, on first use).

    ``probe``, if given, runs the first time anyone asks about ``name`` (not now): it returns
    why the back end cannot run here (no device, a broken driver), or ``None`` when it can.
    Registering again replaces the earlier registration and forgets its probe's answer.
    """
    with _REGISTRY_LOCK:
        REGISTRY_VERSION[0] += 1
        _FACTORIES[name] = factory
        _INSTANCES.pop(name, None)
        _MISSING.pop(name, None)
        if probe is None:
            _PROBES.pop(name, None)
        else:
            _PROBES[name] = probe


def mark_unavailable(name: str, reason: str) -> None:
    """Record that ``name`` is known but cannot run here (shown in error messages)."""
    with _REGISTRY_LOCK:
        REGISTRY_VERSION[0] += 1
        _FACTORIES.pop(name, None)
        _PROBES.pop(name, None)
        _INSTANCES.pop(name, None)
        _MISSING[name] = reason


def _usable(name: str) -> bool:
    """Whether ``name`` is registered and its probe (run now if not yet) found no problem."""
    with _REGISTRY_LOCK:
        if name not in _FACTORIES:
            return False
        probe = _PROBES.pop(name, None)
        if probe is None:
            return True
        try:
            reason = probe()
        except Exception as e:  # a probe must never break the caller (a wedged driver, ...)
            reason = f"probing it failed ({type(e).__name__}: {e})"
        if reason is not None:
            mark_unavailable(name, reason)
            return False
        return True


def available_backends() -> list[str]:
    """The back ends that can run here (probing the ones not probed yet)."""
    return sorted(name for name in list(_FACTORIES) if _usable(name))


def unavailable_reason(name: str) -> str | None:
    """Why ``name`` cannot run here, or ``None`` when it can."""
    if _usable(name):
        return None
    return _MISSING.get(name, "no such back end")


def get_backend(name: str) -> Backend:
    if not _usable(name):
        why = _MISSING.get(name, "no such back end")
        raise BackendUnavailableError(
            f"back end {name!r} is not available: {why}; available here: {', '.join(available_backends())}"
        )
    with _REGISTRY_LOCK:
        if name not in _INSTANCES:
            _INSTANCES[name] = _FACTORIES[name]()
        return _INSTANCES[name]


def backend_for_hint(hint: str | None) -> str:
    """The first available back end for a hint (``None``: no hint, which means the CPU)."""
    prefs = HINT_PREFERENCES.get(hint)
    if prefs is None:
        raise BackendUnavailableError(f"unknown hint {hint!r}")
    for name in prefs:
        if _usable(name):
            return name
    raise BackendUnavailableError(
        f"no back end for hint {hint!r} is available (tried {', '.join(prefs)}: "
        + "; ".join(f"{n}: {_MISSING.get(n, 'not built')}" for n in prefs)
        + f"); available: {', '.join(available_backends())}; pass target='interp' to run anyway"
    )
