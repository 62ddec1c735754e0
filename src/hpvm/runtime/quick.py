"""Which launches run on the launching thread: the quick ones that cannot wait or run long.

Handing a launch to a worker thread costs two thread wake-ups (the worker's, then the
host's when the run is done); on a loaded two-core machine that is 50–150 µs, several times
what a small compiled graph takes to run. So a launch runs inside ``launch`` itself, on the
calling thread, and ``wait`` only collects it, when all of these hold (``Runtime.launch``):

1. its back end runs compiled leaves (``Backend.runs_quick_on_launch``: ``cpu`` and the GPUs);
2. every leaf of its graph is a Python leaf whose run is bounded (``ir/bounded.py``'s
   ``keyed_reason``, checked once per leaf, cached; ``bounded_graph`` caches the verdict
   per root): no ``while`` loop on array contents, no early exit from a loop, no loop
   bounds read from array contents, no call of the user's own functions. Such a run
   cannot spin on a flag that another launch writes (it would hang the caller, where a
   worker would wait), and its work is fixed by what ``run_key`` sees;
3. nothing else of the runtime is in flight (no launch running or queued, no stream open):
   nothing it could wait on, and no worker's team competing for the cores;
4. the runs with the same ``run_key`` — the back end, the arrays' shapes, dtypes and
   tracking entries, the scalars' types and *values* (of the scalars that may change how
   much work a run does: ``work_params``; of the others, a row index or a time step passed
   to leaves without loops, the type alone) — are short: the last one took under
   ``QUICK_RUN_S``, or the fastest one did and the last one under ``LOADED_RUN_S`` (a busy
   machine stretches a run of the same work; a run slower than that is taken as more work,
   which the static check may have missed, and sends the next one to a worker) — or under
   ``PREEMPTED_RUN_S`` with the one before it under ``LOADED_RUN_S`` (one run held up by
   the scheduler, which wall time cannot tell from more work: a second in a row can).

Everything else (a first run, which compiles; a new shape, dtype or scalar value, such as a
longer loop; a run that took longer; a leaf with a ``while`` loop on array contents) goes to a worker as
before, so that Ctrl-C keeps working: Python delivers it on the main thread only between
bytecodes, which a run in native code holds off — a quick run for about what its
identical predecessors took (under ``QUICK_RUN_S`` for the work, ``LOADED_RUN_S`` with the
machine's load, ``PREEMPTED_RUN_S`` once; 2 and 4 leave only the load to change that), a
run on a worker not at all — and a long launch still overlaps the host until ``wait``.

A launch of a bounded graph that is not quick enough for that, but whose last run with
the same key took under ``WAIT_RUN_S`` (50 ms), is queued for a worker as usual; if the
host reaches ``wait`` before a worker has started it, ``wait`` runs it on the calling
thread (``runs_in_wait``), which is what a host that waits at once gains (no wake-ups, no
worker team) while one that works in between still overlaps the run. Ctrl-C waits for
such a run as for a quick one: about its key's last run. Once the host has waited at once
for ``WAITED_AT_ONCE`` of a key's queued launches in a row (``waited_for``: its thread spent
almost no CPU time between ``launch`` and ``wait``), the key's runs under ``WAIT_RUN_S`` count
as quick, but for a recheck every ``WAIT_RECHECK_EVERY``-th run.

Errors and warnings of a quick run are kept on its handle and surface at ``wait``, the same
exception types at the same call as from a worker.

A quick run of a tiny graph may use one thread (``Runs.threads``): its run on all threads
is then mostly the wake-up of the OpenMP team, which one thread does not pay (nor, on
``cpu``, the parallel loop's launch: a run on one thread calls the root's function compiled
without parallel loops, ``Compiler.single``). Which one is
faster is measured per run key, not guessed: ``ONE_THREAD_PROBES`` runs on one thread once
the key's fastest run on all threads took under ``ONE_THREAD_PROBE_S``, then the faster
(all threads for good once one thread is ``ONE_THREAD_LOSS`` times slower).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..backends.memory import HOST, TrackedArray
from ..ir.bounded import fixed_work, keyed_reason, unbounded_reason
from ..ir.graph import InternalFunction, LeafFunction, NodeFunction, functions
from ..ir.types import ArrayType

#: Longest previous run (seconds) that lets the next one with the same arguments run on
#: the launching thread: what Ctrl-C may wait for, and the overlap with the host given up.
QUICK_RUN_S = 2e-3
#: Longest last run (seconds) still taken as the same short work stretched by a busy
#: machine, when the fastest run of its key took under ``QUICK_RUN_S``. Without it, one run
#: preempted past 2 ms sent the next to a worker, where it took longer again (wake-ups on
#: busy cores): 11–14 % of a stencil's launches at load 5–6, and 1.3× their time.
LOADED_RUN_S = 10e-3
#: Longest last run (seconds) still taken as a preempted one — the same short work held up
#: by the scheduler, which a wall time cannot tell apart from more work — when the run
#: before it took under ``LOADED_RUN_S`` and the fastest under ``QUICK_RUN_S``: one such run
#: keeps its key quick, a second in a row does not. At load 5 on the 2-core machine about
#: 1 % of a stencil's replayed launches read over ``LOADED_RUN_S`` (a thread of the
#: OpenMP team descheduled), and each sent the next launch to a worker.
PREEMPTED_RUN_S = 100e-3

#: Longest last run (seconds) of a launch's run key for which ``wait`` runs the launch on
#: the calling thread when no worker has started it yet (``runs_in_wait``): a launch too
#: long to run inside ``launch`` (which would give up overlapping the host's work until
#: ``wait``) but short enough that Ctrl-C waiting for it goes unnoticed. A worker that
#: wakes first runs it as before, so a host that works between ``launch`` and ``wait``
#: still overlaps the run; a host that waits at once saves the two thread wake-ups and the
#: worker's own OpenMP team (0.5–0.7 ms of a 3 ms stencil step on the 2-core machine).
WAIT_RUN_S = 50e-3

#: Queued launches of a run key in a row that the host waited for at once (``waited_for``)
#: after which the key's runs under ``WAIT_RUN_S`` run inside ``launch`` as quick ones
#: (``Runs.waited_for``), and are then replayed (``plan.Replay``).
#: Such a host overlaps nothing with the run, so running it in ``launch`` gives up nothing;
#: Ctrl-C waits for it as for a run in ``wait``; and the launch skips the queued path: after
#: a step that streamed 200 MB through the core, its objects are cache misses, 0.2 ms of a
#: 5.5 ms STREAM triad's launch + wait (3–4 % over the compiled run alone on the 2-core
#: machine: docs/backends/cpu-performance.md, "Launches the host waits for at once").
WAITED_AT_ONCE = 3

#: The host waited at once for a queued launch when its thread spent less CPU time than this
#: fraction of the key's last run between ``launch`` and ``wait`` (``waited_for``): the
#: overlap running such launches inside ``launch`` may give up. CPU time, not wall time, and
#: not whether ``wait`` got to the run before a worker did: on a loaded machine the worker
#: woken by the launch often preempts the host, which then waits at once for a run already
#: under way — a fresh clone's test suite saw 22 of 24 such launches run by a worker.
AT_ONCE_FRACTION = 0.1

#: Every this many-th run of a key that runs inside ``launch`` because its host waited at
#: once (``WAITED_AT_ONCE``) is queued again, to see whether the host still waits at once:
#: if it does not, its launches are queued again (overlapping it) until it waits at once
#: ``WAITED_AT_ONCE`` times in a row again.
WAIT_RECHECK_EVERY = 32

#: Longest fastest run (seconds) on all threads for which a quick launch tries a run on one
#: thread (``Runs.threads``). Such a run of a tiny graph is mostly the wake-up of the
#: OpenMP team once it sleeps (10–15 µs of a 64-element vector add's 15 µs, measured
#: with ``OMP_WAIT_POLICY=passive``; hpvm now lets idle threads spin about 150 µs first,
#: backends/__init__.py); one thread skips it. Each probe (``ONE_THREAD_PROBES``) costs at most
#: one run on one thread: about the cores' count times this.
ONE_THREAD_PROBE_S = 1e-4

#: Run keys remembered per root and back end (the oldest are dropped beyond this).
_KEYS_PER_ROOT = 64

#: Runs on one thread a run key gets before ``Runs.threads`` compares: the first one after
#: runs on all threads was measured up to 10× slower than the next (94.6 against 8.5 µs
#: at load 5.4), which a single probe took as the verdict.
ONE_THREAD_PROBES = 3

#: Once the probes are done, every this many-th quick run of a key uses the other thread
#: count than the faster one so far, so that both fastest times stay current. Without it,
#: the verdict was made from the first runs on all threads only — the first on the calling
#: thread creates its OpenMP team (56.7 µs for the 64-element vector add at load 5), which
#: one thread (6.2 µs) then beat for ever, while warm runs on all threads took 3.5–4.0 µs
#: against 5.4–6.4 µs on one thread (the thread count's get and set alone: 1.7–2.0 µs).
RECHECK_EVERY = 32

#: How many runs in a row a recheck (``RECHECK_EVERY``) takes with the other count. A
#: recheck on all threads after 31 runs on one found the OpenMP team asleep every time (its
#: threads spin about 150 µs after a region, then sleep: backends/cpu.md), so the fastest
#: run on all threads kept the wake-up (57 µs for the 64-element vector add, against 2–3
#: µs warm) and one thread won for ever. The second run of the pair finds the team the
#: first woke, if the launches come that close together; if they do not, it pays the
#: wake-up too, which is then what every run on all threads would pay.
RECHECK_RUNS = 2

#: A key whose fastest run on one thread is this many times faster than its fastest on all
#: threads or more rechecks all threads only every ``RECHECK_FAR_EVERY``-th run instead:
#: such a run is all team wake-up, which no load makes worth paying, and a recheck pair
#: every 32 runs cost a hot loop more than the runs themselves: the 64-element vector
#: add's one-thread run takes 0.05 µs; its launch + wait, the mean over 4096 in a loop,
#: 1.53–1.59 µs with a pair every 32, 1.46 µs every 1024 (three processes).
ONE_THREAD_FAR = 8.0
RECHECK_FAR_EVERY = 1024

#: Once the probes are done, a run key whose fastest run on one thread took this many times
#: its fastest on all threads or more settles on all threads: no more rechecks, and no
#: thread count got and set per launch (1.7–2.0 µs). One thread wins only by skipping the
#: team's wake-up; a run that far behind is the work's own, and a fastest time only falls.
#: Without it, the stencil's 100 launches (fastest 94–99 µs on all threads on a quiet
#: 2-core machine, under ``ONE_THREAD_PROBE_S``) ran every 32nd step on one thread (170–190
#: µs) and paid the count's get and set on every launch: 1.10–1.14× the Numba step.
ONE_THREAD_LOSS = 1.5

_NEVER = float("inf")


class Runs:
    """What is known of the runs with one run key: the last one's seconds and the one's
    before it (``before``), the fastest on all threads (``every``), the fastest on one
    (``one``; ``_NEVER``: none yet), and how many runs on one thread there were (``probes``).

    Mutable, and found once per launch (``entry``): ``Runs.quick``, ``Runs.threads`` and the
    run's ``add`` then read and update it without hashing the run key again — a key holds
    the arguments' shapes, dtypes and scalars, and hashing it is not cached (0.5 µs a time,
    five times a launch with immutable tuples in the table)."""

    __slots__ = (
        "last",
        "before",
        "every",
        "one",
        "probes",
        "choices",
        "other",
        "fast",
        "plain",
        "waited",
        "inline",
    )

    def __init__(self) -> None:
        self.last = _NEVER
        self.before = _NEVER
        self.every = _NEVER
        self.one = _NEVER
        self.probes = 0
        self.choices = 0  # thread counts chosen after the probes (``RECHECK_EVERY``)
        self.other = False  # a recheck's count: one thread (``True``) or all (``RECHECK_RUNS``)
        #: ``quick()``'s answer, and whether ``threads()`` answers ``None`` without counting
        #: (never probed, not tiny): both decided when a run is recorded (``add``), so that a
        #: replayed launch (``plan.Replay``) reads two attributes instead of calling two
        #: methods — each call a cache miss after a step that streamed megabytes.
        self.fast = False
        self.plain = True
        self.waited = 0  # queued launches in a row the host waited for at once (``waited_for``)
        self.inline = 0  # runs inside ``launch`` since its host was last seen to wait at once

    def quick(self) -> bool:
        """Whether the last run took under ``QUICK_RUN_S``, or the fastest did and the last
        one under ``LOADED_RUN_S``, or under ``PREEMPTED_RUN_S`` after one under
        ``LOADED_RUN_S``, or under ``WAIT_RUN_S`` once the host waited at once
        ``WAITED_AT_ONCE`` times in a row, but for a recheck (as the limits were when it was
        recorded: ``add``)."""
        return self.fast

    def threads(self) -> int | None:
        """How many threads a quick run gets: 1 for the first ``ONE_THREAD_PROBES`` runs once
        the fastest run on all threads took under ``ONE_THREAD_PROBE_S``, then 1 while the
        fastest run on one thread beats the fastest on all of them, except every
        ``RECHECK_EVERY``-th run (``RECHECK_FAR_EVERY``-th where one thread is
        ``ONE_THREAD_FAR`` times faster) and the ``RECHECK_RUNS`` - 1 after it, which take
        the other count; else ``None`` (the back end's default) — for good once one thread's fastest
        is ``ONE_THREAD_LOSS`` times all threads' or more. Called once per quick run (it
        counts them)."""
        probes = self.probes
        if self.plain:
            return None  # (never probed: not a tiny graph; or settled on all threads)
        if probes < ONE_THREAD_PROBES:
            return 1
        self.choices += 1
        period = RECHECK_FAR_EVERY if self.one * ONE_THREAD_FAR <= self.every else RECHECK_EVERY
        turn = self.choices % period
        if turn == 0:
            self.other = not self.one < self.every  # (the count not chosen now, for the whole recheck)
        if turn < RECHECK_RUNS and self.choices >= period:
            return 1 if self.other else None
        return 1 if self.one < self.every else None

    def waited_for(self, at_once: bool) -> None:
        """The host reached ``wait`` for a queued launch with this key, ``at_once`` or after
        work of its own; with the run's ``add`` before or after this, in either order the next
        launch is quick as ``add``'s rules say."""
        if not at_once:
            self.waited = 0
            self.fast = self._timely(self.last)
            return
        self.waited += 1
        if not self.fast and self.waited >= WAITED_AT_ONCE and self.last < WAIT_RUN_S:
            self.fast = True

    def _timely(self, seconds: float) -> bool:
        """Whether a run of ``seconds`` leaves its key quick by its times alone."""
        return seconds < QUICK_RUN_S or (
            min(self.every, self.one) < QUICK_RUN_S
            and (seconds < LOADED_RUN_S or (seconds < PREEMPTED_RUN_S and self.before < LOADED_RUN_S))
        )

    def add(self, seconds: float, threads: int | None = None) -> None:
        """Remember a run of ``seconds`` on ``threads`` (1: one thread; else all)."""
        if threads is None and QUICK_RUN_S > seconds >= self.every:
            # (the common case, a warm replayed launch: no new fastest run, so nothing but the
            # last two changes — ``fast`` is true, ``plain`` reads what did not change)
            self.before, self.last, self.fast = self.last, seconds, True
            return
        self.before, self.last = self.last, seconds
        if threads == 1:
            self.one = min(seconds, self.one)
            self.probes += 1
        else:
            self.every = min(seconds, self.every)
        fast = self._timely(seconds)
        if not fast and seconds < WAIT_RUN_S and self.waited >= WAITED_AT_ONCE:
            self.inline += 1  # (the host waits at once: inside ``launch``, but a recheck now and then)
            if self.inline < WAIT_RECHECK_EVERY:
                fast = True
            else:
                self.inline, self.waited = 0, WAITED_AT_ONCE - 1
        self.fast = fast
        self.plain = (not self.probes and not self.every < ONE_THREAD_PROBE_S) or (
            self.probes >= ONE_THREAD_PROBES and self.one >= ONE_THREAD_LOSS * self.every
        )


