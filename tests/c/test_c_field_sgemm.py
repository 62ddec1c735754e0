"""Dense matrix multiply, written as parboil's sgemm is for HPVM (``programs/sgemm_parboil/
main.cc``: the graph and the host in one file, ``#include <parboil.h>``, the matrices read
from the files ``-i A,BT`` names in parboil's column-major format, C written to ``-o``, the
timer set switched around reading, tracking, launch and wait). The graph — a root creating
a 2-D grid of tiles once, each a 16x16 block of the ``hpvm::DEVICE`` leaf ``mysgemmNT`` that
reads its tile from its parent's instance id — is read as HPVM writes it; the program's
output file is checked against NumPy's product on cpu and interp, and its refusals (sizes
that are not multiples of a tile, a missing ``-o``) are its own messages."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import needs_clang, needs_llvm_leaves

from hpvm import c

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "sgemm_parboil"  # (fixed paths: zig's cache finds them)


@pytest.fixture(scope="module")
def program():
    return c.compile(FOLDER / "main.cc")


def write_matrix(path: Path, matrix: np.ndarray) -> str:
    """Parboil's matrix file: "rows cols", then the values column by column."""
    values = "\n".join(repr(float(v)) for v in matrix.flatten(order="F"))
    path.write_text(f"{matrix.shape[0]} {matrix.shape[1]}\n{values}\n")
    return str(path)


def read_matrix(path: Path) -> np.ndarray:
    words = path.read_text().split()
    rows, cols = int(words[0]), int(words[1])
    return np.array(words[2:], dtype=np.float32).reshape((cols, rows)).T


def test_the_graph_is_read_as_parboil_writes_it(program):
    (root,) = program.roots
    (tiles,) = root.graph.nodes
    assert (root.name, tiles.function.name) == ("root", "basicSgemmLvl2")
    (block,) = tiles.function.graph.nodes
    (leaf,) = block.function.graph.nodes
    assert (block.function.name, leaf.function.name) == ("basicSgemmLvl1", "mysgemmNT")
    assert (tiles.dims, block.dims, leaf.dims) == (0, 2, 2)
    # each (pointer, bytes) pair is one array port; the rest are scalars
    assert [p.name for p in leaf.function.params] == [
        "A", "lda", "B", "ldb", "C", "ldc", "k", "alpha", "beta",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("m", "n", "k", "target"),
    [(32, 48, 20, "cpu"), (16, 16, 1, "cpu"), (64, 16, 33, "cpu"), (16, 32, 3, "interp")],
)
def test_the_program_writes_the_product(program, tmp_path, capfd, m, n, k, target):
    rng = np.random.default_rng(m * n + k)
    a = rng.random((m, k), dtype=np.float32)
    b = rng.random((k, n), dtype=np.float32)
    inputs = f"{write_matrix(tmp_path / 'A', a)},{write_matrix(tmp_path / 'BT', b.T)}"
    assert program.run(["-i", inputs, "-o", str(tmp_path / "C")], target=target) == 0
    np.testing.assert_allclose(read_matrix(tmp_path / "C"), a @ b, rtol=1e-5, atol=1e-5)
    out = capfd.readouterr().out
    assert out.startswith(f"sgemm {m}x{n}x{k}: GFLOPs = "), out
    assert "Kernel" in out and "Timer Wall Time: " in out, out


def test_sizes_that_are_not_tiles_and_a_missing_output_are_refused(program, tmp_path, capfd):
    a = np.ones((20, 4), dtype=np.float32)
    b = np.ones((4, 16), dtype=np.float32)
    inputs = f"{write_matrix(tmp_path / 'A', a)},{write_matrix(tmp_path / 'BT', b.T)}"
    assert program.run(["-i", inputs, "-o", str(tmp_path / "C")]) == 1
    assert "A is 20x4 and B 4x16" in capfd.readouterr().err
    assert not (tmp_path / "C").exists()
    assert program.run(["-i", inputs]) == 1
    assert "Usage: sgemm -i A,BT -o C" in capfd.readouterr().err
