"""Conformance of the verifier: every structural rule of seed 000 and DESIGN.md's "Ports".

Each rule has a program that passes and one that fails; a failing test checks the exact
error class and that the message names the culprit (node, port, file:line). Lines are found
through marker comments (``# @name``), never written down as numbers.

Also here: the port types module and the replication-size expressions (printing, evaluation).
"""

import linecache
import operator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpvm
from hpvm import bind_in as _bind_in
from hpvm import launch as _launch
from hpvm.ir import (
    BinOp,
    Call,
    ChildGraph,
    Const,
    Edge,
    InputBind,
    InternalFunction,
    Node,
    Param,
    ParamExpr,
    Shape,
    parse_type,
    port_type,
)
from hpvm.ir.intrinsics import HOST_CALLS
from markers import SourceMarkers, fails

# ---------------------------------------------------------------------------------------
# Helpers


MARKS = SourceMarkers(__file__)
FILE = MARKS.file
line_of = MARKS.line_of
at = MARKS.at


# ---------------------------------------------------------------------------------------
# Shared leaves


@hpvm.leaf
def stage_a(x: hpvm.f32) -> hpvm.f32:
    return x + 1


@hpvm.leaf
def stage_b(x: hpvm.f32) -> hpvm.f32:
    return x * 2


@hpvm.leaf
def stage_c(x: hpvm.f32) -> hpvm.f32:
    return x - 1


@hpvm.leaf
def wide(x: hpvm.f64) -> hpvm.f64:
    return x


@hpvm.leaf
def pair(x: hpvm.f32) -> tuple[hpvm.f32, hpvm.f32]:
    return x, x


@hpvm.leaf(ins=("a",))
def vec_head(a: hpvm.f32[:]) -> hpvm.f32:
    return a[0]


@hpvm.leaf(ins=("a",))
def mat_head(a: hpvm.f32[:, :]) -> hpvm.f32:
    return a[0, 0]


@hpvm.leaf(ins=("a",))
def vec_pass(a: hpvm.f32[:]) -> hpvm.f32[:]:
    return a


# ---------------------------------------------------------------------------------------
# Child graphs are acyclic


def test_chain_is_acyclic():
    @hpvm.internal
    def chain(x: hpvm.f32) -> hpvm.f32:
        a = hpvm.create_node(stage_a)
        b = hpvm.create_node(stage_b)
        hpvm.bind_in(a, 0, 0)
        hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0)
        hpvm.bind_out(b, 0, 0)

    hpvm.verify(chain)
    assert chain.out_types == [hpvm.f32]


def test_cycle_is_reported_with_its_nodes():
    @hpvm.internal  # @cycle
    def looped(x: hpvm.f32):
        a = hpvm.create_node(stage_a)
        b = hpvm.create_node(stage_b)
        hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0)
        hpvm.edge(b, a, hpvm.ONE_TO_ONE, 0, 0)

    with fails(hpvm.VerificationError, "internal 'looped'", at("cycle"), "cycle (") as info:
        hpvm.verify(looped)
    message = str(info.value)
    assert "stage_a -> stage_b -> stage_a" in message or "stage_b -> stage_a -> stage_b" in message
    assert len(info.value.problems) == 1


def test_self_loop_is_a_cycle():
    @hpvm.internal
    def selfish(x: hpvm.f32):
        p = hpvm.create_node(stage_a)
        hpvm.edge(p, p, hpvm.ALL_TO_ALL, 0, 0)

    with fails(hpvm.VerificationError, "cycle (stage_a -> stage_a)"):
        hpvm.verify(selfish)


# ---------------------------------------------------------------------------------------
# Edges only between siblings (the builder refuses at once; hand-built IR is verified)


def _edge_ir(src_outside: bool) -> InternalFunction:
    """A hand-built graph whose one edge leaves the graph when ``src_outside``."""
    inside = Node("stage_b", stage_b, ())
    other = Node("stage_a", stage_a, ())
    nodes = [inside] if src_outside else [other, inside]
    graph = ChildGraph(nodes=nodes, edges=[Edge(other, 0, inside, 0)])
    fn = InternalFunction("by_hand", [Param("x", hpvm.f32)], graph=graph)
    if not src_outside:
        graph.in_binds.append(InputBind(0, other, 0))
    return fn


def test_hand_built_sibling_edge_verifies():
    hpvm.verify(_edge_ir(src_outside=False))


def test_hand_built_edge_from_outside_the_graph():
    with fails(
        hpvm.VerificationError,
        "edge stage_a.0 -> stage_b.0",
        "only children of the same internal node",
        "'by_hand'",
    ):
        hpvm.verify(_edge_ir(src_outside=True))


def test_builder_refuses_a_node_of_another_graph():
    kept = []

    @hpvm.internal
    def first(x: hpvm.f32):
        a = hpvm.create_node(stage_a)
        hpvm.bind_in(a, 0, 0)
        kept.append(a)

    @hpvm.internal  # @second-def
    def second(x: hpvm.f32):
        b = hpvm.create_node(stage_b)
        hpvm.bind_in(b, 0, 0)
        hpvm.edge(kept[0], b, hpvm.ALL_TO_ALL, 0, 0)  # @foreign-edge

    hpvm.verify(first)
    with fails(
        hpvm.VerificationError,
        f"internal 'second' ({at('second-def')})",
        "hpvm.edge()",
        at("foreign-edge"),
        "'stage_a' is not a child of 'second'",
    ):
        hpvm.verify(second)


# ---------------------------------------------------------------------------------------
# (src, sp) and (dst, dp) are unique in a child graph


def test_distinct_sources_and_destinations_verify():
    @hpvm.internal
    def fan(x: hpvm.f32) -> tuple[hpvm.f32, hpvm.f32]:
        p = hpvm.create_node(pair)
        a = hpvm.create_node(stage_a)
        b = hpvm.create_node(stage_b)
        hpvm.bind_in(p, 0, 0)
        hpvm.edge(p, a, hpvm.ALL_TO_ALL, 0, 0)
        hpvm.edge(p, b, hpvm.ALL_TO_ALL, 1, 0)
        hpvm.bind_out(a, 0, 0)
        hpvm.bind_out(b, 0, 1)

    hpvm.verify(fan)


def test_one_output_may_feed_several_edges():
    """Seed 000 says edge sources are unique; HPVM's own programs fan out (its ResNet
    benchmarks' residual connections) and HPVM's BuildDFG accepts it, so hpvm does too
    (docs/semantics.md §5). Every back end runs such graphs: tests/programs.py's fan-out."""

    @hpvm.internal
    def twice(x: hpvm.f32):
        a = hpvm.create_node(stage_a)
        b = hpvm.create_node(stage_b)
        c = hpvm.create_node(stage_c)
        hpvm.bind_in(a, 0, 0)
        hpvm.edge(a, b, hpvm.ALL_TO_ALL, 0, 0)
        hpvm.edge(a, c, hpvm.ALL_TO_ALL, 0, 0)

    hpvm.verify(twice)


