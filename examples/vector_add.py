"""Vector addition, c = a + b: the smallest complete HPVM program.

Structure::

    root (internal, one instance)
    └── add (leaf, replicated 1-D: n instances)

The root node is a *builder*: it runs once, with symbolic inputs, and only describes its
child graph — one leaf node replicated ``n`` times, the ``n`` coming from the root's own
input (replication sizes are expressions of the parent's inputs, evaluated at every
launch). Each input of the leaf is fed by an *input bind* from the root's input of the
same position; ``n`` itself feeds no child, it only sizes the replication. The leaf
declares which arrays it reads (``ins``) and writes (``outs``), as seed 000 requires; the
interpreter enforces both.

Each dynamic instance of ``add`` finds its element with ``get_node_instance_id_x`` — the
same code would be one GPU thread or one iteration of a CPU loop on other back ends.

The host side is the HPVM-C sequence in snake case: ``init``, ``track_memory`` for every
array handed to the graph, ``launch``, ``wait``, ``request_memory`` to make the result
current on the host, ``cleanup``.

Run it: ``python examples/vector_add.py [--n 4096] [--target interp]``.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import hpvm


@hpvm.leaf(ins=("a", "b"), outs=("c",))
def add(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:]):
    """One instance per element: c[i] = a[i] + b[i]."""
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    c[i] = a[i] + b[i]


@hpvm.internal()
def root(a: hpvm.f32[:], b: hpvm.f32[:], c: hpvm.f32[:], n: hpvm.i64):
    """Replicate ``add`` n times and pass the arrays straight through to it."""
    node = hpvm.create_node_1d(add, n)
    for port in range(3):  # a, b, c: same positions in the root and the leaf
        hpvm.bind_in(node, port, port)
    # n feeds no child: it only sizes the replication, which is allowed for root inputs.


def run(n: int = 1024, seed: int = 0, target: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Add two random vectors of length ``n`` on HPVM; return (result, NumPy reference)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    c = np.zeros(n, dtype=np.float32)

    hpvm.init()
    try:
        for array in (a, b, c):
            hpvm.track_memory(array)
        handle = hpvm.launch(root, (a, b, c, n), target=target)
        hpvm.wait(handle)
        hpvm.request_memory(c)
    finally:
        hpvm.cleanup()
    return c, a + b


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096, help="vector length (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the input generator")
    parser.add_argument(
        "--target",
        default=None,
        help="back end to force (default: follow the hints — cpu when Numba is installed; interp checks bounds)",
    )
    args = parser.parse_args(argv)

    start = time.perf_counter()
    result, reference = run(args.n, args.seed, args.target)
    elapsed = time.perf_counter() - start
    try:
        np.testing.assert_allclose(result, reference, rtol=1e-6, atol=0)
    except AssertionError as e:
        print(f"vector_add: MISMATCH against NumPy\n{e}", file=sys.stderr)
        return 1
    print(f"vector_add: n={args.n}: matches NumPy ({elapsed:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
