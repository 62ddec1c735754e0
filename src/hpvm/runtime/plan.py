"""What a launch of one root on one target resolves once, so that a repeated launch does
the minimum.

A host that launches the same graph in a loop (a stencil's 100 steps) paid, on every
launch, for verifying the root, choosing and vetting the back end, looking up its argument
acceptors, the size check's cached keys and the quick-run table in weak dictionaries, and
two locks per array argument in the memory tracker: about 25 µs of Python on a quiet core,
55 µs on the 2-core machine under load, against a 0.2 ms compiled step (``BENCHMARKS.md``,
"where the time goes"). A ``LaunchPlan`` holds what does not change between launches of
``(root, target)``; ``Runtime.launch`` then does per launch only what can change:

* every argument still passes its acceptor (type, dtype, rank, writeable where written,
  contiguous where pointer-only): anything they do not take goes through ``check_args``,
  which accepts it or raises the error it always raised;
* the arrays are looked up in the tracker and held under one lock (``hold_arrays``): an
  array untracked since the last launch is refused as before;
* the sizes are checked once per argument key (``quick.arg_key``: shapes, dtypes, scalar
  values) — a new shape or size-naming scalar is checked again;
* the run key (``quick.keyed_run``) reuses that argument key; it still tells the tracking
  entries and their host state apart, so an aliased array, or one tracked again (a new
  entry), is a new key (once an old entry is gone its id may be reused: the same array,
  the same work, which is all the key predicts).

A quick launch repeating a recorded one does less again (``Replay``): the acceptors and
a key of the arrays' identities and shapes and the scalars, one look-up in the tracker,
the back end's runner called directly.

A plan is valid while the back-end registry is unchanged (``registry_version``): a back
end registered or marked unavailable since makes the next launch build a new one; a plan
without a target also while the back end the root's hints chose (``launch._CHOICES``, the
one record of that choice) is still the one it holds — tested as "the table is still the
one the plan was made under": a root's entry in a table is written once (``choose_backend``
writes only where there is none) and leaves only with the root, so the same table means the
same choice, and a table replaced (tests do, with another hint preference) a new plan.
Plans are held per root weakly, at most one per target name.
"""

from __future__ import annotations

import importlib
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ..backends.base import REGISTRY_VERSION, Backend, DirectCall
from ..backends.memory import MemoryTracker
from ..ir.args import writers
from ..ir.graph import InternalFunction
from ..ir.types import ArrayType
from ..ir.weakid import WeakIdTable
from .fastpath import compiled_replay
from .handle import FINISHED, LaunchHandle
from .launch import _acceptors, accept_test, check_root, check_sizes, choose_backend
from .quick import _KEYS_PER_ROOT, Runs, bounded_graph, durations, work_params

#: ``launch.py`` itself (from ``sys.modules``: the package's attribute of that name is the
#: ``launch`` function), whose table of the back ends chosen by hints (``_CHOICES``) a plan
#: without a target is valid under: read per launch as an attribute, since tests replace it.
_LAUNCH = importlib.import_module(f"{__package__}.launch")

#: Argument keys whose sizes a plan remembers as checked (a host cycling through more
#: shapes than this is checked again, as ``check_sizes`` would).
_CHECKED_KEYS = 64


