"""Ports as HPVM numbers them: a pointer and its size are two LLVM arguments, which a
program may connect together (one array port, ``u8[:]``) or apart (a pointer-only ``u8[*]``
and an ``i64``). Hand-written LLVM 22 HPVM IR, without hpvm's attributes, of every
combination HPVM allows: each imports to the port types the grouping rule gives
(``hpvm.llvm.grouping``) and runs on ``cpu`` and ``interp`` with the results HPVM's
semantics give; the fixpoint on three-level graphs; what is still an error; and a
Hypothesis property over random bind/edge patterns (the grouping is consistent and the
graph verifies).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_llvm_import import graph_call

import hpvm
from hpvm import llvm
from hpvm.ir.graph import InternalFunction, LeafFunction, functions
from hpvm.ir.printer import print_program
from hpvm.ir.types import ArrayType, ScalarType
from hpvm.ir.verify import verify
from hpvm.llvm import abi

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from markers import fails  # noqa: E402
from running import run_tracked  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning")]

TARGETS = ("cpu", "interp")

DECLS = """
declare ptr @llvm.hpvm.createNode(ptr)
declare ptr @llvm.hpvm.createNode1D(ptr, i64)
declare ptr @llvm.hpvm.createEdge(ptr, ptr, i1, i32, i32, i1)
declare void @llvm.hpvm.bind.input(ptr, i32, i32, i1)
declare void @llvm.hpvm.bind.output(ptr, i32, i32, i1)
declare ptr @llvm.hpvm.getNode()
declare i64 @llvm.hpvm.getNodeInstanceID.x(ptr)
declare ptr @llvm.hpvm.malloc(i64)
"""


def _binds(node: str, *pairs: tuple[int, int]) -> str:
    return "".join(
        f"  call void @llvm.hpvm.bind.input(ptr %{node}, i32 {a}, i32 {b}, i1 false)\n" for a, b in pairs
    )


def _types(root: InternalFunction) -> dict[str, str]:
    """Each node function's signature as the text form prints it."""
    return {
        f.name: f"({', '.join(f'{p.name}: {p.type}' for p in f.params)}) -> ({', '.join(map(str, f.out_types))})"
        for f in functions(root)
    }


def _run(root: InternalFunction, args: tuple, target: str) -> tuple:
    out = run_tracked(root, args, target)
    for a in args:
        if isinstance(a, np.ndarray):
            hpvm.request_memory(a)
    return out


# -- the size on an edge, the pointer from the parent (HPVM's pipeline benchmark) -------

PIPELINE = (
    DECLS
    + """
define { i64, i64 } @scale(ptr "in" %I, i64 %bytesI, ptr "out" %Is, i64 %bytesIs, i64 %n) {
entry:
  %node = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %node)
  %pi = getelementptr float, ptr %I, i64 %i
  %v = load float, ptr %pi
  %w = fmul float %v, 2.000000e+00
  %po = getelementptr float, ptr %Is, i64 %i
  store float %w, ptr %po
  %r0 = insertvalue { i64, i64 } poison, i64 %bytesIs, 0
  %r1 = insertvalue { i64, i64 } %r0, i64 %bytesIs, 1
  ret { i64, i64 } %r1
}

define { i64 } @add_count(ptr "in" %Is, i64 %bytesIs, ptr "out" %L, i64 %bytesL, i64 %n) {
entry:
  %node = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %node)
  %count = udiv i64 %bytesIs, 4
  %c = uitofp i64 %count to float
  %pi = getelementptr float, ptr %Is, i64 %i
  %v = load float, ptr %pi
  %w = fadd float %v, %c
  %po = getelementptr float, ptr %L, i64 %i
  store float %w, ptr %po
  %r = insertvalue { i64 } poison, i64 %bytesL, 0
  ret { i64 } %r
}

define { i64 } @root(ptr %I, i64 %bytesI, ptr %Is, i64 %bytesIs, ptr %L, i64 %bytesL, i64 %n) {
entry:
  %gs = call ptr @llvm.hpvm.createNode1D(ptr @scale, i64 %n)
  %lap = call ptr @llvm.hpvm.createNode1D(ptr @add_count, i64 %n)
"""
    + _binds("gs", (0, 0), (1, 1), (2, 2), (3, 3), (6, 4))
    + _binds("lap", (2, 0))  # Is from the root ...
    + "  %e = call ptr @llvm.hpvm.createEdge(ptr %gs, ptr %lap, i1 true, i32 1, i32 1, i1 false)\n"  # ... its size from scale
    + _binds("lap", (4, 2), (5, 3), (6, 4))
    + """  call void @llvm.hpvm.bind.output(ptr %lap, i32 0, i32 0, i1 false)
  ret { i64 } undef
}
"""
)


