"""LLVM leaves run: on ``cpu`` (linked into the Numba graph code) and on ``interp`` (JIT,
instance by instance), with the same results as the Python programs they came from.

The whole shared suite is exported, imported (its leaves are then ``LLVMBody``s) and run;
hand-written LLVM leaves in the style of HPVM's C front end (queries in the node function,
``(ptr, i64)`` pairs, no ``"hpvm.port"`` attributes) check the queries in 1, 2 and 3
dimensions, parent queries, atomics under contention, barriers and ``malloc``.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import llvm
from hpvm.errors import CompileError, HPVMError, LaunchError
from hpvm.ir.bodies import LLVMBody
from hpvm.ir.graph import LeafFunction, functions

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared suite
from hpvm.runtime.streaming import plan_stages, streaming_root  # noqa: E402
from programs import PROGRAMS, assert_matches, run_program  # noqa: E402
from streaming_programs import NESTED, three_stages  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]

TARGETS = ("cpu", "interp")


@cache
def _imported_text(name: str) -> str:
    return llvm.to_hpvm_ir(next(p for p in PROGRAMS if p.name == name).root)


def _run(root, args: tuple, target: str):  # type: ignore[no-untyped-def]
    """Launch with the arrays tracked (and their contents back on the host after)."""
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    for a in arrays:
        hpvm.track_memory(a)
    try:
        outputs = hpvm.wait(hpvm.launch(root, args, target=target))
        for a in arrays:
            hpvm.request_memory(a)
    finally:
        for a in arrays:
            hpvm.untrack_memory(a)
    return outputs


def _leaves(root) -> list[LeafFunction]:  # type: ignore[no-untyped-def]
    return [f for f in functions(root) if isinstance(f, LeafFunction)]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_suite_round_trip_runs_like_the_python_program(program, target) -> None:  # type: ignore[no-untyped-def]
    root = llvm.from_hpvm_ir(_imported_text(program.name))
    assert all(leaf.body_kind == "llvm" for leaf in _leaves(root))
    imported = dataclasses.replace(program, root=root)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = run_program(program, "interp")
        got = run_program(imported, target)
    assert_matches(program, got, want)


# -- hand-written leaves, as HPVM's C front end writes them ----------------------------

DECLS = """
declare ptr @llvm.hpvm.createNode(ptr)
declare ptr @llvm.hpvm.createNode1D(ptr, i64)
declare ptr @llvm.hpvm.createNode2D(ptr, i64, i64)
declare ptr @llvm.hpvm.createNode3D(ptr, i64, i64, i64)
declare ptr @llvm.hpvm.createEdge(ptr, ptr, i1, i32, i32, i1)
declare void @llvm.hpvm.bind.input(ptr, i32, i32, i1)
declare void @llvm.hpvm.bind.output(ptr, i32, i32, i1)
declare ptr @llvm.hpvm.getNode()
declare ptr @llvm.hpvm.getParentNode(ptr)
declare i32 @llvm.hpvm.getNumDims(ptr)
declare i64 @llvm.hpvm.getNodeInstanceID.x(ptr)
declare i64 @llvm.hpvm.getNodeInstanceID.y(ptr)
declare i64 @llvm.hpvm.getNodeInstanceID.z(ptr)
declare i64 @llvm.hpvm.getNumNodeInstances.x(ptr)
declare i64 @llvm.hpvm.getNumNodeInstances.y(ptr)
declare i64 @llvm.hpvm.getNumNodeInstances.z(ptr)
declare ptr @llvm.hpvm.malloc(i64)
declare i32 @llvm.hpvm.atomic.add(ptr, i32)
declare i32 @llvm.hpvm.atomic.sub(ptr, i32)
declare i32 @llvm.hpvm.atomic.min(ptr, i32)
declare i32 @llvm.hpvm.atomic.max(ptr, i32)
declare i32 @llvm.hpvm.atomic.xchg(ptr, i32)
declare i32 @llvm.hpvm.atomic.and(ptr, i32)
declare i32 @llvm.hpvm.atomic.or(ptr, i32)
declare i32 @llvm.hpvm.atomic.xor(ptr, i32)
declare void @llvm.hpvm.barrier()
"""

QUERIES = """
define {} @where(ptr "in" "out" %out, i64 %bytes) {
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %y = call i64 @llvm.hpvm.getNodeInstanceID.y(ptr %n)
  %z = call i64 @llvm.hpvm.getNodeInstanceID.z(ptr %n)
  %nx = call i64 @llvm.hpvm.getNumNodeInstances.x(ptr %n)
  %ny = call i64 @llvm.hpvm.getNumNodeInstances.y(ptr %n)
  %nz = call i64 @llvm.hpvm.getNumNodeInstances.z(ptr %n)
  %d32 = call i32 @llvm.hpvm.getNumDims(ptr %n)
  %d = sext i32 %d32 to i64
  %t0 = mul i64 %x, %ny
  %t1 = add i64 %t0, %y
  %t2 = mul i64 %t1, %nz
  %flat = add i64 %t2, %z
  %slot = mul i64 %flat, 2
  %p = getelementptr i64, ptr %out, i64 %slot
  %vx = mul i64 %x, 1000000
  %vy = mul i64 %y, 10000
  %vz = mul i64 %z, 100
  %v0 = add i64 %vx, %vy
  %v1 = add i64 %v0, %vz
  %v = add i64 %v1, %d
  store i64 %v, ptr %p
  %p1 = getelementptr i64, ptr %p, i64 1
  %ex = mul i64 %nx, 10000
  %ey = mul i64 %ny, 100
  %e0 = add i64 %ex, %ey
  %e = add i64 %e0, %nz
  store i64 %e, ptr %p1
  ret {} zeroinitializer
}

