"""HPVM-C allocation nodes made once per chunk of parent instances (``backends/cpu/scratch.py``
with ``ir/scratch.plain_llvm_allocation``, the rule's LLVM form).

An allocation node whose LLVM node function only calls ``llvm.hpvm.malloc`` with a size from
its scalar arguments, whose buffer dies with the parent instance, runs once per chunk of
parent instances on ``cpu``; every instance gets that buffer zero-filled again, unless its
one consumer is a 1-D barrier leaf that stores its own element on every path to its first
barrier before anything touches the buffer (``ir/scratch.covering_llvm_store``): then no
instance can see the old contents and the chunk's loop skips the zero-fill (``_each_nz``).
What must keep one buffer per instance is not hoisted: a buffer bound out of its parent (each
block gets memory of its own), a size computed from the instance id. Every case matches
``interp`` (or NumPy) exactly, in checked mode too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import compiled_program, heap_reuse_blocks, needs_clang, needs_llvm_leaves

import hpvm
import hpvm.backends.cpu as cpu
from hpvm.backends import get_backend
from hpvm.backends.llvm_native.access import printed_function
from hpvm.ir.graph import LeafFunction, functions
from hpvm.ir.scratch import covering_llvm_store, llvm_argument, plain_llvm_allocation

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAMS = Path(__file__).parent / "programs"
BLOCK = 64

reduce_program = compiled_program(PROGRAMS / "block_reduce.c")
reuse_program = compiled_program(PROGRAMS / "heap_reuse.c")
escape_program = compiled_program(PROGRAMS / "scratch_escape.c")
cover_program = compiled_program(PROGRAMS / "scratch_cover.c")


def sources(root) -> str:
    return "".join(get_backend("cpu").prepare(root).gen.sources)


def hoisted(root) -> bool:
    return "_pre(" in sources(root)


def leaf_text(root, name: str) -> str:
    (leaf,) = [f for f in functions(root) if isinstance(f, LeafFunction) and f.name == name]
    printed = printed_function(leaf.body)
    assert printed is not None
    return printed[0]


def block_sums(root, n: int, target: str) -> np.ndarray:
    hpvm.init()
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    sums = np.full(-(-n // BLOCK), np.nan, np.float32)
    for a in (x, sums):
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(root, (x.view(np.uint8), sums.view(np.uint8), n, BLOCK * 4), target=target))
    hpvm.request_memory(sums)
    for a in (x, sums):
        hpvm.untrack_memory(a)
    return sums


def plan_covers(root) -> tuple:
    """The covers of ``root``'s one scratch plan (``backends/cpu/scratch.ScratchPlan``)."""
    (plan,) = get_backend("cpu").prepare(root).gen.scratch.values()
    return plan.covers


def test_the_block_reduction_s_scratch_is_made_once_per_chunk_and_matches_interp(reduce_program):
    (root,) = reduce_program.roots
    text = sources(root)
    assert "_pre(" in text and "__hpvm_llvm_heap_mark()" in text
    ((consumer, size),) = plan_covers(root)  # (the leaf's own store covers it: no zero-fill)
    assert (consumer.function.name, size) == ("reduce_block", 4)
    assert "_each_nz(" in text
    # 1000 floats: a partial last block; the chunk's buffer is reused by each block
    np.testing.assert_array_equal(block_sums(root, 1000, "cpu"), block_sums(root, 1000, "interp"))
    np.testing.assert_array_equal(
        block_sums(root, 5 * BLOCK + 3, "cpu"), block_sums(root, 5 * BLOCK + 3, "interp")
    )


def test_checked_mode_runs_the_hoisted_barrier_leaf_exactly(reduce_program):
    (root,) = reduce_program.roots
    want = block_sums(root, 1000, "interp")
    previous = cpu.configure(checked=True)
    try:
        assert hoisted(root)
        got = block_sums(root, 1000, "cpu")
    finally:
        cpu.configure(**previous)
    np.testing.assert_array_equal(got, want)


