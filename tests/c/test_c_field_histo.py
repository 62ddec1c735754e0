"""A saturating histogram, written in the shape of parboil's histo for HPVM (``programs/
histo``: four files — the graph in kernel.cc, a C++ host with the standard library in
main.cc, parboil's file formats in image.cc, the declarations in include/histo.h). The graph
is three leaves in a row joined by all-to-all edges, each replicated over its own range:
clear the 32-bit counts (one instance per bin), count CHUNK pixels per instance with
``__hpvm__atomic_add`` (instances share bins), saturate each count into its 8-bit bin. The
host reads parboil's binary image, launches the graph once per run and writes the bins; the
tests write the image with NumPy and check the file against NumPy's ``bincount`` saturated
at 255 — exactly, on interp and cpu, at sizes that are and are not multiples of a chunk,
with bins that saturate and bins that stay empty."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import needs_clang, needs_llvm_leaves

from hpvm import c

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "histo"  # (fixed paths: zig's cache finds them)
CHUNK = 256  # include/histo.h


@pytest.fixture(scope="module")
def program():
    return c.compile(
        [FOLDER / "main.cc", FOLDER / "kernel.cc", FOLDER / "image.cc"],
        include_dirs=[str(FOLDER / "include")],
    )


def write_image(path: Path, pixels: np.ndarray, width: int, histo_width: int, histo_height: int) -> str:
    """Parboil's histo input: width, height, histo_width, histo_height (32-bit), the pixels."""
    header = np.array([width, pixels.size // width, histo_width, histo_height], dtype=np.uint32)
    path.write_bytes(header.tobytes() + pixels.astype(np.uint32).tobytes())
    return str(path)


def expected(pixels: np.ndarray, bins: int) -> np.ndarray:
    """The histogram, computed apart from the program: NumPy's counts, saturated at 255."""
    return np.minimum(np.bincount(pixels, minlength=bins), 255).astype(np.uint8)


def test_the_graph_is_three_stages_in_a_row(program):
    (root,) = program.roots
    clear, count, saturate = root.graph.nodes
    assert [n.function.name for n in (clear, count, saturate)] == [
        "histo_clear",
        "histo_count",
        "histo_saturate",
    ]
    assert [n.dims for n in (clear, count, saturate)] == [1, 1, 1]
    assert [[p.name for p in n.sizes] for n in (clear, count, saturate)] == [["bins"], ["blocks"], ["bins"]]
    # the counts' size travels by the edges (what orders the stages), its pointer by binds:
    # two ports, a pointer-only u8[*] and an i64; the image and the bins are arrays
    assert [(p.name, str(p.type)) for p in count.function.params] == [
        ("img", "u8[:]"),
        ("counts", "u8[*]"),
        ("bytes_counts", "i64"),
        ("chunk", "i64"),
    ]
    edges = [(e.src.name, e.sp, e.dst.name, e.dp, e.repl) for e in root.graph.edges]
    assert edges == [("clear", 0, "count", 2, 1), ("count", 0, "saturate", 1, 1)]  # all-to-all
    assert count.function.outs == ("counts",)


@pytest.mark.parametrize(
    ("width", "height", "histo_width", "histo_height", "runs", "target"),
    [
        (100, 37, 16, 8, 1, "cpu"),  # 3,700 pixels: 14 full chunks and one of 116
        (64, 32, 8, 4, 3, "cpu"),  # 2,048 pixels: 8 full chunks; three runs
        (1, 1, 1, 1, 1, "cpu"),  # one pixel, one bin
        (50, 21, 16, 4, 2, "interp"),
    ],
)
def test_the_program_writes_the_saturated_histogram(
    program, tmp_path, capfd, width, height, histo_width, histo_height, runs, target
):
    bins = histo_width * histo_height
    rng = np.random.default_rng(width * height + bins)
    # a skewed image: bin 0 saturates (300 pixels more), the upper half of the bins stays empty
    n = width * height
    many = min(300, n // 3)
    pixels = rng.permutation(
        np.concatenate([np.zeros(many, int), rng.integers(0, max(bins // 2, 1), n - many)])
    )
    image = write_image(tmp_path / "image.bin", pixels, width, histo_width, histo_height)
    out = tmp_path / "histo.bin"
    assert program.run(["-i", image, "-o", str(out), str(runs)], target=target) == 0
    got = np.frombuffer(out.read_bytes(), dtype=np.uint8)
    want = expected(pixels, bins)
    np.testing.assert_array_equal(got, want)
    if width * height > 1000:
        assert (want == 255).any() and (want == 0).any() and ((want > 0) & (want < 255)).any()
    printed = capfd.readouterr().out
    assert f"histo {width}x{height} image, {bins} bins, {runs} runs" in printed, printed


def test_a_pixel_past_the_last_bin_and_a_missing_file_are_refused(program, tmp_path, capfd):
    pixels = np.array([0, 1, 2, 9, 3, 1], dtype=np.uint32)
    image = write_image(tmp_path / "image.bin", pixels, 3, 4, 2)
    out = tmp_path / "histo.bin"
    assert program.run(["-i", image, "-o", str(out)]) == 1
    assert "histo: pixel 3 is 9, past the last of 8 bins" in capfd.readouterr().err
    assert not out.exists()
    assert program.run(["-i", str(tmp_path / "none.bin"), "-o", str(out)]) == 1
    assert f"histo: cannot open {tmp_path / 'none.bin'}" in capfd.readouterr().err
    short = tmp_path / "short.bin"
    short.write_bytes(np.array([4, 4, 2, 2, 0, 1], dtype=np.uint32).tobytes())
    assert program.run(["-i", str(short), "-o", str(out)]) == 1
    assert "fewer pixels than its 4x4 header says" in capfd.readouterr().err
