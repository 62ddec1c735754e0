"""A program written as HPVM's C++ benchmarks write graphs (programs/laplacian_mixed.cc): a
CPU wrapper node holding a GPU-hinted 2-D stencil leaf in the CUDA convention (x the fastest
index, a flattened ``y * w + x``) and a CPU-hinted reduction fed over an edge that carries
the array with its size; the sum comes back through the packed argument struct. It runs as
a program (its C++ host checks itself), and its graph goes through what this project adds
around such programs: the import (the LLVM text read without a call into LLVM per operand),
the loop order of LLVM leaves (x innermost), and seed 004's prepare → -O2 → extract, which
must print like the original and compute the interpreter's values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

import hpvm
from hpvm import llvm
from hpvm.backends.cpu.graphgen import loop_order
from hpvm.ir.printer import print_program

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "laplacian_mixed.cc"  # (a fixed path: zig's cache finds it)
W, H = 37, 23


program = compiled_program(PROGRAM)


def _image() -> np.ndarray:
    return ((np.arange(W * H) * 7919) % 61 - 30).astype(np.int32)


def _laplacian(img: np.ndarray) -> np.ndarray:
    a = img.reshape(H, W).astype(np.int64)
    want = np.zeros_like(a)
    want[1:-1, 1:-1] = 4 * a[1:-1, 1:-1] - a[1:-1, :-2] - a[1:-1, 2:] - a[:-2, 1:-1] - a[2:, 1:-1]
    return want.reshape(-1)


def _run(root, target: str) -> tuple[np.ndarray, int]:
    hpvm.init()
    img, lap = _image(), np.full(W * H, -1, np.int32)
    for a in (img, lap):
        hpvm.track_memory(a)
    (total,) = hpvm.wait(hpvm.launch(root, (img.view(np.uint8), lap.view(np.uint8), W, H), target=target))
    hpvm.request_memory(lap)
    return lap.copy(), int(total)


@pytest.mark.parametrize("target", [None, "interp"])
def test_the_program_checks_itself(program, target, capfd) -> None:
    assert program.run([str(W), str(H)], target=target) == 0
    out = capfd.readouterr().out
    want = int(_laplacian(_image()).sum())
    assert f"laplacian {W}x{H}: 0 wrong, sum {want} (expected {want})" in out


def test_the_stencil_leaf_runs_x_innermost(program) -> None:
    (root,) = program.roots
    (wrapper,) = [n.function for n in root.graph.nodes]
    stencil = next(n for n in wrapper.graph.nodes if n.dims == 2)
    assert loop_order([stencil]) == (1, 0)  # y outside, x (unit stride) inside


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_prepare_optimize_extract_keeps_the_graph_and_its_values(program, target) -> None:
    (root,) = program.roots
    extracted = llvm.extract(llvm.optimize(llvm.prepare(root), 2))
    assert print_program(extracted, bodies=False) == print_program(root, bodies=False)
    lap, total = _run(extracted, target)
    want = _laplacian(_image())
    np.testing.assert_array_equal(lap, want)
    assert total == int(want.sum())
    assert _run(root, "interp")[1] == total
