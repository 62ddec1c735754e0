"""HPVM-C barrier leaves as work-item loops (``backends/llvm_native/wiloops.py``).

programs/block_reduce.c is a block reduction written as HPVM's C benchmarks write barrier
code (an allocation node for the block's scratch, a halving loop with ``__hpvm__barrier``
between rounds): it runs and checks itself, matches NumPy on ``cpu`` (both lowerings) and
``interp``, and takes the work-item path. examples/c/sgemm.c's tile leaf takes it too, and
its compute loop (the instances' x, innermost) is vectorized: the optimized clone multiplies
vectors of floats. Both programs' groups have constant extents, so on ``cpu`` they run the
copy of their work-item loops compiled for them (``wispecial.py``), with NumPy's results.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import EXAMPLES, compiled_program, heap_reuse_blocks, needs_clang, needs_llvm_leaves

import hpvm
from hpvm import c

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llvm"))
from barrier_lowering import barrier_leaf  # noqa: E402

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "block_reduce.c"  # (a fixed path: zig's cache finds it)
BLOCK = 64


program = compiled_program(PROGRAM)


def test_the_program_runs_and_checks_itself(program):
    assert program.run(["1000"]) == 0


def _reduce(root, n: int, target: str) -> np.ndarray:
    hpvm.init()
    blocks = -(-n // BLOCK)
    x = (np.arange(n) % 7 - 3).astype(np.float32)
    sums = np.full(blocks, np.nan, np.float32)
    for a in (x, sums):
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(root, (x.view(np.uint8), sums.view(np.uint8), n, BLOCK * 4), target=target))
    hpvm.request_memory(sums)
    want = np.add.reduceat(np.pad(x, (0, blocks * BLOCK - n)), np.arange(0, blocks * BLOCK, BLOCK))
    np.testing.assert_array_equal(sums, want)
    return sums


def test_block_sums_match_numpy_on_cpu(program, lowering):
    (root,) = program.roots
    assert barrier_leaf(root).barrier_lowering == lowering
    _reduce(root, 1000, "cpu")


def test_the_block_s_constant_extent_runs_work_item_loops_compiled_for_it(program):
    """``createNodeND(1, reduce_block, (long)BLOCK)``: the cpu graph code calls the copy of
    the group's work-item loops specialized on 64 instances (``wispecial.py``)."""
    from hpvm.backends import get_backend

    (root,) = program.roots
    _reduce(root, 1000, "cpu")
    assert f"_group_k{BLOCK}x1x1(" in "\n".join(get_backend("cpu").prepare(root).gen.sources)


def test_block_sums_match_numpy_on_interp(program):
    (root,) = program.roots
    _reduce(root, 300, "interp")


def test_sgemm_tile_leaf_is_work_item_loops_and_its_compute_loop_vectorizes():
    (root,) = c.compile(EXAMPLES / "sgemm.c").roots
    clone = barrier_leaf(root)
    assert clone.barrier_lowering == "workitem", clone.fallback
    # the tile's multiply-add over the instances' x, as vectors (8 floats with AVX, 4 without)
    widths = {int(w) for w in re.findall(r"@llvm\.fmuladd\.v(\d+)f32\(", clone.text)}
    assert widths and max(widths) >= 4, "the compute loop of the sgemm tile is not vectorized"


@pytest.mark.parametrize("m, n, k", [(32, 24, 20), (8, 16, 3)])
def test_sgemm_s_tiles_run_specialized_on_cpu_and_match_numpy(m, n, k):
    """examples/c/sgemm.c's 8×8 tile leaf (partial tiles of k included) on the copy of its
    work-item loops compiled for 8×8 groups: the same sums as NumPy."""
    from hpvm.backends import get_backend

    (root,) = c.compile(EXAMPLES / "sgemm.c").roots
    rng = np.random.default_rng(k)
    a, b, out = (rng.standard_normal(s, dtype=np.float32) for s in ((m, k), (k, n), (m, n)))
    want = np.float32(2.0) * (a.astype(np.float64) @ b) + np.float32(0.5) * out
    hpvm.init()
    views = [x.reshape(-1).view(np.uint8) for x in (a, b, out)]
    for v in views:
        hpvm.track_memory(v)
    try:
        hpvm.wait(
            hpvm.launch(root, (*views, m, n, k, np.float32(2.0), np.float32(0.5), 8 * 8 * 4), target="cpu")
        )
        hpvm.request_memory(views[2])
    finally:
        for v in views:
            hpvm.untrack_memory(v)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
    assert "_group_k8x8x1(" in "\n".join(get_backend("cpu").prepare(root).gen.sources)


REUSE = Path(__file__).parent / "programs" / "heap_reuse.c"
reuse_program = compiled_program(REUSE)


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_a_parent_instance_s_malloc_dies_with_it_and_the_next_gets_it_zeroed(reuse_program, target):
    """cpu: a buffer nothing carries out of its parent instance is released when the
    instance returns (its thread's heap pops back), so a few buffers serve 300 blocks, each
    zero-filled again; interp never releases: every block has its own."""
    import numba

    (root,) = reuse_program.roots
    blocks = 300
    addr, dirty = heap_reuse_blocks(root, target, blocks)
    assert not dirty.any(), "a block found its malloc'd buffer not zero-filled"
    if target == "cpu":
        assert len(set(addr)) <= numba.config.NUMBA_NUM_THREADS
    else:
        assert len(set(addr)) == blocks