def test_a_size_on_an_edge_and_its_pointer_from_the_parent_are_two_ports() -> None:
    root = llvm.from_hpvm_ir(PIPELINE)
    assert _types(root) == {
        "scale": "(I: u8[:], Is: u8[*], bytesIs: i64, n: i64) -> (i64, i64)",
        "add_count": "(Is: u8[*], bytesIs: i64, L: u8[:], n: i64) -> (i64)",
        "root": "(I: u8[:], Is: u8[*], bytesIs: i64, L: u8[:], n: i64) -> (i64)",
    }
    text = print_program(root, bodies=False)
    assert "edge %gs.1 -> %lap.1 all_to_all" in text
    assert "bind in 1 -> %lap.0" in text  # LLVM index 2 of the root is its port 1


@pytest.mark.parametrize("target", TARGETS)
def test_the_pipeline_runs_with_the_size_the_edge_carries(target, hpvm_runtime) -> None:
    n = 37
    image = np.arange(n, dtype=np.float32)
    smoothed, out = np.zeros(n, np.float32), np.zeros(n, np.float32)
    args = (image.view(np.uint8), smoothed.view(np.uint8), smoothed.nbytes, out.view(np.uint8), n)
    (returned,) = _run(llvm.from_hpvm_ir(PIPELINE), args, target)
    assert returned == out.nbytes
    np.testing.assert_array_equal(smoothed, 2 * image)
    np.testing.assert_array_equal(out, 2 * image + n)  # + the count of the size the edge brought


# -- a node returning a pointer and its size ----------------------------------------------

HALF = """
define { ptr, i64 } @half(ptr %buf, i64 %bytes) {
entry:
  %h = udiv i64 %bytes, 2
  %p = getelementptr i8, ptr %buf, i64 %h
  %r0 = insertvalue { ptr, i64 } poison, ptr %p, 0
  %r1 = insertvalue { ptr, i64 } %r0, i64 %h, 1
  ret { ptr, i64 } %r1
}

define { i64 } @fill(ptr "out" %dst, i64 %bytes, i32 %k) {
entry:
  %n = udiv i64 %bytes, 4
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %body ]
  %more = icmp ult i64 %i, %n
  br i1 %more, label %body, label %done
body:
  %p = getelementptr i32, ptr %dst, i64 %i
  store i32 %k, ptr %p
  %next = add i64 %i, 1
  br label %loop
done:
  %r = insertvalue { i64 } poison, i64 %bytes, 0
  ret { i64 } %r
}
"""


def _half_program(size_from_root: bool) -> str:
    """``half`` returns the second half of a buffer; ``fill`` writes ``k`` into the memory it
    is given: the pointer and size ``half`` returned (together), or the pointer alone with
    a size the root passes (apart)."""
    size = (
        _binds("f", (2, 1))
        if size_from_root
        else "  %e1 = call ptr @llvm.hpvm.createEdge(ptr %h, ptr %f, i1 false, i32 1, i32 1, i1 false)\n"
    )
    return (
        DECLS
        + HALF
        + """
define { i64 } @root(ptr %buf, i64 %bytes, i64 %fillbytes, i32 %k) {
entry:
  %h = call ptr @llvm.hpvm.createNode(ptr @half)
  %f = call ptr @llvm.hpvm.createNode(ptr @fill)
"""
        + _binds("h", (0, 0), (1, 1))
        + "  %e0 = call ptr @llvm.hpvm.createEdge(ptr %h, ptr %f, i1 false, i32 0, i32 0, i1 false)\n"
        + size
        + _binds("f", (3, 2))
        + """  call void @llvm.hpvm.bind.output(ptr %f, i32 0, i32 0, i1 false)
  ret { i64 } undef
}
"""
    )


