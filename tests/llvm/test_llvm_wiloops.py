"""Barrier leaves as work-item loops (``backends/llvm_native/wiloops.py``) against coroutines.

Generated LLVM barrier leaves (1-, 2- and 3-D groups; one barrier, or three with a
neighbour's value read between two of them; optionally a loop around those whose trip count
is an argument, the same for every instance; values live across every barrier) give the
same memory on the work-item-loop path, on the coroutine path and in a NumPy model of the
program. The generated leaves all take the work-item path (their barriers are uniform).
A round guarded by ``if (x < u)`` (or ``x == 0``) runs as a loop over the passing instances
only (``wiguard.py``), with the same memory as coroutines and the model for every ``u``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpvm import llvm
from hpvm.backends.llvm_native import native, wiguard, wiloops

wiloops_tails = wiloops._tails

sys.path.insert(0, str(Path(__file__).resolve().parent))
from barrier_lowering import barrier_leaf  # noqa: E402
from test_llvm_leaves_run import DECLS, _run  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]


@dataclass(frozen=True)
class Leaf:
    dims: int
    sizes: tuple[int, int, int]  # nx, ny, nz (1 past dims)
    mult: int  # v = lid * mult + 1, live across every barrier
    shifts: tuple[int, ...]  # one step per shift: read buf[(lid + shift) % n], barrier, write
    looped: bool  # the steps inside a loop of `reps` rounds (an argument: uniform)
    reps: int
    xor: bool  # how a step folds the neighbour's value in

    def text(self) -> str:
        create = {1: "createNode1D", 2: "createNode2D", 3: "createNode3D"}[self.dims]
        extents = ", ".join(f"i64 %n{a}" for a in "xyz"[: self.dims])
        op = "xor" if self.xor else "add"
        steps = []
        for k, shift in enumerate(self.shifts):
            prev = "%acc" if k == 0 else f"%acc{k - 1}"
            steps.append(
                f"""  %s{k} = add i64 %lid, {shift}
  %r{k} = urem i64 %s{k}, %cnt
  %q{k} = getelementptr i64, ptr %buf, i64 %r{k}
  %t{k} = load i64, ptr %q{k}
  call void @llvm.hpvm.barrier()
  %acc{k} = {op} i64 {prev}, %t{k}
  store i64 %acc{k}, ptr %p
  call void @llvm.hpvm.barrier()"""
            )
        last = f"%acc{len(self.shifts) - 1}" if self.shifts else "%acc"
        if self.looped:
            flow = f"""  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %i1, %body ]
  %acc = phi i64 [ %v1, %entry ], [ {last}, %body ]
  %more = icmp slt i64 %i, %reps
  br i1 %more, label %body, label %exit
body:
{chr(10).join(steps)}
  %i1 = add i64 %i, 1
  br label %head
exit:
  %res0 = mul i64 %acc, 3"""
        else:
            flow = f"""  %acc = add i64 %v1, 0
{chr(10).join(steps)}
  %res0 = mul i64 {last}, 3"""
        return f"""
define {{}} @wi(ptr "in" "out" %buf, i64 %bb, ptr "in" "out" %out, i64 %ob, i64 %reps) {{
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %y = call i64 @llvm.hpvm.getNodeInstanceID.y(ptr %n)
  %z = call i64 @llvm.hpvm.getNodeInstanceID.z(ptr %n)
  %nx = call i64 @llvm.hpvm.getNumNodeInstances.x(ptr %n)
  %ny = call i64 @llvm.hpvm.getNumNodeInstances.y(ptr %n)
  %nz = call i64 @llvm.hpvm.getNumNodeInstances.z(ptr %n)
  %l0 = mul i64 %z, %ny
  %l1 = add i64 %l0, %y
  %l2 = mul i64 %l1, %nx
  %lid = add i64 %l2, %x
  %nxy = mul i64 %nx, %ny
  %cnt = mul i64 %nxy, %nz
  %v = mul i64 %lid, {self.mult}
  %v1 = add i64 %v, 1
  %p = getelementptr i64, ptr %buf, i64 %lid
  store i64 %v1, ptr %p
  call void @llvm.hpvm.barrier()
{flow}
  %res = add i64 %res0, %v1
  %o = getelementptr i64, ptr %out, i64 %lid
  store i64 %res, ptr %o
  ret {{}} zeroinitializer
}}

