"""A block-wise sum with an allocation node and barriers: HPVM's shared-memory pattern.

Structure::

    root (internal, one instance)
    └── sum_block (internal, replicated 1-D: one instance per block of the input)
        ├── allocate (leaf, one instance): buffer = hpvm.malloc(block * 4)
        │     │ buffer (u8[:]) on an all-to-all edge
        │     ▼
        └── tree_sum (leaf, replicated 1-D: one instance per element of the block)

This is the *allocation node* of seed 001: a single-instance leaf that calls ``malloc``
and hands the buffer to its sibling over an edge. ``malloc`` gives one buffer per instance
of the parent (``sum_block``), so on a GPU back end the buffer becomes the thread block's
shared memory and the malloc disappears; on a CPU it is a scratch array per block. The
edge is all-to-all: the one ``allocate`` instance feeds every ``tree_sum`` instance.

``malloc`` returns bytes (1-D uint8); ``tree_sum`` types them with ``.view(np.float32)``.
Each instance loads one element, then the block does a tree reduction: at each stride the
lower half adds in the upper half, and ``hpvm.barrier()`` makes every instance of the block
wait for the others before the next stride reads what they wrote. The barrier stays
outside the ``if``: every instance of the block must reach the same barriers (the
interpreter reports a barrier that only some instances reach). Finally instance 0 writes
the block's sum to ``partials[block_id]`` and the host adds the partial sums.

Both the buffer (``buffer``) and the output (``partials``) are written, so both are in the
leaf's ``outs``: an array that arrives on an edge is declared like any other.

The NumPy reference does the same tree, stride by stride, in float32 — so the partial sums
match exactly, not just within a tolerance.

Run it: ``python examples/reduction.py [--n 4096 --block 64]``.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import hpvm


@hpvm.leaf()
def allocate(block: hpvm.i64) -> hpvm.u8[:]:
    """The allocation node: one float32 scratch buffer for the parent's block."""
    return hpvm.malloc(block * 4)


@hpvm.leaf(ins=("data", "buffer"), outs=("buffer", "partials"))
def tree_sum(data: hpvm.f32[:], block: hpvm.i64, buffer: hpvm.u8[:], partials: hpvm.f32[:]):
    """Tree-reduce one block in the shared buffer; instance 0 writes the block's sum."""
    node = hpvm.get_node()
    lid = hpvm.get_node_instance_id_x(node)
    bid = hpvm.get_node_instance_id_x(hpvm.get_parent_node(node))
    shared = buffer.view(np.float32)
    shared[lid] = data[bid * block + lid]
    hpvm.barrier()
    stride = block // 2
    while stride > 0:
        if lid < stride:
            shared[lid] += shared[lid + stride]
        hpvm.barrier()
        stride //= 2
    if lid == 0:
        partials[bid] = shared[0]


@hpvm.internal()
def sum_block(data: hpvm.f32[:], block: hpvm.i64, partials: hpvm.f32[:]):
    """One block: the allocation node feeding the replicated reducer."""
    alloc = hpvm.create_node(allocate)
    summer = hpvm.create_node_1d(tree_sum, block)
    hpvm.bind_in(alloc, 1, 0)  # block -> allocate.block
    hpvm.bind_in(summer, 0, 0)  # data -> tree_sum.data
    hpvm.bind_in(summer, 1, 1)  # block -> tree_sum.block
    hpvm.edge(alloc, summer, hpvm.ALL_TO_ALL, 0, 2)  # the buffer -> tree_sum.buffer
    hpvm.bind_in(summer, 2, 3)  # partials -> tree_sum.partials


@hpvm.internal()
def root(data: hpvm.f32[:], block: hpvm.i64, partials: hpvm.f32[:]):
    """One ``sum_block`` instance per block of the input."""
    blocks = hpvm.create_node_1d(sum_block, data.shape[0] // block)
    for port in range(3):
        hpvm.bind_in(blocks, port, port)


def check_sizes(n: int, block: int) -> None:
    """Raise ``ValueError`` unless the input splits into whole power-of-two blocks."""
    if block < 1 or block & (block - 1):
        raise ValueError(f"the block size must be a power of two (the tree halves it), not {block}")
    if n < block or n % block:
        raise ValueError(f"the input length must be a positive multiple of the block ({block}), not {n}")


def make_data(n: int, seed: int) -> np.ndarray:
    """``n`` standard-normal float32 values."""
    return np.random.default_rng(seed).standard_normal(n, dtype=np.float32)


def reference_partials(data: np.ndarray, block: int) -> np.ndarray:
    """The same tree reduction, vectorised over blocks, in float32."""
    tree = data.reshape(-1, block).copy()
    stride = block // 2
    while stride > 0:
        tree[:, :stride] += tree[:, stride : 2 * stride]
        stride //= 2
    return tree[:, 0]


def run(
    n: int = 512, block: int = 32, seed: int = 0, target: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Sum ``n`` random numbers block by block on HPVM; return (partial sums, NumPy reference)."""
    check_sizes(n, block)
    data = make_data(n, seed)
    partials = np.zeros(n // block, dtype=np.float32)

    hpvm.init()
    try:
        hpvm.track_memory(data)
        hpvm.track_memory(partials)
        hpvm.wait(hpvm.launch(root, (data, block, partials), target=target))
        hpvm.request_memory(partials)
    finally:
        hpvm.cleanup()
    return partials, reference_partials(data, block)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096, help="number of values (default: %(default)s)")
    parser.add_argument(
        "--block", type=int, default=64, help="block size, a power of two (default: %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the input generator")
    parser.add_argument(
        "--target",
        default=None,
        help="back end to force (default: follow the hints — cpu when Numba is installed; interp checks bounds)",
    )
    args = parser.parse_args(argv)
    try:
        check_sizes(args.n, args.block)
    except ValueError as e:
        parser.error(str(e))

    start = time.perf_counter()
    partials, reference = run(args.n, args.block, args.seed, args.target)
    elapsed = time.perf_counter() - start
    try:
        np.testing.assert_array_equal(partials, reference)
    except AssertionError as e:
        print(f"reduction: MISMATCH against NumPy\n{e}", file=sys.stderr)
        return 1
    total = float(partials.sum(dtype=np.float64))
    print(
        f"reduction: sum of {args.n} values in {len(partials)} blocks of {args.block} = {total:.6f}: "
        f"partial sums match NumPy exactly ({elapsed:.2f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