class LaunchPlan:
    """One root on one target: its back end, acceptors and quick-run table, resolved once."""

    __slots__ = (
        "_root",
        "backend",
        "version",
        "choices",
        "count",
        "acceptors",
        "times",
        "needs_cluster",
        "checked",
        "run_args",
        "neutral",
        "_accept",
        "ident",
        "replay",
        "viewed",
    )

    def __init__(self, root: InternalFunction, target: str | None) -> None:
        # (read first, both: a change while building invalidates)
        self.version = REGISTRY_VERSION[0]
        #: without a target, the table of hint choices (``launch._CHOICES``) this plan's back
        #: end is the root's entry in (``plan_for``); ``None`` for a plan with a target
        self.choices = _LAUNCH._CHOICES if target is None else None
        # (weakly: the plans live in a table keyed weakly by the root, which a strong
        # reference from its own value would keep alive for ever)
        self._root = weakref.ref(check_root(root))
        self.backend: Backend = choose_backend(root, target)
        self.count = len(root.params)
        self.acceptors: tuple[Callable[[Any], bool], ...] = tuple(_acceptors(root))
        quick = getattr(self.backend, "runs_quick_on_launch", False) and bounded_graph(root) is None
        #: the positions of the root's scalars whose values neither the run key nor the replay
        #: key holds, only their types: those that cannot change how much work a run does
        #: (``quick.work_params``) — where launches may run quick (else none)
        self.neutral: frozenset[int] = _neutral(root) if quick else frozenset()
        self._accept, ident, replay = _accepting(root, self)
        #: ``args`` -> the key a launch with them is replayed by (``Replay``): this plan, each
        #: array's identity and shape, each scalar's type and value (``None`` for a ``neutral``
        #: one's) — if every value passes its port's acceptor (those can change on the same
        #: array: its writeable flag); else ``None``. Generated per root with ``accept``.
        self.ident: Callable[[Any], tuple[Any, ...] | None] = ident
        #: ``(args, runtime)`` -> the handle of a quick launch replaying the ``Replay`` kept
        #: in the runtime's tracker under ``ident(args)``, run now on the calling thread —
        #: if its key's runs are quick and its runner current (``Backend.runners_version``);
        #: else ``None``, nothing held or run. ``ident``, the look-up, the tests, the run (the
        #: back end's ``DirectCall`` where it gave one — its entry when the run gets all
        #: threads, its ``single`` when one — calling what the runner would call then, else
        #: its runner with the thread count), its time
        #: and the handle in one generated function, an attribute, not a method: a replayed
        #: launch calls it after a step that evicted the host path from the core's caches,
        #: where each frame and object touched is a miss. The same in C (``fastpath.py``)
        #: where the extension was built, with the generated function as its fallback.
        self.replay: Callable[[Any, Any], LaunchHandle | None] = compiled_replay(self, root, replay) or replay
        #: the root's run durations (``quick.py``), or ``None``: its launches never run on the host
        self.times: dict[Any, Runs] | None = durations(root) if quick else None
        #: an argument key -> its part of the run key: the ``neutral`` scalars' values left
        #: out, their types kept; ``None`` where the argument key is that part
        self.run_args: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None = _run_args(root, self.neutral)
        self.needs_cluster = bool(getattr(self.backend, "needs_cluster", False))
        #: the argument keys whose sizes passed (``check_sizes``; a launch tests membership itself)
        self.checked: set[Any] = set()
        #: the replay keys of the last ``_VIEWED`` quick launches that passed a view of a
        #: tracked array, each with weak references to its arrays (``record_replay``: a
        #: view is recorded when the same objects come again)
        self.viewed: tuple[tuple[Any, tuple[weakref.ref, ...]], ...] = ()

    @property
    def root(self) -> InternalFunction:
        """The root (alive while anyone launching it holds it)."""
        root = self._root()
        assert root is not None, "a launch plan outlived its root"
        return root

    def accept(self, args: Any) -> tuple[list[Any], tuple[Any, ...], list[Any]] | None:
        """``args`` as a list, with their argument key (``quick.arg_key``, made in the same
        pass) and the arrays among them (``launch.array_args``: the array ports' values), if
        every value passes its port's acceptor; else ``None`` (the caller asks
        ``check_args``, which accepts or explains). Generated per root (``_accepting``)."""
        return self._accept(args)

    def check_sizes(self, values: Sequence[Any], key: Any) -> None:
        """``check_sizes`` for arguments described by ``key`` (``quick.arg_key``; ``None``:
        always checked), once per key."""
        if key is not None and key in self.checked:
            return
        check_sizes(self.root, values, "launch")
        if key is not None:
            if len(self.checked) >= _CHECKED_KEYS:
                self.checked.clear()
            self.checked.add(key)


def _neutral(root: InternalFunction) -> frozenset[int]:
    """``LaunchPlan.neutral`` of a root whose launches may run quick: its scalars not in
    ``quick.work_params``.

    Why a replay may leave their values out (docs/semantics.md §12): everything a replay
    skips is a function of the rest of its key — the sizes ``check_sizes`` checks are
    work, the run key leaves the same values out — and what it runs gets every value: the
    compiled entry or the runner with the launch's arguments, a native call with every
    scalar written per call (``native.py``), and that code checks its leaves' accesses
    against the arrays itself on every run (``cpu/sizes.py``). Measured: a host loop passing
    a new row index to each launch took the full path, 27–33 µs a launch, against a
    replay's 3–4 µs (docs/backends/cpu-performance.md, "A new scalar each launch")."""
    work = work_params(root)
    return frozenset(
        i for i, p in enumerate(root.params) if not isinstance(p.type, ArrayType) and i not in work
    )


