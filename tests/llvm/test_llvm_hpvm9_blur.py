"""An image pipeline as HPVM's GenHPVM writes one (``hpvm9/blur_mark_count_pipeline.ll``,
LLVM 9 text, in the style of HPVM's pipeline benchmark): three levels, the root creating
two internal nodes replicated 2-D over 8x8 blocks (``createNode2D`` at the middle level,
block counts ``(w + 7) / 8`` as ``sdiv``) and a one-instance leaf; the leaves find their
pixel through ``getParentNode`` and ``getNumNodeInstances``; a one-to-one edge carries the
blurred image's byte size from the blur blocks to the mark blocks while its pointer comes
from the root (the pair split, as the benchmark passes ``bytesIs``), an all-to-all edge a
size to ``count``, whose two-field ``%struct.out`` is the root's two outputs; ``mark``
counts with ``llvm.hpvm.atomic.add`` on an ``i8*`` cast.

The host runs it as a field program: buffers tracked once, a launch + wait per step with the
image and blurred buffers swapped and the counter zeroed by the host — the later launches
replays — every step NumPy's, on ``cpu``; once on ``interp``. A one-to-one edge between
grids a user transposed is refused at the launch, naming the nodes and the edge's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import llvm
from hpvm.ir.printer import print_program
from markers import fails
from running import full_path_launches

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]

PIPELINE = Path(__file__).parent / "hpvm9" / "blur_mark_count_pipeline.ll"
THETA = np.float32(0.03)
FILTER = np.array([[1, 2, 0], [3, 6, 1], [0, 2, 2]], dtype=np.float32) / np.float32(17)  # (not symmetric)


@pytest.fixture(scope="module")
def root():
    return llvm.from_hpvm_ir(PIPELINE.read_text(), file=str(PIPELINE))


def _image(h: int, w: int) -> np.ndarray:
    return ((np.arange(h * w, dtype=np.int64).reshape(h, w) * 53 % 97) / 97).astype(np.float32)


def _blur(img: np.ndarray) -> np.ndarray:
    """The leaf's blur in NumPy: the edge clamped, i (rows) outer, j inner, from 0.0, in float32."""
    h, w = img.shape
    pad = np.pad(img, 1, mode="edge")
    acc = np.zeros_like(img)
    for i in range(3):
        for j in range(3):
            acc = acc + pad[i : i + h, j : j + w] * FILTER[i, j]
    return acc


def _marks(blurred: np.ndarray, img: np.ndarray) -> np.ndarray:
    return (np.abs(blurred - img) > THETA).astype(np.int32)


def _outputs(marks: np.ndarray) -> tuple:
    n = int(marks.sum())
    return (n, np.float32(n) / np.float32(marks.size))


def _buffer(a: np.ndarray) -> np.ndarray:
    """A byte buffer holding ``a``'s values (what the host tracks; the root's ports are bytes)."""
    raw = np.zeros(a.nbytes, dtype=np.uint8)
    raw.view(a.dtype)[:] = a.reshape(-1)
    return raw


def _launch_args(h: int, w: int) -> tuple:
    """Fresh tracked buffers for one launch on the ``h`` x ``w`` image: the root's arguments."""
    img, filt, counter = _buffer(_image(h, w)), _buffer(FILTER), np.zeros(4, np.uint8)
    blurred, marks = np.zeros(h * w * 4, np.uint8), np.zeros(h * w * 4, np.uint8)
    for x in (img, filt, blurred, marks, counter):
        hpvm.track_memory(x)
    return (img, filt, blurred, blurred.nbytes, marks, counter, w, h, THETA)


def test_it_imports_as_hpvm_wrote_it(root):
    graph = print_program(root, bodies=False)
    for line in (
        # B's pointer from the root, its size over the edge: the pair split down to the leaf
        "leaf @mark_cloned(B: u8[*], bytes_B: i64, I: u8[:], E: u8[:], C: u8[:], w: i64, h: i64, theta: f32)"
        " -> (i64) hint(gpu) ins(B, I, C) outs(E, C)",
        '%"blur_cloned.node" = node @blur_cloned[8, 8]',
        '%"BlurBlock_cloned.node" = node @BlurBlock_cloned[(w + 7) // 8, (h + 7) // 8]',
        '%"MarkBlock_cloned.node" = node @MarkBlock_cloned[(w + 7) // 8, (h + 7) // 8]',
        'edge %"BlurBlock_cloned.node".0 -> %"MarkBlock_cloned.node".1 one_to_one',
        'edge %"MarkBlock_cloned.node".0 -> %"count_cloned.node".1 all_to_all',
        'bind out %"count_cloned.node".1 -> 1',
    ):
        assert line in graph


