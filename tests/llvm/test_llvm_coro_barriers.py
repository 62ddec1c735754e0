"""Barrier leaves in LLVM run as work-item loops (``backends/llvm_native/wiloops.py``) where
their barriers are uniform, else as coroutines (``coro.py``); the tests with uniform barriers
run on both paths (``lowering``).

A Python program with barriers inside a loop and inside a branch, with values (locals, the
loop counter, a float) live across them, exported to LLVM and imported back, runs like the
Python program on ``interp``; a parent instance with more instances than the old thread
limit (4,096) runs; a divergent barrier (undefined in HPVM) ends instead of hanging; a
barrier reached through recursion is a compile error naming the leaf.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import llvm
from hpvm.errors import HPVMError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from barrier_lowering import barrier_leaf  # noqa: E402
from test_llvm_leaves_run import BARRIER, DECLS, _run  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]


@hpvm.leaf
def s_alloc(bs: hpvm.i64) -> hpvm.i64[:]:
    return hpvm.malloc(bs * 8).view(np.int64)


@hpvm.leaf(ins=("buf", "x"), outs=("buf", "out", "fout"))
def s_scan(
    buf: hpvm.i64[:], x: hpvm.i64[:], out: hpvm.i64[:], fout: hpvm.f64[:], bs: hpvm.i64, twice: hpvm.i64
):
    node = hpvm.get_node()
    lid = hpvm.get_node_instance_id_x(node)
    base = hpvm.get_node_instance_id_x(hpvm.get_parent_node(node)) * bs
    acc = x[base + lid]
    mine = acc * 2  # live across every barrier below
    scale = 0.5 * lid  # a float, too
    buf[lid] = acc
    hpvm.barrier()
    step = 1
    while step < bs:  # Hillis-Steele inclusive scan: a barrier pair per step
        v = 0
        if lid >= step:
            v = buf[lid - step]
        hpvm.barrier()
        acc += v
        buf[lid] = acc
        hpvm.barrier()
        step *= 2
    if twice > 0:  # taken by every instance or by none
        hpvm.barrier()
        acc += buf[(lid + 1) % bs]
        hpvm.barrier()
    out[base + lid] = acc + mine
    fout[base + lid] = scale * acc


@hpvm.internal
def s_block(x: hpvm.i64[:], out: hpvm.i64[:], fout: hpvm.f64[:], bs: hpvm.i64, twice: hpvm.i64):
    alloc = hpvm.create_node(s_alloc)
    work = hpvm.create_node_1d(s_scan, bs)
    hpvm.bind_in(alloc, "bs", "bs")
    hpvm.edge(alloc, work, hpvm.ALL_TO_ALL, 0, "buf")
    for port in ("x", "out", "fout", "bs", "twice"):
        hpvm.bind_in(work, port, port)


@hpvm.internal
def s_root(x: hpvm.i64[:], out: hpvm.i64[:], fout: hpvm.f64[:], nb: hpvm.i64, bs: hpvm.i64, twice: hpvm.i64):
    blocks = hpvm.create_node_1d(s_block, nb)
    for port in ("x", "out", "fout", "bs", "twice"):
        hpvm.bind_in(blocks, port, port)


def _scan_reference(x: np.ndarray, nb: int, bs: int, twice: int) -> tuple[np.ndarray, np.ndarray]:
    blocks = x.reshape(nb, bs)
    scan = np.cumsum(blocks, axis=1)
    acc = scan + np.roll(scan, -1, axis=1) if twice else scan
    out = (acc + 2 * blocks).reshape(-1)
    fout = (0.5 * np.arange(bs) * acc).reshape(-1)
    return out, fout


def _launch_scan(root, nb: int, bs: int, twice: int, target: str) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    x = np.random.default_rng(1).integers(-50, 50, nb * bs).astype(np.int64)
    out = np.zeros(nb * bs, dtype=np.int64)
    fout = np.zeros(nb * bs, dtype=np.float64)
    _run(root, (x, out, fout, nb, bs, twice), target)
    want_out, want_fout = _scan_reference(x, nb, bs, twice)
    return (out, fout), (want_out, want_fout)  # type: ignore[return-value]


@pytest.mark.parametrize("twice", [0, 1])
@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_barriers_in_a_loop_and_a_branch_run_like_the_python_program(
    target: str, twice: int, lowering: str
) -> None:
    nb, bs = 3, 16
    (py_out, py_fout), want = _launch_scan(s_root, nb, bs, twice, "interp")
    np.testing.assert_array_equal(py_out, want[0])
    np.testing.assert_allclose(py_fout, want[1])
    imported = llvm.from_hpvm_ir(llvm.to_hpvm_ir(s_root))
    # (the while loop's trip count and the `if twice` are uniform: work-item loops apply)
    assert barrier_leaf(imported).barrier_lowering == lowering
    (out, fout), _ = _launch_scan(imported, nb, bs, twice, target)
    np.testing.assert_array_equal(out, py_out)
    np.testing.assert_allclose(fout, py_fout)


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_a_parent_instance_may_have_more_instances_than_threads_could(target: str, lowering: str) -> None:
    # 5,000 instances in one parent instance: more than the 4,096 threads the pthread
    # runner allowed; coroutines have no such limit.
    root = llvm.from_hpvm_ir(DECLS + BARRIER)
    nb, bs = 2, 5000
    buf = np.full(nb * bs, -1, dtype=np.int64)
    out = np.zeros(nb * bs, dtype=np.int64)
    _run(root, (buf.view(np.uint8), out.view(np.uint8), nb, bs), target)
    ids = np.arange(nb * bs).reshape(nb, bs)
    np.testing.assert_array_equal(out.reshape(nb, bs), np.roll(ids, -1, axis=1) * 3)


DIVERGENT = """
define {} @odd(ptr "in" "out" %out, i64 %ob) {
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %lid = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %parity = and i64 %lid, 1
  %isodd = icmp eq i64 %parity, 1
  br i1 %isodd, label %extra, label %join
extra:
  call void @llvm.hpvm.barrier()
  call void @llvm.hpvm.barrier()
  br label %join
join:
  call void @llvm.hpvm.barrier()
  %o = getelementptr i64, ptr %out, i64 %lid
  %v = add i64 %lid, 100
  store i64 %v, ptr %o
  ret {} zeroinitializer
}

