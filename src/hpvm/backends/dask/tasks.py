"""What runs inside a Dask worker: a root (whole, or one chunk's) on the ``cpu`` back end.

Why a module of plain functions: Dask ships a task as a function and its arguments; these
functions are importable by name on every worker (hpvm is installed there), so only the
graph and the data travel. Each graph comes with a key the host gave it: the worker keeps
the first copy it received under that key (``_ROOTS``), so the ``cpu`` back end — one per
worker process, caching its compiled code per root object — compiles a graph once per
worker, not once per task.
"""

from __future__ import annotations

import pickle
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ...ir.graph import InternalFunction
from ..base import RunContext

T = TypeVar("T")

_ROOTS: dict[str, InternalFunction] = {}
_LOCK = threading.Lock()
_READY: set[str] = set()  # keys whose graph has run here once (compiled)
_FIRST_RUNS = threading.Lock()


def ship(root: InternalFunction) -> bytes:
    """``root`` pickled (by value where its functions are, as Dask would): the host does this
    once per graph key and sends the bytes with every task; a worker unpickles them only the
    first time it sees the key (``_cached``)."""
    import cloudpickle  # (a dependency of distributed, on the host and every worker)

    return cloudpickle.dumps(root)


def _cached(key: str, root: InternalFunction | bytes) -> InternalFunction:
    with _LOCK:
        known = _ROOTS.get(key)
        if known is None:
            known = _ROOTS[key] = pickle.loads(root) if isinstance(root, bytes) else root
        return known


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


def _timed(key: str, run: Callable[[], T]) -> tuple[T, float | None]:
    """``_once_compiled(key, run)`` and how long ``run()`` took, ``None`` where it compiled
    first (``tiny.py`` decides from a compiled run's time)."""
    if key not in _READY:
        return _once_compiled(key, run), None
    start = time.perf_counter()
    result = run()
    return result, time.perf_counter() - start


def _cpu() -> Any:
    """The worker's ``cpu`` back end, from the registry (``backends/base.py``; registered
    when ``hpvm`` is imported, as it is in every worker): not through ``hpvm.backends``,
    which would reach every back end (the import contract in pyproject.toml)."""
    from ..base import get_backend

    return get_backend("cpu")


def run_whole(
    key: str, root: InternalFunction | bytes, args: Sequence[Any], written: Sequence[int], kept: bool = False
) -> tuple[Any, ...]:
    """Run ``root`` once; return (its outputs, the arrays at ``written``, the seconds its
    compiled run took or ``None``: ``_timed``).

    An output that is one of the argument arrays comes back as ``("param", index)``, so the
    host hands back its own array, as the other back ends do.
    """
    root = _cached(key, root)
    args = [_resolve(a) for a in args]
    args = _own_copies(args, written) if kept else args
    # (RunContext(checked=True): the host checked the launch's arguments; a chunk's are row slices of
    # them, which would not pass again as whole arrays of an unsized port)
    outputs, seconds = _timed(key, lambda: _cpu().run(root, args, RunContext(checked=True)))
    return _mark(outputs, args), tuple(args[i] for i in written), seconds


def run_chunk(
    key: str,
    chunk: InternalFunction | bytes,
    args: Sequence[Any],
    written: Sequence[int],
    kept: bool = False,
    starts: Sequence[Sequence[int] | None] = (),
) -> tuple[Any, ...]:
    """Run one chunk root (its arrays are the chunk's row slices); return (its outputs, the
    rows of the arrays at ``written``, and — when ``kept`` — their digests by blocks from
    ``starts``, ``None`` where none is given: ``resident.py`` compares the host's rows with
    them at the next launch; and the seconds its compiled run took, ``_timed``)."""
    from .resident import digests

    chunk = _cached(key, chunk)
    args = [_resolve(a) for a in args]
    args = _own_copies(args, written) if kept else args
    outputs, seconds = _timed(key, lambda: _cpu().run(chunk, args, RunContext(checked=True)))
    arrays = tuple(args[i] for i in written)
    at = list(starts) or [None] * len(arrays)
    return (
        _mark(outputs, args),
        arrays,
        [digests(a, b) if kept and b is not None and a.ndim else None for a, b in zip(arrays, at)],
        seconds,
    )


def _own_copies(args: Sequence[Any], written: Sequence[int]) -> list[Any]:
    """The arguments, the arrays the run may write copied first: when ``kept``, they are
    pieces the worker keeps across launches (``resident.py``), which must stay as they were
    sent (a rerun of this task, or another task, may read them). Two arguments that are one
    array stay one array (the host keeps nothing for a launch whose arrays overlap)."""
    out = list(args)
    copies: dict[int, np.ndarray] = {}
    for i in written:
        a = out[i]
        if isinstance(a, np.ndarray):
            out[i] = copies.setdefault(id(a), a.copy())
    for i, a in enumerate(out):  # another input naming a copied array sees the copy
        if isinstance(a, np.ndarray) and id(a) in copies and i not in written:
            out[i] = copies[id(a)]
    return out


