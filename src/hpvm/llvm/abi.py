"""The ABI of node functions in LLVM form, shared by export and import.

Seed 000 passes a memory object as a ``(pointer, i64 size in bytes)`` pair. Our arrays have
a rank and a shape, so an array port of rank ``r`` is ``ptr`` then ``i64`` (bytes) for
``r == 1`` — exactly the seed's pair, what HPVM's own C programs produce — and ``ptr``,
``i64`` bytes, then one ``i64`` extent per dimension for ``r >= 2`` (a 2-D leaf cannot index
without its shape). Scalars are passed by value, node handles as ``ptr``. Outputs are the
fields of the returned struct, with the same grouping.

A pointer-only array (``u8[*]``) is its ``ptr`` alone: HPVM's pointer whose size, if any,
is a port of its own. Where no ``"hpvm.port"`` says what a ``(ptr, i64)`` pair is (HPVM's
own IR), ``grouping.py`` decides by how the program connects it.

Port indices in ``createEdge`` / ``bind.*`` are *LLVM* indices (argument or struct field),
as in the seed; the companion arguments of an array (size, extents) are bound and connected
by their own calls, as HPVM requires.

What LLVM types cannot say (signed or unsigned, the element type and rank behind a ``ptr``,
a port's name when the argument has none) is recorded in string attributes: ``"hpvm.port"``
on the first argument of each port (its type in hpvm's text form), ``"hpvm.size"`` /
``"hpvm.extent"`` on companions, ``"in"`` / ``"out"`` on array pointers (string attributes,
because LLVM 22 does not parse bare ``in``/``out``), and on functions ``"hpvm.kind"``,
``"hpvm.name"``, ``"hpvm.hint"`` and ``"hpvm.outputs"``.
"""

from __future__ import annotations

import re

from ..ir.bodies import llvm_abi_types, llvm_name
from ..ir.types import PortType

#: LLVM type → the hpvm scalar type an import gives it when no ``"hpvm.port"`` says otherwise.
LLVM_SCALAR = {
    "i1": "bool",
    "i8": "i8",
    "i16": "i16",
    "i32": "i32",
    "i64": "i64",
    "float": "f32",
    "double": "f64",
}
llvm_types = llvm_abi_types


def arity(ptype: PortType) -> int:
    """How many LLVM arguments a port of type ``ptype`` takes."""
    return len(llvm_types(ptype))


def leading_indices(types: list[PortType]) -> list[int]:
    """The LLVM index of the first argument (field) of each port."""
    out, k = [], 0
    for t in types:
        out.append(k)
        k += arity(t)
    return out


#: Seed 000's intrinsics, as HPVM's LLVM declares them (IntrinsicsHPVM.td): graph building,
#: the queries, memory and synchronization.
DECLARATIONS = {
    "createNode": "declare ptr @llvm.hpvm.createNode(ptr)",
    "createNode1D": "declare ptr @llvm.hpvm.createNode1D(ptr, i64)",
    "createNode2D": "declare ptr @llvm.hpvm.createNode2D(ptr, i64, i64)",
    "createNode3D": "declare ptr @llvm.hpvm.createNode3D(ptr, i64, i64, i64)",
    "createEdge": "declare ptr @llvm.hpvm.createEdge(ptr, ptr, i1, i32, i32, i1)",
    "bind.input": "declare void @llvm.hpvm.bind.input(ptr, i32, i32, i1)",
    "bind.output": "declare void @llvm.hpvm.bind.output(ptr, i32, i32, i1)",
    "getNode": "declare ptr @llvm.hpvm.getNode()",
    "getParentNode": "declare ptr @llvm.hpvm.getParentNode(ptr)",
    "getNumDims": "declare i32 @llvm.hpvm.getNumDims(ptr)",
    **{
        f"{q}.{axis}": f"declare i64 @llvm.hpvm.{q}.{axis}(ptr)"
        for q in ("getNodeInstanceID", "getNumNodeInstances")
        for axis in "xyz"
    },
    "malloc": "declare ptr @llvm.hpvm.malloc(i64)",
    **{
        f"atomic.{op}": f"declare i32 @llvm.hpvm.atomic.{op}(ptr, i32)"
        for op in ("add", "sub", "min", "max", "xchg", "and", "or", "xor")
    },
    "barrier": "declare void @llvm.hpvm.barrier()",
}
GRAPH_INTRINSICS = frozenset(
    {"createNode", "createNode1D", "createNode2D", "createNode3D", "createEdge", "bind.input", "bind.output"}
)
HOST_INTRINSICS = frozenset(
    {"init", "cleanup", "trackMemory", "untrackMemory", "requestMemory", "launch", "wait", "push", "pop"}
)
PREFIX = "llvm.hpvm."


#: A name as LLVM's text writes it: bare (``n1``, ``.x.flat``) or quoted (``"a b"``), without
#: its sigil; what every reader of instruction text matches names with.
NAME = r'(?:"(?:[^"\\]|\\.)*"|[-\w.$]+)'
#: A block's label line (``entry:``, ``"a b":``), the name in group 1.
LABEL_LINE = re.compile(rf"^({NAME}):")
#: An instruction that defines a value (``%n1 = …``), the name without ``%`` in group 1.
DEFINES = re.compile(rf"^%({NAME}) = ")


def quote(name: str) -> str:
    """An LLVM identifier: bare when it needs no quotes, else quoted."""
    return llvm_name(name)