def test_every_instance_of_a_hoisted_buffer_finds_it_zero_filled(reuse_program):
    """Each block dirties the buffer it was given; the chunk's next block must find zeros."""
    import numba

    (root,) = reuse_program.roots
    assert hoisted(root)
    addr, dirty = heap_reuse_blocks(root, "cpu")
    assert not dirty.any(), "a block found the chunk's buffer not zero-filled again"
    assert len(set(addr.tolist())) <= numba.config.NUMBA_NUM_THREADS  # (one buffer a chunk)


def test_a_buffer_that_leaves_its_parent_is_not_hoisted_and_each_block_gets_its_own(escape_program):
    root = next(r for r in escape_program.roots if r.name == "kept")
    assert not hoisted(root)
    addr, dirty = heap_reuse_blocks(root, "cpu")
    assert not dirty.any()
    assert len(set(addr.tolist())) == len(addr), "two blocks shared a buffer that leaves its block"


def test_a_size_that_depends_on_the_instance_id_is_not_hoisted(escape_program):
    root = next(r for r in escape_program.roots if r.name == "by_id")
    assert not plain_llvm_allocation(leaf_text(root, "allocate_by_id"))
    assert not hoisted(root)
    _, dirty = heap_reuse_blocks(root, "cpu")
    _, want = heap_reuse_blocks(root, "interp")
    np.testing.assert_array_equal(dirty, want)
    assert not dirty.any()


def test_the_program_runs_and_checks_itself(escape_program):
    assert escape_program.run([]) == 0


def test_plain_llvm_allocations(reduce_program):
    (root,) = reduce_program.roots
    plain = leaf_text(root, "allocate_scratch")
    assert plain_llvm_allocation(plain)
    assert not plain_llvm_allocation(leaf_text(root, "reduce_block"))
    call = next(line for line in plain.splitlines() if "@llvm.hpvm.malloc(" in line)
    size = call.split("@llvm.hpvm.malloc(")[1].split(")")[0].split()[-1]  # (%bytes_scratch)
    doubled = plain.replace(call, f"  %twice = shl i64 {size}, 1\n" + call.replace(size, "%twice"))
    assert plain_llvm_allocation(doubled)  # (a size computed from the argument)
    ret = next(line for line in plain.splitlines() if line.strip().startswith("ret "))
    refused = {
        "an instance id": plain.replace(
            call,
            "  %h = tail call ptr @llvm.hpvm.getNode()\n"
            "  %id = tail call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %h)\n" + call.replace(size, "%id"),
        ),
        "a load": plain.replace(call, f"  %v = load i64, ptr null, align 8\n{call.replace(size, '%v')}"),
        "a store": plain.replace(ret, f"  store i8 1, ptr %call, align 1\n{ret}"),
        "a second malloc": plain.replace(call, f"{call}\n{call.replace('%call =', '%other =')}"),
        "a pointer not from malloc": plain.replace("ptr %call, 0", "ptr null, 0"),
        "a branch": plain.replace(ret, f"  br label %next\nnext:\n{ret}"),
    }
    for why, text in refused.items():
        assert text != plain, why
        assert not plain_llvm_allocation(text), why