def test_a_returned_pointer_and_its_size_that_travel_together_are_one_port() -> None:
    types = _types(llvm.from_hpvm_ir(_half_program(size_from_root=False)))
    assert types["half"] == "(buf: u8[:]) -> (u8[:])"
    assert types["fill"] == "(dst: u8[:], k: i32) -> (i64)"


def test_a_returned_pointer_whose_size_travels_apart_is_a_pointer_only_output() -> None:
    types = _types(llvm.from_hpvm_ir(_half_program(size_from_root=True)))
    assert types["half"] == "(buf: u8[:]) -> (u8[*], i64)"
    assert types["fill"] == "(dst: u8[*], bytes: i64, k: i32) -> (i64)"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("apart", [False, True], ids=["together", "apart"])
def test_a_returned_pointer_reaches_the_next_node(target, apart, hpvm_runtime) -> None:
    buf = np.zeros(16, np.int32)
    fill = 12 if apart else 32  # bytes: apart, the root's size (3 ints); together, the half's (8)
    root = llvm.from_hpvm_ir(_half_program(apart))  # (buf and its size stay one port: bound together)
    (returned,) = _run(root, (buf.view(np.uint8), fill if apart else 0, 7), target)
    assert returned == fill
    want = np.zeros(16, np.int32)
    want[8 : 8 + fill // 4] = 7
    np.testing.assert_array_equal(buf, want)


HEAP = (
    DECLS
    + """
define { ptr } @alloc(i32 %k) {
entry:
  %p = call ptr @llvm.hpvm.malloc(i64 64)
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %i32 = trunc i64 %i to i32
  %v = mul i32 %i32, %k
  %q = getelementptr i32, ptr %p, i64 %i
  store i32 %v, ptr %q
  %next = add i64 %i, 1
  %more = icmp ult i64 %next, 16
  br i1 %more, label %loop, label %done
done:
  %r = insertvalue { ptr } poison, ptr %p, 0
  ret { ptr } %r
}

define {} @copy(ptr "in" %src, ptr "out" %dst, i64 %bytes) {
entry:
  %node = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %node)
  %s = getelementptr i32, ptr %src, i64 %i
  %v = load i32, ptr %s
  %d = getelementptr i32, ptr %dst, i64 %i
  store i32 %v, ptr %d
  ret {} zeroinitializer
}

define {} @root(i32 %k, ptr %dst, i64 %bytes) {
entry:
  %a = call ptr @llvm.hpvm.createNode(ptr @alloc)
  %n = udiv i64 %bytes, 4
  %c = call ptr @llvm.hpvm.createNode1D(ptr @copy, i64 %n)
"""
    + _binds("a", (0, 0))
    + "  %e = call ptr @llvm.hpvm.createEdge(ptr %a, ptr %c, i1 true, i32 0, i32 0, i1 false)\n"
    + _binds("c", (1, 1), (2, 2))
    + """  ret {} undef
}
"""
)


@pytest.mark.parametrize("target", TARGETS)
def test_a_pointer_only_output_into_malloced_memory(target, hpvm_runtime) -> None:
    root = llvm.from_hpvm_ir(HEAP)
    assert _types(root)["alloc"] == "(k: i32) -> (u8[*])"
    assert _types(root)["copy"] == "(src: u8[*], dst: u8[:]) -> ()"
    dst = np.zeros(16, np.int32)
    _run(root, (3, dst.view(np.uint8)), target)
    np.testing.assert_array_equal(dst, 3 * np.arange(16))


# -- a size bound alone; a pointer without a size ------------------------------------------

SIZE_ALONE = (
    DECLS
    + """
define { i64 } @count(i64 %bytes) {
entry:
  %n = udiv i64 %bytes, 4
  %r = insertvalue { i64 } poison, i64 %n, 0
  ret { i64 } %r
}

define { i64 } @root(ptr %x, i64 %bytes) {
entry:
  %c = call ptr @llvm.hpvm.createNode(ptr @count)
"""
    + _binds("c", (1, 0))
    + """  call void @llvm.hpvm.bind.output(ptr %c, i32 0, i32 0, i1 false)
  ret { i64 } undef
}
"""
)


@pytest.mark.parametrize("target", TARGETS)
def test_a_size_bound_alone_leaves_its_pointer_a_port_of_its_own(target, hpvm_runtime) -> None:
    root = llvm.from_hpvm_ir(SIZE_ALONE)
    assert _types(root) == {"count": "(bytes: i64) -> (i64)", "root": "(x: u8[*], bytes: i64) -> (i64)"}
    x = np.zeros(40, np.uint8)
    assert _run(root, (x, x.nbytes), target) == (10,)


# HPVM's pass tests (hpvm/test/hpvm_pass) pass pointers with no size at all:
# define %struct.out.F @F(i32* in %In, i32* out %Out), here in LLVM 22's form.
NO_SIZE = (
    DECLS
    + """
define {} @F(ptr "in" %In, ptr "out" %Out) {
entry:
  %node = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %node)
  %pi = getelementptr i32, ptr %In, i64 %i
  %v = load i32, ptr %pi
  %w = mul i32 %v, 3
  %po = getelementptr i32, ptr %Out, i64 %i
  store i32 %w, ptr %po
  ret {} zeroinitializer
}

define {} @root(ptr %In, ptr %Out, i64 %n) {
entry:
  %f = call ptr @llvm.hpvm.createNode1D(ptr @F, i64 %n)
"""
    + _binds("f", (0, 0), (1, 1))
    + """  ret {} undef
}
"""
)


@pytest.mark.parametrize("target", TARGETS)
def test_pointers_without_sizes(target, hpvm_runtime) -> None:
    root = llvm.from_hpvm_ir(NO_SIZE)
    assert _types(root)["F"] == "(In: u8[*], Out: u8[*]) -> ()"
    assert print_program(root, bodies=False).startswith(
        "# hpvm IR v1\nleaf @F(In: u8[*], Out: u8[*]) -> () ins(In) outs(Out)"
    )
    a, b = np.arange(20, dtype=np.int32), np.zeros(20, np.int32)
    _run(root, (a.view(np.uint8), b.view(np.uint8), 20), target)
    np.testing.assert_array_equal(b, 3 * a)


def test_pairs_that_travel_together_stay_one_port() -> None:
    text = NO_SIZE.replace(
        '@F(ptr "in" %In, ptr "out" %Out)', '@F(ptr "in" %In, i64 %bIn, ptr "out" %Out, i64 %bOut)'
    )
    text = text.replace(
        "@root(ptr %In, ptr %Out, i64 %n)", "@root(ptr %In, i64 %bIn, ptr %Out, i64 %bOut, i64 %n)"
    )
    text = text.replace(_binds("f", (0, 0), (1, 1)), _binds("f", (0, 0), (1, 1), (2, 2), (3, 3)))
    root = llvm.from_hpvm_ir(text)
    assert _types(root) == {
        "F": "(In: u8[:], Out: u8[:]) -> ()",
        "root": "(In: u8[:], Out: u8[:], n: i64) -> ()",
    }


# -- the fixpoint on three levels -----------------------------------------------------------


def _three_levels(mid_binds: str, root_binds: str, root_args: str = "ptr %a, i64 %ba, i64 %extra") -> str:
    """root → mid (internal) → leaf, leaf writing ``i`` at index ``i`` of what it is given."""
    return (
        DECLS
        + """
define { i64 } @leaf(ptr "out" %dst, i64 %bytes) {
entry:
  %node = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %node)
  %i32 = trunc i64 %i to i32
  %p = getelementptr i32, ptr %dst, i64 %i
  store i32 %i32, ptr %p
  %r = insertvalue { i64 } poison, i64 %bytes, 0
  ret { i64 } %r
}

define { i64 } @size_of(i64 %b) {
entry:
  %r = insertvalue { i64 } poison, i64 %b, 0
  ret { i64 } %r
}

define { i64 } @mid(ptr %a, i64 %ba, i64 %extra) {
entry:
  %n = udiv i64 %extra, 4
  %l = call ptr @llvm.hpvm.createNode1D(ptr @leaf, i64 %n)
"""
        + mid_binds
        + """  call void @llvm.hpvm.bind.output(ptr %l, i32 0, i32 0, i1 false)
  ret { i64 } undef
}

"""
        + f"define {{ i64 }} @root({root_args}) {{\nentry:\n"
        + """  %s = call ptr @llvm.hpvm.createNode(ptr @size_of)
  %m = call ptr @llvm.hpvm.createNode(ptr @mid)
"""
        + _binds("s", (2, 0))
        + root_binds
        + """  call void @llvm.hpvm.bind.output(ptr %m, i32 0, i32 0, i1 false)
  ret { i64 } undef
}
"""
    )


TOGETHER = _three_levels(_binds("l", (0, 0), (1, 1)), _binds("m", (0, 0), (1, 1), (2, 2)))
# Split at the top: mid's size comes from a sibling's edge; the split reaches the leaf.
SPLIT_DOWN = _three_levels(
    _binds("l", (0, 0), (1, 1)),
    _binds("m", (0, 0), (2, 2))
    + "  %e = call ptr @llvm.hpvm.createEdge(ptr %s, ptr %m, i1 false, i32 0, i32 1, i1 false)\n",
)
# Split at the bottom: mid gives the leaf another size; the split reaches the root.
SPLIT_UP = _three_levels(_binds("l", (0, 0), (2, 1)), _binds("m", (0, 0), (1, 1), (2, 2)))


@pytest.mark.parametrize(
    ("text", "pair"),
    [(TOGETHER, "u8[:]"), (SPLIT_DOWN, "u8[*]"), (SPLIT_UP, "u8[*]")],
    ids=["together", "split-down", "split-up"],
)
def test_the_fixpoint_spreads_a_split_through_every_level(text, pair) -> None:
    types = _types(llvm.from_hpvm_ir(text))
    size = "" if pair == "u8[:]" else ", bytes: i64"
    assert types["leaf"] == f"(dst: {pair}{size}) -> (i64)"
    assert types["mid"] == f"(a: {pair}{'' if pair == 'u8[:]' else ', ba: i64'}, extra: i64) -> (i64)"
    assert types["root"] == f"(a: {pair}{'' if pair == 'u8[:]' else ', ba: i64'}, extra: i64) -> (i64)"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("text", [TOGETHER, SPLIT_DOWN, SPLIT_UP], ids=["together", "split-down", "split-up"])
def test_three_levels_run(text, target, hpvm_runtime) -> None:
    buf = np.full(10, -1, np.int32)
    args = (buf.view(np.uint8), 24) if text is TOGETHER else (buf.view(np.uint8), buf.nbytes, 24)
    (returned,) = _run(llvm.from_hpvm_ir(text), args, target)
    want = np.full(10, -1, np.int32)
    want[:6] = np.arange(6)  # extra = 24 bytes: 6 instances
    np.testing.assert_array_equal(buf, want)
    assert returned == (buf.nbytes if text is TOGETHER else 24)  # the size that reached the leaf


def test_export_and_import_keep_the_split() -> None:
    for text in (PIPELINE, SPLIT_DOWN, NO_SIZE, HEAP):
        root = llvm.from_hpvm_ir(text)
        exported = llvm.to_hpvm_ir(root)
        assert '"hpvm.port"="u8[*]"' in exported
        assert print_program(llvm.from_hpvm_ir(exported), bodies=False) == print_program(root, bodies=False)


# -- what is still an error ---------------------------------------------------------------


def test_a_declared_arrays_size_bound_without_its_pointer() -> None:
    # hpvm's own export says what its ports are ("hpvm.port"): those are not regrouped.
    text = (
        DECLS
        + """
define {} @leaf(ptr "hpvm.port"="u8[:]" %x, i64 "hpvm.size" %x.size) {
entry:
  ret {} zeroinitializer
}
define {} @root(ptr "hpvm.port"="u8[:]" %x, i64 "hpvm.size" %x.size) {
entry:
  %l = call ptr @llvm.hpvm.createNode(ptr @leaf)
  call void @llvm.hpvm.bind.input(ptr %l, i32 1, i32 1, i1 false)
  ret {} undef
}
"""
    )
    bind = "call void @llvm.hpvm.bind.input(ptr %l, i32 1, i32 1, i1 false)"
    with fails(llvm.GraphCallError, graph_call(text, bind), "without a call for its pointer"):
        llvm.from_hpvm_ir(text)


def test_a_pointer_only_port_into_a_declared_sized_array() -> None:
    text = (
        DECLS
        + """
define {} @leaf(ptr "hpvm.port"="u8[:]" %x, i64 "hpvm.size" %x.size) {
entry:
  ret {} zeroinitializer
}
define {} @root(ptr %p, i32 %z, i64 %n) {
entry:
  %l = call ptr @llvm.hpvm.createNode(ptr @leaf)
  call void @llvm.hpvm.bind.input(ptr %l, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %l, i32 2, i32 1, i1 false)
  ret {} undef
}
"""
    )
    with fails(
        llvm.GraphCallError,
        graph_call(text, "call void @llvm.hpvm.bind.input(ptr %l, i32 0, i32 0"),
        "connects a u8[*] to a u8[:]",
    ):
        llvm.from_hpvm_ir(text)


def test_a_pointer_into_a_size() -> None:
    edge = "%e = call ptr @llvm.hpvm.createEdge(ptr %h, ptr %f, i1 false, i32 0, i32 1, i1 false)"
    text = _half_program(size_from_root=True).replace(
        "  %e0 = call ptr @llvm.hpvm.createEdge(ptr %h, ptr %f, i1 false, i32 0, i32 0, i1 false)\n"
        + _binds("f", (2, 1)),
        _binds("f", (0, 0)) + f"  {edge}\n",
    )
    with fails(llvm.GraphCallError, graph_call(text, edge), "connects a u8[*] to a i64"):
        llvm.from_hpvm_ir(text)


# -- Python leaves take pointer-only ports too; back ends that cannot run them say so -----


@hpvm.leaf(ins=("a",), outs=("b",))
def _bump(a: hpvm.u8[...], n: hpvm.i64, b: hpvm.u8[:]) -> hpvm.u8[...]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    b[i] = a[i] + 1
    return a[n:]


@hpvm.internal
def _bump_root(a: hpvm.u8[...], n: hpvm.i64, b: hpvm.u8[:]):
    node = hpvm.create_node_1d(_bump, n)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)
    hpvm.bind_in(node, 2, 2)
    hpvm.bind_out(node, 0, 0)


