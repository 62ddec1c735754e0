"""``WrittenPorts``: a front end's numbering of a function's ports where it is not the
graph's (HPVM-C, LLVM: a pointer and its size are two arguments, one port), and the
descriptions of edges and binds that use it."""

from __future__ import annotations

from hpvm.ir.graph import (
    Edge,
    InputBind,
    InternalFunction,
    LeafFunction,
    Node,
    OutputBind,
    Param,
    WrittenPorts,
    written_in,
    written_out,
)
from hpvm.ir.types import ArrayType, ScalarType

I64, BYTES = ScalarType("i64"), ArrayType(ScalarType("u8"), 1, sized=True)


def _leaf(written: WrittenPorts | None) -> LeafFunction:
    leaf = LeafFunction(
        lambda a, n, m: (n, m), "scaled", [Param("a", BYTES), Param("n", I64), Param("m", I64)], [I64, I64]
    )
    leaf.written = written
    return leaf


def test_the_written_number_of_each_port_and_the_graphs_where_none_is_recorded() -> None:
    leaf = _leaf(WrittenPorts((0, 2, 3), (0, 1)))
    assert [written_in(leaf, i) for i in range(3)] == [0, 2, 3]
    assert [written_out(leaf, i) for i in range(2)] == [0, 1]
    assert [written_in(_leaf(None), i) for i in range(3)] == [0, 1, 2]
    assert written_in(None, 4) == 4


def test_a_port_out_of_range_keeps_its_number() -> None:
    """(The verifier says it does not exist, with the count of the graph's ports.)"""
    leaf = _leaf(WrittenPorts((0, 2, 3), (0, 1)))
    assert (written_in(leaf, 3), written_in(leaf, -1), written_out(leaf, 7)) == (3, -1, 7)


def test_edges_and_binds_describe_both_ends_as_written() -> None:
    leaf = _leaf(WrittenPorts((0, 2, 3), (0, 2)))
    parent = InternalFunction("root", [Param("a", BYTES), Param("n", I64)], outs=())
    parent.written = WrittenPorts((0, 2), (0, 2))
    left, right = Node("l", leaf, ()), Node("r", leaf, ())
    assert Edge(left, 1, right, 2).describe().startswith("edge l.2 -> r.3 ")
    assert InputBind(1, right, 2).describe(parent).startswith("input bind 2 -> r.3 ")
    assert InputBind(1, right, 2).describe().startswith("input bind 1 -> r.3 ")  # (no parent given)
    assert OutputBind(left, 1, 1).describe(parent).startswith("output bind l.2 -> 2 ")