@pytest.mark.parametrize("views", [False, True], ids=["byte-arrays", "byte-views"])
@pytest.mark.parametrize(("w", "h"), [(21, 13), (16, 8), (5, 3)])
def test_a_ping_pong_host_loop_is_numpys_step_for_step_and_replays(root, monkeypatch, w, h, views):
    """``views``: the two images are float arrays, tracked, passed as byte views made once
    (as HPVM-C passes tracked memory) — two keys alternating, each recorded once it comes
    again with its views alive (``plan.record_replay``)."""
    full_path = full_path_launches(monkeypatch)
    steps = 8
    images = [_image(h, w), np.zeros((h, w), np.float32)]
    bufs = (
        [x.reshape(-1).view(np.uint8) for x in images] if views else [_buffer(images[0]), _buffer(images[1])]
    )
    filt, marks, counter = _buffer(FILTER), np.zeros(h * w * 4, np.uint8), np.zeros(4, np.uint8)
    tracked = (*(images if views else bufs), filt, marks, counter)
    for x in tracked:
        hpvm.track_memory(x)
    want = _image(h, w)
    src, dst = 0, 1
    counts = []
    for _ in range(steps):
        counter.view(np.int32)[0] = 0  # (the host zeroes the count before each launch)
        args = (bufs[src], filt, bufs[dst], bufs[dst].nbytes, marks, counter, w, h, THETA)
        out = hpvm.wait(hpvm.launch(root, args, target="cpu"))
        blurred = _blur(want)
        want_marks = _marks(blurred, want)
        np.testing.assert_array_equal(bufs[dst].view(np.float32).reshape(h, w), blurred)
        np.testing.assert_array_equal(marks.view(np.int32).reshape(h, w), want_marks)
        assert counter.view(np.int32)[0] == want_marks.sum()
        assert out == _outputs(want_marks)
        counts.append(int(out[0]))
        want = blurred
        src, dst = dst, src
    for x in tracked:
        hpvm.untrack_memory(x)
    assert counts[0] > 0  # (the marks are not all zero: the comparison above means something)
    # two argument tuples (the buffers swapped): at most the first two launches of each take
    # the full path (three with views: a view is recorded when its key comes again), every
    # later one is a replay
    assert full_path[0] <= (6 if views else 4), f"{full_path[0]} of {steps} launches took the full path"


def test_the_same_views_again_are_replays(root, monkeypatch):
    """HPVM-C's host: byte views of the tracked arrays made once, the same launch six times."""
    full_path = full_path_launches(monkeypatch)
    h, w = 11, 19
    img, filt, counter = _image(h, w), FILTER.copy(), np.zeros(1, np.int32)
    blurred, marks = np.zeros((h, w), np.float32), np.zeros((h, w), np.int32)
    for x in (img, filt, blurred, marks, counter):
        hpvm.track_memory(x)
    views = [x.reshape(-1).view(np.uint8) for x in (img, filt, blurred, marks, counter)]
    args = (views[0], views[1], views[2], blurred.nbytes, views[3], views[4], w, h, THETA)
    want_marks = _marks(_blur(img), img)
    for _ in range(6):
        counter[0] = 0
        blurred[:] = -1.0
        assert hpvm.wait(hpvm.launch(root, args, target="cpu")) == _outputs(want_marks)
        np.testing.assert_array_equal(blurred, _blur(img))
        np.testing.assert_array_equal(marks, want_marks)
    for x in (img, filt, blurred, marks, counter):
        hpvm.untrack_memory(x)
    assert full_path[0] <= 3, f"{full_path[0]} of 6 launches took the full path"


def test_on_interp_a_step_is_numpys(root):
    h, w = 13, 21
    args = _launch_args(h, w)
    blurred, marks = args[2], args[4]
    out = hpvm.wait(hpvm.launch(root, args, target="interp"))
    want_marks = _marks(_blur(_image(h, w)), _image(h, w))
    np.testing.assert_array_equal(blurred.view(np.float32).reshape(h, w), _blur(_image(h, w)))
    np.testing.assert_array_equal(marks.view(np.int32).reshape(h, w), want_marks)
    assert out == _outputs(want_marks)


EDGE = "%output = call i8* @llvm.hpvm.createEdge(i8* %BlurBlock_cloned.node, i8* %MarkBlock_cloned.node,"


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_a_one_to_one_edge_between_transposed_grids_names_the_nodes_and_the_line(target):
    # The user's mistake: MarkBlock replicated over (h blocks, w blocks), BlurBlock over
    # (w, h). The sizes are symbolic, so the import takes it; a launch on a square image
    # runs, one on any other is refused before anything runs.
    text = PIPELINE.read_text()
    right = "@MarkBlock_cloned to i8*), i64 %div, i64 %div2)"
    assert text.count(right) == 1
    transposed = text.replace(right, "@MarkBlock_cloned to i8*), i64 %div2, i64 %div)")
    wrong = llvm.from_hpvm_ir(transposed, file=str(PIPELINE))
    line = next(k for k, s in enumerate(text.splitlines(), 1) if s.lstrip().startswith(EDGE))
    square = _launch_args(9, 9)
    want = _marks(_blur(_image(9, 9)), _image(9, 9))
    assert hpvm.wait(hpvm.launch(wrong, square, target=target)) == _outputs(want)
    args = _launch_args(3, 17)
    with fails(
        hpvm.LaunchError,
        "edge BlurBlock_cloned.node.0 -> MarkBlock_cloned.node.1",
        f"(one_to_one, {PIPELINE}:{line})",
        "one-to-one edges need identical grids",
        "'BlurBlock_cloned.node' has [3, 1] instances and 'MarkBlock_cloned.node' [1, 3]",
    ):
        hpvm.wait(hpvm.launch(wrong, args, target=target))
    assert not args[2].any() and not args[4].any()  # (refused before any node ran)
