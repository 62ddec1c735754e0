"""Checks made before a graph runs: the graph, the arguments, the memory tracker, the back end."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..backends import backend_for_hint, get_backend
from ..backends.base import Backend, check_bodies
from ..backends.memory import MemoryTracker, TrackedArray
from ..backends.mixed import MixedBackend, split_by_target, targets
from ..errors import LaunchError, MemoryTrackingError
from ..ir.args import check_argument, check_count, writers
from ..ir.graph import ONE_TO_ONE, InternalFunction, NodeFunction, materialize
from ..ir.types import ArrayType, ScalarType
from ..ir.verify import verify

# Root functions already verified. Weak references, not ids: an id is reused once its
# function is garbage-collected, and a new (unverified) root must not inherit the mark.
_VERIFIED: weakref.WeakSet[InternalFunction] = weakref.WeakSet()


def check_root(root: Any) -> InternalFunction:
    """``root`` verified (once per function object), after the code of its leaves read from
    a program file has run: running a program is when its code runs, and the verifier then
    sees the names that code binds — a look-only ``hpvm.verify`` before could not."""
    if not isinstance(root, InternalFunction):
        what = root.describe() if isinstance(root, NodeFunction) else repr(root)
        raise LaunchError(
            f"launch() needs an @hpvm.internal root node function, not {what}; wrap a leaf in "
            "an internal node that creates it"
        )
    if root not in _VERIFIED:
        materialize(root)
        verify(root)
        _VERIFIED.add(root)
    return root


def check_args(
    root: InternalFunction,
    args: Any,
    tracker: MemoryTracker,
    api: str,
    tracked: list[TrackedArray] | None = None,
) -> list[Any]:
    """The arguments as a list, after checking count, types and tracking (the tracker's
    entries of the array arguments appended to ``tracked``, if given: a launch holds them
    without looking them up again).

    Every launch checks every argument, but cheaply: ``_acceptors`` (built once per root)
    accept the common cases (an array of the port's dtype and rank — writeable, where the
    graph writes it —, a Python or NumPy scalar the port takes) without ``check_value`` and
    ``check_writeable``, which decide everything else.
    """
    check_count(root, args, api)
    for i, (p, value, accept) in enumerate(zip(root.params, args, _acceptors(root))):
        if not accept(value):
            check_argument(root, i, value, api)
        if isinstance(value, np.ndarray):
            entry = tracker.find(value)
            if entry is None:
                raise MemoryTrackingError(
                    f"{api}(): argument {i} ('{p.name}') of '{root.name}' is an untracked array; "
                    f"call hpvm.track_memory({p.name}) before launching"
                )
            if tracked is not None:
                tracked.append(entry)
    return list(args)


def check_sizes(root: InternalFunction, args: Sequence[Any], api: str) -> None:
    """Check the replication sizes of the root's children for these arguments.

    They are expressions of the root's inputs only, so a negative size or a one-to-one edge
    between grids of different extents is known before anything runs and is reported by
    ``launch`` / ``push`` itself (deeper levels depend on values computed by nodes; back ends
    check those when they run).
    """
    key = _size_key(root, args)
    known = _SIZES_OK.get(root)
    if known is not None and key in known:
        return  # these sizes were checked before: they depend on nothing else
    env = {p.name: a for p, a in zip(root.params, args)}
    graph = root.graph
    sizes = {id(node): node.evaluate_sizes(env, f"{api}(): ") for node in graph.nodes}
    for e in graph.edges:
        if e.repl == ONE_TO_ONE and sizes[id(e.src)] != sizes[id(e.dst)]:
            raise LaunchError(
                f"{api}(): {e.describe()}: one-to-one edges need identical grids, but with these "
                f"arguments '{e.src.name}' has {list(sizes[id(e.src)])} instances and "
                f"'{e.dst.name}' {list(sizes[id(e.dst)])}"
            )
    if known is None or len(known) >= 64:
        known = _SIZES_OK[root] = set()
    known.add(key)


class PushCheck:
    """``check_args`` and ``check_sizes`` for the pushes to one stream, with what they look up
    per root resolved once. A push of a small item costs a few microseconds in all, and
    looking the root up in weak dictionaries on every push was a good part of them.
    Scalars the acceptors take pass here; anything else (arrays, which need the tracker; a
    value to refuse, with its message) goes through ``check_args``.
    """

    def __init__(self, root: InternalFunction, tracker: MemoryTracker) -> None:
        self.root, self.tracker = root, tracker
        self._count = len(root.params)
        self._acceptors = None if root.array_params() else _acceptors(root)
        self._sizes_vary = bool(_size_params(root))  # else checked at the first push only
        self._sizes_checked = False

    def __call__(self, args: Any) -> list[Any]:
        acceptors = self._acceptors
        if acceptors is not None and type(args) in (tuple, list) and len(args) == self._count:
            for accept, value in zip(acceptors, args):
                if not accept(value):
                    values = check_args(self.root, args, self.tracker, "push")
                    break
            else:
                values = list(args)
        else:
            values = check_args(self.root, args, self.tracker, "push")
        if self._sizes_vary or not self._sizes_checked:
            check_sizes(self.root, values, "push")
            self._sizes_checked = True
        return values


def choose_backend(root: InternalFunction, target: str | None) -> Backend:
    """The back end for a launch: ``target`` if given, else what the nodes' hints select —
    one back end, or a ``MixedBackend`` splitting the root's children between several."""
    if target is not None:
        if not isinstance(target, str):
            raise LaunchError(f"target must be a back-end name such as 'interp', not {target!r}")
        backend = get_backend(target)
        checked = _BODIES_OK.setdefault(root, set())
        if backend.name not in checked:
            check_bodies(backend, root, f"launch(target={target!r}): ")
            checked.add(backend.name)
        return backend
    cached = _CHOICES.get(root)
    if cached is not None:
        return cached
    split = split_by_target(root)
    names = targets(split) or {backend_for_hint(root.hint)}
    if len(names) == 1:
        backend = get_backend(names.pop())
        check_bodies(backend, root, "launch(): ")
    else:
        backend = MixedBackend(split)  # checks each part against its back end
    _CHOICES[root] = backend
    return backend


