"""Sobel gradient magnitude written as HPVM's pipeline benchmark writes its gradient stage
(``programs/sobel_gradient.cc``: a 2-D leaf per pixel in the CUDA convention, the grid
rounded up to whole 8x8 blocks, the work under ``if ((gx < n) && (gy < m))``, the eight
neighbours' rows and columns clamped at the border, written out). Its clamped reads are
guarded affine facts for the bounds pre-check, one per path of clamps (40 generated tests
on cpu, low and high ends); their generated check computes each clipped range once
(``span_code.Bindings``: 51 variables, none computing what another does). It runs and checks itself, cpu gives interp's result to the bit,
and more rows than the image has are refused before anything runs, naming the leaf, the C
line of the read, the rows given and the path that lets the instances through."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import compiled_program, needs_clang, needs_llvm_leaves

import hpvm
from hpvm.backends import get_backend

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

PROGRAM = Path(__file__).parent / "programs" / "sobel_gradient.cc"  # (a fixed path: zig's cache finds it)
READS = next(k for k, s in enumerate(PROGRAM.read_text().splitlines(), 1) if "float tl = Is[" in s)

program = compiled_program(PROGRAM)


def _image(n: int, m: int) -> np.ndarray:
    return ((np.arange(n * m) * 37 + 11) % 256).astype(np.float32) / np.float32(255.0)


def _gradient(root, image: np.ndarray, n: int, m: int, target: str, rows: int | None = None) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Launch the root over an ``n`` x ``m`` image in the buffer ``image`` (``rows``: the
    ``m`` the leaves are told, when it differs); the magnitudes, NaN where none was written."""
    hpvm.init()
    out = np.full(image.size, np.nan, np.float32)
    for a in (image, out):
        hpvm.track_memory(a)
    told = m if rows is None else rows
    grid = ((n + 7) // 8 * 8, (told + 7) // 8 * 8)
    try:
        hpvm.wait(
            hpvm.launch(root, (image.view(np.uint8), out.view(np.uint8), told, n, *grid), target=target)
        )
        hpvm.request_memory(out)
    finally:
        for a in (image, out):
            hpvm.untrack_memory(a)
    return out


def _numpy(image: np.ndarray, n: int, m: int) -> np.ndarray:
    img = image.reshape(m, n)
    rows, cols = np.arange(m), np.arange(n)

    def at(dy: int, dx: int) -> np.ndarray:
        return img[np.clip(rows + dy, 0, m - 1)][:, np.clip(cols + dx, 0, n - 1)]

    two = np.float32(2.0)
    dx = (at(-1, 1) + two * at(0, 1) + at(1, 1)) - (at(-1, -1) + two * at(0, -1) + at(1, -1))
    dy = (at(1, -1) + two * at(1, 0) + at(1, 1)) - (at(-1, -1) + two * at(-1, 0) + at(-1, 1))
    return np.sqrt(dx * dx + dy * dy).ravel()


@pytest.mark.parametrize("size", [[], ["40", "16"], ["9", "3"]])
def test_the_program_runs_and_checks_itself(program, size):
    assert program.run(size) == 0


@pytest.mark.parametrize(("n", "m"), [(37, 19), (8, 8), (13, 2)])
def test_cpu_gives_interps_result_to_the_bit_and_numpys(program, n, m):
    (root,) = program.roots
    image = _image(n, m)
    got = _gradient(root, image, n, m, "cpu")
    np.testing.assert_array_equal(got, _gradient(root, image, n, m, "interp"))
    np.testing.assert_allclose(got, _numpy(image, n, m), rtol=1e-5, atol=1e-5)


def test_the_clamped_reads_are_checked_once_per_range(program):
    """The pre-check of the eight clamped neighbours: one generated test per fact and side,
    each range computed once (``Bindings``: the same clipped range is not written twice)."""
    (root,) = program.roots
    source = "\n".join(get_backend("cpu").prepare(root).gen.sources)
    assignments = [line.strip() for line in source.splitlines() if line.strip().startswith("__hs_")]
    assert assignments and len({a.split(" = ", 1)[1] for a in assignments}) == len(assignments)
    assert source.count("raise __hpvm_SizeOutOfBounds") >= 16


def test_rows_past_the_image_are_refused_before_anything_runs(program):
    (root,) = program.roots
    n, m = 24, 10
    image = _image(n, m)
    with pytest.raises(hpvm.OutOfBoundsError) as info:
        _gradient(root, image, n, m, "cpu", rows=m + 1)  # the leaves told one row more
    message = str(info.value)
    for fragment in ("leaf 'computeGradient'", "m = 11", "'Is'", "past its end", "the path:"):
        assert fragment in message, message
    # (the line of a neighbour read: the three lines of them)
    assert any(f"sobel_gradient.cc:{READS + k})" in message for k in range(3)), message
    with pytest.raises(hpvm.OutOfBoundsError):  # interp checks the same facts before it runs
        _gradient(root, image, n, m, "interp", rows=m + 1)
