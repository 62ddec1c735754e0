"""Two vector kernels under one ``hpvm::DEVICE`` wrapper, as HPVM's C benchmarks write a
kernel pair (``programs/saxpy_square.cc``): the wrapper's two 1-D leaves are two parallel
loops of one graph function, each run by ``__hpvm_parallel_for`` (``parallel_for.py``), a
chunk per thread, on a grid rounded up to whole blocks of 64 (so even ``n = 1`` runs 64
instances, most of them outside the guard ``if (i < n)``). The host checks
itself; cpu gives the interpreter's results to the bit, and NumPy's (within the one
rounding clang's fused multiply-add saves in saxpy; the squares to the bit)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

import hpvm
from hpvm.backends import get_backend

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "saxpy_square.cc"  # (a fixed path: zig's cache finds it)

program = compiled_program(PROGRAM)


@pytest.mark.parametrize("size", [[], ["1"], ["63"], ["100000"]])
def test_the_program_runs_and_checks_itself(program, size):
    assert program.run(size) == 0


def _launch(root, n: int, target: str) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    k = np.arange(n)
    x = ((k * 29 + 3) % 101).astype(np.float32) / np.float32(7.0)
    y = ((k * 13 + 5) % 97).astype(np.float32) / np.float32(3.0)
    z = np.full(n, -1.0, np.float32)
    hpvm.init()
    for a in (x, y, z):
        hpvm.track_memory(a)
    try:
        args = (x.view(np.uint8), y.view(np.uint8), z.view(np.uint8))  # (each size is its array's)
        grid = (n + 63) // 64 * 64
        hpvm.wait(hpvm.launch(root, (*args, np.float32(1.5), n, grid), target=target))
        for a in (y, z):
            hpvm.request_memory(a)
    finally:
        for a in (x, y, z):
            hpvm.untrack_memory(a)
    return y, z


@pytest.mark.parametrize("n", [1, 65, 5000])
def test_cpu_gives_numpys_and_interps_results_to_the_bit(program, n):
    (root,) = program.roots
    y, z = _launch(root, n, "cpu")
    k = np.arange(n)
    x = ((k * 29 + 3) % 101).astype(np.float32) / np.float32(7.0)
    y0 = ((k * 13 + 5) % 97).astype(np.float32) / np.float32(3.0)
    # (clang contracts alpha * x[i] + y[i] into one fused multiply-add, the host's check too:
    # NumPy's two roundings differ from it by an ulp at most)
    np.testing.assert_allclose(y, np.float32(1.5) * x + y0, rtol=1.2e-7, atol=0)
    np.testing.assert_array_equal(z, x * x)
    if n <= 65:  # (the interpreter: small sizes)
        yi, zi = _launch(root, n, "interp")
        np.testing.assert_array_equal(y, yi)
        np.testing.assert_array_equal(z, zi)


def test_the_two_leaves_are_two_parallel_loops(program):
    (root,) = program.roots
    _launch(root, 200, "cpu")
    source = "\n".join(get_backend("cpu").prepare(root).gen.sources)
    assert source.count("__hpvm_parallel_for(") == 2
    assert "prange(" not in source