define {} @root(ptr %out, i64 %bytes, i64 %a, i64 %b, i64 %c) {
entry:
  %w = call ptr @llvm.hpvm.CREATE(ptr @where, SIZES)
  call void @llvm.hpvm.bind.input(ptr %w, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %w, i32 1, i32 1, i1 false)
  ret {} undef
}
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_queries_in_one_two_and_three_dimensions(dims: int, target: str) -> None:
    grid = (3, 4, 5)[:dims]
    sizes = ", ".join(f"i64 %{v}" for v in "abc"[:dims])
    text = DECLS + QUERIES.replace("CREATE", f"createNode{dims}D").replace("SIZES", sizes)
    root = llvm.from_hpvm_ir(text)
    count = int(np.prod(grid))
    out = np.zeros(2 * count, dtype=np.int64)
    _run(root, (out.view(np.uint8), *grid, *[1] * (3 - dims)), target)
    full = (*grid, 1, 1)[:3]
    want = []
    for x, y, z in np.ndindex(*full):
        want += [x * 1000000 + y * 10000 + z * 100 + dims, full[0] * 10000 + full[1] * 100 + full[2]]
    np.testing.assert_array_equal(out, want)


PARENT = """
define {} @leaf(ptr "in" "out" %out, i64 %bytes) {
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %p = call ptr @llvm.hpvm.getParentNode(ptr %n)
  %lid = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %bs = call i64 @llvm.hpvm.getNumNodeInstances.x(ptr %n)
  %blk = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %p)
  %nb = call i64 @llvm.hpvm.getNumNodeInstances.x(ptr %p)
  %pd = call i32 @llvm.hpvm.getNumDims(ptr %p)
  %pd64 = sext i32 %pd to i64
  %base = mul i64 %blk, %bs
  %i = add i64 %base, %lid
  %a = getelementptr i64, ptr %out, i64 %i
  %v0 = mul i64 %blk, 1000
  %v1 = mul i64 %nb, 100
  %v2 = add i64 %v0, %v1
  %v3 = mul i64 %pd64, 10
  %v4 = add i64 %v2, %v3
  %v = add i64 %v4, %lid
  store i64 %v, ptr %a
  ret {} zeroinitializer
}

define {} @block(ptr "in" "out" %out, i64 %bytes, i64 %bs) {
entry:
  %l = call ptr @llvm.hpvm.createNode1D(ptr @leaf, i64 %bs)
  call void @llvm.hpvm.bind.input(ptr %l, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %l, i32 1, i32 1, i1 false)
  ret {} undef
}

define {} @root(ptr %out, i64 %bytes, i64 %nb, i64 %bs) {
entry:
  %b = call ptr @llvm.hpvm.createNode1D(ptr @block, i64 %nb)
  call void @llvm.hpvm.bind.input(ptr %b, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %b, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(ptr %b, i32 3, i32 2, i1 false)
  ret {} undef
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_parent_queries(target: str) -> None:
    root = llvm.from_hpvm_ir(DECLS + PARENT)
    nb, bs = 3, 5
    out = np.zeros(nb * bs, dtype=np.int64)
    _run(root, (out.view(np.uint8), nb, bs), target)
    want = [b * 1000 + nb * 100 + 10 + i for b in range(nb) for i in range(bs)]
    np.testing.assert_array_equal(out, want)


ATOMICS = """
define {} @hit(ptr "in" "out" %acc, i64 %bytes) {
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %id = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %i = trunc i64 %id to i32
  %neg = sub i32 0, %i
  %bit0 = and i32 %i, 7
  %bit = shl i32 1, %bit0
  %notbit = xor i32 %bit, -1
  %a0 = call i32 @llvm.hpvm.atomic.add(ptr %acc, i32 1)
  %p1 = getelementptr i32, ptr %acc, i64 1
  %a1 = call i32 @llvm.hpvm.atomic.sub(ptr %p1, i32 2)
  %p2 = getelementptr i32, ptr %acc, i64 2
  %a2 = call i32 @llvm.hpvm.atomic.max(ptr %p2, i32 %i)
  %p3 = getelementptr i32, ptr %acc, i64 3
  %a3 = call i32 @llvm.hpvm.atomic.min(ptr %p3, i32 %neg)
  %p4 = getelementptr i32, ptr %acc, i64 4
  %a4 = call i32 @llvm.hpvm.atomic.xor(ptr %p4, i32 %i)
  %p5 = getelementptr i32, ptr %acc, i64 5
  %a5 = call i32 @llvm.hpvm.atomic.or(ptr %p5, i32 %bit)
  %p6 = getelementptr i32, ptr %acc, i64 6
  %a6 = call i32 @llvm.hpvm.atomic.and(ptr %p6, i32 %notbit)
  %p7 = getelementptr i32, ptr %acc, i64 7
  %a7 = call i32 @llvm.hpvm.atomic.xchg(ptr %p7, i32 5)
  ret {} zeroinitializer
}

