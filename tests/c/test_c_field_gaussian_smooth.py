"""Gaussian smoothing written as HPVM's pipeline benchmark writes its first stage
(``programs/gaussian_smooth.cc``: a 2-D leaf per pixel in the CUDA convention, its whole
body under ``if ((gx < n) && (gy < m))`` for a grid rounded up to whole 8x8 blocks, a loop
over a filter window whose size is a parameter, clamped borders, a ``std::vector`` host).
On cpu the leaf runs jammed (``llvm_native/wijam.py``): the guard probed for 8 neighbouring
pixels, the filter loop run once for the 8 where all pass, lane by lane where the block
straddles the image's edge. It runs and checks itself, and cpu gives interp's result to the
bit (and NumPy's within float32 rounding) for image sizes that leave partial blocks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

import hpvm
from hpvm.backends import get_backend
from hpvm.backends.cpu import jam

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "gaussian_smooth.cc"  # (a fixed path: zig's cache finds it)

program = compiled_program(PROGRAM)


@pytest.fixture(autouse=True)
def jam_on(monkeypatch):
    """The test of the jammed nest is about jamming: on, even where ``HPVM_CPU_JAM=0``."""
    monkeypatch.setattr(jam.JAM, "enabled", True)


def _filter(size: int) -> np.ndarray:
    d = (np.arange(size) - size // 2) ** 2
    g = np.exp(-(d[:, None] + d[None, :]).astype(np.float32) / np.float32(2.0)).astype(np.float32)
    return (g / g.sum(dtype=np.float32)).astype(np.float32)


def _smooth(root, n: int, m: int, size: int, target: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    hpvm.init()
    image = ((np.arange(n * m) * 29 + 7) % 251).astype(np.float32) / np.float32(251.0)
    out = np.full(n * m, np.nan, np.float32)
    gf = _filter(size).ravel()
    for a in (image, out, gf):
        hpvm.track_memory(a)
    grid = ((n + 7) // 8 * 8, (m + 7) // 8 * 8)
    args = (image.view(np.uint8), out.view(np.uint8), gf.view(np.uint8), m, n, size, size, *grid)
    hpvm.wait(hpvm.launch(root, args, target=target))
    hpvm.request_memory(out)
    return out.reshape(m, n), image.reshape(m, n), gf.reshape(size, size)


def _numpy(image: np.ndarray, gf: np.ndarray) -> np.ndarray:
    m, n = image.shape
    r = gf.shape[0] // 2
    out = np.zeros_like(image)
    for i in range(-r, r + 1):
        rows = np.clip(np.arange(m) + i, 0, m - 1)
        for j in range(-r, r + 1):
            cols = np.clip(np.arange(n) + j, 0, n - 1)
            out += image[rows][:, cols] * gf[i + r, j + r]
    return out


@pytest.mark.parametrize("size", [["45", "21"], ["64", "40", "7"]])
def test_the_program_runs_and_checks_itself(program, size):
    assert program.run(size) == 0


def test_the_leaf_is_jammed_along_x(program):
    (root,) = program.roots
    assert f"_jam0w{jam.LLVM_WIDTH}(" in "\n".join(get_backend("cpu").prepare(root).gen.sources)


@pytest.mark.parametrize(("n", "m", "size"), [(45, 21, 5), (19, 9, 3), (64, 16, 7)])
def test_cpu_gives_interps_result_to_the_bit(program, n, m, size):
    (root,) = program.roots
    got, image, gf = _smooth(root, n, m, size, "cpu")
    want, _, _ = _smooth(root, n, m, size, "interp")
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, _numpy(image, gf), rtol=1e-5, atol=1e-6)
