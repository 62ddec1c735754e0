"""``malloc`` buffers on the cpu back end: reused across launches and parent instances when
safe, never when a buffer outlives its run, never shared by two runs in flight.

Observed through ``CPUBackend.malloc_stats(root)`` (calls, fresh allocations, recycled runs)
and the program's pools (``mallocpool.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import hpvm
from hpvm.backends import get_backend
from hpvm.backends.cpu.mallocpool import ALIGN, BufferPools, MallocFlow, poolable, pooled_clone, uses_malloc
from hpvm.passes.clone_leaves import clone_leaf
from programs import PROGRAMS, assert_matches, expected, run_program

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


def cpu():
    return get_backend("cpu")


def fresh_root(builder):
    """A new root function object per test, so that its statistics start at zero."""
    return hpvm.internal(builder)


# -- the allocation-node pattern: one buffer per block ------------------------------------------


@hpvm.leaf
def alloc_block(bs: hpvm.i64) -> hpvm.i64[:]:
    return hpvm.malloc(bs * 8).view(np.int64)


@hpvm.leaf(ins=("buf", "x"), outs=("buf", "out"))
def block_prefix(buf: hpvm.i64[:], x: hpvm.i64[:], out: hpvm.i64[:], bs: hpvm.i64):
    # One instance per block (no barrier): the block's buffer holds running sums.
    b = hpvm.get_node_instance_id_x(hpvm.get_parent_node(hpvm.get_node()))
    s = 0
    for k in range(bs):
        s += x[b * bs + k] + buf[k]  # buf[k] is 0 in a fresh (zero-filled) buffer
        buf[k] = s
    for k in range(bs):
        out[b * bs + k] = buf[k]


@hpvm.internal
def prefix_block(x: hpvm.i64[:], out: hpvm.i64[:], bs: hpvm.i64):
    alloc = hpvm.create_node(alloc_block)
    work = hpvm.create_node(block_prefix)
    hpvm.bind_in(alloc, 2, 0)
    hpvm.edge(alloc, work, hpvm.ALL_TO_ALL, 0, 0)
    hpvm.bind_in(work, 0, 1)
    hpvm.bind_in(work, 1, 2)
    hpvm.bind_in(work, 2, 3)


def prefix_root(x: hpvm.i64[:], out: hpvm.i64[:], nb: hpvm.i64, bs: hpvm.i64):
    blocks = hpvm.create_node_1d(prefix_block, nb)
    hpvm.bind_in(blocks, 0, 0)
    hpvm.bind_in(blocks, 1, 1)
    hpvm.bind_in(blocks, 3, 2)


def run_prefix(root, nb, bs, seed=0):
    x = np.random.default_rng(seed).integers(-50, 50, nb * bs)
    out = np.zeros(nb * bs, np.int64)
    hpvm.track_memory(x)
    hpvm.track_memory(out)
    hpvm.wait(hpvm.launch(root, (x, out, nb, bs), target="cpu"))
    want = np.cumsum(x.reshape(nb, bs), axis=1).reshape(-1)
    np.testing.assert_array_equal(out, want)


def chunks(blocks: int) -> int:
    """How many chunks a parallel loop over ``blocks`` instances runs in: the blocks'
    scratch buffer is allocated once per chunk (``scratch.py``), not once per block."""
    import numba

    return min(numba.get_num_threads(), blocks)


def test_buffers_are_reused_by_the_next_launch():
    root = fresh_root(prefix_root)
    run_prefix(root, 64, 16, seed=1)
    first = cpu().malloc_stats(root)
    assert (first.calls, first.fresh) == (chunks(64), chunks(64))  # an empty pool: every chunk allocates
    run_prefix(root, 64, 16, seed=2)
    second = cpu().malloc_stats(root)
    assert second.calls == 2 * chunks(64)
    assert second.fresh == chunks(64)  # nothing allocated by the second launch
    assert second.reused == chunks(64) and second.recycled_runs == 2


def test_a_block_s_buffer_is_freed_with_the_block():
    """The block's graph function pops its buffer when it returns, so each thread's stack
    holds one buffer at a time: the next block on that thread gets the same, warm memory."""
    root = fresh_root(prefix_root)
    run_prefix(root, 256, 16)
    program = cpu().prepare(root)
    assert "__hpvm_pool_release" in "".join(program.gen.sources)
    assert program.pools.idle_rows() == [16 * 8]  # one 128-byte buffer (a multiple of ALIGN)
    assert 16 * 8 % ALIGN == 0


def test_pools_grow_when_sizes_grow_and_are_kept_when_they_shrink():
    root = fresh_root(prefix_root)
    run_prefix(root, 8, 4)
    run_prefix(root, 8, 64, seed=3)  # bigger buffers: the pool is too small, so fresh ones
    grown = cpu().malloc_stats(root)
    assert grown.fresh == 2 * chunks(8)
    run_prefix(root, 8, 64, seed=4)  # the pool grew after the last run
    run_prefix(root, 8, 4, seed=5)  # smaller ones fit in it
    assert cpu().malloc_stats(root).fresh == 2 * chunks(8)


def test_malloc_escapes_program_is_right_when_its_buffers_are_reused():
    """The suite's program whose block buffers are read after the block finished."""
    program = next(p for p in PROGRAMS if "malloc-escapes" in p.tags)
    want = expected(program)
    for _ in range(3):
        assert_matches(program, run_program(program, "cpu"), want)
    stats = cpu().malloc_stats(program.root)
    assert stats.reused > 0 and stats.recycled_runs >= 3
    # The block's outputs carry its buffer: the block's graph function must not pop it.
    assert "__hpvm_pool_release" not in "".join(cpu().prepare(program.root).gen.sources)


