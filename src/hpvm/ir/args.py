"""The checks of a root's arguments every way of running a graph makes: their count, each
value against its port's type, and read-only arrays passed where the graph writes.

The runtime makes them at ``launch`` and ``push`` (``runtime/launch.check_args``, with fast
acceptors for the common cases and the memory tracker's check besides); a back end run
directly (``get_backend("cpu").run(root, args)``, a ``RunContext`` the runtime did not make)
makes them itself (``Backend.checked_context``), so that a missing or mistyped argument is a
``LaunchError`` naming the port, never an ``IndexError`` from generated code.

Read-only arrays: a NumPy array with ``flags.writeable = False`` can be read by any graph, but not given
to a parameter a leaf writes (``outs``): the host back ends cannot store into it (``cpu``
fails to compile the store, ``interp`` reports an undeclared write) and a GPU back end
computes into its device copy and then cannot copy the result back. Which parameters a
root writes is a property of the graph (``ir.analysis.param_writers``), computed once per
root here; ``launch.check_args`` asks only for arrays its fast acceptors did not pass, so
a writeable array costs one flag read.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..errors import LaunchError
from .analysis import Writer, param_writers
from .graph import InternalFunction
from .types import check_value

_WRITERS: weakref.WeakKeyDictionary[InternalFunction, dict[int, Writer]] = weakref.WeakKeyDictionary()


def writers(root: InternalFunction) -> dict[int, Writer]:
    """Root parameter index -> a leaf that writes that array, and the leaf's parameter
    it arrives in (cached per root)."""
    found = _WRITERS.get(root)
    if found is None:
        found = _WRITERS[root] = param_writers(root)
    return found


def check_writeable(root: InternalFunction, index: int, value: Any, api: str) -> None:
    """Raise ``LaunchError`` if ``value`` is a read-only array that ``root`` writes."""
    if not isinstance(value, np.ndarray) or value.flags.writeable:
        return
    writer = writers(root).get(index)
    if writer is None:
        return
    leaf, port = writer
    name = root.params[index].name
    raise LaunchError(
        f"{api}(): argument {index} ('{name}') of '{root.name}' is a read-only array "
        f"(its flags.writeable is False), but {leaf.describe()} writes it as parameter "
        f"'{port}', which its outs declares; pass a writeable array instead (a copy, "
        f"np.array({name}), tracked with hpvm.track_memory()), or, if the graph should only "
        f"read it, take '{port}' out of the outs of '{leaf.name}'"
    )


def param_names(root: InternalFunction) -> str:
    """The root's parameters as an error message lists them (``a: f32[], n: i64``)."""
    return ", ".join(f"{p.name}: {p.type}" for p in root.params)


def check_count(root: InternalFunction, args: Any, api: str) -> None:
    """Raise ``LaunchError`` unless ``args`` is a tuple or list with one value per input."""
    if not isinstance(args, (tuple, list)):
        raise LaunchError(
            f"{api}(): args must be a tuple with one value per input of '{root.name}' "
            f"({param_names(root)}), not {type(args).__name__}"
        )
    if len(args) != len(root.params):
        raise LaunchError(
            f"{api}(): '{root.name}' ({root.location}) takes {len(root.params)} input(s) "
            f"({param_names(root)}), but {len(args)} were given"
        )


def check_argument(root: InternalFunction, index: int, value: Any, api: str) -> None:
    """Raise ``LaunchError`` if ``value`` does not suit input ``index`` of ``root``: its
    type, or a read-only array the graph writes."""
    param = root.params[index]
    problem = check_value(param.type, value)
    if problem:
        raise LaunchError(f"{api}(): argument {index} ('{param.name}') of '{root.name}': {problem}")
    check_writeable(root, index, value, api)


def check_arguments(root: InternalFunction, args: Any, api: str) -> None:
    """Every check of this module on every argument (no memory tracking: a back end run
    directly has a tracker of its own)."""
    check_count(root, args, api)
    for index, value in enumerate(args):
        check_argument(root, index, value, api)
