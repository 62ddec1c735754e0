"""Single-precision matrix multiply, C = alpha * A @ B + beta * C, as in Parboil's sgemm.

Structure — the two-level hierarchy HPVM programs use to describe GPU-style tiling::

    root (internal, one instance)
    └── sgemm_tile (internal, replicated 2-D: m/TILE x n/TILE — one per output tile)
        └── sgemm_element (leaf, replicated 2-D: TILE x TILE — one per element of its tile)

The outer replicated internal node is the grid of thread blocks; the leaf inside it is the
block's threads. Nothing in the graph says "GPU", though: a CPU back end may run the tiles
as parallel loop iterations and the elements as a vectorised inner loop, and the reference
interpreter simply walks the loop nest (tiles outermost).

The leaf rebuilds its global coordinates from two levels of the hierarchy, exactly like
Parboil's HPVM version: the tile index comes from its *parent* node instance
(``get_node_instance_id_x(get_parent_node(get_node()))``) and the position inside the tile
from its own instance (``get_node_instance_id_x(get_node())``); the tile extent is the
leaf's own instance count. Replication sizes are expressions of the inputs of the node
that creates the child (``a.shape[0] // tile``), so one graph serves every matrix size.

Sizes must be multiples of the tile: the grid has no partial tiles (the leaf has no bounds
test, as in Parboil), so ``run`` checks this first and says so clearly.

Run it: ``python examples/sgemm.py [--m 64 --n 64 --k 64 --tile 16]``.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import hpvm

DEFAULT_TILE = 16


@hpvm.leaf(ins=("a", "b", "c"), outs=("c",))
def sgemm_element(a: hpvm.f32[:, :], b: hpvm.f32[:, :], c: hpvm.f32[:, :], alpha: hpvm.f32, beta: hpvm.f32):
    """One output element: its row/column are tile index * tile extent + local index."""
    node = hpvm.get_node()
    tile = hpvm.get_parent_node(node)
    tile_row = hpvm.get_node_instance_id_x(tile)  # which tile: the parent's instance
    tile_col = hpvm.get_node_instance_id_y(tile)
    tile_rows = hpvm.get_num_node_instances_x(node)  # the tile's extent: our own grid
    tile_cols = hpvm.get_num_node_instances_y(node)
    row = tile_row * tile_rows + hpvm.get_node_instance_id_x(node)  # + where in the tile
    col = tile_col * tile_cols + hpvm.get_node_instance_id_y(node)
    acc = np.float32(0.0)
    for p in range(a.shape[1]):
        acc += a[row, p] * b[p, col]
    c[row, col] = alpha * acc + beta * c[row, col]


@hpvm.internal()
def sgemm_tile(
    a: hpvm.f32[:, :], b: hpvm.f32[:, :], c: hpvm.f32[:, :], alpha: hpvm.f32, beta: hpvm.f32, tile: hpvm.i64
):
    """One output tile: TILE x TILE element instances (a thread block)."""
    element = hpvm.create_node_2d(sgemm_element, tile, tile)
    for port in range(5):  # a, b, c, alpha, beta
        hpvm.bind_in(element, port, port)


@hpvm.internal()
def root(
    a: hpvm.f32[:, :], b: hpvm.f32[:, :], c: hpvm.f32[:, :], alpha: hpvm.f32, beta: hpvm.f32, tile: hpvm.i64
):
    """The grid of tiles over C (m x n): its extents are computed from the matrices' shapes."""
    tiles = hpvm.create_node_2d(sgemm_tile, a.shape[0] // tile, b.shape[1] // tile)
    for port in range(6):
        hpvm.bind_in(tiles, port, port)


def check_sizes(m: int, n: int, k: int, tile: int) -> None:
    """Raise ``ValueError`` unless the problem can be cut into whole tiles."""
    if tile < 1:
        raise ValueError(f"the tile size must be positive, not {tile}")
    bad = {name: v for name, v in (("m", m), ("n", n)) if v < 1 or v % tile}
    if bad or k < 1:
        detail = ", ".join(f"{name}={v}" for name, v in bad.items()) or f"k={k}"
        raise ValueError(
            f"sgemm needs positive sizes with m and n multiples of the tile ({tile}); got {detail}"
        )


def run(
    m: int = 32,
    n: int = 32,
    k: int = 32,
    tile: int = DEFAULT_TILE,
    alpha: float = 1.5,
    beta: float = 0.5,
    seed: int = 0,
    target: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Multiply random matrices on HPVM; return (C computed, NumPy reference)."""
    check_sizes(m, n, k, tile)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = rng.standard_normal((m, n), dtype=np.float32)
    reference = np.float32(alpha) * (a @ b) + np.float32(beta) * c

    hpvm.init()
    try:
        for array in (a, b, c):
            hpvm.track_memory(array)
        handle = hpvm.launch(root, (a, b, c, alpha, beta, tile), target=target)
        hpvm.wait(handle)
        hpvm.request_memory(c)
    finally:
        hpvm.cleanup()
    return c, reference


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=64, help="rows of A and C (default: %(default)s)")
    parser.add_argument("--n", type=int, default=64, help="columns of B and C (default: %(default)s)")
    parser.add_argument("--k", type=int, default=64, help="columns of A, rows of B (default: %(default)s)")
    parser.add_argument("--tile", type=int, default=DEFAULT_TILE, help="tile edge (default: %(default)s)")
    parser.add_argument("--alpha", type=float, default=1.5)
    parser.add_argument("--beta", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0, help="seed of the input generator")
    parser.add_argument(
        "--target",
        default=None,
        help="back end to force (default: follow the hints — cpu when Numba is installed; interp checks bounds)",
    )
    args = parser.parse_args(argv)
    try:
        check_sizes(args.m, args.n, args.k, args.tile)
    except ValueError as e:
        parser.error(str(e))

    start = time.perf_counter()
    result, reference = run(args.m, args.n, args.k, args.tile, args.alpha, args.beta, args.seed, args.target)
    elapsed = time.perf_counter() - start
    try:
        # Summation order differs from BLAS: compare with a tolerance scaled to the dot length.
        np.testing.assert_allclose(result, reference, rtol=1e-4, atol=1e-5 * args.k)
    except AssertionError as e:
        print(f"sgemm: MISMATCH against NumPy\n{e}", file=sys.stderr)
        return 1
    grid = f"{args.m // args.tile}x{args.n // args.tile} tiles of {args.tile}x{args.tile}"
    print(f"sgemm: {args.m}x{args.k} @ {args.k}x{args.n} ({grid}): matches NumPy ({elapsed:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