def patch(
    piece: np.ndarray,
    patches: Sequence[tuple[int, np.ndarray]],
    moved: Sequence[tuple[int, np.ndarray, int, int]] = (),
) -> np.ndarray:
    """A kept piece with some blocks of rows replaced by the host's (``patches``: (first
    row, rows)) and some by rows another worker holds (``moved``: (first row, that
    worker's rows — Dask brought them here, worker to worker — first row there, count)):
    ``resident.py``."""
    out = _resolve(piece).copy()
    for start, rows in patches:
        out[start : start + len(rows)] = rows
    for start, rows, at, count in moved:
        out[start : start + count] = rows[at : at + count]
    return out


def edge(result: Any, start: int, stop: int) -> np.ndarray:
    """Rows ``[start, stop)`` of a kept piece (``kept_ref``): the rows a neighbour's piece
    reads as its halo, cut out on this worker so that only they travel to the neighbour's."""
    return np.array(_resolve(result)[start:stop])


#: Marks ``(KEPT, task result, field, index)``: the ``index``-th written array of an
#: earlier task's result (in its ``field``-th item), kept on the worker that made it
#: (``resident.py``) — resolved here, so that keeping it costs no task of its own.
KEPT = "__hpvm_kept__"


def kept_ref(future: Any, index: int, field: int = 1) -> tuple[str, Any, int, int]:
    """A reference to the ``index``-th written array of the task ``future`` (``KEPT``):
    ``field`` 1 for ``run_whole`` / ``run_chunk``, 2 for ``run_layout_chunk``'s owned
    elements."""
    return (KEPT, future, field, index)


def _resolve(value: Any) -> Any:
    if isinstance(value, tuple) and len(value) == 4 and value[0] == KEPT:
        return value[1][value[2]][value[3]]
    return value


def _mark(outputs: Sequence[Any], args: Sequence[Any]) -> tuple[Any, ...]:
    marked = []
    for value in outputs:
        index = next((k for k, a in enumerate(args) if isinstance(value, np.ndarray) and value is a), None)
        marked.append(("param", index) if index is not None else ("value", value))
    return tuple(marked)


@dataclass(frozen=True)
class ParamRef:
    """A stage's value that is the item's root input ``index`` (an array a stage wrote and
    hands on, as edge detection's stages do): the host puts its own array there, so values
    on edges and popped outputs are the arrays the host pushed, as on every back end."""

    index: int


def _refs(values: dict[Any, Any], args: Sequence[Any]) -> dict[Any, Any]:
    """``values`` (nested dicts) with each array that is one of ``args`` as a ``ParamRef``."""
    out: dict[Any, Any] = {}
    for k, v in values.items():
        if isinstance(v, dict):
            out[k] = _refs(v, args)
        else:
            index = next((i for i, a in enumerate(args) if isinstance(v, np.ndarray) and v is a), None)
            out[k] = ParamRef(index) if index is not None else v
    return out


def upstream_arrays(upstream: dict[str, Any]) -> list[tuple[str, Any, np.ndarray]]:
    """The arrays among a stage's values from upstream, as (node, key, array)."""
    return [
        (name, key, v)
        for name, values in upstream.items()
        if isinstance(values, dict)
        for key, v in values.items()
        if isinstance(v, np.ndarray)
    ]


def _stage_item(
    root: InternalFunction,
    args: list[Any],
    nodes: list[Any],
    upstream: dict[str, Any],
    written: Sequence[int],
) -> tuple[Any, ...]:
    """One item of a stage: (produced, outputs — arrays that are the item's inputs as
    ``ParamRef`` — the arrays at ``written``, and the arrays received from upstream stages
    that this stage changed, as (node, key, array): the host copies them into its own)."""
    received = upstream_arrays(upstream)
    before = [a.copy() for _, _, a in received]
    produced, outputs = _cpu().run_stage(root, args, nodes, upstream)
    changed = [(name, key, a) for (name, key, a), old in zip(received, before) if not _same_bytes(a, old)]
    return _refs(produced, args), _refs(outputs, args), tuple(args[i] for i in written), changed


def run_stage(
    key: str,
    root: InternalFunction,
    args: Sequence[Any],
    names: Sequence[str],
    upstream: dict[str, Any],
    written: Sequence[int],
) -> tuple[Any, ...]:
    """Run one pipeline stage (the root's children named ``names``) for one streamed item;
    return ``_stage_item``'s four values."""
    root = _cached(key, root)
    nodes = [root.graph.node(name) for name in names]
    return _once_compiled(key, lambda: _stage_item(root, list(args), nodes, upstream, written))


