"""Which launches run on the launching thread: the quick ones.

Handing a launch to a worker thread costs two thread wake-ups (the worker's, then the
host's when the run is done); on a loaded two-core machine that is 50–150 µs, several times
what a small compiled graph takes to run. So a launch whose *last run with the same
arguments* took under ``QUICK_RUN_S`` runs inside ``launch`` itself, on the calling thread,
and ``wait`` only collects it. "The same arguments" is the arrays' shapes and dtypes and the
scalars' types and values (``run_key``): what decides the work of a graph, short of the
arrays' contents. A first run (which compiles), a new shape, dtype or scalar value, and
anything that took longer still goes to a worker, so that:

- Ctrl-C keeps working: Python delivers it on the main thread only between bytecodes,
  which a run in native code holds off; a quick run holds it off for at most about
  ``QUICK_RUN_S`` (a run whose work depends on its arrays' contents may take longer than its
  previous one: the limit of this prediction), a run on a worker not at all;
- a long launch still overlaps the host's work until ``wait``.

Errors and warnings of a quick run are kept on its handle and surface at ``wait``, as from a
worker.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..ir.graph import InternalFunction

#: Longest previous run (seconds) that lets the next one with the same arguments run on
#: the launching thread: what Ctrl-C may wait for, and the overlap with the host given up.
QUICK_RUN_S = 2e-3

#: Run keys remembered per root and back end (the oldest are dropped beyond this).
_KEYS_PER_ROOT = 64

_TIMES: weakref.WeakKeyDictionary[InternalFunction, dict[Any, float]] = weakref.WeakKeyDictionary()


def run_key(backend_name: str, args: Sequence[Any]) -> Any:
    """What a run's duration is predicted from: the back end, the arrays' shapes and dtypes,
    the scalars' types and values. ``None`` for arguments it cannot describe cheaply."""
    key: list[Any] = [backend_name]
    for a in args:
        kind = type(a)
        if kind is np.ndarray:
            key.append((a.shape, a.dtype))
        elif kind in (int, float, bool) or isinstance(a, np.generic):
            key.append((kind, a))
        else:
            return None
    return tuple(key)


def durations(root: InternalFunction) -> dict[Any, float]:
    """How long the last run of ``root`` with each run key took (made on first use); one
    lookup per launch, then ``is_quick`` and ``record`` work on it."""
    times = _TIMES.get(root)
    if times is None:
        times = _TIMES[root] = {}
    return times


def is_quick(times: dict[Any, float], key: Any) -> bool:
    """Whether the last run with ``key`` took under ``QUICK_RUN_S``."""
    return key is not None and times.get(key, QUICK_RUN_S) < QUICK_RUN_S


def record(times: dict[Any, float], key: Any, seconds: float) -> None:
    """Remember how long a run with ``key`` took (the oldest key goes beyond a bound)."""
    if key is None:
        return
    if key not in times and len(times) >= _KEYS_PER_ROOT:
        times.pop(next(iter(times)), None)
    times[key] = seconds


def forget(root: InternalFunction) -> None:
    """Drop every duration recorded for ``root`` (tests)."""
    _TIMES.pop(root, None)
