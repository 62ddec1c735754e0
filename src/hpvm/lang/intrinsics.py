"""Leaf intrinsics: structure queries, ``malloc``, atomics and ``barrier``.

Leaf code calls these as ordinary functions. While a graph runs, the executing back end
installs an *execution context* on the thread and each intrinsic forwards to it; compiled
back ends replace the calls at compile time instead. Outside a running leaf they raise.
"""

from __future__ import annotations

from typing import Any

from ..errors import RuntimeStateError, TracingError
from ..ir.execution import ExecutionContext, current_context
from ..ir.tracing import tracing


def _ctx(name: str) -> ExecutionContext:
    ctx = current_context()
    if ctx is None:
        traced = tracing()
        if traced is not None:
            raise TracingError(
                f"hpvm.{name}() is a leaf intrinsic; {traced.function.describe()} is an "
                "internal node, which only builds its child graph"
            )
        raise RuntimeStateError(
            f"hpvm.{name}() is a leaf intrinsic: it works only inside a leaf node while a "
            "graph runs (hpvm.launch)"
        )
    return ctx


def get_node() -> Any:
    """A handle to the current leaf node instance."""
    return _ctx("get_node").get_node()


def get_parent_node(node: Any) -> Any:
    """A handle to the parent (in the hierarchy) of ``node``."""
    return _ctx("get_parent_node").get_parent_node(node)


def get_num_dims(node: Any) -> int:
    """The number of dimensions ``node`` is replicated in (0–3)."""
    return _ctx("get_num_dims").get_num_dims(node)


def get_node_instance_id_x(node: Any) -> int:
    return _ctx("get_node_instance_id_x").instance_id(node, 0)


def get_node_instance_id_y(node: Any) -> int:
    return _ctx("get_node_instance_id_y").instance_id(node, 1)


def get_node_instance_id_z(node: Any) -> int:
    return _ctx("get_node_instance_id_z").instance_id(node, 2)


def get_num_node_instances_x(node: Any) -> int:
    return _ctx("get_num_node_instances_x").num_instances(node, 0)


def get_num_node_instances_y(node: Any) -> int:
    return _ctx("get_num_node_instances_y").num_instances(node, 1)


def get_num_node_instances_z(node: Any) -> int:
    return _ctx("get_num_node_instances_z").num_instances(node, 2)


def malloc(nbytes: int) -> Any:
    """Allocate ``nbytes`` bytes (one buffer per parent instance); a 1-D ``uint8`` array."""
    return _ctx("malloc").malloc(nbytes)


def barrier() -> None:
    """Wait until every instance of this leaf within the same parent instance gets here."""
    _ctx("barrier").barrier()


def atomic_add(array: Any, index: Any, value: Any) -> Any:
    """``array[index] += value`` atomically; returns the old value."""
    return _ctx("atomic_add").atomic("add", array, index, value)


def atomic_sub(array: Any, index: Any, value: Any) -> Any:
    return _ctx("atomic_sub").atomic("sub", array, index, value)


def atomic_min(array: Any, index: Any, value: Any) -> Any:
    return _ctx("atomic_min").atomic("min", array, index, value)


def atomic_max(array: Any, index: Any, value: Any) -> Any:
    return _ctx("atomic_max").atomic("max", array, index, value)


def atomic_xchg(array: Any, index: Any, value: Any) -> Any:
    return _ctx("atomic_xchg").atomic("xchg", array, index, value)


def atomic_and(array: Any, index: Any, value: Any) -> Any:
    return _ctx("atomic_and").atomic("and", array, index, value)


def atomic_or(array: Any, index: Any, value: Any) -> Any:
    return _ctx("atomic_or").atomic("or", array, index, value)


def atomic_xor(array: Any, index: Any, value: Any) -> Any:
    return _ctx("atomic_xor").atomic("xor", array, index, value)
