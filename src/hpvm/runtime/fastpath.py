"""The compiled replay: a launch plan's replay (``plan.py``, ``LaunchPlan.replay``) in C,
where the optional extension ``hpvm.runtime._replay`` was built.

Why in C: a host that launches a step in a loop (a stencil's 100 launches) replays each
launch right after a step that streamed megabytes through the core, and there every frame
and object of the Python host path is a cache miss — the generated Python replay cost
3.9–5.6 µs over the compiled step, most of the stencil row's margin against Numba
(``docs/backends/cpu-performance.md``, "The replay in C"). The C function makes the same
tests, the same key, the same look-up and tokens, the same timed call of the compiled
entry, touching fewer objects.

It runs both of the replay's paths — the compiled entry called directly, and the runner
with a thread count picked per run — and hands a record it does not know (another class
than ``plan.Replay``) to the Python replay it was made with, before anything is held or
run. The Python replay stays the reference: the replay tests run once with each
(``tests/conftest.py``, ``each_replay``), and a property test compares the two on every
kind of port (``tests/runtime/test_compiled_replay.py``).

The extension also compares streamed items' footprints (``ANY_SHARED``, for
``replicas.py``): NumPy's ``may_share_memory`` over every pair of two lists of arrays in one
call.

Where the extension was not built (no C compiler when hpvm was installed), or with
``HPVM_PURE_PYTHON=1`` in the environment, plans use the Python replay, which behaves the
same, a few microseconds slower per launch, and streams compare footprints with NumPy.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..ir.args import writers
from ..ir.graph import InternalFunction
from . import quick
from .handle import FINISHED, LaunchHandle
from .launch import port_test
from .quick import Runs

try:
    from . import _replay as _extension
except ImportError:  # (not built: no C compiler at install time)
    _extension = None

#: Why the compiled replay is not used, or ``None`` where it is.
REASON: str | None = None
if _extension is None:
    REASON = "the extension hpvm.runtime._replay was not built (no C compiler when hpvm was installed)"
elif os.environ.get("HPVM_PURE_PYTHON", "") not in ("", "0"):
    REASON = "HPVM_PURE_PYTHON is set"


def _layout() -> str | None:
    """Tell the extension where the slots it reads and writes are (``plan.Replay``,
    ``quick.Runs``, ``LaunchHandle``); why it cannot, or ``None``."""
    from .plan import Replay  # (plan.py imports this module)

    try:
        _extension.layout(Replay, Runs, LaunchHandle)
    except TypeError as e:  # (a class changed: every attribute it uses must be a slot)
        return f"the compiled replay does not fit this version's classes: {e}"
    return None


#: ``any_shared(ours, theirs, ndarray)`` of the extension: whether an array of the list
#: ``ours`` may share memory with one of ``theirs``, NumPy's ``may_share_memory`` over every
#: pair in one call (``replicas.py``'s footprints); ``None`` where the extension is not used.
#: A module attribute, read per call (tests set it to ``None`` to run the NumPy pairs).
ANY_SHARED: Callable[[list[Any], list[Any], type], bool] | None = (
    getattr(_extension, "any_shared", None) if REASON is None else None
)

#: Whether new launch plans get the compiled replay: the extension is built and fits the
#: classes, and ``HPVM_PURE_PYTHON`` is not set. A module attribute, read when a plan is
#: made (tests set it to run the same launches through both replays).
ENABLED: bool = REASON is None


_laid_out = False  # (``layout`` runs when the first plan is made: plan.py imports this module)


def built() -> bool:
    """Whether the extension was built with this install of hpvm."""
    return _extension is not None


def compiled_replay(
    plan: Any, root: InternalFunction, fallback: Callable[[Any, Any], LaunchHandle | None]
) -> Callable[[Any, Any], LaunchHandle | None] | None:
    """``plan``'s replay in C, handing a record it does not know to ``fallback`` (the plan's
    generated Python replay); ``None`` where it is not ``ENABLED``."""
    global ENABLED, REASON, _laid_out
    if not ENABLED or _extension is None:
        return None
    if not _laid_out:
        REASON, _laid_out = _layout(), True
        if REASON is not None:
            ENABLED = False
            return None
    written = writers(root)
    # (each port's test as ``launch.port_test`` describes it; an array's rank, ``None`` for a
    # replay, is not read)
    ports = tuple(port_test(p.type, i in written, replayed=True) for i, p in enumerate(root.params))
    # (quick.py's globals: its ``QUICK_RUN_S`` is read per run, as ``Runs.add`` reads it)
    from .plan import HOT_REPLAYS  # (plan.py imports this module)

    # (a scalar whose value the key leaves out: ``LaunchPlan.neutral``)
    keyed = bytes(i not in plan.neutral for i in range(len(root.params)))
    return _extension.replayer(
        plan, ports, fallback, failed_run, FINISHED, np.ndarray, vars(quick), hot, HOT_REPLAYS, keyed
    )


def hot(record: Any, args: Sequence[Any]) -> None:
    """A record replayed ``plan.HOT_REPLAYS`` times by the compiled replay, with ``args``
    (equal to its key's): its direct calls as ``NativeCall``s where the back end makes them
    (``Backend.direct``'s ``native``: compiled now, once per function and signature), which
    its next replays call past Numba's dispatcher."""
    call = record.backend.direct(record.root, args, not record.runs.plain, native=True)
    if call is None or call.entry is not record.entry:  # (the record's call replaced: tests do)
        return
    record.native = call.native
    if record.single is None or record.single is call.single:  # (a function for one thread made since)
        record.single, record.native_single = call.single, call.native_single


def failed_run(record: Any, args: Sequence[Any], error: Exception) -> BaseException:
    """What the compiled entry's ``error`` means to the user (``Replay.failed`` raises it,
    worded as the runner would): returned, for the compiled replay to keep on the handle,
    as the Python replay keeps what it catches."""
    try:
        record.failed(args, error)
    except BaseException as worded:  # (delivered to the host at wait)
        return worded
    return error