def _run_args(
    root: InternalFunction, neutral: frozenset[int]
) -> Callable[[tuple[Any, ...]], tuple[Any, ...]] | None:
    """``LaunchPlan.run_args`` of ``root``: generated, one tuple display (a launch's path)."""
    if not neutral:
        return None
    parts = [f"(k[{i}][0],)" if i in neutral else f"k[{i}]" for i in range(len(root.params))]
    names: dict[str, Any] = {}
    exec(f"def run_args(k):\n    return ({''.join(x + ', ' for x in parts)})\n", names)  # noqa: S102 — our own text
    return names["run_args"]  # type: ignore[no-any-return]


def _accepting(
    root: InternalFunction, plan: LaunchPlan
) -> tuple[
    Callable[[Any], tuple[list[Any], tuple[Any, ...], list[Any]] | None],
    Callable[[Any], tuple[Any, ...] | None],
    Callable[[Any, Any], LaunchHandle | None],
]:
    """``LaunchPlan.accept`` of ``root``: one function that tests every argument with its
    port's ``accept_test`` (the acceptors' own expressions) and makes the argument key
    ``quick.arg_key`` would and the list of arrays ``launch.array_args`` would — what the
    acceptors take is an array for an array port, a number for a scalar one, so each key
    part, and which values are arrays, is known per port. Generated: a loop over the
    acceptors, a call each and a key built item by item, was about 4 µs of a launch (and
    the arrays' list, a test of each value, another 1 µs). With it ``LaunchPlan.ident``,
    the same tests and a replay key (``Replay``), and ``LaunchPlan.replay``, the same again
    with the record's look-up and tests, the run and its handle."""
    names: dict[str, Any] = {
        "plan": plan,
        "LaunchHandle": LaunchHandle,
        "FINISHED": FINISHED,
        "perf_counter": time.perf_counter,
    }
    written = writers(root)
    params = [f"v{i}" for i in range(len(root.params))]
    tests = [accept_test(p.type, i in written, v, names) for i, (p, v) in enumerate(zip(root.params, params))]
    keys = [
        f"({v}.shape, {v}.dtype)" if isinstance(p.type, ArrayType) else f"(type({v}), {v})"
        for p, v in zip(root.params, params)
    ]
    idents = [
        f"id({v}), {v}.shape"
        if isinstance(p.type, ArrayType)
        else f"type({v}), None"
        if i in plan.neutral
        else f"type({v}), {v}"
        for i, (p, v) in enumerate(zip(root.params, params))
    ]
    arrays = [v for p, v in zip(root.params, params) if isinstance(p.type, ArrayType)]
    unpack = f"    ({', '.join(params)},) = args\n" if params else ""
    replayed = [
        accept_test(p.type, i in written, v, names, replayed=True)
        for i, (p, v) in enumerate(zip(root.params, params))
    ]

    def head(tests: list[str]) -> str:
        return (
            f"    if (type(args) is not tuple and type(args) is not list) or len(args) != {len(params)}:\n"
            "        return None\n"
            f"{unpack}"
            f"    if not ({' and '.join(tests) or 'True'}):\n"
            "        return None\n"
        )

    source = (
        f"def accept(args):\n{head(tests)}"
        f"    return list(args), ({''.join(k + ', ' for k in keys)}), [{', '.join(arrays)}]\n"
        f"def ident(args):\n{head(tests)}"
        f"    return (plan, {''.join(k + ', ' for k in idents)})\n"
        f"def replay(args, runtime):\n{head(replayed)}"
        "    tracker = runtime.tracker\n"
        f"    record = tracker.hold_replay((plan, {''.join(k + ', ' for k in idents)}))\n"
        "    if record is None:\n"
        "        return None\n"
        "    runs = record.runs\n"
        "    if not runs.fast or record.version != record.backend.runners_version:\n"
        "        tracker.release_replay(record.entries)\n"
        "        return None\n"
        "    handle = LaunchHandle(runtime, record.root, record.backend, FINISHED)\n"
        "    handle.arrays, handle.quick = record.arrays, record.known\n"
        "    try:\n"
        "        threads = None if runs.plain else runs.threads()\n"
        "        call = record.entry if threads is None else record.single if threads == 1 else None\n"
        "        if call is not None:\n"
        "            start = perf_counter()\n"
        "            try:\n"
        f"                outputs = call({''.join(v + ', ' for v in params)}record.tail)\n"
        "            except Exception as e:\n"
        "                record.failed(args, e)\n"
        "            runs.add(perf_counter() - start, threads)\n"
        "            results = record.results\n"
        "            handle.outputs = (\n"
        "                results(outputs) if results is not None else outputs if type(outputs) is tuple else tuple(outputs)\n"
        "            )\n"
        "        else:\n"
        "            start = perf_counter()\n"
        "            handle.outputs = record.runner(args, threads)\n"
        "            runs.add(perf_counter() - start, threads)\n"
        "    except BaseException as e:  # (delivered to the host at wait)\n"
        "        handle.error = e\n"
        "    finally:\n"
        "        tracker.release_replay(record.entries)\n"
        "    if isinstance(handle.error, KeyboardInterrupt):  # (Ctrl-C: raised by launch itself)\n"
        "        raise handle.error\n"
        "    return handle\n"
    )
    exec(compile(source, f"<launch plan of {root.name}>", "exec"), names)  # noqa: S102 — our own text
    return names["accept"], names["ident"], names["replay"]


