"""parboil's histogram kept per work group, written for HPVM-C as HPVM's ports keep GPU shared
memory (``programs/block_histo``: kernel.c, main.c, include/histo_local.h): each group's
allocation node ``__hpvm__malloc``\\ s its 256 bins, the counting leaf is replicated over the
group with ``int`` ids, clears its share of the bins, counts its pixels with
``__hpvm__atomic_add`` into them, and after a barrier adds its share to the global histogram.

Run through this stop's changes: the allocation node is made once per chunk of groups on
``cpu`` (``ir/scratch.plain_llvm_allocation``); the leaf clears its bins in a loop, not by one
store of its own element, so no covering store is proven and each group gets the bins
zero-filled (``covering_llvm_store``); the clones carry no debug metadata. Exact against NumPy's
``bincount`` and ``interp``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import needs_clang, needs_llvm_leaves

import hpvm.backends.cpu as cpu
from hpvm import c
from hpvm.backends import get_backend
from hpvm.backends.llvm_native.native import native_leaf
from hpvm.ir.graph import LeafFunction, functions

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "block_histo"


@pytest.fixture(scope="module")
def program():
    return c.compile([FOLDER / "main.c", FOLDER / "kernel.c"], include_dirs=[str(FOLDER / "include")])


def write_image(path: Path, pixels: np.ndarray) -> str:
    path.write_bytes(np.array([pixels.size], np.uint32).tobytes() + pixels.astype(np.uint8).tobytes())
    return str(path)


@pytest.mark.parametrize(
    ("n", "runs", "target", "checked"),
    [(100_003, 2, "cpu", False), (5_000, 1, "cpu", True), (3_001, 1, "interp", False), (1, 1, "cpu", False)],
)
def test_the_histogram_is_numpys(program, tmp_path, capfd, n, runs, target, checked):
    rng = np.random.default_rng(n)
    pixels = np.minimum(rng.geometric(0.02, n), 255)  # skewed: bin 255 collects the tail
    out = tmp_path / "histo.bin"
    previous = cpu.configure(checked=checked)
    try:
        assert (
            program.run([write_image(tmp_path / "img.bin", pixels), str(out), str(runs)], target=target) == 0
        )
    finally:
        cpu.configure(**previous)
    got = np.frombuffer(out.read_bytes(), np.int32)
    np.testing.assert_array_equal(got, np.bincount(pixels, minlength=256))
    assert f"histo: {n} pixels, {runs} runs" in capfd.readouterr().out


def test_the_groups_bins_are_made_once_per_chunk_and_zero_filled(program):
    (root,) = program.roots
    generated = "".join(get_backend("cpu").prepare(root).gen.sources)
    assert "_pre(" in generated  # (the allocation node hoisted out of the groups' loop)
    assert "_each_nz" not in generated  # (no covering store: the bins are cleared by a loop)
    for leaf in (f for f in functions(root) if isinstance(f, LeafFunction)):
        assert "!DI" not in native_leaf(leaf).text


def test_a_short_image_is_refused(program, tmp_path, capfd):
    short = tmp_path / "img.bin"
    short.write_bytes(np.array([10], np.uint32).tobytes() + bytes(4))
    assert program.run([str(short), str(tmp_path / "h.bin")]) == 1
    assert "is shorter than its header says" in capfd.readouterr().err
