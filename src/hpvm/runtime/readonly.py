"""Read-only arrays passed where a graph writes: refused at ``launch`` and ``push``.

A NumPy array with ``flags.writeable = False`` can be read by any graph, but not given
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
from ..ir.analysis import Writer, param_writers
from ..ir.graph import InternalFunction

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