_TIMES: weakref.WeakKeyDictionary[InternalFunction, dict[Any, Runs]] = weakref.WeakKeyDictionary()
_BOUNDED: weakref.WeakKeyDictionary[InternalFunction, str | None] = weakref.WeakKeyDictionary()
_WORK: weakref.WeakKeyDictionary[InternalFunction, frozenset[int]] = weakref.WeakKeyDictionary()


def run_key(backend_name: str, args: Sequence[Any], tracked: Sequence[TrackedArray] = ()) -> Any:
    """What a run's duration is predicted from: the back end, the arrays' shapes and dtypes,
    their tracking entries (and whether the host copy is current: a copy back costs), the
    scalars' types and values. ``None`` for arguments it cannot describe cheaply."""
    return keyed_run(backend_name, arg_key(args), tracked)


def arg_key(args: Sequence[Any]) -> tuple[Any, ...] | None:
    """The arguments' part of a run key: each array's shape and dtype, each scalar's type
    and value (``None`` for anything else). A launch computes it once: it is also what its
    plan remembers the checked sizes by (``plan.py``)."""
    key: list[Any] = []
    for a in args:
        kind = type(a)
        if kind is np.ndarray:
            key.append((a.shape, a.dtype))
        elif kind in (int, float, bool) or isinstance(a, np.generic):
            key.append((kind, a))
        else:
            return None
    return tuple(key)


