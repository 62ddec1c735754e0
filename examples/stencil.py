"""A 2-D five-point stencil: Jacobi relaxation steps over a grid, one launch per step.

Structure::

    root (internal, one instance)
    └── jacobi_step (leaf, replicated 2-D: rows x cols — one instance per grid point)

Each instance reads its four neighbours in ``src`` and writes its own point of ``dst``:
interior points become the mean of their neighbours, boundary points are copied (fixed,
Dirichlet boundary conditions). Because an instance reads points that *other* instances
own, ``src`` must not be written during the step: that is why the stencil has separate
input and output arrays, and why ``src`` is only in ``ins`` — the interpreter would stop a
leaf that wrote it.

The time loop lives on the host, as in Parboil's stencil: every step is one launch with
the arrays swapped (``src, dst = dst, src``). Both arrays are tracked once; a launch only
reads and writes memory the tracker already knows. The grid extents come from the array
shapes (``src.shape[0]``), evaluated again at every launch.

Run it: ``python examples/stencil.py [--rows 48 --cols 64 --steps 8]``.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import hpvm


@hpvm.leaf(ins=("src",), outs=("dst",))
def jacobi_step(src: hpvm.f32[:, :], dst: hpvm.f32[:, :]):
    """One grid point: the mean of the four neighbours, or a copy on the boundary."""
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    j = hpvm.get_node_instance_id_y(node)
    rows = hpvm.get_num_node_instances_x(node)
    cols = hpvm.get_num_node_instances_y(node)
    if i == 0 or j == 0 or i == rows - 1 or j == cols - 1:
        dst[i, j] = src[i, j]
    else:
        dst[i, j] = np.float32(0.25) * (src[i - 1, j] + src[i + 1, j] + src[i, j - 1] + src[i, j + 1])


@hpvm.internal()
def root(src: hpvm.f32[:, :], dst: hpvm.f32[:, :]):
    """One instance of the leaf per grid point."""
    step = hpvm.create_node_2d(jacobi_step, src.shape[0], src.shape[1])
    hpvm.bind_in(step, 0, 0)
    hpvm.bind_in(step, 1, 1)


def initial_grid(rows: int, cols: int, seed: int) -> np.ndarray:
    """Random interior, a hot top edge and a cold bottom edge: the steps smooth between them."""
    rng = np.random.default_rng(seed)
    grid = rng.random((rows, cols), dtype=np.float32)
    grid[0, :] = 1.0
    grid[-1, :] = 0.0
    return grid


def reference_steps(grid: np.ndarray, steps: int) -> np.ndarray:
    """The same steps in NumPy, with the same float32 operations in the same order."""
    src = grid.copy()
    for _ in range(steps):
        dst = src.copy()
        dst[1:-1, 1:-1] = np.float32(0.25) * (src[:-2, 1:-1] + src[2:, 1:-1] + src[1:-1, :-2] + src[1:-1, 2:])
        src = dst
    return src


def run(
    rows: int = 16, cols: int = 20, steps: int = 3, seed: int = 0, target: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Run ``steps`` Jacobi steps on HPVM; return (final grid, NumPy reference)."""
    if rows < 1 or cols < 1 or steps < 0:
        raise ValueError(f"need rows, cols >= 1 and steps >= 0; got {rows}, {cols}, {steps}")
    grid = initial_grid(rows, cols, seed)
    src, dst = grid.copy(), np.empty_like(grid)

    hpvm.init()
    try:
        hpvm.track_memory(src)
        hpvm.track_memory(dst)
        for _ in range(steps):
            hpvm.wait(hpvm.launch(root, (src, dst), target=target))
            src, dst = dst, src  # this step's output is the next step's input
        hpvm.request_memory(src)
    finally:
        hpvm.cleanup()
    return src, reference_steps(grid, steps)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=48, help="grid rows (default: %(default)s)")
    parser.add_argument("--cols", type=int, default=64, help="grid columns (default: %(default)s)")
    parser.add_argument(
        "--steps", type=int, default=8, help="Jacobi steps, one launch each (default: %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the input generator")
    parser.add_argument(
        "--target",
        default=None,
        help="back end to force (default: follow the hints — cpu when Numba is installed; interp checks bounds)",
    )
    args = parser.parse_args(argv)
    if args.rows < 1 or args.cols < 1 or args.steps < 0:
        parser.error("--rows and --cols must be positive and --steps non-negative")

    start = time.perf_counter()
    result, reference = run(args.rows, args.cols, args.steps, args.seed, args.target)
    elapsed = time.perf_counter() - start
    try:
        np.testing.assert_allclose(result, reference, rtol=1e-6, atol=1e-7)
    except AssertionError as e:
        print(f"stencil: MISMATCH against NumPy\n{e}", file=sys.stderr)
        return 1
    print(
        f"stencil: {args.steps} Jacobi steps on a {args.rows}x{args.cols} grid: matches NumPy "
        f"(mean {result.mean():.4f}, {elapsed:.2f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
