"""The one table of leaf intrinsics: every ``hpvm.<name>()`` a leaf may call, and its rules.

Seed 000's intrinsics, as leaf code spells them, each with what the verifier, the leaf
analyses and the back ends need to know about it: its kind, how many operands it takes,
what it returns, and its typing and dimension rules. Everything that asks "is this an
intrinsic, which one, may it be used here" reads this table, so adding an intrinsic is one
entry here, one Python function in the front end (``lang/intrinsics.py``) and one lowering
rule per back end (docs/architecture.md walks through it).

The tensor operations (``hpvm.tensor.*``) are intrinsics too; their operand rules (ranks,
shapes, dtypes) are richer and live in ``ir/tensor_ops.py``, keyed by the same names.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# What a leaf may not call: the front end's graph-building API (leaves compute; graphs are
# built in internal nodes). The verifier reports these calls, with their lines.
BUILDER_CALLS = frozenset(
    {
        "create_node",
        "create_node_1d",
        "create_node_2d",
        "create_node_3d",
        "create_node_nd",
        "edge",
        "bind_in",
        "bind_out",
    }
)

# What no node function may call: seed 000's host API ("the host code ... calls these
# intrinsics", never a node). A leaf calling one would launch a graph from inside a graph.
HOST_CALLS = frozenset(
    {
        "init",
        "cleanup",
        "track_memory",
        "untrack_memory",
        "request_memory",
        "launch",
        "wait",
        "push",
        "pop",
    }
)

AXES = "xyz"
#: How a leaf cloned with its context (seed 001's step 1) spells an intrinsic that the back
#: end implements: ``__hpvm_atomic_add(a, i, v)``, ``__hpvm_malloc(n)``, ``__hpvm_barrier()``.
LOWERED_PREFIX = "__hpvm_"


@dataclass(frozen=True)
class Intrinsic:
    """One leaf intrinsic.

    ``kind`` is what back ends switch on: ``handle`` (``get_node``, ``get_parent_node``),
    ``dims`` (``get_num_dims``), ``query`` (instance ids and counts), ``malloc``,
    ``barrier`` and ``atomic``. ``result`` is the port-type spelling of what it returns
    (``"node"``, ``"i64"``, ``"u8[:]"``, ``"element"`` — the element type of its array
    operand — or ``"none"``).
    """

    name: str
    kind: str
    arity: int
    result: str
    doc: str
    axis: int | None = None  # query: 0 (x), 1 (y), 2 (z)
    counts: bool = False  # query: the number of instances (else this instance's id)
    op: str | None = None  # atomic: add, sub, min, max, xchg, and, or, xor
    statement: bool = False  # must be a statement of its own (it returns nothing)
    #: atomic: the family of commuting updates it belongs to (``COMMUTING``), whose
    #: partial results combine into one array; ``None`` for ``xchg`` (the last write wins)
    family: str | None = None

    @property
    def lowered_call(self) -> bool:
        """Whether a leaf cloned with its context calls the back end's implementation of it,
        ``__hpvm_<name>(...)`` (``LOWERED_PREFIX``), with the same arguments: every intrinsic
        but the node-handle and structure queries (which become reads of the instance
        context) and the barrier (a marker the back ends split leaves at)."""
        return self.kind not in ("handle", "dims", "query", "barrier")

    @property
    def spelled(self) -> str:
        """How leaf code writes it: ``hpvm.atomic_add``."""
        return f"hpvm.{self.name}"


def _queries() -> list[Intrinsic]:
    found = []
    for axis, letter in enumerate(AXES):
        found.append(
            Intrinsic(
                f"get_node_instance_id_{letter}",
                "query",
                1,
                "i64",
                f"this instance's id in dimension {letter} of the given node",
                axis=axis,
            )
        )
        found.append(
            Intrinsic(
                f"get_num_node_instances_{letter}",
                "query",
                1,
                "i64",
                f"the number of instances of the given node in dimension {letter}",
                axis=axis,
                counts=True,
            )
        )
    return found


ATOMIC_OPS = ("add", "sub", "min", "max", "xchg", "and", "or", "xor")
#: Atomic operations that commute with each other within a family (``add`` and ``sub``
#: are one: both add), so updates applied in any order, or to separate copies combined
#: afterwards, give the same array: operation -> family. ``xchg`` is not here.
COMMUTING = {"add": "add", "sub": "add", "min": "min", "max": "max", "and": "and", "or": "or", "xor": "xor"}
FLOAT_ATOMIC_OPS = ("add", "sub", "min", "max")
_ATOMIC_DOCS = {
    "add": "array[index] += value",
    "sub": "array[index] -= value",
    "min": "array[index] = min(array[index], value)",
    "max": "array[index] = max(array[index], value)",
    "xchg": "array[index] = value",
    "and": "array[index] &= value",
    "or": "array[index] |= value",
    "xor": "array[index] ^= value",
}

INTRINSICS: dict[str, Intrinsic] = {
    i.name: i
    for i in [
        Intrinsic("get_node", "handle", 0, "node", "a handle to the current leaf node instance"),
        Intrinsic("get_parent_node", "handle", 1, "node", "a handle to the parent of the given node"),
        Intrinsic(
            "get_num_dims", "dims", 1, "i64", "the number of dimensions the given node is replicated in"
        ),
        *_queries(),
        Intrinsic("malloc", "malloc", 1, "u8[:]", "a zeroed buffer of n bytes, one per parent instance"),
        Intrinsic(
            "barrier",
            "barrier",
            0,
            "none",
            "wait for every instance of this leaf in the same parent instance",
            statement=True,
        ),
        *(
            Intrinsic(
                f"atomic_{op}",
                "atomic",
                3,
                "element",
                f"{_ATOMIC_DOCS[op]}, atomically; returns the old value",
                op=op,
                family=COMMUTING.get(op),
            )
            for op in ATOMIC_OPS
        ),
    ]
}

#: ``get_node_instance_id_x`` → ("id", 0), ``get_num_node_instances_z`` → ("count", 2).
QUERY_INTRINSICS: dict[str, tuple[str, int]] = {
    i.name: ("count" if i.counts else "id", i.axis) for i in INTRINSICS.values() if i.kind == "query"
}


def is_intrinsic(name: str) -> bool:
    return name in INTRINSICS


# ---------------------------------------------------------------------------------------
# Typing and dimension rules


def atomic_dtypes(op: str) -> tuple[np.dtype, ...]:
    """The array element types ``atomic_<op>`` works on."""
    ints = tuple(np.dtype(t) for t in ("int32", "int64", "uint32", "uint64"))
    floats = tuple(np.dtype(t) for t in ("float32", "float64"))
    return ints + floats if op in FLOAT_ATOMIC_OPS else ints


def query_problem(intrinsic: Intrinsic, dims: int) -> str | None:
    """Why a query of ``intrinsic``'s axis is wrong on a node replicated in ``dims`` dimensions."""
    assert intrinsic.axis is not None
    if intrinsic.axis < dims:
        return None
    allowed = f"only {', '.join(AXES[:dims])} can be queried" if dims else "no dimension can be queried"
    return f"it is replicated in {dims} dimension(s); {allowed}"


__all__ = [
    "ATOMIC_OPS",
    "AXES",
    "BUILDER_CALLS",
    "COMMUTING",
    "HOST_CALLS",
    "FLOAT_ATOMIC_OPS",
    "INTRINSICS",
    "Intrinsic",
    "LOWERED_PREFIX",
    "QUERY_INTRINSICS",
    "atomic_dtypes",
    "is_intrinsic",
    "query_problem",
]
