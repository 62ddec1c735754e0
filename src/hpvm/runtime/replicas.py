"""Stage replicas: when one stage of a stream may run several items at once.

A pipeline of stages that each run on one thread is bounded by its longest stage: the edge
detection example's smoothing is 60–70 % of the work, so with a thread per stage its stream
cannot beat ~1.5× the stages called in turn on 2 cores, however the others overlap (issue
24, item 2). The field's answer — TBB's ``parallel_pipeline`` with parallel filters,
StreamIt's fission of stateless filters — is to run such a stage on two (or more) items at
once, on extra threads of the stage, and to put the results back in push order before the
next stage. Here (``stagethreads.py`` runs them) a stage takes a next item while another of
its items is still running only when all of these hold, so that no result can change:

- **The stage has nothing that carries from one item to the next or that the host sees
  while it runs** (``StagePolicy.of``, once per stream): the back end runs stages as
  compiled code on this process's threads that releases the GIL
  (``Backend.stage_replicas``: ``cpu``); every leaf of the stage is bounded
  (``ir/bounded.py``: no ``while`` loop, no early exit, no helper of the user's, whose
  state or effects are not looked at) and calls no ``print`` (output would interleave out
  of item order). Warnings are collected per batch and issued in item order; ``malloc``
  pools are checked out per call, so two calls never share one.
- **The items in flight share no array the stage writes**: per item, the arrays the stage
  reads and the ones it may write (``Footprint``: a root argument bound to a leaf parameter
  in the leaf's ``outs``, or that a leaf writes, returns or may return a view of; every
  array that arrives from another stage counts as written), compared by memory
  (``np.may_share_memory``: overlapping bounds, conservative) with every item the stage
  is running. An item that overlaps one in flight waits until it is done: it runs alone.
- **The stage bounds the stream and cores are free**: the stage has a time per item (as
  ``_Batches`` measures it, or until it has run an item, its time when the root's last
  stream ended: ``remembered``), its items take at least ``REPLICA_SECONDS`` each (a
  thread hand-off must be negligible beside them), and that time is more than its share
  of the machine, ``total / cores``, where ``total`` is the time of the stages that have
  one (a stage that has none yet takes no core yet): then ``ceil(time × cores / total)``
  items at once (at most ``cores``) bring the stage down to its share; more would only
  take cores from the others. (Waiting until every stage had run an item, as at first,
  ran the edge detection's smoothing alone for its first two frames of every launch.)

Results, warnings and failures leave the stage in item order whatever order the items end
in: a thread whose items end before an earlier item of the stage does leaves them parked
and takes the next items; the thread that hands on the earlier item hands them on after it.
(Waiting for its turn instead left a core idle: 12 of the 64 smoothings of the edge
detection's stream waited so, 150 ms of a 1.8 s run on a loaded machine.) When an item
fails, the stage stops there: items after it that a replica already ran are dropped (their
results and warnings; what they wrote into their own arrays stays written, as the stages
upstream of a failed one may already have written those items' arrays).
"""

from __future__ import annotations

import ast
import math
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir.analysis import returned_params
from ..ir.bounded import unbounded_reason
from ..ir.graph import InternalFunction, LeafFunction, Node, functions
from ..ir.leafinfo import analyze_leaf, parse_leaf
from ..ir.types import ArrayType
from . import fastpath

REPLICAS = True  # False: a stage never runs two items at once
REPLICA_SECONDS = 1e-3  # a stage's items must take at least this long each to be replicated

#: per root, per stage (its nodes' names): its time per item when the root's last stream
#: ended, what a new stream of the root counts for a stage until it has run an item of its own
_LAST: weakref.WeakKeyDictionary[InternalFunction, dict[tuple[str, ...], float]] = weakref.WeakKeyDictionary()


def remembered(root: InternalFunction, nodes: Sequence[Node]) -> float | None:
    """The time per item of the stage of ``nodes`` in the last stream of ``root`` (None: none
    ran): a stream launched again (a clip at a time) replicates from its first item, where
    measuring first ran the edge detection's smoothing alone for one frame per launch."""
    return _LAST.get(root, {}).get(tuple(n.name for n in nodes))


#: per root, per stage (its nodes' names): its ``StagePolicy`` (or None), what ``policy`` made
_POLICIES: weakref.WeakKeyDictionary[InternalFunction, dict[tuple[str, ...], StagePolicy | None]] = (
    weakref.WeakKeyDictionary()
)


def policy(root: InternalFunction, nodes: Sequence[Node]) -> StagePolicy | None:
    """``StagePolicy.of(root, nodes)``, made once per root and stage: it parses every leaf
    of the stage (``print`` calls, what it writes and returns), 9 ms of the host's CPU at
    every streaming launch of the edge detection, before any stage could start (issue 24,
    item 2). A root's graph and leaves do not change once built, so neither does this."""
    policies = _POLICIES.get(root)
    if policies is None:
        policies = _POLICIES.setdefault(root, {})
    key = tuple(n.name for n in nodes)
    if key not in policies:
        policies[key] = StagePolicy.of(root, nodes)
    return policies[key]