# Root -> the back end its hints select (an entry is written once, by ``choose_backend``,
# and leaves with its root: a launch plan relies on that, ``plan.plan_for``); root -> the
# back ends known to accept its leaves.
_CHOICES: weakref.WeakKeyDictionary[InternalFunction, Backend] = weakref.WeakKeyDictionary()
_BODIES_OK: weakref.WeakKeyDictionary[InternalFunction, set[str]] = weakref.WeakKeyDictionary()


def array_args(args: Sequence[Any]) -> list[np.ndarray]:
    return [a for a in args if isinstance(a, np.ndarray)]


# -- what makes repeated launches cheap (per root, weakly held) ----------------------------

_ACCEPTORS: weakref.WeakKeyDictionary[InternalFunction, list[Callable[[Any], bool]]] = (
    weakref.WeakKeyDictionary()
)
_SIZE_PARAMS: weakref.WeakKeyDictionary[InternalFunction, list[int]] = weakref.WeakKeyDictionary()
# Root -> the size keys (``_size_key``) that passed ``check_sizes``; at most 64 each.
_SIZES_OK: weakref.WeakKeyDictionary[InternalFunction, set[Any]] = weakref.WeakKeyDictionary()
_INT_TYPES = frozenset(
    {int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64}
)
_FLOAT_TYPES = frozenset({float, np.float16, np.float32, np.float64})


