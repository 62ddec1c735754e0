"""A separable blur written as HPVM's C++ benchmarks write a pipeline of kernels
(``programs/separable_blur.cc``: one 2-D leaf per pass in the CUDA convention, the row pass
handing the column pass the intermediate's size over an all-to-all edge, a third leaf over
the same grid joined to neither, a ``std::vector`` host). Three parallel loops in one graph
function, two of them independent siblings of one grid: on cpu each stays its own loop
(compiled without Numba's loop fusion, ``cpu/compiler.py``), the column pass after the whole
row pass. It runs and checks itself, and gives NumPy's passes to the bit on cpu and interp."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

import hpvm

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "separable_blur.cc"  # (a fixed path: zig's cache finds it)
W, H = 29, 17  # (neither a multiple of 8: the vector loops leave a remainder)

program = compiled_program(PROGRAM)


def _image(w: int, h: int) -> np.ndarray:
    return (((np.arange(w * h) * 37 + 11) % 256).astype(np.float32)).reshape(h, w)


def _reference(image: np.ndarray) -> np.ndarray:
    """The two clamped 1-2-1 passes, in float32, in the leaves' order of operations."""
    quarter, two = np.float32(0.25), np.float32(2.0)
    left = np.concatenate([image[:, :1], image[:, :-1]], axis=1)
    right = np.concatenate([image[:, 1:], image[:, -1:]], axis=1)
    rows = (left + two * image + right) * quarter
    up = np.concatenate([rows[:1], rows[:-1]], axis=0)
    down = np.concatenate([rows[1:], rows[-1:]], axis=0)
    return (up + two * rows + down) * quarter


def _blur(root, target: str) -> tuple[np.ndarray, np.ndarray]:
    hpvm.init()
    image = _image(W, H)
    tmp, out, keep = (np.full(W * H, np.nan, np.float32) for _ in range(3))
    flat = image.ravel()
    for a in (flat, tmp, out, keep):
        hpvm.track_memory(a)
    # (the front end folds a pointer and the size bound beside it into one sized array;
    # tmp's size stays a parameter: it also travels over the edge)
    values = {"in_": flat, "tmp": tmp, "bytes_tmp": tmp.nbytes, "out": out, "keep": keep, "w": W, "h": H}
    assert [p.name for p in root.params] == list(values)
    args = tuple(v.view(np.uint8) if isinstance(v, np.ndarray) else v for v in values.values())
    hpvm.wait(hpvm.launch(root, args, target=target))
    for a in (out, keep):
        hpvm.request_memory(a)
    return out.reshape(H, W), keep.reshape(H, W)


@pytest.mark.parametrize("size", [["29", "17"], ["64", "40"]])
def test_the_program_runs_and_checks_itself(program, size):
    assert program.run(size) == 0


def test_the_graph_is_three_kernels_over_one_grid_two_of_them_joined(program):
    (root,) = program.roots
    assert [(n.function.name, n.dims) for n in root.graph.nodes] == [
        ("blur_rows", 2),
        ("blur_cols", 2),
        ("keep_input", 2),
    ]
    assert [(e.src.function.name, e.dst.function.name) for e in root.graph.edges] == [
        ("blur_rows", "blur_cols")
    ]


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_the_passes_are_numpys_to_the_bit(program, target):
    (root,) = program.roots
    out, keep = _blur(root, target)
    image = _image(W, H)
    np.testing.assert_array_equal(keep, image)
    np.testing.assert_array_equal(out, _reference(image))