def remember(root: InternalFunction, stages: Sequence[tuple[Sequence[Node], float | None]]) -> None:
    """Keep the times per item of a stream's stages (nodes, seconds) for ``remembered``."""
    times = _LAST.setdefault(root, {})
    for nodes, seconds in stages:
        if seconds is not None:
            times[tuple(n.name for n in nodes)] = seconds


@dataclass(frozen=True)
class StagePolicy:
    """What one stage touches of an item: the root parameters its nodes receive, split
    into those it only reads and those it may write (``written``)."""

    read: tuple[int, ...]
    written: tuple[int, ...]

    @staticmethod
    def of(root: InternalFunction, nodes: Sequence[Node]) -> StagePolicy | None:
        """The policy of the stage of ``nodes``, or ``None`` when it may never run two items
        at once (a leaf the runtime cannot bound, or that prints)."""
        mine = {id(n) for n in nodes}
        for n in nodes:
            for fn in functions(n.function):
                if isinstance(fn, LeafFunction) and (unbounded_reason(fn) is not None or _prints(fn)):
                    return None
        read: set[int] = set()
        written: set[int] = set()
        for b in root.graph.in_binds:
            if id(b.dst) in mine and isinstance(root.params[b.ip].type, ArrayType):
                (written if _may_write(b.dst.function, b.ic) else read).add(b.ip)
        return StagePolicy(tuple(sorted(read - written)), tuple(sorted(written)))

    def footprint(self, args: Sequence[Any], upstream: Sequence[dict[str, Any]]) -> Footprint:
        """The arrays a batch of items (root arguments, upstream values) has the stage read
        and write."""
        read = [a for item in args for i in self.read if isinstance(a := item[i], np.ndarray)]
        written = [a for item in args for i in self.written if isinstance(a := item[i], np.ndarray)]
        written += [a for values in upstream for a in _arrays(values)]
        return Footprint(read, written)


@dataclass(frozen=True)
class Footprint:
    """The arrays some items have a stage read and may have it write."""

    read: list[np.ndarray]
    written: list[np.ndarray]

    def overlaps(self, other: Footprint) -> bool:
        """Whether running both at once could change a result: an array one may write shares
        memory with one the other reads or writes (bounds compared: conservative)."""
        return _any_shared(self.written, [*other.read, *other.written]) or _any_shared(
            other.written, self.read
        )


def allowed(seconds: float | None, times: Sequence[float | None], cores: int) -> int:
    """How many items a stage whose items take ``seconds`` each may run at once, beside
    stages whose items take ``times`` (this one's included; ``None``: not measured yet,
    counted as nothing — until they have run an item they take no core, and waiting for
    them kept the edge detection's smoothing to one item at a time for its first two)."""
    if seconds is None or seconds < REPLICA_SECONDS or cores < 2:
        return 1
    total = sum(t for t in times if t is not None)
    if total <= 0:
        return 1
    return max(1, min(cores, math.ceil(seconds * cores / total - 1e-9)))


def _any_shared(ours: list[np.ndarray], theirs: list[np.ndarray]) -> bool:
    """Whether an array of ``ours`` may share memory with one of ``theirs`` (NumPy's
    ``may_share_memory``: their byte extents overlap). In one call of the C extension where
    it was built (``fastpath.ANY_SHARED``): a replica asks this for every item it may start,
    under the stream's lock, and the edge detection's whole frames are 60 pairs: 39 µs of CPU
    a frame in the stream as ``may_share_memory`` calls (12.8 µs on a quiet core), 11.5 µs in
    C (0.67 µs) (docs/backends/cpu-performance.md, "The footprint check in C")."""
    shared = fastpath.ANY_SHARED
    if shared is not None:
        return shared(ours, theirs, np.ndarray)
    return any(np.may_share_memory(a, b) for a in ours for b in theirs)


def _arrays(value: Any, depth: int = 0) -> Iterator[np.ndarray]:
    """The arrays in a stage's upstream values (opaque to the scheduler: a back end's dicts
    and tuples of values, looked through a few levels deep)."""
    if isinstance(value, np.ndarray):
        yield value
    elif depth < 4 and isinstance(value, dict):
        for v in value.values():
            yield from _arrays(v, depth + 1)
    elif depth < 4 and isinstance(value, (tuple, list)):
        for v in value:
            yield from _arrays(v, depth + 1)


def _may_write(fn: Any, port: int) -> bool:
    """Whether a node running ``fn`` may write the array it receives at input ``port``, or
    hand it (or a view of it) on to a node that may: a leaf parameter in its ``outs`` or
    written by it, returned by it, or any parameter of a leaf that returns an array it does
    not recognisably take as a parameter; any port of an internal node (conservative)."""
    if not isinstance(fn, LeafFunction):
        return True
    name = fn.params[port].name
    if name in fn.outs:
        return True
    info = analyze_leaf(fn)
    if not info.parsed or name in info.writes:
        return True
    returned = returned_params(fn)
    arrays_out = [r for r, t in zip(returned, fn.out_types) if isinstance(t, ArrayType)]
    return port in arrays_out or None in arrays_out


def _prints(leaf: LeafFunction) -> bool:
    """Whether ``leaf``'s Python body calls ``print`` (its output is seen in call order)."""
    func = parse_leaf(leaf)
    if func is None:
        return False  # (no Python source: bounded only if ``ir/bounded.py`` read its body)
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
        for n in ast.walk(func)
    )