def keyed_run(backend_name: str, args_key: tuple[Any, ...] | None, tracked: Sequence[TrackedArray]) -> Any:
    """The run key of arguments described by ``args_key`` (``arg_key``) and held through the
    ``tracked`` entries."""
    if args_key is None:
        return None
    return (backend_name, args_key, tuple([(id(entry), HOST in entry.valid_on) for entry in tracked]))


def bounded_graph(root: InternalFunction) -> str | None:
    """Why a run of ``root`` may wait on something or run longer than its run key predicts
    (the first leaf found that ``ir/bounded.py`` refuses), or ``None``. Once per root."""
    try:
        return _BOUNDED[root]
    except KeyError:
        pass
    reason = None
    for fn in functions(root):
        if isinstance(fn, LeafFunction):
            reason = keyed_reason(fn)
        elif isinstance(fn, InternalFunction) and _streams(fn):
            reason = f"'{fn.name}' has streaming edges or binds (stages wait on each other)"
        if reason is not None:
            break
    if reason is None:
        reason = _while_on_an_edge(root, frozenset(), set())
    _BOUNDED[root] = reason
    return reason


def _while_on_an_edge(fn: NodeFunction, carried: frozenset[int], seen: set[Any]) -> str | None:
    """A leaf with a ``while`` loop (``keyed_reason`` lets one on scalars through) that gets a
    scalar an edge carries — directly, or bound down from a parent's port an edge feeds
    (``carried``) — or ``None``. What an edge carries is computed at run time, possibly from
    array contents, so the run key does not hold it: such a loop could turn far longer
    (or without end) on the next run of the same key."""
    if (id(fn), carried) in seen:
        return None
    seen.add((id(fn), carried))
    if isinstance(fn, LeafFunction):
        scalars = {i for i, p in enumerate(fn.params) if not isinstance(p.type, ArrayType)}
        if carried & scalars and unbounded_reason(fn) is not None:
            name = fn.params[min(carried & scalars)].name
            return (
                f"leaf '{fn.name}' ({fn.location.file}) has a while loop and its scalar '{name}' "
                "comes on an edge (computed at run time, in no run key)"
            )
        return None
    if not isinstance(fn, InternalFunction):
        return None
    graph = fn.graph
    for node in graph.nodes:
        ports = {e.dp for e in graph.edges if e.dst is node}
        ports |= {b.ic for b in graph.in_binds if b.dst is node and b.ip in carried}
        reason = _while_on_an_edge(node.function, frozenset(ports), seen)
        if reason is not None:
            return reason
    return None


