"""A tiled transpose written as HPVM's C++ benchmarks write barrier code
(``programs/transpose_tiled.cc``: an allocation node's padded tile, a 2-D leaf in the CUDA
convention meeting its group at ``__hpvm__barrier``, guarded edges, a ``std::vector`` host):
it runs and checks itself, takes the work-item-loop lowering (its barrier is at the top level:
every instance reaches it), and gives NumPy's transpose on cpu (both lowerings) and interp."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

import hpvm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llvm"))
from barrier_lowering import barrier_leaf  # noqa: E402

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "transpose_tiled.cc"  # (a fixed path: zig's cache finds it)
TILE = 8
W, H = 37, 21  # neither a multiple of the tile: the guarded edges run

program = compiled_program(PROGRAM)


def _transpose(root, target: str) -> np.ndarray:
    hpvm.init()
    x = (np.arange(W * H) * 3 % 101 - 50).astype(np.float32)
    out = np.full(W * H, np.nan, np.float32)
    for a in (x, out):
        hpvm.track_memory(a)
    args = (x.view(np.uint8), out.view(np.uint8), W, H, TILE * (TILE + 1) * 4)
    hpvm.wait(hpvm.launch(root, args, target=target))
    hpvm.request_memory(out)
    return out.reshape(W, H)


def test_the_program_runs_and_checks_itself(program):
    assert program.run(["45", "19"]) == 0


def test_transpose_matches_numpy_on_cpu(program, lowering):
    (root,) = program.roots
    assert barrier_leaf(root).barrier_lowering == lowering
    want = (np.arange(W * H) * 3 % 101 - 50).astype(np.float32).reshape(H, W).T
    np.testing.assert_array_equal(_transpose(root, "cpu"), want)


def test_transpose_matches_numpy_on_interp(program):
    (root,) = program.roots
    want = (np.arange(W * H) * 3 % 101 - 50).astype(np.float32).reshape(H, W).T
    np.testing.assert_array_equal(_transpose(root, "interp"), want)
