"""What runs inside a Dask worker: a root (whole, or one chunk's) on the ``cpu`` back end.

Why a module of plain functions: Dask ships a task as a function and its arguments; these
functions are importable by name on every worker (hpvm is installed there), so only the
graph and the data travel. Each graph comes with a key the host gave it: the worker keeps
the first copy it received under that key (``_ROOTS``), so the ``cpu`` back end — one per
worker process, caching its compiled code per root object — compiles a graph once per
worker, not once per task.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from ...ir.graph import InternalFunction

T = TypeVar("T")

_ROOTS: dict[str, InternalFunction] = {}
_LOCK = threading.Lock()
_READY: set[str] = set()  # keys whose graph has run here once (compiled)
_FIRST_RUNS = threading.Lock()


def _cached(key: str, root: InternalFunction) -> InternalFunction:
    with _LOCK:
        return _ROOTS.setdefault(key, root)


def _once_compiled(key: str, run: Callable[[], T]) -> T:
    """``run()``, holding a process-wide lock the first time ``key`` runs here: the first
    run generates and compiles code (``ast``, Numba), and two worker threads of one process
    doing that at once broke CPython's parser ("AST constructor recursion depth mismatch",
    seen with an in-process cluster). Later runs take no lock."""
    if key in _READY:
        return run()
    with _FIRST_RUNS:
        result = run()
        _READY.add(key)
        return result


def _cpu() -> Any:
    from .. import get_backend

    return get_backend("cpu")


def run_whole(
    key: str, root: InternalFunction, args: Sequence[Any], written: Sequence[int]
) -> tuple[Any, ...]:
    """Run ``root`` once; return (its outputs, the arrays at ``written``).

    An output that is one of the argument arrays comes back as ``("param", index)``, so the
    host hands back its own array, as the other back ends do.
    """
    root = _cached(key, root)
    outputs = _once_compiled(key, lambda: _cpu().run(root, list(args)))
    return _mark(outputs, args), tuple(args[i] for i in written)


def run_chunk(
    key: str, chunk: InternalFunction, args: Sequence[Any], written: Sequence[int]
) -> tuple[Any, ...]:
    """Run one chunk root (its arrays are the chunk's row slices); return (its outputs, the
    rows of the arrays at ``written``)."""
    chunk = _cached(key, chunk)
    outputs = _once_compiled(key, lambda: _cpu().run(chunk, list(args)))
    return _mark(outputs, args), tuple(args[i] for i in written)


def _mark(outputs: Sequence[Any], args: Sequence[Any]) -> tuple[Any, ...]:
    marked = []
    for value in outputs:
        index = next((k for k, a in enumerate(args) if isinstance(value, np.ndarray) and value is a), None)
        marked.append(("param", index) if index is not None else ("value", value))
    return tuple(marked)


def run_stage(
    key: str,
    root: InternalFunction,
    args: Sequence[Any],
    names: Sequence[str],
    upstream: dict[str, Any],
    written: Sequence[int],
) -> tuple[Any, ...]:
    """Run one pipeline stage (the root's children named ``names``) for one streamed item;
    return (the stage's outputs by node name, its root outputs, the arrays at ``written``)."""
    root = _cached(key, root)
    nodes = [root.graph.node(name) for name in names]
    produced, outputs = _once_compiled(key, lambda: _cpu().run_stage(root, list(args), nodes, upstream))
    return produced, outputs, tuple(args[i] for i in written)


def run_stage_batch(
    key: str,
    root: InternalFunction,
    args_list: Sequence[Sequence[Any]],
    names: Sequence[str],
    upstream_list: Sequence[dict[str, Any]],
    written: Sequence[int],
) -> tuple[Any, ...]:
    """``run_stage`` for several items in one task (``cpu``'s batch: in order, stopping at
    the first item that raises); return (produced, outputs, the error or ``None``, the
    arrays at ``written`` of each item that ran)."""
    root = _cached(key, root)
    nodes = [root.graph.node(name) for name in names]
    batch = _once_compiled(  # (its own key: the batch loop is compiled apart from the stage)
        key + "/batch",
        lambda: _cpu().run_stage_batch(root, [list(a) for a in args_list], nodes, list(upstream_list)),
    )
    arrays = [tuple(args_list[k][i] for i in written) for k in range(len(batch.produced))]
    return batch.produced, batch.outputs, batch.error, arrays