def work_params(root: InternalFunction) -> frozenset[int]:
    """The positions of ``root``'s scalar parameters whose values may change how much work a
    run does, the others' values being left out of its run key (item 4 above): a scalar in
    a node's replication sizes does, and one bound into a leaf that may loop on it
    (``bounded.fixed_work`` false: every scalar of such a leaf), through every level of
    binds; an edge into such a leaf's scalar makes every scalar of its graph count (what
    the edge carries is computed at run time). Once per root.

    Why: with every value in the key, a host loop passing a new row index or time step to
    each launch found no run of its key, and every launch went to a worker — 0.2–0.4 ms a
    launch of Rodinia's path finder on the 2-core machine, for a microsecond's work."""
    try:
        return _WORK[root]
    except KeyError:
        pass
    found = frozenset(_work(root, {}))
    _WORK[root] = found
    return found


def _work(fn: NodeFunction, seen: dict[int, set[int]]) -> set[int]:
    """``work_params`` of any node function (``seen``: per function, its answer)."""
    known = seen.get(id(fn))
    if known is not None:
        return known
    scalars = {i for i, p in enumerate(fn.params) if not isinstance(p.type, ArrayType)}
    if isinstance(fn, LeafFunction):
        found = set() if fixed_work(fn) else scalars
    elif isinstance(fn, InternalFunction):
        position = {p.name: i for i, p in enumerate(fn.params)}
        graph = fn.graph
        found = {
            position[n] for node in graph.nodes for size in node.sizes for n in size.params() if n in position
        }
        inner = {id(node): _work(node.function, seen) for node in graph.nodes}
        if any(edge.dp in inner[id(edge.dst)] for edge in graph.edges):
            found = scalars
        else:
            found |= {bind.ip for bind in graph.in_binds if bind.ic in inner[id(bind.dst)]}
    else:
        found = scalars
    seen[id(fn)] = found = found & scalars
    return found