define {} @root(ptr %out, i64 %ob, i64 %n) {
entry:
  %b = call ptr @llvm.hpvm.createNode1D(ptr @odd, i64 %n)
  call void @llvm.hpvm.bind.input(ptr %b, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %b, i32 1, i32 1, i1 false)
  ret {} undef
}
"""


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_a_divergent_barrier_does_not_hang(target: str) -> None:
    # Odd instances meet two barriers more than even ones: undefined in HPVM, but the group
    # ends (finished instances are skipped) and every instance runs to its end. Work-item
    # loops do not apply (the barriers sit under a branch on the id): coroutines run it.
    root = llvm.from_hpvm_ir(DECLS + DIVERGENT)
    clone = barrier_leaf(root)
    assert clone.barrier_lowering == "coroutine"
    assert "depends on the instance id" in clone.fallback
    out = np.zeros(10, dtype=np.int64)
    _run(root, (out.view(np.uint8), 10), target)
    np.testing.assert_array_equal(out, np.arange(10) + 100)


RECURSIVE = """
define internal void @down(i64 %k) {
entry:
  %stop = icmp sle i64 %k, 0
  br i1 %stop, label %done, label %more
more:
  call void @llvm.hpvm.barrier()
  %k1 = sub i64 %k, 1
  call void @down(i64 %k1)
  br label %done
done:
  ret void
}

define {} @rec(ptr "in" "out" %out, i64 %ob) {
entry:
  call void @down(i64 3)
  ret {} zeroinitializer
}

define {} @root(ptr %out, i64 %ob, i64 %n) {
entry:
  %b = call ptr @llvm.hpvm.createNode1D(ptr @rec, i64 %n)
  call void @llvm.hpvm.bind.input(ptr %b, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %b, i32 1, i32 1, i1 false)
  ret {} undef
}
"""


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_a_barrier_reached_through_recursion_is_an_error_naming_the_leaf(target: str) -> None:
    root = llvm.from_hpvm_ir(DECLS + RECURSIVE)
    out = np.zeros(4, dtype=np.int64)
    with pytest.raises(HPVMError, match=r"leaf 'rec'.*@down.*recursion"):
        _run(root, (out.view(np.uint8), 4), target)


OUTPUT = """
define { i64 } @val(ptr "in" "out" %out, i64 %ob) {
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %lid = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %twice = mul i64 %lid, 2
  call void @llvm.hpvm.barrier()
  %o = getelementptr i64, ptr %out, i64 %lid
  store i64 %twice, ptr %o
  call void @llvm.hpvm.barrier()
  %v = add i64 %twice, 1
  %r = insertvalue { i64 } undef, i64 %v, 0
  ret { i64 } %r
}

define { i64 } @root(ptr %out, i64 %ob, i64 %n) {
entry:
  %b = call ptr @llvm.hpvm.createNode1D(ptr @val, i64 %n)
  call void @llvm.hpvm.bind.input(ptr %b, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %b, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.output(ptr %b, i32 0, i32 0, i1 false)
  ret { i64 } undef
}
"""


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_a_barrier_leaf_output_is_the_last_instances_with_values_kept_across_barriers(
    target: str, lowering: str
) -> None:
    root = llvm.from_hpvm_ir(DECLS + OUTPUT)
    assert barrier_leaf(root).barrier_lowering == lowering
    out = np.zeros(7, dtype=np.int64)
    (value,) = _run(root, (out.view(np.uint8), 7), target)
    assert int(value) == 13  # the last instance's 2 * 6 + 1
    np.testing.assert_array_equal(out, np.arange(7) * 2)
