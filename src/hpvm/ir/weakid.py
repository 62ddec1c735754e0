"""A table from live objects, by identity, to values: what a launch looks up per root.

Why not ``weakref.WeakKeyDictionary``: its ``get`` is Python code that makes a weak
reference of the key on every call, and a launch looks its root up in such tables (the
launch plan, the cpu back end's runner). After a compiled step that streamed megabytes
through the core's caches, every call and object a launch touches is a cache miss (the
stencil's launches, ``docs/backends/cpu.md``), so the look-up here is one dictionary access
by ``id`` and one call of the stored weak reference, to check the id is still that object's.
An entry leaves when its key dies (the weak reference's callback runs before the id can be
given to another object). Keys need not be hashable; values must not refer to their key
strongly (they would keep it alive for ever, as with a ``WeakKeyDictionary``).
"""

from __future__ import annotations

import weakref
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class WeakIdTable(Generic[K, V]):
    """``get``, ``set`` and ``pop`` by the key's identity, held weakly."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        #: ``id(key)`` -> (weak reference to the key, value). Public for a caller that looks
        #: up in-line, as ``get`` does (a launch's plan, ``runtime/plan.py``: one frame less
        #: per launch): an entry is the key's only if its reference still gives the key.
        self.items: dict[int, tuple[weakref.ref[Any], V]] = {}

    def get(self, key: K) -> V | None:
        """The value stored for ``key`` itself, or ``None``."""
        found = self.items.get(id(key))
        if found is not None and found[0]() is key:
            return found[1]
        return None

    def set(self, key: K, value: V) -> V:
        """Store ``value`` for ``key`` (replacing what was stored for it); returns it."""
        items, i = self.items, id(key)

        def gone(ref: weakref.ref[Any]) -> None:
            current = items.get(i)
            if current is not None and current[0] is ref:  # (not a later entry's)
                del items[i]

        items[i] = (weakref.ref(key, gone), value)
        return value

    def pop(self, key: K) -> None:
        """Forget what is stored for ``key``, if anything."""
        if self.get(key) is not None:
            self.items.pop(id(key), None)

    def __len__(self) -> int:
        return len(self.items)