def _streams(fn: InternalFunction) -> bool:
    graph = fn.graph
    return any(link.stream for links in (graph.edges, graph.in_binds, graph.out_binds) for link in links)


def durations(root: InternalFunction) -> dict[Any, Runs]:
    """How long the last and the fastest runs of ``root`` with each run key took (made on
    first use); a launch plan holds it, and each launch finds its key's ``Runs`` in it
    (``entry``)."""
    times = _TIMES.get(root)
    if times is None:
        times = _TIMES[root] = {}
    return times


def entry(times: dict[Any, Runs], key: Any) -> Runs:
    """The runs known for ``key`` (an empty record made on first use: ``last`` is
    ``_NEVER`` until a run adds to it, so a concurrent launch does not take it as quick);
    the oldest key goes beyond a bound."""
    known = times.get(key)
    if known is None:
        if len(times) >= _KEYS_PER_ROOT:
            try:
                times.pop(next(iter(times)), None)
            except (RuntimeError, StopIteration):  # another thread's launch changed it meanwhile
                pass
        known = times[key] = Runs()
    return known


def waited_for(handle: Any) -> None:
    """Tell the run key of ``handle`` — a queued launch (``LaunchHandle.launched``) its host
    now waits for — whether the host waited at once: on the launching thread, having spent
    under ``AT_ONCE_FRACTION`` of the key's last run of CPU time since the launch. Once per
    handle."""
    thread, cpu, runs = handle.launched
    handle.launched = None
    spent = time.thread_time() - cpu
    runs.waited_for(thread == threading.get_ident() and spent < AT_ONCE_FRACTION * runs.last)


def runs_in_wait(times: dict[Any, Runs] | None, key: Any) -> bool:
    """Whether ``wait`` may run a launch with ``key`` on the calling thread, if no worker
    has started it: its graph is bounded (``times`` is only kept for such launches) and
    its last run took under ``WAIT_RUN_S``."""
    if times is None or key is None:
        return False
    known = times.get(key)
    return known is not None and known.last < WAIT_RUN_S


def forget(root: InternalFunction) -> None:
    """Drop every duration recorded for ``root`` (tests). Emptied in place: a launch plan
    (``plan.py``) holds the same table; and each record made unknown (``last``), since a
    replay record (``plan.Replay``) holds its own."""
    times = _TIMES.get(root)
    if times is not None:
        for runs in times.values():
            runs.last = runs.before = _NEVER
            runs.fast = False
            runs.waited = runs.inline = 0
        times.clear()