define {} @root(ptr %acc, i64 %bytes, i64 %n) {
entry:
  %h = call ptr @llvm.hpvm.createNode1D(ptr @hit, i64 %n)
  call void @llvm.hpvm.bind.input(ptr %h, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %h, i32 1, i32 1, i1 false)
  ret {} undef
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_atomics_under_contention(target: str) -> None:
    root = llvm.from_hpvm_ir(DECLS + ATOMICS)
    n = 200_000 if target == "cpu" else 5_000
    acc = np.array([0, 0, -1, 1, 0, 0, -1, 0], dtype=np.int32)
    _run(root, (acc.view(np.uint8), n), target)
    xor = 0
    for i in range(n):
        xor ^= i
    assert acc.tolist() == [n, -2 * n, n - 1, -(n - 1), xor, 0xFF, ~0xFF, 5]


BARRIER = """
define {} @rotate(ptr "in" "out" %buf, i64 %bb, ptr "in" "out" %out, i64 %ob) {
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %lid = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %bs = call i64 @llvm.hpvm.getNumNodeInstances.x(ptr %n)
  %p = call ptr @llvm.hpvm.getParentNode(ptr %n)
  %blk = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %p)
  %base = mul i64 %blk, %bs
  %i = add i64 %base, %lid
  %w = getelementptr i64, ptr %buf, i64 %i
  %v = mul i64 %i, 3
  store volatile i64 %v, ptr %w
  call void @llvm.hpvm.barrier()
  %nl0 = add i64 %lid, 1
  %nl = urem i64 %nl0, %bs
  %j = add i64 %base, %nl
  %r = getelementptr i64, ptr %buf, i64 %j
  %got = load volatile i64, ptr %r
  call void @llvm.hpvm.barrier()
  store volatile i64 0, ptr %r
  %o = getelementptr i64, ptr %out, i64 %i
  store i64 %got, ptr %o
  ret {} zeroinitializer
}

define {} @block(ptr "in" "out" %buf, i64 %bb, ptr "in" "out" %out, i64 %ob, i64 %bs) {
entry:
  %r = call ptr @llvm.hpvm.createNode1D(ptr @rotate, i64 %bs)
  call void @llvm.hpvm.bind.input(ptr %r, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %r, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(ptr %r, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(ptr %r, i32 3, i32 3, i1 false)
  ret {} undef
}

define {} @root(ptr %buf, i64 %bb, ptr %out, i64 %ob, i64 %nb, i64 %bs) {
entry:
  %b = call ptr @llvm.hpvm.createNode1D(ptr @block, i64 %nb)
  call void @llvm.hpvm.bind.input(ptr %b, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %b, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(ptr %b, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(ptr %b, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(ptr %b, i32 5, i32 4, i1 false)
  ret {} undef
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_barrier_orders_the_instances_of_a_parent_instance(target: str) -> None:
    # Each instance reads its neighbour's value after the first barrier and clears it after
    # the second: without a real barrier some would read a value not yet written (or
    # already cleared).
    root = llvm.from_hpvm_ir(DECLS + BARRIER)
    nb, bs = 4, 64
    for _ in range(3):
        buf = np.full(nb * bs, -1, dtype=np.int64)
        out = np.zeros(nb * bs, dtype=np.int64)
        _run(root, (buf.view(np.uint8), out.view(np.uint8), nb, bs), target)
        ids = np.arange(nb * bs).reshape(nb, bs)
        np.testing.assert_array_equal(out.reshape(nb, bs), np.roll(ids, -1, axis=1) * 3)


MALLOC = """
define { ptr, i64 } @alloc(i64 %count) {
entry:
  %bytes = mul i64 %count, 8
  %m = call ptr @llvm.hpvm.malloc(i64 %bytes)
  br label %loop
loop:
  %k = phi i64 [ 0, %entry ], [ %k1, %loop ]
  %a = getelementptr i64, ptr %m, i64 %k
  %v = add i64 %k, 7
  store i64 %v, ptr %a
  %k1 = add i64 %k, 1
  %more = icmp slt i64 %k1, %count
  br i1 %more, label %loop, label %done
done:
  %r0 = insertvalue { ptr, i64 } undef, ptr %m, 0
  %r1 = insertvalue { ptr, i64 } %r0, i64 %bytes, 1
  ret { ptr, i64 } %r1
}

define {} @total(ptr "in" %m, i64 %mb, ptr "in" "out" %out, i64 %ob) {
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %a = getelementptr i64, ptr %m, i64 %i
  %v = load i64, ptr %a
  %o = getelementptr i64, ptr %out, i64 %i
  store i64 %v, ptr %o
  ret {} zeroinitializer
}

define { ptr, i64 } @root(ptr %out, i64 %ob, i64 %count) {
entry:
  %al = call ptr @llvm.hpvm.createNode(ptr @alloc)
  %t = call ptr @llvm.hpvm.createNode1D(ptr @total, i64 %count)
  call void @llvm.hpvm.bind.input(ptr %al, i32 2, i32 0, i1 false)
  %e0 = call ptr @llvm.hpvm.createEdge(ptr %al, ptr %t, i1 true, i32 0, i32 0, i1 false)
  %e1 = call ptr @llvm.hpvm.createEdge(ptr %al, ptr %t, i1 true, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(ptr %t, i32 0, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(ptr %t, i32 1, i32 3, i1 false)
  call void @llvm.hpvm.bind.output(ptr %al, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.output(ptr %al, i32 1, i32 1, i1 false)
  ret { ptr, i64 } undef
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_malloc_memory_flows_over_edges_and_out_of_the_launch(target: str) -> None:
    root = llvm.from_hpvm_ir(DECLS + MALLOC)
    count = 100
    out = np.zeros(count, dtype=np.int64)
    (buf,) = _run(root, (out.view(np.uint8), count), target)
    np.testing.assert_array_equal(out, np.arange(count) + 7)
    # The root's output is the malloc'd buffer: still valid after the launch.
    for _ in range(2):
        _run(root, (np.zeros(count, dtype=np.int64).view(np.uint8), count), target)
    np.testing.assert_array_equal(np.asarray(buf).view(np.int64), np.arange(count) + 7)


@pytest.mark.parametrize("target", TARGETS)
def test_mixed_graph_python_and_llvm_leaves(target: str) -> None:
    program = next(p for p in PROGRAMS if p.name == "all_to_all_scalar")
    root = llvm.from_hpvm_ir(_imported_text(program.name))
    python_leaf = program.root.graph.nodes[0].function
    root.graph.nodes[0].function = python_leaf  # the producer in Python, the consumer in LLVM
    kinds = sorted(n.function.body_kind for n in root.graph.nodes)
    assert kinds == ["llvm", "python"]
    got = run_program(dataclasses.replace(program, root=root), target)
    assert_matches(program, got, run_program(program, "interp"))


@pytest.mark.parametrize("target", TARGETS)
def test_a_leaf_whose_function_takes_other_arguments_is_an_error_naming_it(target: str) -> None:
    root = llvm.from_hpvm_ir(DECLS + QUERIES.replace("CREATE", "createNode1D").replace("SIZES", "i64 %a"))
    leaf = _leaves(root)[0]
    other = leaf.body.module.replace("define {} @where(ptr", "define {} @where(i32 %junk, ptr")  # type: ignore[union-attr]
    other = other.replace("@root(ptr %out", "@root(ptr %out") + "\n"
    leaf.body = LLVMBody(other, "where")
    with pytest.raises(HPVMError, match=r"leaf 'where' .*@where takes 3 argument"):
        _run(root, (np.zeros(8, np.uint8), 1, 1, 1), target)


@pytest.mark.parametrize("target", TARGETS)
def test_a_query_reached_through_a_function_pointer_is_a_compile_error(target: str) -> None:
    text = DECLS + QUERIES.replace("CREATE", "createNode1D").replace("SIZES", "i64 %a")
    text = text.replace(
        "  %n = call ptr @llvm.hpvm.getNode()",
        "  %fp = select i1 true, ptr @get, ptr @get\n  %n = call ptr %fp()",
    )
    text += "\ndefine ptr @get() {\n  %n = call ptr @llvm.hpvm.getNode()\n  ret ptr %n\n}\n"
    root = llvm.from_hpvm_ir(text)
    with pytest.raises(CompileError, match=r"leaf 'where' .*@get .*used other than by a direct call"):
        _run(root, (np.zeros(8, np.uint8), 1, 1, 1), target)


def test_a_barrier_leaf_with_per_instance_inputs_on_interp_is_a_launch_error() -> None:
    text = """
declare ptr @llvm.hpvm.createNode1D(ptr, i64)
declare ptr @llvm.hpvm.createEdge(ptr, ptr, i1, i32, i32, i1)
declare void @llvm.hpvm.bind.input(ptr, i32, i32, i1)
declare ptr @llvm.hpvm.getNode()
declare i64 @llvm.hpvm.getNodeInstanceID.x(ptr)
declare void @llvm.hpvm.barrier()

define { i64 } @src() {
  %n = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %r = insertvalue { i64 } undef, i64 %i, 0
  ret { i64 } %r
}

define {} @dst(i64 %v) {
  call void @llvm.hpvm.barrier()
  ret {} zeroinitializer
}

define {} @root(i64 %n) {
  %s = call ptr @llvm.hpvm.createNode1D(ptr @src, i64 %n)
  %d = call ptr @llvm.hpvm.createNode1D(ptr @dst, i64 %n)
  %e = call ptr @llvm.hpvm.createEdge(ptr %s, ptr %d, i1 false, i32 0, i32 0, i1 false)
  ret {} undef
}
"""
    root = llvm.from_hpvm_ir(text)
    with pytest.raises(LaunchError, match=r"leaf 'dst' uses barriers.*per-instance values"):
        _run(root, (4,), "interp")
    with pytest.raises(HPVMError, match=r"barriers"):
        _run(root, (4,), "cpu")


@pytest.mark.parametrize("target", TARGETS)
def test_streaming_launch_with_llvm_leaves(target: str) -> None:
    root = llvm.from_hpvm_ir(llvm.to_hpvm_ir(three_stages))
    h = hpvm.launch(root, None, stream=True, target=target)
    for x in range(20):
        hpvm.push(h, (x,))
    got = [hpvm.pop(h) for _ in range(20)]
    hpvm.wait(h)
    assert [tuple(int(v) for v in g) for g in got] == [
        ((x + 1) * 2 + 1000 * (x + 1), x + 1) for x in range(20)
    ]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(NESTED))
def test_nested_streaming_launch_with_llvm_leaves(name: str, target: str) -> None:
    """The nested pipelines through HPVM IR and back: their stages stream at the root."""
    root, expect_item, stages = NESTED[name]
    imported = llvm.from_hpvm_ir(llvm.to_hpvm_ir(root))
    assert len(plan_stages(streaming_root(imported))) == stages  # the nesting came back
    h = hpvm.launch(imported, None, stream=True, target=target)
    for x in range(12):
        hpvm.push(h, (x,))
    got = [tuple(int(v) for v in hpvm.pop(h)) for _ in range(12)]
    hpvm.wait(h)
    assert got == [expect_item(x) for x in range(12)]


@pytest.mark.parametrize("target", TARGETS)
def test_a_strided_view_passed_to_an_llvm_leaf_is_an_error_naming_it(target: str) -> None:
    root = llvm.from_hpvm_ir(_imported_text("saxpy_1d"))
    base = np.arange(16, dtype=np.float32)
    y = np.ones(8, dtype=np.float32)
    with pytest.raises(HPVMError, match=r"p_saxpy.*C-contiguous"):
        _run(root, (base[::2], y, np.float32(2)), target)
    _run(root, (base[:8].copy(), y, np.float32(2)), target)  # the same, contiguous
    np.testing.assert_array_equal(y, 1 + 2 * np.arange(8))


@pytest.mark.parametrize("target", TARGETS)
def test_atomics_on_two_dimensional_arrays_run_like_the_python_program(target: str) -> None:
    from test_llvm_roundtrip import grid_atomics_root

    results = []
    for root, t in (
        (grid_atomics_root, "interp"),
        (llvm.from_hpvm_ir(llvm.to_hpvm_ir(grid_atomics_root)), target),
    ):
        h, s = np.zeros((2, 3), np.int32), np.zeros((2, 2), np.float64)
        _run(root, (h, s, np.int64(7)), t)
        results.append((h, s))
    (h0, s0), (h1, s1) = results
    np.testing.assert_array_equal(h1, h0)
    np.testing.assert_array_equal(s1, s0)
    assert s1[:, 1].tolist() == [1.5, 1.5] and h1.max() == 7