@pytest.mark.parametrize("target", TARGETS)
def test_a_python_leaf_takes_and_returns_pointer_only_ports(target, hpvm_runtime) -> None:
    assert [str(p.type) for p in _bump.params] == ["u8[*]", "i64", "u8[:]"]
    a, b = np.arange(12, dtype=np.uint8), np.zeros(5, np.uint8)
    (rest,) = _run(_bump_root, (a, 5, b), target)
    np.testing.assert_array_equal(b, np.arange(1, 6))
    assert np.shares_memory(rest, a) and list(rest) == list(range(5, 12))


@hpvm.internal
def _bump_stream(a: hpvm.u8[...], n: hpvm.i64, b: hpvm.u8[:]):
    node = hpvm.create_node_1d(_bump, n)
    for k in range(3):
        hpvm.bind_in(node, k, k, stream=True)
    hpvm.bind_out(node, 0, 0, stream=True)


@pytest.mark.parametrize("target", [*TARGETS, "svm"])
def test_pointer_only_ports_stream(target, hpvm_runtime) -> None:
    a, b = np.arange(12, dtype=np.uint8), np.zeros(5, np.uint8)
    for arr in (a, b):
        hpvm.track_memory(arr)
    handle = hpvm.launch(_bump_stream, None, stream=True, target=target)
    for k in range(3):
        hpvm.push(handle, (a[k:], 5, b))
        (rest,) = hpvm.pop(handle)
        assert list(rest) == list(range(k + 5, 12))
    hpvm.wait(handle)
    hpvm.request_memory(b)
    np.testing.assert_array_equal(b, np.arange(3, 8))