# -- buffers that outlive their run ------------------------------------------------------------


@hpvm.leaf
def filled(v: hpvm.i64) -> hpvm.i64[:]:
    buf = hpvm.malloc(64).view(np.int64)
    for k in range(8):
        buf[k] = v + k
    return buf


def returns_buffer(v: hpvm.i64):
    node = hpvm.create_node(filled)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


def test_a_buffer_returned_from_the_root_is_never_reused():
    root = fresh_root(returns_buffer)
    (first,) = hpvm.wait(hpvm.launch(root, (100,), target="cpu"))
    (second,) = hpvm.wait(hpvm.launch(root, (200,), target="cpu"))
    np.testing.assert_array_equal(first, np.arange(100, 108))  # not overwritten by launch 2
    np.testing.assert_array_equal(second, np.arange(200, 208))
    stats = cpu().malloc_stats(root)
    assert (stats.calls, stats.fresh, stats.recycled_runs) == (2, 2, 0)


@hpvm.leaf(ins=("buf",))
def sum_buffer(buf: hpvm.i64[:]) -> hpvm.i64:
    s = 0
    for k in range(buf.shape[0]):
        s += buf[k]
    return s


def streamed_buffer(v: hpvm.i64):
    make = hpvm.create_node(filled)
    total = hpvm.create_node(sum_buffer)
    hpvm.bind_in(make, 0, 0, stream=True)
    hpvm.edge(make, total, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(total, 0, 0, stream=True)


def test_a_buffer_sent_to_another_stage_is_never_reused():
    """Stage 1 mallocs the buffer stage 2 reads later, while stage 1 runs the next items."""
    root = fresh_root(streamed_buffer)
    h = hpvm.launch(root, None, stream=True, target="cpu")
    for v in range(60):
        hpvm.push(h, (v,))
    got = [hpvm.pop(h)[0] for _ in range(60)]
    hpvm.wait(h)
    assert got == [8 * v + 28 for v in range(60)]
    stats = cpu().malloc_stats(root)
    assert stats.calls == 60 and stats.fresh == 60


def test_flow_analysis_follows_buffers_through_binds_edges_and_views():
    program = cpu().prepare(fresh_root(returns_buffer))
    assert program.flow is not None and program.flow.root_escapes()
    program = cpu().prepare(fresh_root(prefix_root))
    assert program.flow is not None and not program.flow.root_escapes()
    assert isinstance(program.flow, MallocFlow)


# -- runs in flight at the same time -------------------------------------------------------------


def test_two_runs_in_flight_never_share_a_pool():
    pools = BufferPools()
    a = pools.checkout(recycle=True)
    b = pools.checkout(recycle=True)
    assert a is not b and a.arena is not b.arena
    pools.checkin(a, recycle=True)
    c = pools.checkout(recycle=True)  # the idle one comes back
    assert c is a
    pools.checkin(b, recycle=True)
    pools.checkin(c, recycle=True)
    assert len(pools.idle_rows()) == 2


def test_concurrent_launches_of_one_root_keep_their_buffers_apart():
    """Worker threads run launches of the same root at once; each must see only its own
    buffers (a shared one would mix the inputs' running sums)."""
    root = fresh_root(prefix_root)
    nb, bs = 4, 100_000  # long blocks, so that the runs overlap
    run_prefix(root, nb, bs)  # compile, and fill the free-list with one pool
    errors: list[BaseException] = []
    start = threading.Barrier(3)

    def worker(seed: int) -> None:
        try:
            start.wait()
            for k in range(15):
                x = np.random.default_rng(seed * 100 + k).integers(-9, 9, nb * bs)
                out = np.zeros_like(x)
                cpu().run(root, (x, out, nb, bs))
                np.testing.assert_array_equal(out, np.cumsum(x.reshape(nb, bs), axis=1).reshape(-1))
        except BaseException as e:  # noqa: BLE001 — reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert cpu().malloc_stats(root).runs == 1 + 3 * 15


def test_malloc_in_a_graph_without_parallel_loops_in_a_fresh_process(tmp_path) -> None:
    # The pool asks Numba for the thread id, which lives in Numba's threading layer; a graph
    # with no parallel loop never loads it, and linking failed with "Symbol not found:
    # get_thread_id", aborting the process. A fresh process, so no earlier test loaded it.
    script = tmp_path / "one_leaf_malloc.py"
    script.write_text(
        "import numpy as np\n"
        "import hpvm\n\n"
        "@hpvm.leaf(outs=('out',))\n"
        "def scratch(out: hpvm.f64[:], n: hpvm.i64):\n"
        "    buf = hpvm.malloc(n * 8).view(np.float64)\n"
        "    for i in range(n):\n"
        "        buf[i] = i\n"
        "    out[0] = buf.sum()\n\n"
        "@hpvm.internal\n"
        "def root(out: hpvm.f64[:], n: hpvm.i64):\n"
        "    k = hpvm.create_node(scratch)\n"
        "    hpvm.bind_in(k, 0, 0)\n"
        "    hpvm.bind_in(k, 1, 1)\n\n"
        "hpvm.init()\n"
        "out = np.zeros(1)\n"
        "hpvm.track_memory(out)\n"
        "hpvm.wait(hpvm.launch(root, (out, 10), target='cpu'))\n"
        "print(out[0])\n"
    )
    env = {**os.environ, "HPVM_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "45.0"


def test_the_pooled_clone_is_its_lowered_ir_spelled_with_the_pool() -> None:
    alloc = next(fn for p in PROGRAMS for fn in hpvm.ir.graph.functions(p.root) if fn.name == "p_alloc")
    clone = clone_leaf(alloc)
    assert uses_malloc(clone) and poolable(clone)
    pooled = pooled_clone(clone)
    assert pooled.ir == clone.ir  # the IR is unchanged: only its spelling
    assert pooled.symbol.startswith(f"{clone.symbol}_pool")
    assert pooled.source().splitlines()[:2] == [
        f"def {pooled.symbol}(bs, __hpvm_ctx, __hpvm_arena, __hpvm_mstate):",
        "    buf = __hpvm_malloc_pooled(__hpvm_arena, __hpvm_mstate, (bs + 1) * 8).view(np.int64)",
    ]
    assert pooled.func.args.args[-2].arg == "__hpvm_arena"


def test_a_clone_without_leaf_ir_keeps_the_plain_malloc() -> None:
    alloc = next(fn for p in PROGRAMS for fn in hpvm.ir.graph.functions(p.root) if fn.name == "p_alloc")
    clone = clone_leaf(alloc)
    outside = type(clone)(clone.leaf, clone.symbol, clone.func, clone.levels, calls=clone.calls)
    assert uses_malloc(outside) and not poolable(outside)
