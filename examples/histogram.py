"""A histogram built with atomic adds: many instances, one shared array of bins.

Structure::

    root (internal, one instance)
    └── bin_value (leaf, replicated 1-D: one instance per input value)

Every instance computes the bin of its value and increments it with
``hpvm.atomic_add(bins, index, 1)``. Instances run concurrently on parallel back ends and
many of them hit the same bin, so a plain ``bins[b] += 1`` (load, add, store) would lose
updates; the atomic makes each increment indivisible with respect to all dynamic
instances of the leaf, as seed 000 specifies. ``bins`` is int32, the type the seed's
atomics are defined on, and the result is compared exactly with ``np.bincount``.

The input is 8-bit "pixels" (as in Parboil's histo): bin = value * nbins // 256, with the
value widened to a Python int first so the product cannot overflow uint8.

Run it: ``python examples/histogram.py [--n 20000 --bins 16]``.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import hpvm


@hpvm.leaf(ins=("values",), outs=("bins",))
def bin_value(values: hpvm.u8[:], bins: hpvm.i32[:]):
    """Count one value into its bin."""
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    index = int(values[i]) * bins.shape[0] // 256
    hpvm.atomic_add(bins, index, 1)


@hpvm.internal()
def root(values: hpvm.u8[:], bins: hpvm.i32[:]):
    """One leaf instance per value."""
    counter = hpvm.create_node_1d(bin_value, values.shape[0])
    hpvm.bind_in(counter, 0, 0)
    hpvm.bind_in(counter, 1, 1)


def make_values(n: int, seed: int) -> np.ndarray:
    """A bell-shaped distribution of bytes, so that the histogram has a visible shape."""
    rng = np.random.default_rng(seed)
    return np.clip(rng.normal(128, 40, n), 0, 255).astype(np.uint8)


def run(
    n: int = 2000, nbins: int = 16, seed: int = 0, target: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Histogram ``n`` random bytes into ``nbins`` bins on HPVM; return (bins, NumPy reference)."""
    if not 1 <= nbins <= 256:
        raise ValueError(f"the number of bins must be between 1 and 256, not {nbins}")
    values = make_values(n, seed)
    bins = np.zeros(nbins, dtype=np.int32)

    hpvm.init()
    try:
        hpvm.track_memory(values)
        hpvm.track_memory(bins)
        hpvm.wait(hpvm.launch(root, (values, bins), target=target))
        hpvm.request_memory(bins)
    finally:
        hpvm.cleanup()
    reference = np.bincount(values.astype(np.int64) * nbins // 256, minlength=nbins).astype(np.int32)
    return bins, reference


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000, help="number of values (default: %(default)s)")
    parser.add_argument("--bins", type=int, default=16, help="number of bins, 1..256 (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the input generator")
    parser.add_argument(
        "--target",
        default=None,
        help="back end to force (default: follow the hints — cpu when Numba is installed; interp checks bounds)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.bins <= 256:
        parser.error("--bins must be between 1 and 256")

    start = time.perf_counter()
    bins, reference = run(args.n, args.bins, args.seed, args.target)
    elapsed = time.perf_counter() - start
    try:
        np.testing.assert_array_equal(bins, reference)
    except AssertionError as e:
        print(f"histogram: MISMATCH against NumPy\n{e}", file=sys.stderr)
        return 1
    widest = max(int(bins.max()), 1)
    for b, count in enumerate(bins):
        low, high = -(-b * 256 // args.bins), -(-(b + 1) * 256 // args.bins) - 1
        print(f"  {low:3d}..{high:3d} {count:7d} {'#' * round(40 * count / widest)}")
    print(f"histogram: {args.n} values, {args.bins} bins: matches NumPy exactly ({elapsed:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