@pytest.mark.parametrize("target", ["dask", "tensor", "opencl", "cuda"])
def test_back_ends_that_do_not_run_pointer_only_ports_say_so(target, hpvm_runtime) -> None:
    from hpvm.backends import unavailable_reason

    if unavailable_reason(target) is not None:
        pytest.skip(f"{target}: {unavailable_reason(target)}")
    a, b = np.arange(12, dtype=np.uint8), np.zeros(5, np.uint8)
    with fails(
        hpvm.CompileError,
        f"the {target} back end does not run pointer-only array ports",
        f"'_bump' ({_bump.location}): port 'a', output 0",
        "run the graph on cpu or interp",
    ):
        run_tracked(_bump_root, (a, 5, b), target)


def test_a_pointer_only_argument_must_be_contiguous(hpvm_runtime) -> None:
    a, b = np.arange(24, dtype=np.uint8), np.zeros(5, np.uint8)
    with fails(hpvm.LaunchError, "argument 0 ('a') of '_bump_root'", "expected u8[*]", "strided view"):
        run_tracked(_bump_root, (a[::2], 5, b), "interp")


# -- the property: any well-typed pattern of binds and edges imports consistently ---------

_KINDS = ("pair", "ptr", "i64")


@st.composite
def _programs(draw: st.DrawFn) -> str:
    """A root with (ptr, i64) pairs, lone pointers and sizes, and children — leaves, or
    wrappers around a leaf of the same signature (three levels) — whose inputs are each fed
    once, from a root argument or an earlier child's output of the same LLVM type (each
    output feeds one edge or one output bind at most, as HPVM's rules say)."""

    def signature(min_size: int) -> list[str]:
        kinds = draw(st.lists(st.sampled_from(_KINDS), min_size=min_size, max_size=3))
        return [t for k in kinds for t in (["ptr", "i64"] if k == "pair" else [k])]

    root_args = ["ptr", "i64", *signature(0)]
    children = []
    for k in range(draw(st.integers(1, 4))):
        children.append((f"c{k}", signature(1), signature(0), draw(st.booleans())))
    lines, defines = [], []
    outputs: list[tuple[str, int, str]] = []  # (node, field, type) available to later children
    for name, ins, outs, wrapped in children:
        ret = "{ " + ", ".join(outs) + " }" if outs else "{}"
        params = ", ".join(f"{t} %{name}a{j}" for j, t in enumerate(ins))
        defines.append(f"define {ret} @{name}_leaf({params}) {{\nentry:\n  ret {ret} zeroinitializer\n}}\n")
        leaf = f"@{name}_leaf"
        if wrapped:  # an internal node binding everything to a leaf of its signature
            body = f"  %in = call ptr @llvm.hpvm.createNode(ptr {leaf})\n"
            body += "".join(
                f"  call void @llvm.hpvm.bind.input(ptr %in, i32 {j}, i32 {j}, i1 false)\n"
                for j in range(len(ins))
            )
            body += "".join(
                f"  call void @llvm.hpvm.bind.output(ptr %in, i32 {j}, i32 {j}, i1 false)\n"
                for j in range(len(outs))
            )
            defines.append(f"define {ret} @{name}({params}) {{\nentry:\n{body}  ret {ret} undef\n}}\n")
            leaf = f"@{name}"
        lines.append(f"  %{name} = call ptr @llvm.hpvm.createNode(ptr {leaf})")
        for j, t in enumerate(ins):
            sources = [("root", a) for a, at in enumerate(root_args) if at == t]
            sources += [(node, f) for node, f, ft in outputs if ft == t]
            src, index = draw(st.sampled_from(sources))
            outputs = [o for o in outputs if o[:2] != (src, index)]
            if src == "root":
                lines.append(
                    f"  call void @llvm.hpvm.bind.input(ptr %{name}, i32 {index}, i32 {j}, i1 false)"
                )
            else:
                repl = draw(st.sampled_from(["false", "true"]))
                lines.append(
                    f"  call ptr @llvm.hpvm.createEdge(ptr %{src}, ptr %{name}, i1 {repl}, i32 {index}, i32 {j}, i1 false)"
                )
        outputs += [(name, f, t) for f, t in enumerate(outs)]
    bound = (
        draw(st.lists(st.sampled_from(outputs), max_size=3, unique=True)) if outputs else []
    )  # (unique sources)
    for op, (node, field, _) in enumerate(bound):
        lines.append(f"  call void @llvm.hpvm.bind.output(ptr %{node}, i32 {field}, i32 {op}, i1 false)")
    ret = "{ " + ", ".join(t for _, _, t in bound) + " }" if bound else "{}"
    params = ", ".join(f"{t} %r{j}" for j, t in enumerate(root_args))
    root = f"define {ret} @root({params}) {{\nentry:\n" + "\n".join(lines) + f"\n  ret {ret} undef\n}}\n"
    return DECLS + "".join(defines) + root


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs())
def test_any_well_typed_pattern_groups_consistently(text) -> None:
    root = llvm.from_hpvm_ir(text)  # (raises if the ends of a connection had different types)
    verify(root)
    for fn in functions(root):
        arity = sum(abi.arity(p.type) for p in fn.params)
        assert arity == text.split(f"@{fn.name}(", 1)[1].split(")", 1)[0].count("%"), fn.name
        if isinstance(fn, InternalFunction):
            g = fn.graph
            for e in g.edges:
                assert e.src.function.out_types[e.sp] == e.dst.function.params[e.dp].type
            for b in g.in_binds:
                assert fn.params[b.ip].type == b.dst.function.params[b.ic].type
            for b in g.out_binds:
                assert b.src.function.out_types[b.oc] == fn.out_types[b.op]
        for t in [p.type for p in fn.params] + list(fn.out_types):
            assert isinstance(t, (ScalarType, ArrayType))
            if isinstance(t, ArrayType):
                assert t.elem == ScalarType("u8") and t.rank == 1
        if isinstance(fn, LeafFunction):
            assert fn.body_kind == "llvm"


STRAY = (
    DECLS
    + """
@table = global [4 x i32] zeroinitializer

define { ptr } @stray() {
entry:
  ret { ptr } { ptr @table }
}

define { ptr } @root(i64 %unused) {
entry:
  %s = call ptr @llvm.hpvm.createNode(ptr @stray)
  call void @llvm.hpvm.bind.output(ptr %s, i32 0, i32 0, i1 false)
  ret { ptr } undef
}
"""
)


@pytest.mark.parametrize(
    ("target", "error"), [("cpu", hpvm.LaunchError), ("interp", hpvm.NodeExecutionError)]
)
def test_a_returned_pointer_into_memory_the_runtime_does_not_know(target, error, hpvm_runtime) -> None:
    root = llvm.from_hpvm_ir(STRAY)
    assert _types(root)["stray"] == "() -> (u8[*])"
    with fails(error, "stray", "neither in one of its array inputs nor memory from llvm.hpvm.malloc"):
        run_tracked(root, (0,), target)
