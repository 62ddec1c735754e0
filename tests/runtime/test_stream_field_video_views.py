"""A video pipeline whose host keeps the whole clip in one array, as a CUDA programmer keeps
a sequence in one device buffer: frame k is pushed as the view ``clip[k]``, and each stage
writes its frame into the view ``plane[k]`` of a (frames, rows, columns) array of its own.
Three streamed stages in the GPU convention (instance x the column, the fastest index;
``d[y, x]``): a 3×3 box sum with clamped edges, a threshold, the edge pixels per row.

What it holds (issue 24, item 2): the items are views of the same few buffers, and the
stream's footprint check (``replicas.Footprint``, in C where the extension is built:
``fastpath.ANY_SHARED``) finds frame k's planes apart from frame k+1's, so on a 2-core view
the items run whole, two at a time; and a host that reuses one scratch plane for every frame
has its items run one at a time — both exactly NumPy's counts, in push order, through the C
check and through NumPy's pairs.
"""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.backends import get_backend
from hpvm.runtime import fastpath, replicas, streaming
from stage_overlap import StageOverlap


@hpvm.leaf(ins=("frame",), outs=("boxed",))
def box3(frame: hpvm.i32[:, :], boxed: hpvm.i32[:, :]) -> hpvm.i32[:, :]:
    """The 3×3 sum around the pixel, the frame's edge repeated past it."""
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    h, w = frame.shape[0], frame.shape[1]
    total = 0
    for dy in range(-1, 2):
        yy = min(max(y + dy, 0), h - 1)
        for dx in range(-1, 2):
            total += frame[yy, min(max(x + dx, 0), w - 1)]
    boxed[y, x] = total
    return boxed


@hpvm.leaf(ins=("boxed",), outs=("mask",))
def above(boxed: hpvm.i32[:, :], mask: hpvm.i32[:, :], t: hpvm.i32) -> hpvm.i32[:, :]:
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    mask[y, x] = 1 if boxed[y, x] > t else 0
    return mask


@hpvm.leaf(ins=("mask",), outs=("counts",))
def per_row(mask: hpvm.i32[:, :], counts: hpvm.i32[:]) -> hpvm.i32[:]:
    """One instance per row: its edge pixels."""
    y = hpvm.get_node_instance_id_x(hpvm.get_node())
    n = 0
    for x in range(mask.shape[1]):
        n += mask[y, x]
    counts[y] = n
    return counts


@hpvm.internal()
def clip_edges(
    frame: hpvm.i32[:, :], boxed: hpvm.i32[:, :], mask: hpvm.i32[:, :], counts: hpvm.i32[:], t: hpvm.i32
):
    """frame → 3×3 box sum → threshold → edge pixels per row, streamed."""
    h, w = frame.shape[0], frame.shape[1]
    box = hpvm.create_node_2d(box3, w, h)
    cut = hpvm.create_node_2d(above, w, h)
    rows = hpvm.create_node_1d(per_row, h)
    hpvm.bind_in(box, "frame", "frame", stream=True)
    hpvm.bind_in(box, "boxed", "boxed", stream=True)
    hpvm.bind_in(cut, "mask", "mask", stream=True)
    hpvm.bind_in(cut, "t", "t", stream=True)
    hpvm.bind_in(rows, "counts", "counts", stream=True)
    hpvm.edge(box, cut, hpvm.ALL_TO_ALL, 0, "boxed", stream=True)
    hpvm.edge(cut, rows, hpvm.ALL_TO_ALL, 0, "mask", stream=True)
    hpvm.bind_out(rows, 0, 0, stream=True)


def model(frame: np.ndarray, t: int) -> np.ndarray:
    h, w = frame.shape
    padded = np.pad(frame, 1, mode="edge")
    boxed = sum(padded[1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    return (boxed > t).sum(axis=1).astype(np.int32)


def stream_clip(clip: np.ndarray, t: int, one_scratch: bool) -> np.ndarray:
    """Push every frame of ``clip`` as a view, each stage writing the view of its frame in
    a plane array of its own (``one_scratch``: the box sums of every frame in one plane);
    pop the counts of every frame, in push order, as rows of one array."""
    frames, h, w = clip.shape
    boxed = np.zeros((1 if one_scratch else frames, h, w), np.int32)
    mask = np.zeros((frames, h, w), np.int32)
    counts = np.zeros((frames, h), np.int32)
    for array in (clip, boxed, mask, counts):
        hpvm.track_memory(array)
    try:
        handle = hpvm.launch(clip_edges, None, stream=True, target="cpu")
        for k in range(frames):
            hpvm.push(handle, (clip[k], boxed[0 if one_scratch else k], mask[k], counts[k], np.int32(t)))
        for _ in range(frames):
            hpvm.pop(handle)
        hpvm.wait(handle)
        return hpvm.request_memory(counts).copy()
    finally:
        for array in (clip, boxed, mask, counts):
            hpvm.untrack_memory(array)


pytestmark = pytest.mark.usefixtures("hpvm_runtime_stopped")


@pytest.mark.parametrize("c_check", [True, False], ids=["C", "NumPy pairs"])
@pytest.mark.parametrize("one_scratch", [False, True], ids=["planes", "one scratch plane"])
def test_frames_pushed_as_views_of_one_clip_run_side_by_side_unless_they_share_a_plane(
    monkeypatch, one_scratch: bool, c_check: bool
) -> None:
    if c_check and fastpath.ANY_SHARED is None:
        pytest.skip(fastpath.REASON or "the extension has no any_shared")
    if not c_check:
        monkeypatch.setattr(fastpath, "ANY_SHARED", None)
    monkeypatch.setattr(streaming, "machine_cores", lambda: 2)
    monkeypatch.setattr(type(get_backend("cpu")), "loop_threads", lambda self: 1)  # (each replica one core)
    monkeypatch.setattr(replicas, "REPLICA_SECONDS", 0.0)  # (replicas from the first timed item)
    assert streaming.whole_items(get_backend("cpu"), clip_edges, streaming.plan_stages(clip_edges))
    rng = np.random.default_rng(11)
    clip = rng.integers(0, 256, (12, 512, 384), dtype=np.int32)  # (items of milliseconds: they overlap)
    t = 9 * 128
    stream_clip(
        clip[:2], t, one_scratch
    )  # (compiles, and gives the stage a time: replicas from the first item)
    overlap = StageOverlap(monkeypatch)
    got = stream_clip(clip, t, one_scratch)
    for k in range(len(clip)):
        want = model(clip[k], t)
        assert want.any() and (want < clip.shape[2]).any(), "some pixels above the threshold, some not"
        np.testing.assert_array_equal(got[k], want, err_msg=f"frame {k}")
    assert len(overlap.stages) == 1, overlap.stages  # (whole items: one stage of the three nodes)
    # Views of one clip and of per-frame planes are apart: two frames at once (2 cores);
    # one scratch plane written by every frame: one at a time.
    assert overlap.most == (1 if one_scratch else 2), overlap.most