#: Replay keys of launches with views a plan remembers (``LaunchPlan.viewed``): a host
#: alternating between a few argument sets of views (two buffers swapped) meets one again.
_VIEWED = 4

#: Replay records a runtime's tracker keeps (``MemoryTracker.replays``; emptied beyond this),
#: for all its roots together: as many as ``quick`` keeps run keys per root. A host whose
#: launches cycle through more keys than this never meets a record again: at 16, Rodinia's
#: nw over a 33x17 matrix (49 anti-diagonals, each its own key, every pair of sequences the
#: same 49 again) took the full path on every launch (``tests/c/test_c_field_nw.py``).
_REPLAYS = _KEYS_PER_ROOT


class Replay:
    """What a quick launch found for its arguments, kept so that a launch repeating them —
    the same plan, the same array objects with the same shapes, the same scalar types and
    values, but for the scalars that change no work (``LaunchPlan.ident``, ``neutral``) —
    does none of it again: a host that launches a step in a
    loop over the same arrays (a stencil swapping two) gets, per launch, the acceptors' tests
    and the replay key, one look-up, its entries held (a token each, no lock:
    ``MemoryTracker.hold_replay``), the quick test and
    the back end's compiled entry called directly (``Backend.direct``: on one thread where the
    run key picks one, its ``single``; its runner, ``Backend.runner``, where it gave none), instead of
    the argument list and key, the sizes' key, finding each array in the tracker, the run
    key and its look-up, the run context and ``Backend.run``.

    Everything a replay skips is a function of what its key holds (what it runs gets
    every argument's value, and checks its accesses itself: ``plan._neutral``): the sizes
    (shapes and the values of scalars that are work), the tracker entries (the record holds the arrays it was made with, so
    an id in its key is no other's while it lives — a view's too), the run key's ``Runs``
    (the entries' host state is fixed while nothing is on a device: replays happen only
    then), the scalars' types (what the direct call was chosen for). Records live in the
    runtime's tracker (``MemoryTracker.replays``), which empties them whenever an entry is
    replaced, untracked or cleared. A record also holds its back end's
    ``runners_version``: one made before the back end switched modes
    (``cpu.configure(checked=True)``) would run the other mode's code, so it is not
    replayed (the launch takes the full path and records again)."""

    __slots__ = (
        "root",
        "backend",
        "runner",
        "version",
        "entries",
        "holds",
        "arrays",
        "runs",
        "known",
        "entry",
        "tail",
        "failed",
        "single",
        "native",
        "native_single",
        "results",
        "hits",
        "epoch",
        "__weakref__",  # (the compiled replay refers to the record it found last weakly)
    )

    def __init__(
        self,
        root: InternalFunction,
        backend: Backend,
        runner: Callable[[Sequence[Any], int | None], tuple[Any, ...]],
        version: int,
        entries: list[Any],
        arrays: list[Any],
        runs: Runs,
        known: tuple[dict[Any, Runs], Any],
        direct: DirectCall | None,
    ) -> None:
        self.root, self.backend, self.runner, self.version = root, backend, runner, version
        self.entries, self.arrays, self.runs, self.known = entries, arrays, runs, known
        #: each entry's replay tokens (``TrackedArray.holds``, the same lists), for the
        #: compiled replay (``fastpath.py``) to hold and let go without looking them up
        self.holds = tuple(entry.holds for entry in entries)
        #: the ``DirectCall``'s parts (``None``: always the runner), read by the generated
        #: replay without going through one more object
        self.entry, self.tail, self.failed, self.single = direct[:4] if direct is not None else (None,) * 4
        #: the direct calls as ``NativeCall``s (``Backend.direct``'s ``native``), which only the
        #: compiled replay can call (past Numba's dispatcher); made once the compiled replay
        #: counted ``HOT_REPLAYS`` replays of the record (``hits``: ``fastpath.hot``)
        self.native, self.native_single = direct[4:6] if direct is not None else (None, None)
        #: what makes the outputs of ``entry``'s or ``single``'s result (``DirectCall.results``)
        self.results = direct.results if direct is not None else None
        self.hits = 0
        self.epoch = -1  #: the tracker's ``replay_epoch`` it was kept in (``keep_replay``)