def test_covering_llvm_store_on_the_block_reduction_s_text(reduce_program):
    """The rule on reduce_block's LLVM (a phi of ``gid < n ? in[gid] : 0`` stored to
    ``scratch[lid]`` before the barrier), and on edits of it that break the proof."""
    (root,) = reduce_program.roots
    (leaf,) = [f for f in functions(root) if isinstance(f, LeafFunction) and f.name == "reduce_block"]
    text = leaf_text(root, "reduce_block")
    arg = llvm_argument(leaf.params, "scratch")
    assert arg == 5  # (in, bytes_in, sums, bytes_sums, n, then scratch's pointer)
    assert covering_llvm_store(text, arg) == 4
    assert covering_llvm_store(text, 0) is None  # (``in`` is never stored)
    store = next(line for line in text.splitlines() if line.strip().startswith("store float %cond"))
    barrier = next(line for line in text.splitlines() if "@llvm.hpvm.barrier()" in line)
    own = store.split("ptr ")[1].split(",")[0]  # (%arrayidx5: scratch + lid)
    select = text.replace(
        "%cond = phi float [ %0, %cond.true ], [ 0.000000e+00, %entry ]",
        "%cond = select i1 %cmp, float 1.0, float 0.0",
    )
    assert select != text and covering_llvm_store(select, arg) == 4
    both_arms = text.replace(  # (an own store on one arm too: still every path, one size)
        "  br label %cond.end",
        "  %mine = getelementptr inbounds float, ptr %scratch, i64 %call2\n"
        "  store float %0, ptr %mine, align 4\n  br label %cond.end",
    )
    assert both_arms != text and covering_llvm_store(both_arms, arg) == 4
    refused = {
        "the store only on one path": text.replace(store, "").replace(
            "  br label %cond.end",
            "  %mine = getelementptr inbounds float, ptr %scratch, i64 %call2\n"
            "  store float %0, ptr %mine, align 4\n  br label %cond.end",
        ),
        "another index": text.replace("ptr %scratch, i64 %call2", "ptr %scratch, i64 %add"),
        "another node's id": text.replace("ptr %scratch, i64 %call2", "ptr %scratch, i64 %call4"),
        "a read of the buffer": text.replace(store, f"  %peek = load float, ptr %scratch, align 4\n{store}"),
        "a read after the store": text.replace(store, f"{store}\n  %peek = load float, ptr {own}, align 4"),
        "the buffer passed to a call": text.replace(store, f"{store}\n  call void @helper(ptr %scratch)"),
        "a call of a helper": text.replace(store, f"  call void @helper()\n{store}"),
        "a volatile store": text.replace("store float %cond", "store volatile float %cond"),
        "a store of another type": text.replace("store float %cond", "store i32 0"),
        "a return before the barrier": text.replace(barrier, "  ret {} zeroinitializer\nmore:\n" + barrier),
        "no barrier": text.replace(barrier, ""),
        "a store after the barrier only": text.replace(store, "").replace(barrier, f"{barrier}\n{store}"),
    }
    for why, edited in refused.items():
        assert edited != text, why
        assert covering_llvm_store(edited, arg) is None, why


COVER_ROOTS = ("half", "shifted", "accumulate", "returns", "twod")


def test_a_covering_barrier_leaf_skips_the_zero_fill_and_matches_interp(cover_program):
    root = next(r for r in cover_program.roots if r.name == "covered")
    assert plan_covers(root)[0] is not None and "_each_nz(" in sources(root)
    for n in (1000, 5 * BLOCK):
        np.testing.assert_array_equal(block_sums(root, n, "cpu"), block_sums(root, n, "interp"))


@pytest.mark.parametrize("name", COVER_ROOTS)
def test_a_leaf_that_does_not_cover_keeps_the_zero_fill_and_matches_interp(cover_program, name):
    """A store only under ``if (lid >= size / 2)``, of another index, a read of the element
    before the store, a return before the barrier, a 2-D leaf: each block zero-fills the
    chunk's buffer (``half`` and ``accumulate`` give wrong sums otherwise)."""
    root = next(r for r in cover_program.roots if r.name == name)
    (leaf,) = [f for f in functions(root) if isinstance(f, LeafFunction) and f.name == f"{name}_leaf"]
    assert covering_llvm_store(leaf_text(root, leaf.name), llvm_argument(leaf.params, "scratch")) is None
    text = sources(root)
    assert hoisted(root) and plan_covers(root) == (None,) and "_each_nz" not in text
    np.testing.assert_array_equal(block_sums(root, 1000, "cpu"), block_sums(root, 1000, "interp"))
    want = np.add.reduceat(
        np.random.default_rng(1000).standard_normal(1000).astype(np.float32), np.arange(0, 1000, BLOCK)
    )
    np.testing.assert_allclose(block_sums(root, 1000, "cpu"), want, rtol=1e-4, atol=1e-4)


def test_the_cover_program_runs_and_checks_itself(cover_program):
    assert cover_program.run([]) == 0
