"""HPVM-C allocation nodes made once per chunk of parent instances (``backends/cpu/scratch.py``
with ``ir/scratch.plain_llvm_allocation``, the rule's LLVM form).

An allocation node whose LLVM node function only calls ``llvm.hpvm.malloc`` with a size from
its scalar arguments, whose buffer dies with the parent instance, runs once per chunk of
parent instances on ``cpu``; every instance gets that buffer zero-filled again. What must
keep one buffer per instance is not hoisted: a buffer bound out of its parent (each block
gets memory of its own), a size computed from the instance id. Every case matches ``interp``
(or NumPy) exactly, in checked mode too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

import hpvm
import hpvm.backends.cpu as cpu
from hpvm.backends import get_backend
from hpvm.backends.llvm_native.access import printed_function
from hpvm.ir.graph import LeafFunction, functions
from hpvm.ir.scratch import plain_llvm_allocation

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAMS = Path(__file__).parent / "programs"
BLOCK = 64

reduce_program = compiled_program(PROGRAMS / "block_reduce.c")
reuse_program = compiled_program(PROGRAMS / "heap_reuse.c")
escape_program = compiled_program(PROGRAMS / "scratch_escape.c")


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


def test_the_block_reduction_s_scratch_is_made_once_per_chunk_and_matches_interp(reduce_program):
    (root,) = reduce_program.roots
    text = sources(root)
    assert "_pre(" in text and "__hpvm_llvm_heap_mark()" in text
    assert "_each_nz" not in text, "no covering store is proven on LLVM's form: every instance zero-fills"
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


def _blocks(root, target: str, blocks: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """(each block's buffer address, the nonzero bytes it found in its buffer)."""
    addr, dirty = np.zeros(blocks, np.int64), np.full(blocks, -1, np.int64)
    hpvm.init()
    for a in (addr, dirty):
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(root, (addr.view(np.uint8), dirty.view(np.uint8), 200, blocks), target=target))
    for a in (addr, dirty):
        hpvm.request_memory(a)
        hpvm.untrack_memory(a)
    return addr, dirty


def test_every_instance_of_a_hoisted_buffer_finds_it_zero_filled(reuse_program):
    """Each block dirties the buffer it was given; the chunk's next block must find zeros."""
    import numba

    (root,) = reuse_program.roots
    assert hoisted(root)
    addr, dirty = _blocks(root, "cpu")
    assert not dirty.any(), "a block found the chunk's buffer not zero-filled again"
    assert len(set(addr.tolist())) <= numba.config.NUMBA_NUM_THREADS  # (one buffer a chunk)


def test_a_buffer_that_leaves_its_parent_is_not_hoisted_and_each_block_gets_its_own(escape_program):
    root = next(r for r in escape_program.roots if r.name == "kept")
    assert not hoisted(root)
    addr, dirty = _blocks(root, "cpu")
    assert not dirty.any()
    assert len(set(addr.tolist())) == len(addr), "two blocks shared a buffer that leaves its block"


def test_a_size_that_depends_on_the_instance_id_is_not_hoisted(escape_program):
    root = next(r for r in escape_program.roots if r.name == "by_id")
    assert not plain_llvm_allocation(leaf_text(root, "allocate_by_id"))
    assert not hoisted(root)
    _, dirty = _blocks(root, "cpu")
    _, want = _blocks(root, "interp")
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