def port_test(ptype: Any, written: bool, replayed: bool = False) -> tuple[Any, ...]:
    """What a port's acceptance test tests, as data: ``("array", dtype, written, rank)``
    (``rank``: ``None`` when it is not tested), ``("pointer", dtype)`` (contiguous 1-D
    memory), ``("types", types)`` (a scalar of one of these types), ``("int", types, lo,
    hi)`` (an integer of these types in ``lo..hi``), or ``("never",)``.

    One description, two readers: ``accept_test`` writes it as a Python expression, and
    the compiled replay (``fastpath.py``) tests the same in C.

    ``replayed``: the test of a launch plan's replay (``plan.Replay``), whose key holds each
    array's identity and shape — an array matching it is one that passed before, with its
    rank: what can have changed since is tested (its writeable flag, its dtype: NumPy lets
    ``a.dtype`` be reassigned)."""
    if isinstance(ptype, ArrayType):
        if not ptype.sized:  # (contiguous memory only: check_value says so)
            return ("pointer", ptype.dtype)
        return ("array", ptype.dtype, written, None if replayed else ptype.rank)
    if isinstance(ptype, ScalarType):
        if ptype.is_float:
            return ("types", _FLOAT_TYPES | _INT_TYPES)  # (not bool: a bool is refused for a float port)
        if ptype.is_integer:
            info = np.iinfo(ptype.dtype)
            return ("int", _INT_TYPES, int(info.min), int(info.max))
        if ptype.dtype == np.bool_:
            return ("types", _INT_TYPES | {bool, np.bool_})  # (a number is taken as its truth)
    return ("never",)


def accept_test(ptype: Any, written: bool, v: str, names: dict[str, Any], replayed: bool = False) -> str:
    """A Python expression, over a value named ``v``, true only for values
    ``check_value(ptype, value)`` accepts, and for a ``written`` parameter only writeable
    arrays (false means: ask ``check_value``): ``port_test`` written out. The constants it
    names are put in ``names``.

    An expression, not a function: ``_acceptor`` makes one test of it, and a launch plan
    (``plan.py``) one function testing every parameter in a row, without a call each."""
    test = port_test(ptype, written, replayed)
    tag = f"_{v}"
    if test[0] in ("array", "pointer"):
        names["ndarray"], names["dt" + tag] = np.ndarray, test[1]
        # (``is`` first: the dtype objects of native types are shared, and == costs; an
        # array made from C memory, ``np.ctypeslib.as_array``, has an equal one of its own)
        parts = [f"type({v}) is ndarray and ({v}.dtype is dt{tag} or {v}.dtype == dt{tag})"]
        if test[0] == "pointer":
            parts += [f"{v}.ndim == 1", f"{v}.flags.c_contiguous"]
        else:
            parts += [f"{v}.ndim == {test[3]}"] if test[3] is not None else []
            parts += [f"{v}.flags.writeable"] if test[2] else []
        return f"({' and '.join(parts)})"
    if test[0] == "types":
        names["types" + tag] = test[1]
        return f"(type({v}) in types{tag})"
    if test[0] == "int":
        names["types" + tag] = test[1]
        return f"(type({v}) in types{tag} and {test[2]} <= int({v}) <= {test[3]})"
    return "False"


def _acceptor(ptype: Any, written: bool = False) -> Callable[[Any], bool]:
    """``accept_test`` as a function of the value."""
    names: dict[str, Any] = {}
    test = accept_test(ptype, written, "v", names)
    return eval(f"lambda v: {test}", names)  # noqa: S307 — our own expression, no user text


def _acceptors(root: InternalFunction) -> list[Callable[[Any], bool]]:
    found = _ACCEPTORS.get(root)
    if found is None:
        written = writers(root)
        found = _ACCEPTORS[root] = [_acceptor(p.type, i in written) for i, p in enumerate(root.params)]
    return found


def _size_key(root: InternalFunction, args: Sequence[Any]) -> Any:
    """What the sizes of the root's children depend on: the shapes of the arrays and the
    values (with their types) of the scalars their expressions name. Equal keys, equal
    sizes: ``check_sizes`` checks a key once."""
    used = _size_params(root)
    return tuple(args[i].shape if isinstance(args[i], np.ndarray) else (type(args[i]), args[i]) for i in used)


def _size_params(root: InternalFunction) -> list[int]:
    """Indices of the root's parameters that the sizes of its children name."""
    used = _SIZE_PARAMS.get(root)
    if used is None:
        names = set().union(*(e.params() for n in root.graph.nodes for e in n.sizes))
        used = _SIZE_PARAMS[root] = [i for i, p in enumerate(root.params) if p.name in names]
    return used