def test_same_destination_port_twice():
    @hpvm.internal
    def converge(x: hpvm.f32):
        a = hpvm.create_node(stage_a)
        b = hpvm.create_node(stage_b)
        c = hpvm.create_node(stage_c)
        hpvm.bind_in(a, 0, 0)
        hpvm.bind_in(b, 0, 0)
        hpvm.edge(a, c, hpvm.ALL_TO_ALL, 0, 0)
        hpvm.edge(b, c, hpvm.ALL_TO_ALL, 0, 0)  # @dup-dst

    with fails(
        hpvm.VerificationError,
        "edge stage_b.0 -> stage_c.0",
        at("dup-dst"),
        "input 0 ('x') of 'stage_c' is already fed",
    ):
        hpvm.verify(converge)


# ---------------------------------------------------------------------------------------
# One-to-one edges need identical grids


def _one_to_one(src_sizes: tuple, dst_sizes: tuple, repl: int = hpvm.ONE_TO_ONE) -> InternalFunction:
    @hpvm.internal
    def grid(n: hpvm.i64, x: hpvm.f32):
        a = hpvm.create_node_nd(len(src_sizes), stage_a, *[n if s == "n" else s for s in src_sizes])
        b = hpvm.create_node_nd(len(dst_sizes), stage_b, *[n if s == "n" else s for s in dst_sizes])
        hpvm.bind_in(a, 1, 0)
        hpvm.edge(a, b, repl, 0, 0)  # @grid-edge

    return grid


@pytest.mark.parametrize(
    "src, dst",
    [((4,), (4,)), ((2, 3), (2, 3)), (("n",), ("n",)), (("n", 4), ("n", 4)), ((), ())],
    ids=["1d-const", "2d-const", "1d-symbolic", "2d-mixed", "single"],
)
def test_one_to_one_identical_grids_verify(src, dst):
    hpvm.verify(_one_to_one(src, dst))


def test_one_to_one_symbolic_sizes_are_left_to_the_launch():
    hpvm.verify(_one_to_one(("n",), (8,)))


def test_all_to_all_joins_any_grids():
    hpvm.verify(_one_to_one((4,), (2, 3, 5), hpvm.ALL_TO_ALL))