define {{}} @root(ptr %buf, i64 %bb, ptr %out, i64 %ob, i64 %reps, i64 %nx, i64 %ny, i64 %nz) {{
entry:
  %w = call ptr @llvm.hpvm.{create}(ptr @wi, {extents})
  call void @llvm.hpvm.bind.input(ptr %w, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %w, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(ptr %w, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(ptr %w, i32 3, i32 3, i1 false)
  call void @llvm.hpvm.bind.input(ptr %w, i32 4, i32 4, i1 false)
  ret {{}} undef
}}
"""

    def model(self) -> tuple[np.ndarray, np.ndarray]:
        """``buf`` and ``out`` after the group ran, by NumPy: every instance's read before a
        barrier sees the values written before the previous one."""
        n = int(np.prod(self.sizes))
        lid = np.arange(n, dtype=np.int64)
        v1 = lid * self.mult + 1
        buf = v1.copy()
        acc = v1.copy()
        for _ in range(self.reps if self.looped else 1):
            for shift in self.shifts:
                t = buf[(lid + shift) % n]
                acc = acc ^ t if self.xor else acc + t
                buf = acc.copy()
        return buf, acc * 3 + v1


@st.composite
def leaves(draw: st.DrawFn, max_extent: int = 5, max_shifts: int = 1) -> Leaf:
    dims = draw(st.integers(1, 3))
    sizes = tuple(draw(st.integers(1, max_extent)) if a < dims else 1 for a in range(3))
    return Leaf(
        dims,
        sizes,  # type: ignore[arg-type]
        draw(st.integers(-3, 5)),
        tuple(draw(st.lists(st.integers(0, 7), max_size=max_shifts))),
        draw(st.booleans()),
        draw(st.integers(0, 3)),
        draw(st.booleans()),
    )


def _launch(
    leaf: Leaf, workitem: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[np.ndarray, np.ndarray, str]:
    monkeypatch.setattr(native, "WORKITEM_LOOPS", workitem)
    root = llvm.from_hpvm_ir(DECLS + leaf.text())
    n = int(np.prod(leaf.sizes))
    buf = np.zeros(n, np.int64)
    out = np.zeros(n, np.int64)
    _run(root, (buf.view(np.uint8), out.view(np.uint8), leaf.reps, *leaf.sizes), "interp")
    return buf, out, barrier_leaf(root).barrier_lowering


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(leaf=leaves())
def test_work_item_loops_coroutines_and_the_model_agree(leaf: Leaf, monkeypatch: pytest.MonkeyPatch) -> None:
    want_buf, want_out = leaf.model()
    buf, out, how = _launch(leaf, True, monkeypatch)
    assert how == "workitem"
    cbuf, cout, chow = _launch(leaf, False, monkeypatch)
    assert chow == "coroutine"
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(buf, want_buf)
    np.testing.assert_array_equal(cout, want_out)
    np.testing.assert_array_equal(cbuf, want_buf)


def test_a_barrier_in_a_loop_whose_trip_count_depends_on_the_id_falls_back_to_coroutines() -> None:
    # Instance x loops x times around a barrier: undefined in HPVM (they meet different
    # numbers of barriers); work-item loops cannot run it, so the leaf is a coroutine group.
    text = (
        Leaf(1, (4, 1, 1), 1, (1,), True, 2, False)
        .text()
        .replace("icmp slt i64 %i, %reps", "icmp slt i64 %i, %x")
    )
    root = llvm.from_hpvm_ir(DECLS + text)
    clone = barrier_leaf(root)
    assert clone.barrier_lowering == "coroutine"
    assert clone.fallback == "a barrier is under control flow that depends on the instance id"
    out = np.zeros(4, np.int64)
    _run(root, (np.zeros(4, np.int64).view(np.uint8), out.view(np.uint8), 0, 4, 1, 1), "interp")  # ends


GUARDED = """
define {} @guarded(ptr "in" "out" %out, i64 %ob) {
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  call void @llvm.hpvm.barrier()
  %nz = icmp ne i64 %x, 0
  br i1 %nz, label %divide, label %done
divide:
  %q = udiv i64 100, %x
  %big = icmp ugt i64 %q, 10
  br i1 %big, label %keep, label %done
keep:
  %o = getelementptr i64, ptr %out, i64 %x
  store i64 %q, ptr %o
  br label %done
done:
  ret {} zeroinitializer
}

define {} @root(ptr %out, i64 %ob, i64 %n) {
entry:
  %g = call ptr @llvm.hpvm.createNode1D(ptr @guarded, i64 %n)
  call void @llvm.hpvm.bind.input(ptr %g, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %g, i32 1, i32 1, i1 false)
  ret {} undef
}
"""


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_a_division_an_id_dependent_branch_guards_stays_under_it(target: str) -> None:
    # `100 / x` is computed in one divergent block and used in the next (a value of the ids
    # that the work-item loop computes again where it is needed); instance 0 must never
    # divide. (Whether the rule that keeps divisions out of what every instance computes at
    # the loop's top is what protects it here is not observable: with the rule removed, LLVM
    # sinks the division back under the branch.)
    root = llvm.from_hpvm_ir(DECLS + GUARDED)
    assert barrier_leaf(root).barrier_lowering == "workitem"
    out = np.full(16, -1, np.int64)
    _run(root, (out.view(np.uint8), 16), target)
    x = np.arange(16)
    want = np.where((x > 0) & (100 // np.maximum(x, 1) > 10), 100 // np.maximum(x, 1), -1)
    np.testing.assert_array_equal(out, want)


def _guarded_round(dims: int, op: str) -> str:
    """A leaf whose instances, between two barriers, do ``if (x <op> u) buf[lid] += 1000``
    (``eq``: ``x == 0``): the form whose work-item loop runs only the passing instances."""
    create = {1: "createNode1D", 2: "createNode2D", 3: "createNode3D"}[dims]
    extents = ", ".join(f"i64 %n{a}" for a in "xyz"[:dims])
    bound = "0" if op == "eq" else "%u"
    return f"""
define {{}} @g(ptr "in" "out" %buf, i64 %bb, i64 %u) {{
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %y = call i64 @llvm.hpvm.getNodeInstanceID.y(ptr %n)
  %z = call i64 @llvm.hpvm.getNodeInstanceID.z(ptr %n)
  %nx = call i64 @llvm.hpvm.getNumNodeInstances.x(ptr %n)
  %ny = call i64 @llvm.hpvm.getNumNodeInstances.y(ptr %n)
  %l0 = mul i64 %z, %ny
  %l1 = add i64 %l0, %y
  %l2 = mul i64 %l1, %nx
  %lid = add i64 %l2, %x
  %p = getelementptr i64, ptr %buf, i64 %lid
  %v = mul i64 %lid, 3
  %v1 = add i64 %v, 1
  store i64 %v1, ptr %p
  call void @llvm.hpvm.barrier()
  %c = icmp {op} i64 %x, {bound}
  br i1 %c, label %then, label %join
then:
  %old = load i64, ptr %p
  %new = add i64 %old, 1000
  store i64 %new, ptr %p
  br label %join
join:
  call void @llvm.hpvm.barrier()
  ret {{}} zeroinitializer
}}

define {{}} @root(ptr %buf, i64 %bb, i64 %u, i64 %nx, i64 %ny, i64 %nz) {{
entry:
  %w = call ptr @llvm.hpvm.{create}(ptr @g, {extents})
  call void @llvm.hpvm.bind.input(ptr %w, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %w, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(ptr %w, i32 2, i32 2, i1 false)
  ret {{}} undef
}}
"""


def _built_here(folder: str, version: str, key: list, text: str, fields: dict, build: Any) -> Any:
    """``ir.cache.stored_json`` without hpvm's cache: every clone made in this process."""
    return build()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    dims=st.integers(1, 3),
    sizes=st.tuples(st.integers(1, 9), st.integers(1, 3), st.integers(1, 2)),
    op=st.sampled_from(["slt", "ult", "eq"]),
    u=st.integers(-3, 11),
)
def test_a_loop_bounded_by_its_guard_runs_exactly_the_instances_that_pass_it(
    dims: int, sizes: tuple[int, int, int], op: str, u: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # x < u with u past the group, inside it, 0 or negative (all instances as unsigned).
    sizes = tuple(s if a < dims else 1 for a, s in enumerate(sizes))  # type: ignore[assignment]
    n = int(np.prod(sizes))
    x = np.arange(n) % sizes[0]
    passes = {"slt": x < u, "ult": x.astype(np.uint64) < np.uint64(u % (1 << 64)), "eq": x == 0}[op]
    want = np.arange(n) * 3 + 1 + 1000 * passes
    bounds: list[str] = []

    def spy(*args: Any) -> Any:
        guard = wiguard.guard_bound(*args)
        if guard is not None:
            bounds.append(guard.name)
        return guard

    monkeypatch.setattr(wiloops, "guard_bound", spy)
    monkeypatch.setattr(native, "_CACHE", {})  # (each example makes its clone: the spy sees it)
    monkeypatch.setattr(native, "stored_json", _built_here)  # (nor read from hpvm's cache)
    for workitem in (True, False):
        monkeypatch.setattr(native, "WORKITEM_LOOPS", workitem)
        root = llvm.from_hpvm_ir(DECLS + _guarded_round(dims, op))
        clone = barrier_leaf(root)
        assert clone.barrier_lowering == ("workitem" if workitem else "coroutine")
        if workitem:  # the guarded loop is bounded (1 for x == 0, else min(nx, u))
            assert bounds == (["1"] if op == "eq" else [bounds[0]]) and bounds[0] != "%__wi.nx"
        buf = np.zeros(n, np.int64)
        _run(root, (buf.view(np.uint8), u, *sizes), "interp")
        np.testing.assert_array_equal(buf, want)


def test_a_guarded_loop_runs_bounded_on_cpu() -> None:
    root = llvm.from_hpvm_ir(DECLS + _guarded_round(2, "slt"))
    buf = np.zeros(12, np.int64)
    _run(root, (buf.view(np.uint8), 4, 6, 2, 1), "cpu")
    np.testing.assert_array_equal(buf, np.arange(12) * 3 + 1 + 1000 * (np.arange(12) % 6 < 4))


def _offset_round(dims: int, tail: bool = False) -> str:
    """A leaf whose instances, between two barriers, do ``buf[lid] += c + x < u ? 1000 : -7``
    as an ``if``/``else`` (``c``, ``u`` arguments): the form whose loop runs in two copies.
    ``tail``: the branches compute the value and the merge block stores it, plus ``c``
    (per-instance code after the ``if``, in the same loop: ``wiloops._tails``)."""
    if tail:
        then = "  %a = load i64, ptr %p\n  %a1 = add i64 %a, 1000\n  br label %join"
        other = "  %b = load i64, ptr %p\n  %b1 = sub i64 %b, 7\n  br label %join"
        join = (
            "  %r = phi i64 [ %a1, %then ], [ %b1, %else ]\n  %r2 = add i64 %r, %c\n  store i64 %r2, ptr %p"
        )
    else:
        then = "  %a = load i64, ptr %p\n  %a1 = add i64 %a, 1000\n  store i64 %a1, ptr %p\n  br label %join"
        other = "  %b = load i64, ptr %p\n  %b1 = sub i64 %b, 7\n  store i64 %b1, ptr %p\n  br label %join"
        join = ""
    create = {1: "createNode1D", 2: "createNode2D", 3: "createNode3D"}[dims]
    extents = ", ".join(f"i64 %n{a}" for a in "xyz"[:dims])
    return f"""
define {{}} @v(ptr "in" "out" %buf, i64 %bb, i64 %c, i64 %u) {{
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %x = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %y = call i64 @llvm.hpvm.getNodeInstanceID.y(ptr %n)
  %nx = call i64 @llvm.hpvm.getNumNodeInstances.x(ptr %n)
  %l1 = mul i64 %y, %nx
  %lid = add i64 %l1, %x
  %p = getelementptr i64, ptr %buf, i64 %lid
  %v = mul i64 %lid, 3
  %v1 = add i64 %v, 1
  store i64 %v1, ptr %p
  call void @llvm.hpvm.barrier()
  %g = add nsw i64 %c, %x
  %t = icmp slt i64 %g, %u
  br i1 %t, label %then, label %else
then:
{then}
else:
{other}
join:
{join}
  call void @llvm.hpvm.barrier()
  ret {{}} zeroinitializer
}}

define {{}} @root(ptr %buf, i64 %bb, i64 %c, i64 %u, i64 %nx, i64 %ny, i64 %nz) {{
entry:
  %w = call ptr @llvm.hpvm.{create}(ptr @v, {extents})
  call void @llvm.hpvm.bind.input(ptr %w, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %w, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(ptr %w, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.input(ptr %w, i32 3, i32 3, i1 false)
  ret {{}} undef
}}
"""


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    dims=st.integers(1, 2),
    sizes=st.tuples(st.integers(1, 9), st.integers(1, 3)),
    c=st.integers(-6, 6),
    u=st.integers(-4, 12),
    tail=st.booleans(),
)
def test_a_loop_versioned_on_its_guard_gives_every_instance_its_own_branch(
    dims: int, sizes: tuple[int, int], c: int, u: int, tail: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every instance passes (c + nx - 1 < u: the copy without the test), none, or some;
    # with a tail, the merge block's code runs in the same loop, in both copies.
    nx, ny = sizes[0], sizes[1] if dims > 1 else 1
    n = nx * ny
    x = np.arange(n) % nx
    want = np.arange(n) * 3 + 1 + np.where(c + x < u, 1000, -7) + (c if tail else 0)
    made: list[str] = []
    tails: list[dict[str, str]] = []

    def tail_spy(*args: Any) -> Any:
        found = wiloops_tails(*args)
        tails.append(found)
        return found

    monkeypatch.setattr(wiloops, "_tails", tail_spy)

    def spy(*args: Any) -> Any:
        version = wiguard.versioned(*args)
        if version is not None:
            made.append(version.name)
        return version

    monkeypatch.setattr(wiloops, "versioned", spy)
    monkeypatch.setattr(native, "_CACHE", {})
    monkeypatch.setattr(native, "stored_json", _built_here)  # (nor read from hpvm's cache)
    for workitem in (True, False):
        monkeypatch.setattr(native, "WORKITEM_LOOPS", workitem)
        root = llvm.from_hpvm_ir(DECLS + _offset_round(dims, tail))
        assert barrier_leaf(root).barrier_lowering == ("workitem" if workitem else "coroutine")
        assert made  # (the work-item loop was versioned)
        # (and its merge block's code joined it; without a tail LLVM may sink the branches'
        # common store into the merge block, which makes one)
        assert any(tails[0].values()) or not tail
        buf = np.zeros(n, np.int64)
        _run(root, (buf.view(np.uint8), c, u, nx, ny, 1), "interp")
        np.testing.assert_array_equal(buf, want)


def test_plain_loads_and_stores_join_the_loop_s_access_group_and_reused_scalars_do_not() -> None:
    # (what lets LLVM vectorize a work-item loop without run-time alias checks: the
    # instances of a phase are independent, wiloops._parallel)
    lines = [
        "  %a = load float, ptr %__wi1.v3, align 4, !tbaa !7",
        "  store float %a, ptr %s, align 4",
        '  store ptr %q, ptr %"odd name", align 8',
        "  store i64 %v, ptr %reg2mem.alloca, align 8",  # one alloca every instance reuses
        "  %b = load atomic i64, ptr %p seq_cst, align 8",
        "  store volatile i64 %v, ptr %p, align 8",
        "  %c = atomicrmw add ptr %p, i64 1 seq_cst",
        "  call void @llvm.memset.p0.i64(ptr %p, i8 0, i64 8, i1 false)",
        "  %d = add i64 %v, 1",
    ]
    got = wiloops._parallel(lines, {"%reg2mem.alloca"}, 42)
    marked = [line.endswith(", !llvm.access.group !42") for line in got]
    assert marked == [True, True, True, False, False, False, False, False, False]
    assert got[0] == lines[0] + ", !llvm.access.group !42"


def test_the_leaf_s_work_item_loops_are_parallel_loops_to_llvm() -> None:
    root = llvm.from_hpvm_ir(DECLS + _guarded_round(1, "slt"))
    clone = barrier_leaf(root)
    assert clone.barrier_lowering == "workitem"
    assert "llvm.loop.parallel_accesses" in clone.text and "!llvm.access.group" in clone.text
