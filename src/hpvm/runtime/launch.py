"""Checks made before a graph runs: the graph, the arguments, the memory tracker, the back end."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..backends import backend_for_hint, get_backend
from ..backends.base import Backend
from ..errors import LaunchError, MemoryTrackingError
from ..ir.graph import ONE_TO_ONE, InternalFunction, NodeFunction
from ..ir.types import check_value
from ..ir.verify import verify
from .hetero import MixedBackend, backends_by_child
from .memory import MemoryTracker

# Root functions already verified. Weak references, not ids: an id is reused once its
# function is garbage-collected, and a new (unverified) root must not inherit the mark.
_VERIFIED: weakref.WeakSet[InternalFunction] = weakref.WeakSet()


def check_root(root: Any) -> InternalFunction:
    """``root`` verified (once per function object)."""
    if not isinstance(root, InternalFunction):
        what = root.describe() if isinstance(root, NodeFunction) else repr(root)
        raise LaunchError(
            f"launch() needs an @hpvm.internal root node function, not {what}; wrap a leaf in "
            "an internal node that creates it"
        )
    if root not in _VERIFIED:
        verify(root)
        _VERIFIED.add(root)
    return root


def check_args(root: InternalFunction, args: Any, tracker: MemoryTracker, api: str) -> list[Any]:
    """The arguments as a list, after checking count, types and tracking."""
    names = ", ".join(f"{p.name}: {p.type}" for p in root.params)
    if not isinstance(args, (tuple, list)):
        raise LaunchError(
            f"{api}(): args must be a tuple with one value per input of '{root.name}' "
            f"({names}), not {type(args).__name__}"
        )
    if len(args) != len(root.params):
        raise LaunchError(
            f"{api}(): '{root.name}' ({root.location}) takes {len(root.params)} input(s) "
            f"({names}), but {len(args)} were given"
        )
    for i, (p, value) in enumerate(zip(root.params, args)):
        problem = check_value(p.type, value)
        if problem:
            raise LaunchError(f"{api}(): argument {i} ('{p.name}') of '{root.name}': {problem}")
        if isinstance(value, np.ndarray) and tracker.find(value) is None:
            raise MemoryTrackingError(
                f"{api}(): argument {i} ('{p.name}') of '{root.name}' is an untracked array; "
                f"call hpvm.track_memory({p.name}) before launching"
            )
    return list(args)


def check_sizes(root: InternalFunction, args: Sequence[Any], api: str) -> None:
    """Check the replication sizes of the root's children for these arguments.

    They are expressions of the root's inputs only, so a negative size or a one-to-one edge
    between grids of different extents is known before anything runs and is reported by
    ``launch`` / ``push`` itself (deeper levels depend on values computed by nodes; back ends
    check those when they run).
    """
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


def choose_backend(root: InternalFunction, target: str | None) -> Backend:
    """The back end for a launch: ``target`` if given, else what the nodes' hints select —
    one back end, or a ``MixedBackend`` splitting the root's children between several."""
    if target is not None:
        if not isinstance(target, str):
            raise LaunchError(f"target must be a back-end name such as 'interp', not {target!r}")
        return get_backend(target)
    cached = _CHOICES.get(id(root))
    if cached is not None and cached[0] is root:
        return cached[1]
    choice = backends_by_child(root)
    names = set(choice.values()) or {backend_for_hint(root.hint)}
    backend = get_backend(names.pop()) if len(names) == 1 else MixedBackend(root, choice)
    _CHOICES[id(root)] = (root, backend)
    return backend


_CHOICES: dict[int, tuple[InternalFunction, Backend]] = {}  # root -> back end its hints select


def array_args(args: Sequence[Any]) -> list[np.ndarray]:
    return [a for a in args if isinstance(a, np.ndarray)]