def record_replay(
    tracker: MemoryTracker,
    key: tuple[Any, ...] | None,
    plan: LaunchPlan,
    root: InternalFunction,
    args: Sequence[Any],
    entries: list[Any],
    arrays: list[Any],
    runs: Runs,
    known: tuple[dict[Any, Runs], Any],
) -> None:
    """Keep a ``Replay`` of a quick launch with ``args`` that ran without an error, under its
    replay ``key`` in ``tracker`` (``MemoryTracker.keep_replay``: if its entries are still
    tracked), if its back end gives a runner.

    The record holds the arrays it was made with (``Replay.arrays``), so an id in its key
    is that object's while the record lives — a view of a tracked array's too (HPVM-C
    passes byte views of tracked memory, built once: their launches paid the full path's
    60–160 µs after a 32 MiB step, docs/backends/cpu-performance.md). A launch with a view
    is recorded only when one of the ``_VIEWED`` launches with views before it had the same
    key and its arrays are still alive (weak references: a dead view's id can be a new
    view's): a host that makes a new view each time (``a[:8]``) records nothing, instead of
    a record per launch, and one that swaps two buffers' views, made once, is recorded from
    its third launch (with the last key alone, its keys alternated and it never was: a
    Jacobi sweep over HPVM-C's byte views took the full path every time).

    A host passing a new row index or time step to each launch makes one key (the
    ``neutral`` scalars' values are not in it): its second launch is replayed with the new
    value, and no record per launch fills the table."""
    if key is None:
        return
    if any(entry.array is not a for entry, a in zip(entries, arrays)):
        if not any(seen == key and all(ref() is not None for ref in refs) for seen, refs in plan.viewed):
            plan.viewed = (*plan.viewed, (key, tuple(weakref.ref(a) for a in arrays)))[-_VIEWED:]
            return
    backend = plan.backend
    version = backend.runners_version  # (read first: a switch after it makes the record stale)
    runner = backend.runner(root)
    if runner is not None:
        record = Replay(
            root,
            backend,
            runner,
            version,
            entries,
            arrays,
            runs,
            known,
            backend.direct(root, args, not runs.plain),
        )
        tracker.keep_replay(key, record, _REPLAYS)


#: Replays of a record after which the compiled replay asks its back end for native calls
#: (``Backend.direct``'s ``native``, ``fastpath.hot``): a host launching the same step in a
#: loop, for which a compile (a fraction of a second, once per function and signature; on
#: disk after) pays back in 0.4 µs a launch, and not a test or a script that launches a few
#: times (at record creation, the test suite's runs compiled one per record it made).
HOT_REPLAYS = 200

#: root -> its plans, one per target name (by the root's identity, held weakly: ``ir/weakid.py``).
_PLANS: WeakIdTable[InternalFunction, dict[str | None, LaunchPlan]] = WeakIdTable()


def plan_for(root: Any, target: Any) -> LaunchPlan:
    """The plan of launching ``root`` on ``target`` (built on first use; the checks it
    makes raise the launch's errors: not a root, a graph that does not verify, an unknown
    target, leaves the back end cannot run)."""
    # (``_PLANS.get`` and ``registry_version`` in-line: every launch comes here, after a
    # step that evicted the host path from the core's caches, and a frame is a miss there)
    found = _PLANS.items.get(id(root))
    if found is not None and found[0]() is root and (target is None or type(target) is str):
        plan = found[1].get(target)
        if (
            plan is not None
            and plan.version == REGISTRY_VERSION[0]
            and (target is not None or plan.choices is _LAUNCH._CHOICES)
        ):
            return plan
    plan = LaunchPlan(root, target)  # (root: an InternalFunction, target: None or a str by now)
    plans = _PLANS.get(root)
    if plans is None:
        plans = _PLANS.set(root, {})
    plans[target] = plan
    return plan


def forget(root: InternalFunction) -> None:
    """Drop the plans of ``root`` (tests)."""
    _PLANS.pop(root)
