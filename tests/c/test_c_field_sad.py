"""Motion estimation's sums of absolute differences, written in the shape of parboil's sad for
HPVM (``programs/sad``: four files — the graph in kernel.cc, a C++ host with the standard
library in main.cc, parboil's frame files and the SAD file in frames.cc, the declarations in
include/sad.h). The graph is an internal root and three leaves in a row joined by
all-to-all edges that carry the SAD array's size, each replicated 2-D over the frame in the
GPU convention: every 4x4 block of the current frame against the reference at every
displacement of the search window (the block in a local array, as parboil keeps it in shared
memory), then the 8x8, 8x4 and 4x8 SADs of each 8x8 quarter summed from those, then the
16x16, 16x8 and 8x16 SADs of each macroblock from the 8x8 ones. A displacement past the
frame's edge reads the edge's pixel (parboil reads the reference through a clamping texture).

The tests write the frames from NumPy and check every SAD of every shape, macroblock and
search position against NumPy's sums of ``|cur - ref|`` over each shape's blocks, taken
straight from the pixels (not from the 4x4 sums): exactly, on interp, cpu and cpu's checked
mode, with parboil's search range of 16 on frames smaller than the window (every block
reads past the frame). The frames are a clamped shift of each other, so the SADs at the
motion vector are 0 — the search positions' order (dx the fastest) seen from outside."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from hpvmc_helpers import needs_clang, needs_llvm_leaves

import hpvm.backends.cpu as cpu
from hpvm import c

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]

FOLDER = Path(__file__).parent / "programs" / "sad"  # (fixed paths: zig's cache finds them)
SOURCES = ("main.cc", "kernel.cc", "frames.cc")
#: parboil's seven block shapes (width, height) in its type order, as the file holds them
SHAPES = ((16, 16), (16, 8), (8, 16), (8, 8), (8, 4), (4, 8), (4, 4))


@pytest.fixture(scope="module")
def program():
    return c.compile([FOLDER / s for s in SOURCES], include_dirs=[str(FOLDER / "include")])


def write_frame(path: Path, pixels: np.ndarray) -> str:
    """Parboil's sad frame: width and height (16-bit), then the 16-bit pixels, row by row."""
    height, width = pixels.shape
    path.write_bytes(np.array([width, height], "<u2").tobytes() + pixels.astype("<u2").tobytes())
    return str(path)