def run_stage_batch(
    key: str,
    root: InternalFunction,
    args_list: Sequence[Sequence[Any]],
    names: Sequence[str],
    upstream_list: Sequence[dict[str, Any]],
    written: Sequence[int],
) -> tuple[Any, ...]:
    """``run_stage`` for several items in one task, in order, stopping at the first item
    that raises; return (produced, outputs, the error or ``None``, the arrays at
    ``written`` and the changed upstream arrays of each item that ran). A stage of scalars
    runs as ``cpu``'s batch (one compiled loop over the items)."""
    root = _cached(key, root)
    nodes = [root.graph.node(name) for name in names]
    arrays = any(isinstance(a, np.ndarray) for args in args_list for a in args) or any(
        upstream_arrays(u) for u in upstream_list
    )
    if not arrays:
        batch = _once_compiled(  # (its own key: the batch loop is compiled apart from the stage)
            key + "/batch",
            lambda: _cpu().run_stage_batch(root, [list(a) for a in args_list], nodes, list(upstream_list)),
        )
        return batch.produced, batch.outputs, batch.error, [((), []) for _ in batch.produced]
    produced, outputs, back = [], [], []
    for args, upstream in zip(args_list, upstream_list):
        try:
            p, o, w, c = _once_compiled(key, lambda: _stage_item(root, list(args), nodes, upstream, written))  # noqa: B023
        except BaseException as e:  # this item's failure: the items before it are delivered
            return produced, outputs, e, back
        produced.append(p)
        outputs.append(o)
        back.append((w, c))
    return produced, outputs, None, back


def _guard_fill(shape: tuple[int, ...], dtype: np.dtype, second: bool) -> np.ndarray:
    """The guard an array's unowned elements hold (``declared.py``): one value (NaN, the
    integer minimum, False) the first run, a different value per element the second (so
    that copying one unowned element into another shows too)."""
    dtype = np.dtype(dtype)
    if not second:
        first = np.nan if dtype.kind == "f" else np.iinfo(dtype).min if dtype.kind in "iu" else False
        return np.full(shape, first, dtype=dtype)
    count = int(np.prod(shape, dtype=np.int64))
    if dtype.kind == "f":
        values = -(np.arange(count, dtype=np.float64) + 0.25)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = info.max - (np.arange(count, dtype=np.int64) % (1 << min(info.bits - 2, 40)))
    else:
        values = np.ones(count, dtype=bool)
    return values.astype(dtype).reshape(shape)


def _selector(p: Any) -> tuple[Any, ...]:
    sel: list[Any] = [slice(None)] * len(p.shape)
    sel[p.axis] = p.index
    return tuple(sel)


def _same_bytes(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def run_layout_chunk(
    key: str,
    root: InternalFunction | bytes,
    node: str,
    rest: tuple[int, ...],
    args: Sequence[Any],
    written: Sequence[int],
    values: dict[int, Any],
) -> tuple[Any, ...]:
    """Run instances ``[lo, hi)`` of the root's one child with their own ids (``offsets``),
    its partitioned arrays holding only the elements they own (``declared.Piece`` at
    ``args[i]``, its packed elements at ``values[i]``: an array, or a kept one), twice
    with different guards; return ``("ok", outputs, owned elements of each written
    array)`` or ``("outside", root input or None, what, with {port} for its name)`` when the chunk touched elements it does
    not own (``declared`` module doc)."""
    from .declared import Piece
    from .offsets import offset_root

    with _LOCK:
        chunk = _ROOTS.get(key)
        if chunk is None:
            whole = pickle.loads(root) if isinstance(root, bytes) else root
            chunk = _ROOTS[key] = offset_root(whole, whole.graph.node(node), tuple(rest))
    runs = []
    for second in (False, True):
        call = []
        for a in args:
            if isinstance(a, Piece):
                buf = _guard_fill(a.shape, a.dtype, second)
                buf[_selector(a)] = _resolve(values[len(call)])
                call.append(buf)
            else:
                call.append(a)
        outputs = _once_compiled(key, lambda call=call: _cpu().run(chunk, call, RunContext(checked=True)))
        runs.append((call, outputs))
    (first, out1), (other, out2) = runs
    for i in written:
        p = args[i]
        sel = _selector(p)
        for buf, second in ((first[i], False), (other[i], True)):
            untouched = _guard_fill(p.shape, p.dtype, second)
            untouched[sel] = buf[sel]
            if not _same_bytes(untouched, buf):
                flat = np.flatnonzero(untouched.view(np.uint8) != buf.view(np.uint8))
                element = np.unravel_index(int(flat[0]) // buf.itemsize, buf.shape) if flat.size else ()
                where = tuple(int(e) for e in element)
                return ("outside", i, f"wrote element {where} of {{port}}, which they do not own")
        if not _same_bytes(first[i][sel], other[i][sel]):
            return ("outside", i, "read elements they do not own (what they wrote to {port} depends on them)")
    if len(out1) != len(out2) or not all(_same_bytes(a, b) for a, b in zip(out1, out2)):
        return ("outside", None, "read elements they do not own (the values they return depend on them)")
    return ("ok", _mark(out1, first), tuple(first[i][_selector(args[i])] for i in written))