def test_one_to_one_constant_sizes_dividing_by_zero_are_left_to_the_launch():
    # The verifier compares constant extents; one that divides by zero must not crash it.
    hpvm.verify(_one_to_one((Const(4) // Const(0),), (Const(4) // Const(0),)))
    hpvm.verify(_one_to_one((Const(4) // Const(0),), (4,)))


def test_one_to_one_different_number_of_dims():
    with fails(
        hpvm.VerificationError,
        "edge stage_a.0 -> stage_b.0 (one_to_one",
        at("grid-edge"),
        "identical grids",
        "'stage_a' has 1 dimension(s) and 'stage_b' 2",
    ):
        hpvm.verify(_one_to_one((4,), (4, 4)))


def test_one_to_one_different_constant_extents():
    with fails(
        hpvm.VerificationError, at("grid-edge"), "dimension y of 'stage_a' has 3 instances and of 'stage_b' 5"
    ):
        hpvm.verify(_one_to_one((2, 3), (2, 5)))


# ---------------------------------------------------------------------------------------
# Port types agree across edges and binds


@pytest.mark.parametrize(
    "src, dst, src_type, dst_type",
    [
        (stage_a, wide, "f32", "f64"),
        (vec_pass, mat_head, "f32[:]", "f32[:, :]"),
        (stage_a, vec_head, "f32", "f32[:]"),
        (vec_pass, stage_b, "f32[:]", "f32"),
    ],
    ids=["f32-f64", "rank1-rank2", "scalar-array", "array-scalar"],
)
def test_edge_types_disagree(src, dst, src_type, dst_type):
    @hpvm.internal
    def typed(x: hpvm.f32, a: hpvm.f32[:]):
        s = hpvm.create_node(src)
        d = hpvm.create_node(dst)
        hpvm.bind_in(s, 0 if src.params[0].type == hpvm.f32 else 1, 0)
        hpvm.edge(s, d, hpvm.ALL_TO_ALL, 0, 0)  # @typed-edge

    with fails(
        hpvm.VerificationError,
        f"edge {src.name}.0 -> {dst.name}.0",
        at("typed-edge"),
        f"output 0 of '{src.name}' is {src_type} but input '{dst.params[0].name}' of '{dst.name}' is {dst_type}",
    ):
        hpvm.verify(typed)


def test_array_edge_of_matching_type_verifies():
    @hpvm.internal
    def arrays(a: hpvm.f32[:]) -> hpvm.f32:
        p = hpvm.create_node(vec_pass)
        h = hpvm.create_node(vec_head)
        hpvm.bind_in(p, 0, 0)
        hpvm.edge(p, h, hpvm.ALL_TO_ALL, 0, 0)
        hpvm.bind_out(h, 0, 0)

    hpvm.verify(arrays)


@pytest.mark.parametrize(
    "outer, leaf, outer_type, inner_type",
    [
        (hpvm.f64, stage_a, "f64", "f32"),
        (hpvm.f32[:, :], vec_head, "f32[:, :]", "f32[:]"),
        (hpvm.f32[:], stage_a, "f32[:]", "f32"),
    ],
    ids=["f64-f32", "rank2-rank1", "array-scalar"],
)
def test_input_bind_types_disagree(outer, leaf, outer_type, inner_type):
    @hpvm.internal
    def binder(v: outer):
        hpvm.bind_in(hpvm.create_node(leaf), 0, 0)  # @typed-bind

    with fails(
        hpvm.VerificationError,
        f"input bind 0 -> {leaf.name}.0",
        at("typed-bind"),
        f"input 'v' of 'binder' is {outer_type} but input '{leaf.params[0].name}' of '{leaf.name}' is {inner_type}",
    ):
        hpvm.verify(binder)


def test_output_bind_type_disagrees_with_the_return_annotation():
    @hpvm.internal  # @out-ann
    def annotated(x: hpvm.f32) -> hpvm.f64:
        a = hpvm.create_node(stage_a)
        hpvm.bind_in(a, 0, 0)
        hpvm.bind_out(a, 0, 0)

    with fails(
        hpvm.VerificationError,
        "internal 'annotated'",
        at("out-ann"),
        "declares outputs (f64) but its output binds give (f32)",
    ):
        hpvm.verify(annotated)


def test_output_bind_matching_the_return_annotation_verifies():
    @hpvm.internal
    def annotated(x: hpvm.f32) -> tuple[hpvm.f32, hpvm.f32]:
        p = hpvm.create_node(pair)
        hpvm.bind_in(p, 0, 0)
        hpvm.bind_out(p, 1, 0)
        hpvm.bind_out(p, 0, 1)

    hpvm.verify(annotated)
    assert annotated.out_types == [hpvm.f32, hpvm.f32]


# ---------------------------------------------------------------------------------------
# Bind sources and destinations are unique; every child input is fed exactly once


def test_two_output_binds_to_the_same_parent_output():
    @hpvm.internal
    def clash(x: hpvm.f32):
        a = hpvm.create_node(stage_a)
        b = hpvm.create_node(stage_b)
        hpvm.bind_in(a, 0, 0)
        hpvm.bind_in(b, 0, 0)
        hpvm.bind_out(a, 0, 0)  # @first-out
        hpvm.bind_out(b, 0, 0)  # @second-out

    with fails(
        hpvm.VerificationError,
        f"output bind stage_b.0 -> 0 ({at('second-out')})",
        "output 0 of 'clash' is already bound",
        at("first-out"),
        "unique destinations",
    ):
        hpvm.verify(clash)


def test_same_child_output_bound_twice():
    @hpvm.internal
    def again(x: hpvm.f32):
        a = hpvm.create_node(stage_a)
        hpvm.bind_in(a, 0, 0)
        hpvm.bind_out(a, 0, 0)
        hpvm.bind_out(a, 0, 1)  # @again-out

    with fails(
        hpvm.VerificationError,
        f"output bind stage_a.0 -> 1 ({at('again-out')})",
        "output 0 of 'stage_a' is already bound",
        "unique sources",
    ):
        hpvm.verify(again)


def test_two_input_binds_to_the_same_child_input():
    @hpvm.internal
    def crowded(x: hpvm.f32, y: hpvm.f32):
        a = hpvm.create_node(stage_a)
        hpvm.bind_in(a, 0, 0)
        hpvm.bind_in(a, 1, 0)  # @second-in

    with fails(
        hpvm.VerificationError,
        f"input bind 1 -> stage_a.0 ({at('second-in')})",
        "input 0 ('x') of 'stage_a' is already fed",
        "exactly one feed",
    ):
        hpvm.verify(crowded)


def test_child_input_without_feed():
    @hpvm.internal
    def starving(x: hpvm.f32):
        hpvm.create_node(stage_a)  # @unfed

    with fails(
        hpvm.VerificationError, "input 0 ('x') of node 'stage_a'", at("unfed"), "in 'starving' has no feed"
    ):
        hpvm.verify(starving)


def test_child_input_fed_by_edge_and_bind():
    @hpvm.internal
    def overfed(x: hpvm.f32):
        a = hpvm.create_node(stage_a)
        b = hpvm.create_node(stage_b)
        hpvm.bind_in(a, 0, 0)
        hpvm.edge(a, b, hpvm.ALL_TO_ALL, 0, 0)
        hpvm.bind_in(b, 0, 0)  # @overfed

    with fails(
        hpvm.VerificationError,
        f"input bind 0 -> stage_b.0 ({at('overfed')})",
        "input 0 ('x') of 'stage_b' is already fed",
    ):
        hpvm.verify(overfed)


def test_unused_root_input_is_fine():
    @hpvm.internal
    def sized(n: hpvm.i64, x: hpvm.f32):
        hpvm.bind_in(hpvm.create_node_1d(stage_a, n), 1, 0)

    hpvm.verify(sized)


# ---------------------------------------------------------------------------------------
# Out-of-range port indices


def _ports(sp=0, dp=0, ip=0, ic=0, oc=0, op=0) -> InternalFunction:
    @hpvm.internal
    def ports(x: hpvm.f32):
        a = hpvm.create_node(stage_a)
        b = hpvm.create_node(stage_b)
        hpvm.bind_in(a, ip, ic)  # @port-in
        hpvm.edge(a, b, hpvm.ALL_TO_ALL, sp, dp)  # @port-edge
        if dp != 0:
            hpvm.bind_in(b, 0, 0)
        hpvm.bind_out(b, oc, op)  # @port-out

    return ports


def test_ports_in_range_verify():
    hpvm.verify(_ports())


@pytest.mark.parametrize(
    "port, marker, expected",
    [
        (
            {"sp": 3},
            "port-edge",
            "edge stage_a.3 -> stage_b.0 (all_to_all, {}): 'stage_a' has no output 3 (it has 1)",
        ),
        (
            {"dp": 5},
            "port-edge",
            "edge stage_a.0 -> stage_b.5 (all_to_all, {}): 'stage_b' has no input 5 (it has 1)",
        ),
        ({"ip": 7}, "port-in", "input bind 7 -> stage_a.0 ({}): 'ports' has no input 7 (it has 1)"),
        ({"ic": 9}, "port-in", "input bind 0 -> stage_a.9 ({}): 'stage_a' has no input 9 (it has 1)"),
        ({"oc": 4}, "port-out", "output bind stage_b.4 -> 0 ({}): 'stage_b' has no output 4 (it has 1)"),
        ({"op": -1}, "port-out", "output bind stage_b.0 -> -1 ({}): output index -1 is negative"),
    ],
    ids=["sp", "dp", "ip", "ic", "oc", "op"],
)
def test_port_index_out_of_range(port, marker, expected):
    with fails(hpvm.VerificationError, expected.format(at(marker))):
        hpvm.verify(_ports(**port))


# ---------------------------------------------------------------------------------------
# Outputs of an internal node: highest bound index + 1, no gaps


def test_output_count_is_highest_bound_index_plus_one():
    @hpvm.internal
    def three(x: hpvm.f32, y: hpvm.f64):
        a = hpvm.create_node(stage_a)
        w = hpvm.create_node(wide)
        p = hpvm.create_node(pair)
        hpvm.bind_in(a, 0, 0)
        hpvm.bind_in(w, 1, 0)
        hpvm.bind_in(p, 0, 0)
        hpvm.bind_out(a, 0, 2)
        hpvm.bind_out(w, 0, 0)
        hpvm.bind_out(p, 1, 1)

    hpvm.verify(three)
    assert three.out_types == [hpvm.f64, hpvm.f32, hpvm.f32]


def test_gap_in_bound_outputs():
    @hpvm.internal  # @gap
    def gappy(x: hpvm.f32):
        a = hpvm.create_node(stage_a)
        hpvm.bind_in(a, 0, 0)
        hpvm.bind_out(a, 0, 1)

    with fails(
        hpvm.VerificationError, "internal 'gappy'", at("gap"), "output 0 is not bound, but output 1 is"
    ):
        hpvm.verify(gappy)


def test_annotation_with_more_outputs_than_binds():
    @hpvm.internal  # @more-outs
    def short(x: hpvm.f32) -> tuple[hpvm.f32, hpvm.f32]:
        a = hpvm.create_node(stage_a)
        hpvm.bind_in(a, 0, 0)
        hpvm.bind_out(a, 0, 0)

    with fails(
        hpvm.VerificationError, at("more-outs"), "declares outputs (f32, f32) but its output binds give (f32)"
    ):
        hpvm.verify(short)


def test_annotated_output_that_nothing_binds():
    @hpvm.internal  # @no-binds
    def unbound(x: hpvm.f32) -> hpvm.f32:
        hpvm.bind_in(hpvm.create_node(stage_a), 0, 0)

    with fails(
        hpvm.VerificationError,
        "internal 'unbound'",
        at("no-binds"),
        "declares outputs (f32) but its output binds give ()",
    ):
        hpvm.verify(unbound)


# ---------------------------------------------------------------------------------------
# The hierarchy is finite: a function containing itself is an error, never a hang


def test_function_containing_itself():
    @hpvm.internal  # @rec-def
    def recursive(x: hpvm.f32) -> hpvm.f32:
        me = hpvm.create_node(recursive)  # @rec-node
        hpvm.bind_in(me, 0, 0)
        hpvm.bind_out(me, 0, 0)

    with fails(
        hpvm.VerificationError,
        f"internal 'recursive' ({at('rec-def')}) contains itself (recursive -> recursive",
        at("rec-node"),
        "must be finite",
    ):
        hpvm.verify(recursive)


def test_mutual_recursion_below_the_root():
    @hpvm.internal  # @ping-def
    def ping(x: hpvm.f32) -> hpvm.f32:
        c = hpvm.create_node(pong)
        hpvm.bind_in(c, 0, 0)
        hpvm.bind_out(c, 0, 0)

    @hpvm.internal
    def pong(x: hpvm.f32) -> hpvm.f32:
        c = hpvm.create_node(ping)  # @pong-node
        hpvm.bind_in(c, 0, 0)
        hpvm.bind_out(c, 0, 0)

    @hpvm.internal
    def top(x: hpvm.f32) -> hpvm.f32:
        c = hpvm.create_node(ping)
        hpvm.bind_in(c, 0, 0)
        hpvm.bind_out(c, 0, 0)

    with fails(
        hpvm.VerificationError,
        f"internal 'ping' ({at('ping-def')}) contains itself (ping -> pong -> ping",
        at("pong-node"),
    ) as info:
        hpvm.verify(top)
    assert len(info.value.problems) == 1


def test_shared_internal_function_is_not_recursion():
    @hpvm.internal
    def inner(x: hpvm.f32) -> hpvm.f32:
        a = hpvm.create_node(stage_a)
        hpvm.bind_in(a, 0, 0)
        hpvm.bind_out(a, 0, 0)

    @hpvm.internal
    def outer(x: hpvm.f32) -> tuple[hpvm.f32, hpvm.f32]:
        one = hpvm.create_node(inner)
        two = hpvm.create_node(inner)
        hpvm.bind_in(one, 0, 0)
        hpvm.edge(one, two, hpvm.ALL_TO_ALL, 0, 0)
        hpvm.bind_out(one, 0, 1)
        hpvm.bind_out(two, 0, 0)

    hpvm.verify(outer)
    assert [n.name for n in outer.graph.nodes] == ["inner", "inner_1"]


# ---------------------------------------------------------------------------------------
# Replication sizes in hand-built IR (the frontend cannot write these)


def _sized(size) -> InternalFunction:
    node = Node("stage_a", stage_a, (size,))
    graph = ChildGraph(nodes=[node], in_binds=[InputBind(1, node, 0)])
    params = [Param("n", hpvm.i64), Param("x", hpvm.f32), Param("p", hpvm.u8[...])]
    return InternalFunction("holder", params, graph=graph)


def test_hand_built_sizes_verify():
    hpvm.verify(_sized(ParamExpr("n") // 2))
    hpvm.verify(_sized(Const(0)))


@pytest.mark.parametrize(
    "size, expected",
    [
        (ParamExpr("m") * 2, "replication size 'm * 2' uses 'm', which is not an input of 'holder'"),
        (ParamExpr("x"), "replication size 'x' uses 'x', a f32 input; sizes are integer expressions"),
        (
            Shape("p", 0) // 4,
            "replication size 'p.shape[0] // 4' uses 'p', a pointer without its size (u8[*]); pass the "
            "size as an integer port",
        ),
    ],
    ids=["undefined-name", "float-input", "pointer-only-array"],
)
def test_hand_built_bad_sizes(size, expected):
    with fails(hpvm.VerificationError, "node 'stage_a'", expected):
        hpvm.verify(_sized(size))


# ---------------------------------------------------------------------------------------
# verify() reports several problems at once


def test_several_problems_at_once():
    @hpvm.internal  # @many
    def messy(x: hpvm.f32):
        a = hpvm.create_node(stage_a)
        b = hpvm.create_node(stage_b)
        hpvm.create_node(stage_c)  # @many-unfed
        hpvm.bind_in(b, 0, 0)
        hpvm.edge(b, a, hpvm.ALL_TO_ALL, 2, 0)  # @many-port
        hpvm.bind_out(b, 0, 1)

    with fails(hpvm.VerificationError, "3 problems in the program") as info:
        hpvm.verify(messy)
    problems = info.value.problems
    assert len(problems) == 3
    assert any(at("many-port") in p and "'stage_b' has no output 2" in p for p in problems)
    assert any(at("many-unfed") in p and "input 0 ('x') of node 'stage_c'" in p for p in problems)
    assert any(at("many") in p and "output 0 is not bound, but output 1 is" in p for p in problems)
    assert str(info.value).count("\n  - ") == 3  # one bullet per problem


def test_root_must_be_internal():
    with fails(
        hpvm.VerificationError,
        "the root of a graph must be an @hpvm.internal node function",
        "leaf 'stage_a'",
    ):
        hpvm.verify(stage_a)


# ---------------------------------------------------------------------------------------
# Leaves compute and create no nodes


def test_leaf_creating_a_node():
    with fails(
        hpvm.VerificationError,
        "leaf 'builds'",
        at("leaf-create"),
        "calls hpvm.create_node()",
        "cannot create nodes",
    ):

        @hpvm.leaf
        def builds(x: hpvm.f32) -> hpvm.f32:
            hpvm.create_node(stage_a)  # @leaf-create
            return x


def test_leaf_binding_through_an_imported_name():
    with fails(hpvm.VerificationError, "leaf 'binds'", at("leaf-bind"), "calls hpvm.bind_in()"):

        @hpvm.leaf
        def binds(x: hpvm.f32) -> hpvm.f32:
            _bind_in(None, 0, 0)  # @leaf-bind
            return x


# ---------------------------------------------------------------------------------------
# Seed 000's host API belongs in host code, never in a node


@pytest.mark.parametrize("call", sorted(HOST_CALLS))
def test_every_host_call_in_a_leaf_is_refused_with_its_line(call):
    namespace = {"hpvm": hpvm}
    source = f"def host_in_leaf(x: hpvm.f32[:]) -> hpvm.f32:\n    hpvm.{call}(x)\n    return x[0]\n"
    filename = f"<host-in-leaf {call}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # its source
    exec(compile(source, filename, "exec"), namespace)
    with fails(
        hpvm.VerificationError, "leaf 'host_in_leaf'", f"calls hpvm.{call}(), a host call", "host code"
    ):
        hpvm.leaf(ins=("x",))(namespace["host_in_leaf"])


def test_a_host_call_by_imported_name_in_a_leaf_names_its_line():
    with fails(
        hpvm.VerificationError, "leaf 'launches'", at("leaf-launch"), "calls hpvm.launch(), a host call"
    ):

        @hpvm.leaf
        def launches(x: hpvm.f32) -> hpvm.f32:
            _launch(None, ())  # @leaf-launch
            return x


def _tracks(x):
    hpvm.track_memory(x)  # @helper-track


def test_a_host_call_in_a_helper_the_leaf_calls_is_refused():
    with fails(hpvm.VerificationError, "calls helper '_tracks'", at("helper-track"), "hpvm.track_memory()"):

        @hpvm.leaf(ins=("x",))
        def via_helper(x: hpvm.f32[:]) -> hpvm.f32:
            _tracks(x)
            return x[0]


# ---------------------------------------------------------------------------------------
# A leaf queries only dimensions its node (or the queried ancestor) is replicated in


@hpvm.leaf
def asks_y(x: hpvm.f32) -> hpvm.i64:
    return hpvm.get_node_instance_id_y(hpvm.get_node())  # @asks-y


@hpvm.leaf
def asks_y_via_variable(x: hpvm.f32) -> hpvm.i64:
    n = hpvm.get_node()
    count = hpvm.get_num_node_instances_y(n)  # @asks-y-var
    return count


@hpvm.leaf
def asks_parent_x(x: hpvm.f32) -> hpvm.i64:
    return hpvm.get_num_node_instances_x(hpvm.get_parent_node(hpvm.get_node()))  # @asks-parent


@hpvm.leaf
def asks_grandparent(x: hpvm.f32) -> hpvm.i64:
    p = hpvm.get_parent_node(hpvm.get_node())
    return hpvm.get_node_instance_id_x(hpvm.get_parent_node(p))  # @asks-grandparent


def _holding(leaf, dims: int) -> InternalFunction:
    @hpvm.internal
    def holder(x: hpvm.f32):
        hpvm.bind_in(hpvm.create_node_nd(dims, leaf, *[4] * dims), 0, 0)

    return holder


@pytest.mark.parametrize(
    "leaf, marker, query",
    [
        (asks_y, "asks-y", "get_node_instance_id_y"),
        (asks_y_via_variable, "asks-y-var", "get_num_node_instances_y"),
    ],
)
def test_query_of_a_dimension_the_node_lacks(leaf, marker, query):
    with fails(
        hpvm.VerificationError,
        f"leaf '{leaf.name}' ({at(marker)}) calls {query} on its own node",
        "replicated in 1 dimension(s); only x can be queried",
    ):
        hpvm.verify(_holding(leaf, 1))


@pytest.mark.parametrize("leaf", [asks_y, asks_y_via_variable])
@pytest.mark.parametrize("dims", [2, 3])
def test_query_in_a_node_that_has_the_dimension(leaf, dims):
    hpvm.verify(_holding(leaf, dims))


def test_parent_query_when_the_parent_is_not_replicated():
    with fails(
        hpvm.VerificationError,
        f"leaf 'asks_parent_x' ({at('asks-parent')}) calls get_num_node_instances_x on its parent",
        "replicated in 0 dimension(s); no dimension can be queried",
    ):
        hpvm.verify(_holding(asks_parent_x, 2))


def test_parent_query_when_the_parent_is_replicated():
    inner = _holding(asks_parent_x, 0)

    @hpvm.internal
    def outer(x: hpvm.f32):
        hpvm.bind_in(hpvm.create_node_1d(inner, 8), 0, 0)

    hpvm.verify(outer)


def test_query_above_the_root():
    with fails(
        hpvm.VerificationError,
        f"leaf 'asks_grandparent' ({at('asks-grandparent')}) calls get_node_instance_id_x on an ancestor 2 levels up, above the root",
    ):
        hpvm.verify(_holding(asks_grandparent, 1))


def test_same_leaf_reported_only_where_misused():
    @hpvm.internal
    def both(x: hpvm.f32):
        hpvm.bind_in(hpvm.create_node_2d(asks_y, 4, 4), 0, 0)
        hpvm.bind_in(hpvm.create_node_1d(asks_y, 4), 0, 0)

    with fails(hpvm.VerificationError, "calls get_node_instance_id_y on its own node") as info:
        hpvm.verify(both)
    assert len(info.value.problems) == 1


# ---------------------------------------------------------------------------------------
# Arrays a leaf writes are in outs, arrays it reads are in ins or outs


def _by_store(outs=()):
    @hpvm.leaf(outs=outs)
    def writer(a: hpvm.f32[:], h: hpvm.i32[:], i: hpvm.i64) -> None:
        a[i] = 1.0  # @w-store

    return writer


def _by_augmented_store(outs=()):
    @hpvm.leaf(outs=outs)
    def writer(a: hpvm.f32[:], h: hpvm.i32[:], i: hpvm.i64) -> None:
        a[i] += 1.0  # @w-augment

    return writer


def _by_fill(outs=()):
    @hpvm.leaf(outs=outs)
    def writer(a: hpvm.f32[:], h: hpvm.i32[:], i: hpvm.i64) -> None:
        if i > 0:
            a[:i].fill(0.0)  # @w-fill

    return writer


def _by_atomic(outs=()):
    @hpvm.leaf(outs=outs)
    def writer(a: hpvm.f32[:], h: hpvm.i32[:], i: hpvm.i64) -> None:
        hpvm.atomic_add(h, i, 1)  # @w-atomic

    return writer


@pytest.mark.parametrize(
    "make, array, marker",
    [
        (_by_store, "a", "w-store"),
        (_by_augmented_store, "a", "w-augment"),
        (_by_fill, "a", "w-fill"),
        (_by_atomic, "h", "w-atomic"),
    ],
    ids=["store", "augmented", "fill", "atomic"],
)
def test_write_of_an_undeclared_array(make, array, marker):
    with fails(
        hpvm.VerificationError,
        f"leaf 'writer' ({at(marker)}) writes array '{array}', which its outs does not declare",
    ):
        make()
    make(outs=(array,))  # declared, the same leaf is fine


def test_write_declared_only_in_ins_is_still_undeclared():
    with fails(hpvm.VerificationError, f"leaf 'writer' ({at('w-store')}) writes array 'a'"):
        hpvm.leaf(ins=("a",))(_by_store(outs=("a",)).pyfunc)


def test_read_of_an_undeclared_array():
    def make(ins=(), outs=()):
        @hpvm.leaf(ins=ins, outs=outs)
        def reader(a: hpvm.f32[:], b: hpvm.f32[:]) -> hpvm.f32:
            return a[0] + b[1]  # @reads

        return reader

    with fails(
        hpvm.VerificationError,
        f"leaf 'reader' ({at('reads')}) reads array 'b', which its ins does not declare",
    ) as info:
        make(ins=("a",))
    assert len(info.value.problems) == 1
    make(ins=("a", "b"))
    make(ins=("a",), outs=("b",))  # an array in outs may be read too
    assert make(ins=("a", "b"))(np.ones(2, np.float32), np.full(2, 2, np.float32)) == 3


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"ins": ("missing",)}, "ins names 'missing', which is not a parameter (parameters: a, n)"),
        ({"outs": ("n",)}, "outs names 'n', a i64 scalar; ins/outs list array parameters only"),
    ],
)
def test_ins_outs_naming_a_missing_parameter_or_a_scalar(kwargs, expected):
    with fails(hpvm.VerificationError, f"leaf 'attributed' ({at('attributed')})", expected):

        @hpvm.leaf(**kwargs)  # @attributed
        def attributed(a: hpvm.f32[:], n: hpvm.i64) -> None:
            pass


def test_internal_ins_outs_are_checked_too():
    with fails(
        hpvm.VerificationError,
        f"internal 'attributed_internal' ({at('attributed-internal')})",
        "outs names 'b', which is not a parameter",
    ):

        @hpvm.internal(outs=("b",))  # @attributed-internal
        def attributed_internal(a: hpvm.f32[:]):
            pass


# ---------------------------------------------------------------------------------------
# Atomics on supported dtypes only


def test_atomic_and_on_float():
    with fails(
        hpvm.VerificationError,
        f"leaf 'atom_and' ({at('atom-and')}): atomic_and on float array 'h' (f32[:])",
        "need an int32 or int64 array",
    ):

        @hpvm.leaf(outs=("h",))
        def atom_and(h: hpvm.f32[:], v: hpvm.i32) -> None:
            hpvm.atomic_and(h, 0, v)  # @atom-and


def test_atomic_on_int8():
    with fails(
        hpvm.VerificationError,
        f"leaf 'atom_i8' ({at('atom-i8')}): atomic_add on 'h' (i8[:])",
        "int32, int64, float32 and float64",
    ):

        @hpvm.leaf(outs=("h",))
        def atom_i8(h: hpvm.i8[:], v: hpvm.i32) -> None:
            hpvm.atomic_add(h, 0, v)  # @atom-i8


def test_atomic_on_bool():
    with fails(hpvm.VerificationError, "atomic_max on 'h' (bool[:]) is not supported"):

        @hpvm.leaf(outs=("h",))
        def atom_bool(h: hpvm.bool_[:], v: hpvm.i32) -> None:
            hpvm.atomic_max(h, 0, v)


def test_supported_atomics():
    @hpvm.leaf(outs=("f", "i", "j"))
    def atoms(f: hpvm.f32[:], i: hpvm.i32[:], j: hpvm.i64[:]) -> None:
        hpvm.atomic_add(f, 0, 1.0)
        hpvm.atomic_min(f, 0, 1.0)
        hpvm.atomic_and(i, 0, 1)
        hpvm.atomic_xchg(j, 0, 1)
        hpvm.atomic_xor(j, 0, 1)

    assert atoms.name == "atoms"


# ---------------------------------------------------------------------------------------
# A leaf's returns agree with its annotation


def test_return_arity_disagrees_with_annotation():
    with fails(
        hpvm.VerificationError,
        f"leaf 'two_for_one' ({at('two-for-one')}) returns 2 value(s) but its annotation declares 1 output(s)",
    ):

        @hpvm.leaf
        def two_for_one(x: hpvm.f32) -> hpvm.f32:
            return x, x  # @two-for-one


def test_return_without_annotation():
    with fails(
        hpvm.VerificationError,
        f"leaf 'unannotated' ({at('unannotated')}) returns 1 value(s) but its annotation declares 0 output(s)",
    ):

        @hpvm.leaf
        def unannotated(x: hpvm.f32):
            return x  # @unannotated


def test_bare_return_with_outputs_declared():
    with fails(
        hpvm.VerificationError,
        f"leaf 'early' ({at('early')}) returns 0 value(s) but its annotation declares 2 output(s)",
    ):

        @hpvm.leaf
        def early(x: hpvm.f32) -> tuple[hpvm.f32, hpvm.f32]:
            if x < 0:
                return  # @early
            return x, x


def test_matching_returns():
    @hpvm.leaf
    def fine(x: hpvm.f32) -> tuple[hpvm.f32, hpvm.f32]:
        def helper(v):
            return v, v, v  # a nested function's return is not the leaf's

        if x < 0:
            both = (x, x)
            return both  # one expression may hold every output
        return helper(x)[0], x

    @hpvm.leaf
    def nothing(x: hpvm.f32) -> None:
        if x < 0:
            return
        x += 1

    assert fine(2.0) == (2.0, 2.0)
    assert nothing(1.0) is None


# ---------------------------------------------------------------------------------------
# Port types


@pytest.mark.parametrize(
    "spelling, expected",
    [
        (hpvm.f32, "f32"),
        (hpvm.f32[:], "f32[:]"),
        (hpvm.f32[:, :], "f32[:, :]"),
        (hpvm.Array[hpvm.f32, 2], "f32[:, :]"),
        (hpvm.Array[np.int16, 3], "i16[:, :, :]"),
        (int, "i64"),
        (float, "f64"),
        (bool, "bool"),
        (np.float32, "f32"),
        (np.uint8, "u8"),
        (np.dtype("int32"), "i32"),
        ("f32", "f32"),
        ("f64[:, :]", "f64[:, :]"),
        ("hpvm.f32[:, :]", "f32[:, :]"),
        ("hpvm.Array[hpvm.i32, 2]", "i32[:, :]"),
        ("np.float32", "f32"),
        ("int", "i64"),
        ("node", "node"),
        (hpvm.node_t, "node"),
    ],
)
def test_annotation_spellings(spelling, expected):
    assert str(port_type(spelling)) == expected


@pytest.mark.parametrize(
    "spelling",
    [None, 5, "banana", "f32[1:3]", list, str, complex, np.ndarray, "hpvm.Array[f32, two]"],
    ids=repr,
)
def test_non_types_are_refused(spelling):
    with pytest.raises(TypeError):
        port_type(spelling)


@pytest.mark.parametrize(
    "build",
    [
        lambda: hpvm.f32[1:2],
        lambda: hpvm.f32[0],
        lambda: hpvm.Array[hpvm.f32],
        lambda: hpvm.Array[hpvm.f32, 2.5],
        lambda: hpvm.Array[hpvm.f32, "2"],
        lambda: hpvm.Array[hpvm.f32, True],
        lambda: hpvm.Array["banana", 1],
    ],
    ids=["slice", "index", "no-rank", "float-rank", "str-rank", "bool-rank", "bad-dtype"],
)
def test_bad_array_spellings(build):
    with pytest.raises(TypeError):
        build()


def test_rank_limits():
    with pytest.raises(ValueError):
        hpvm.Array[hpvm.f32, 0]
    assert hpvm.Array[hpvm.f32, 8].rank == 8


@pytest.mark.parametrize("name", ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64"])
@pytest.mark.parametrize("rank", [0, 1, 2, 3])
def test_types_print_and_parse_back(name, rank):
    scalar = parse_type(name)
    ptype = scalar if rank == 0 else hpvm.Array[scalar, rank]
    assert parse_type(str(ptype)) == ptype
    assert np.dtype(ptype.dtype).name == {"bool": "bool", "f32": "float32", "f64": "float64"}.get(
        name, ("int" if name[0] == "i" else "uint") + name[1:]
    )


def test_scalar_kinds():
    assert hpvm.i32.is_integer and not hpvm.i32.is_float
    assert hpvm.f64.is_float and not hpvm.f64.is_integer
    assert hpvm.f32 != hpvm.f64 and hpvm.f32[:] != hpvm.f32[:, :] and hpvm.f32[:] == hpvm.Array[hpvm.f32, 1]


# ---------------------------------------------------------------------------------------
# Replication-size expressions


n, m = ParamExpr("n"), ParamExpr("m")


@pytest.mark.parametrize(
    "expr, text, value",
    [
        (n + m * 2, "n + m * 2", 24),
        ((n + m) * 2, "(n + m) * 2", 34),
        (n - (m - 1), "n - (m - 1)", 4),
        ((n - m) - 1, "n - m - 1", 2),
        (n // (m * 2), "n // (m * 2)", 0),
        (n * m // 4, "n * m // 4", 17),
        (n * (m // 4), "n * (m // 4)", 10),
        (n % m, "n % m", 3),
        (-n % m, "(0 - n) % m", 4),
        (n // -3, "n // -3", -4),
        (-7 % m, "-7 % m", 0),
        (2 - n, "2 - n", -8),
        (hpvm.size_min(n, m, 4), "min(n, m, 4)", 4),
        (hpvm.size_max(n // 3, 1) + 1, "max(n // 3, 1) + 1", 4),
        (Shape("a", 1) * n, "a.shape[1] * n", 70),
    ],
)
def test_expressions_print_and_evaluate(expr, text, value):
    env = {"n": 10, "m": 7, "a": np.zeros((2, 7))}
    assert str(expr) == text
    assert expr.evaluate(env) == value
    assert eval(text, {"min": min, "max": max}, env) == value


def test_expression_parameters():
    assert (hpvm.size_max(n // 3, Shape("a", 0)) * m + 1).params() == {"n", "m", "a"}
    assert Const(3).params() == set()
    assert hpvm.size_min(n) is n  # the minimum of one size is that size


def test_division_by_zero_is_reported():
    with pytest.raises(ZeroDivisionError, match="n // m"):
        (n // m).evaluate({"n": 1, "m": 0})
    with pytest.raises(ZeroDivisionError, match="n % 0"):
        (n % 0).evaluate({"n": 1})


def test_non_integer_parameter_value():
    with pytest.raises(TypeError, match="input 'n' is float"):
        n.evaluate({"n": 2.5})
    assert n.evaluate({"n": np.int32(3)}) == 3


def test_structural_equality_and_hash():
    assert n + 1 == n + 1 and n + 1 != n + 2
    assert len({n + 1, n + 1, m}) == 2


# Random expression trees: printing, then evaluating the text as Python, gives the value
# Expr.evaluate computes. (min/max take two or more sizes here: hpvm.size_min(x) is x.)

_NAMES = ("n", "m", "k")
_leaves = st.one_of(
    st.integers(-20, 20).map(Const),
    st.sampled_from(_NAMES).map(ParamExpr),
    st.integers(0, 1).map(lambda axis: Shape("a", axis)),
)
_exprs = st.recursive(
    _leaves,
    lambda sub: st.one_of(
        st.tuples(st.sampled_from(["+", "-", "*", "//", "%"]), sub, sub).map(lambda t: BinOp(*t)),
        st.tuples(st.sampled_from(["min", "max"]), st.lists(sub, min_size=2, max_size=3)).map(
            lambda t: Call(t[0], tuple(t[1]))
        ),
    ),
    max_leaves=12,
)
_envs = st.fixed_dictionaries(
    {name: st.integers(-30, 30) for name in _NAMES}
    | {"a": st.tuples(st.integers(0, 6), st.integers(0, 6)).map(lambda s: np.empty(s))}
)


@settings(max_examples=300, deadline=None)
@given(_exprs, _envs)
def test_printed_expressions_evaluate_like_python(expr, env):
    text = str(expr)
    try:
        expected = eval(text, {"__builtins__": {}, "min": min, "max": max}, dict(env))
    except ZeroDivisionError:
        with pytest.raises(ZeroDivisionError):
            expr.evaluate(env)
        return
    assert expr.evaluate(env) == expected, text


@given(_exprs)
def test_arithmetic_on_expressions_matches_the_tree(expr):
    for op, fn in [
        ("+", operator.add),
        ("-", operator.sub),
        ("*", operator.mul),
        ("//", operator.floordiv),
        ("%", operator.mod),
    ]:
        assert fn(expr, n) == BinOp(op, expr, n)
        assert fn(3, expr) == BinOp(op, Const(3), expr)


def test_barrier_must_be_a_statement_of_its_own():
    with pytest.raises(hpvm.VerificationError) as info:

        @hpvm.leaf()
        def sync_in_expression() -> None:
            x = hpvm.barrier()  # @barrier-expr
            return x

    message = str(info.value)
    assert "sync_in_expression" in message and "statement of its own" in message
    assert f"{Path(__file__).name}:{line_of('barrier-expr')}" in message


def test_barrier_statement_verifies():
    @hpvm.leaf()
    def sync() -> None:
        hpvm.barrier()

    assert analyze_leaf_lines(sync) == []


def analyze_leaf_lines(fn):
    from hpvm.ir.leafinfo import analyze_leaf

    return analyze_leaf(fn).misplaced_barriers


# ---------------------------------------------------------------------------------------
# Seed 000: "the auxiliary functions are not allowed to include any HPVM intrinsics"


def _instance_id() -> int:  # @helper-def
    return hpvm.get_node_instance_id_x(hpvm.get_node())  # @helper-query


def _outer(c):  # @outer-def
    _inner(c)  # @outer-calls-inner


def _inner(c):  # @inner-def
    hpvm.barrier()  # @inner-barrier


def _count(c, k):  # @count-def
    hpvm.atomic_add(c, 0, k)  # @helper-atomic


def _plain(x):  # a helper without intrinsics, calling another, and itself
    return _plain_inner(x) if x > 0 else _plain(x + 1)


def _plain_inner(x):
    return abs(x) + np.sqrt(4.0)


def _one_leaf_root(leaf):  # type: ignore[no-untyped-def]
    @hpvm.internal
    def root(c: hpvm.i32[:]):
        _bind_in(hpvm.create_node_1d(leaf, 4), 0, 0)

    return root


def test_an_intrinsic_in_a_helper_is_reported_with_the_helper_and_its_line() -> None:
    with fails(
        hpvm.VerificationError,  # was accepted (interp ran it; cpu failed to compile it)
        f"leaf 'uses_query' ({at('leaf-calls-helper')}) calls helper '_instance_id' ({at('helper-def')})",
        f"hpvm.get_node_instance_id_x() and hpvm.get_node() at {at('helper-query')}",
        "may not use HPVM intrinsics (seed 000",
        "make the call in the leaf's own body",
    ):

        @hpvm.leaf(outs=("c",))
        def uses_query(c: hpvm.i32[:]):
            c[0] = _instance_id()  # @leaf-calls-helper


def test_helpers_are_followed_through_helpers() -> None:
    with fails(
        hpvm.VerificationError,
        f"leaf 'uses_chain' ({at('leaf-calls-outer')}) calls helper '_outer' ({at('outer-def')})",
        f"which calls '_inner' ({at('inner-def')}) at line {line_of('outer-calls-inner')}",
        f"which calls hpvm.barrier() at {at('inner-barrier')}",
    ):

        @hpvm.leaf(outs=("c",))
        def uses_chain(c: hpvm.i32[:]):
            _outer(c)  # @leaf-calls-outer


def test_helpers_are_found_through_modules_closures_and_decorators() -> None:
    import functools
    import types

    helpers = types.ModuleType("user_helpers")  # a module of the user's (not a library)
    helpers.count = _count

    with fails(hpvm.VerificationError, f"calls helper 'helpers.count' ({at('count-def')})"):

        @hpvm.leaf(outs=("c",))
        def through_module(c: hpvm.i32[:]):
            helpers.count(c, 1)

    @functools.wraps(_count)
    def wrapped(c, k):  # what a decorator leaves: the helper as __wrapped__
        return _count(c, k)

    with fails(hpvm.VerificationError, f"calls helper 'wrapped' ({at('count-def')})", at("helper-atomic")):

        @hpvm.leaf(outs=("c",))
        def through_closure(c: hpvm.i32[:]):
            wrapped(c, 2)


def test_helpers_without_intrinsics_and_library_functions_are_fine() -> None:
    @hpvm.leaf(outs=("c",))
    def plain(c: hpvm.i32[:]):
        i = hpvm.get_node_instance_id_x(hpvm.get_node())
        c[i] = _plain(i) + np.int32(np.sum(c)) + len(c)

    hpvm.verify(_one_leaf_root(plain))


def test_a_helper_defined_after_the_leaf_is_checked_at_launch() -> None:
    """The decorator cannot see a helper the module defines later; launch (verify) does."""

    @hpvm.leaf(outs=("c",))
    def calls_later(c: hpvm.i32[:]):
        c[0] = _defined_later()  # noqa: F821 - not defined yet when the decorator verifies the leaf

    root = _one_leaf_root(calls_later)
    globals()["_defined_later"] = _instance_id
    hpvm.init()
    try:
        c = np.zeros(1, np.int32)
        hpvm.track_memory(c)
        with fails(hpvm.VerificationError, "calls helper '_defined_later'", at("helper-query")):
            hpvm.launch(root, (c,), target="interp")  # interp used to run it
    finally:
        hpvm.cleanup()
        del globals()["_defined_later"]


def test_a_numba_helper_is_followed_into_its_python() -> None:
    numba = pytest.importorskip("numba")

    @numba.njit
    def jitted(c):  # @jitted-def
        return hpvm.get_num_node_instances_x(hpvm.get_node())  # @jitted-query

    with fails(hpvm.VerificationError, f"calls helper 'jitted' ({at('jitted-def')})", at("jitted-query")):

        @hpvm.leaf(outs=("c",))
        def calls_jitted(c: hpvm.i32[:]):
            c[0] = jitted(c)


def test_an_array_read_inside_a_stored_subscript_is_not_written():
    """``bins[data[i] % n] += 1`` writes ``bins`` and reads ``data`` (it was refused as
    "writes array 'data'")."""

    @hpvm.leaf(ins=("data", "bins"), outs=("bins",))
    def histogram(data: hpvm.i64[:], bins: hpvm.i64[:]):
        i = hpvm.get_node_instance_id_x(hpvm.get_node())
        bins[data[i] % bins.shape[0]] += 1
        bins[data[0]], bins[data[1]] = 0, 0

    assert histogram.name == "histogram"
    with fails(hpvm.VerificationError, "writes array 'data', which its outs does not declare"):

        @hpvm.leaf(ins=("data", "bins"), outs=("bins",))
        def writes_data(data: hpvm.i64[:], bins: hpvm.i64[:]):
            bins[0], data[bins[1]] = 1, 2


@pytest.mark.parametrize(
    "size",
    [Const(-4), BinOp("-", Const(4), Const(8)), BinOp("*", Call("min", (Const(2), Const(-1))), Const(3))],
    ids=["-4", "4 - 8", "min(2, -1) * 3"],
)
def test_a_negative_size_that_reads_no_input_is_refused_when_verified(size):
    """Known when the graph is built: refused by the verifier, naming the node and its line,
    not first at a launch (the C front end refuses the same at compile time)."""

    @hpvm.leaf()
    def nothing(a: hpvm.f32[:]) -> None:
        pass

    @hpvm.internal()
    def root(a: hpvm.f32[:]):
        node = hpvm.create_node_2d(nothing, 2, 3)
        hpvm.bind_in(node, 0, 0)

    (node,) = root.graph.nodes
    node.sizes = (node.sizes[0], size)  # (as a hand-built graph or a printed one may hold it)
    value = size.evaluate({})
    assert value < 0
    with pytest.raises(hpvm.VerificationError) as info:
        hpvm.verify(root)
    message = str(info.value)
    assert (
        f"node '{node.name}' ({node.location}): replication size '{size}' (dimension y) is {value}" in message
    )
    assert "uses no input" in message


def test_a_negative_constant_written_in_the_python_graph_is_refused():
    @hpvm.leaf()
    def nothing() -> None:
        pass

    @hpvm.internal()
    def root():
        hpvm.create_node_1d(nothing, 4 - 8)

    with pytest.raises(hpvm.VerificationError, match=r"replication size '-4' \(dimension x\) is -4"):
        hpvm.verify(root)


def test_a_constant_size_of_zero_and_a_negative_one_from_an_input_still_verify():
    @hpvm.leaf()
    def nothing() -> None:
        pass

    @hpvm.internal()
    def root(n: hpvm.i64):
        hpvm.create_node_2d(nothing, 0, n - 5)

    hpvm.verify(root)  # (n - 5 is checked at launch, with n)