def shifted(ref: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """``ref`` seen at displacement (dx, dy), coordinates past the edge clamped to it."""
    h, w = ref.shape
    rows = np.clip(np.arange(h) + dy, 0, h - 1)
    cols = np.clip(np.arange(w) + dx, 0, w - 1)
    return ref[rows][:, cols]


def expected(ref: np.ndarray, cur: np.ndarray, r: int) -> np.ndarray:
    """Every SAD as the file holds them: (macroblock, block of the seven shapes in type
    order, search position), computed from the pixels for each shape on its own."""
    h, w = cur.shape
    side = 2 * r + 1
    diff = np.stack(
        [np.abs(cur.astype(np.int64) - shifted(ref, p % side - r, p // side - r)) for p in range(side * side)]
    )  # (position, y, x); position (dy + r) * side + (dx + r)
    blocks = []
    for bw, bh in SHAPES:
        sums = diff.reshape(side * side, h // bh, bh, w // bw, bw).sum(axis=(2, 4))  # (pos, by, bx)
        per = sums.reshape(side * side, h // 16, 16 // bh, w // 16, 16 // bw)  # (pos, mby, y, mbx, x)
        blocks.append(per.transpose(1, 3, 2, 4, 0).reshape(h // 16 * (w // 16), -1, side * side))
    return np.concatenate(blocks, axis=1)


def read_sads(path: Path) -> np.ndarray:
    raw = path.read_bytes()
    mbs, positions = (int(v) for v in np.frombuffer(raw[:8], "<u4"))
    assert len(raw) == 8 + 2 * mbs * 41 * positions
    return np.frombuffer(raw[8:], "<u2").reshape(mbs, 41, positions)


def frames(width: int, height: int, motion: tuple[int, int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A random reference with the extremes 0 and 255, and the current frame: the reference
    moved by ``motion`` (clamped at the edges), its last macroblock noise."""
    rng = np.random.default_rng(seed)
    ref = rng.integers(0, 256, (height, width))
    ref[0, :3] = 0, 255, 255
    cur = shifted(ref, *motion)
    cur[-16:, -16:] = rng.integers(0, 256, (16, 16))
    return ref, cur


@pytest.mark.parametrize(
    ("width", "height", "r", "motion", "target", "checked"),
    [
        (48, 32, None, (5, -3), "cpu", False),  # parboil's range 16: a window past every edge
        (32, 16, 3, (-2, 1), "cpu", True),  # cpu's checked mode
        (32, 16, 2, (1, 2), "interp", False),
    ],
)
def test_the_program_writes_every_sad_of_every_shape(
    program, tmp_path, capfd, width, height, r, motion, target, checked
):
    ref, cur = frames(width, height, motion, seed=width + height)
    argv = ["-i", f"{write_frame(tmp_path / 'ref.bin', ref)},{write_frame(tmp_path / 'cur.bin', cur)}"]
    argv += ["-o", str(tmp_path / "sads.bin")] + (["-r", str(r)] if r is not None else [])
    previous = cpu.configure(checked=checked)
    try:
        assert program.run(argv, target=target) == 0
    finally:
        cpu.configure(**previous)
    r = 16 if r is None else r
    got = read_sads(tmp_path / "sads.bin")
    np.testing.assert_array_equal(got, expected(ref, cur, r))
    # at the motion vector every block but the noisy last macroblock's matches exactly ...
    at_motion = (motion[1] + r) * (2 * r + 1) + motion[0] + r
    assert (got[:-1, :, at_motion] == 0).all() and (got[-1, :, at_motion] > 0).all()
    # ... and the top-left 4x4 block at (-r, -r) reads the corner pixel only (clamped)
    if r >= 3:
        assert got[0, 25, 0] == np.abs(cur[:4, :4] - ref[0, 0]).sum()
    printed = capfd.readouterr().out
    mbs = width // 16 * (height // 16)
    line = f"sad {width}x{height} frames, {mbs} macroblocks, search range {r}: {(2 * r + 1) ** 2} positions"
    assert line in printed, printed


def test_the_largest_sads_fit_their_16_bits(program, tmp_path):
    """Black against white: a 16x16 block's SAD is 65,280, the most 8-bit pixels give."""
    ref = write_frame(tmp_path / "ref.bin", np.zeros((16, 32), int))
    cur = write_frame(tmp_path / "cur.bin", np.full((16, 32), 255))
    assert program.run(["-i", f"{ref},{cur}", "-o", str(tmp_path / "sads.bin"), "-r", "1"]) == 0
    got = read_sads(tmp_path / "sads.bin")
    areas = np.repeat([w * h for w, h in SHAPES], [1, 2, 2, 4, 8, 8, 16])
    np.testing.assert_array_equal(got, np.broadcast_to(255 * areas[None, :, None], got.shape))
    assert got.max() == 65280


def test_bad_frames_and_options_are_refused(program, tmp_path, capfd):
    out = tmp_path / "sads.bin"

    def refused(ref: str, cur: str, *more: str) -> str:
        assert program.run(["-i", f"{ref},{cur}", "-o", str(out), *more]) == 1
        return capfd.readouterr().err

    good = write_frame(tmp_path / "good.bin", np.ones((16, 32), int))
    missing = str(tmp_path / "none.bin")
    assert f"sad: cannot open {missing}" in refused(good, missing)
    short = tmp_path / "short.bin"  # a 32x16 header and 300 of its 512 pixels
    short.write_bytes(np.array([32, 16], "<u2").tobytes() + np.ones(300, "<u2").tobytes())
    assert f"sad: {short}: 300 pixels, fewer than its 32x16 header says" in refused(good, str(short))
    short.write_bytes(b"\x20\x00\x10")
    assert f"sad: {short}: shorter than its 4-byte header" in refused(str(short), good)
    bright = np.ones((16, 32), int)
    bright[9, 5] = 300
    hot = write_frame(tmp_path / "hot.bin", bright)
    pixel = f"sad: {hot}: pixel (5, 9) is 300, past 255 (a 16x16 SAD of 8-bit pixels fits 16 bits)"
    assert pixel in refused(hot, good)
    other = write_frame(tmp_path / "other.bin", np.ones((32, 32), int))
    sizes = "sad: the reference frame is 32x16, the current frame 32x32: they must be the same size"
    assert sizes in refused(good, other)
    odd = write_frame(tmp_path / "odd.bin", np.ones((16, 20), int))
    assert "sad: the frames are 20x16, not a whole number of 16x16 macroblocks" in refused(odd, odd)
    assert "usage: sad -i ref.bin,cur.bin -o sads.bin [-r range 0..16]" in refused(good, good, "-r", "17")
    assert "usage: sad" in refused(good, good, "-r", "two")
    assert program.run(["-i", good, "-o", str(out)]) == 1  # one frame
    assert "usage: sad" in capfd.readouterr().err
    assert not out.exists()


def test_an_input_fed_by_a_bind_and_an_edge_names_kernel_cc_and_its_lines(tmp_path):
    """The 8x8 leaf's SAD size bound from the root as the 4x4 leaf's is, beside the edge that
    orders it after the 4x4 SADs: the error names both lines of kernel.cc."""
    folder = tmp_path / "sad"
    shutil.copytree(FOLDER, folder)
    kernel = folder / "kernel.cc"
    text = kernel.read_text()
    old = "__hpvm__bindIn(eight, 4, 0, 0);"
    assert text.count(old) == 1
    kernel.write_text(text.replace(old, old + " __hpvm__bindIn(eight, 5, 1, 0);"))
    bind = text[: text.index(old)].count("\n") + 1
    with pytest.raises(c.HPVMCError) as info:
        c.compile([kernel], include_dirs=[str(folder / "include")])
    message = str(info.value)
    assert message.startswith(f"{kernel}:{bind}: "), message
    # (its port numbers are the C calls', where the graph has a pointer and its size as one
    # port: the root's bytes_sads, the graph's input 3, is C's parameter 5, as the call says)
    assert (
        f"input bind 5 -> eight.1 ({kernel}:{bind}): input 1 ('bytes_sads') of 'eight' is already fed by "
        f"edge four.0 -> eight.1 (all_to_all, {kernel}:{bind + 1})"
    ) in message, message


def test_the_leaves_clones_leave_clangs_debug_metadata_behind(program):
    """clang's debug info for a C++ file with <vector> and <string> was 570-650 kB of each
    clone's text, 11 kB of it code (``llvm_native/nodebug.py``); the user's module keeps it
    for the messages."""
    from hpvm.backends.llvm_native.native import native_leaf
    from hpvm.ir.graph import LeafFunction, functions

    leaves = [f for f in functions(program.roots[0]) if isinstance(f, LeafFunction)]
    assert [f.name for f in leaves] == ["sad_4x4", "sad_8x8", "sad_16x16"]
    for leaf in leaves:
        assert "!DICompileUnit" in leaf.body.module
        text = native_leaf(leaf).text
        assert "!DI" not in text and "!dbg" not in text and len(text) < 40_000, len(text)
        assert "!llvm.loop" in text or leaf.name != "sad_4x4"  # (the search loop keeps its properties)
