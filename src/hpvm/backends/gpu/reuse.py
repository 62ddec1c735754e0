"""What a plan keeps from one run to the next: grids, levels, launch groups, instance tables.

A graph launched again with arguments of the same shapes and the same size-determining
scalars has the same instance grids, the same levels of instances, the same launches and the
same instance tables. Each of them is a pure function of values the plan can name — a
*key*: a node, the level it runs in (``InstanceSet.key``) and the values its replication
sizes read — so a warm launch looks them up instead of recomputing them in Python, and an
instance table already on the device is not uploaded again. Levels computed from values a
kernel produced have no key and are recomputed every run. Runs of one plan are serialized
(``GPUBackend``), so the cache needs no lock.

Tables can be large (a row per parent instance): they are kept up to ``TABLE_BYTES`` in
all, the oldest dropped first; the other entries are small and kept up to ``ENTRIES``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

ENTRIES = 4096
TABLE_BYTES = 64 << 20


class RunCache:
    """Values keyed by what determines them (see the module doc), kept across runs."""

    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}
        self._tables: dict[Hashable, tuple[Any, int]] = {}
        self._table_bytes = 0

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        """The value for ``key``, made by ``make()`` the first time."""
        found = self._values.get(key)
        if found is None:
            if len(self._values) >= ENTRIES:
                del self._values[next(iter(self._values))]
            found = self._values[key] = make()
        return found

    def table(
        self, key: Hashable, make: Callable[[], np.ndarray], upload: Callable[[np.ndarray], Any]
    ) -> Any:
        """The device copy of the table for ``key``: ``make()`` it and ``upload`` it once."""
        found = self._tables.get(key)
        if found is not None:
            return found[0]
        host = make()
        while self._tables and self._table_bytes + host.nbytes > TABLE_BYTES:
            _, nbytes = self._tables.pop(next(iter(self._tables)))
            self._table_bytes -= nbytes
        handle = upload(host)
        self._tables[key] = (handle, host.nbytes)
        self._table_bytes += host.nbytes
        return handle


def frozen(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """``arrays`` made read-only: cached values are shared by every run that finds them."""
    for a in arrays:
        a.flags.writeable = False
    return arrays


def size_key(env: dict[str, Any]) -> Hashable | None:
    """What replication sizes read from ``env``: array shapes and integers (``ir/expr.py``);
    ``None`` when a value is neither (the evaluation reports it)."""
    key = []
    for name, value in env.items():
        if isinstance(value, np.ndarray):
            key.append((name, value.shape))
        elif isinstance(value, (int, np.integer)):
            key.append((name, int(value)))
        else:
            return None
    return tuple(key)
