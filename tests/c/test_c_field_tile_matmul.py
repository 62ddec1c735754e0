"""An integer matrix product over a fixed 4 × 4 grid of tiles, as HPVM's C benchmarks write
a blocked kernel (``programs/tile_matmul.cc``): the grid's shape a ``#define``, each tile's
block clipped to the matrix, and a C++ host that launches the graph once per product of a
sequence and checks each against the plain triple loop.

What it runs through: the grid's sizes are numbers in the graph function, and on ``cpu``
they reach the task that runs each chunk of tiles as numbers (``__hpvm_parallel_for``'s
literal locals, ``backends/cpu/parallel_for.py``); the host's repeated launches take the
quick path. Exact on ``cpu`` and ``interp``, sizes the grid divides and sizes it does not.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

import hpvm

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "tile_matmul.cc"  # (a fixed path: zig's cache finds it)

program = compiled_program(PROGRAM)


@pytest.mark.parametrize("argv", [[], ["1", "2"], ["4", "3"], ["37", "4"], ["64", "2"]])
def test_the_program_runs_and_checks_itself(program, argv):
    assert program.run(argv) == 0


def _product(root, a: np.ndarray, b: np.ndarray, target: str) -> np.ndarray:  # type: ignore[no-untyped-def]
    n = a.shape[0]
    c = np.full((n, n), -1, np.int32)
    hpvm.init()
    for x in (a, b, c):
        hpvm.track_memory(x)
    try:
        views = [x.reshape(-1).view(np.uint8) for x in (a, b, c)]
        hpvm.wait(hpvm.launch(root, (*views, n), target=target))
        hpvm.request_memory(c)
    finally:
        for x in (a, b, c):
            hpvm.untrack_memory(x)
        hpvm.cleanup()
    return c


@pytest.mark.parametrize("n", [8, 13])
def test_cpu_and_interp_give_numpys_product(program, n):
    (root,) = program.roots
    rng = np.random.default_rng(n)
    a, b = (rng.integers(-9, 10, (n, n), dtype=np.int32) for _ in range(2))
    want = a @ b
    np.testing.assert_array_equal(_product(root, a, b, "cpu"), want)
    np.testing.assert_array_equal(_product(root, a, b, "interp"), want)
