"""A video pipeline written as HPVM's and CUDA's programmers write one (issue 24, item 2):
four streamed stages over integer frames, each a grid in the GPU convention (instance x
the column, the fastest index; ``d[y, x]``), the first one launched as blocks of 16×4
with a bounds guard over a grid rounded up to whole blocks. Each frame is pushed in a slot
of its own, as ``examples/edge_detection.py`` does. On a 2-core view it runs as whole
items side by side (``streaming.whole_items``), and what it pops is exactly NumPy's and
the interpreter's, in push order."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.backends import get_backend
from hpvm.runtime import replicas, streaming
from stage_overlap import StageOverlap

BLOCK_X, BLOCK_Y = 16, 4


@hpvm.leaf(ins=("src",), outs=("dst",))
def box_block(src: hpvm.i64[:, :], dst: hpvm.i64[:, :]) -> hpvm.i64[:, :]:
    """One thread of a 16×4 block: the 3×3 sum around its pixel, edges clamped, under the
    guard that drops the threads of the last blocks past the frame."""
    node = hpvm.get_node()
    block = hpvm.get_parent_node(node)
    x = hpvm.get_node_instance_id_x(block) * hpvm.get_num_node_instances_x(
        node
    ) + hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(block) * hpvm.get_num_node_instances_y(
        node
    ) + hpvm.get_node_instance_id_y(node)
    h, w = src.shape[0], src.shape[1]
    if x < w and y < h:
        total = 0
        for dy in range(-1, 2):
            yy = min(max(y + dy, 0), h - 1)
            for dx in range(-1, 2):
                xx = min(max(x + dx, 0), w - 1)
                total += src[yy, xx]
        dst[y, x] = total
    return dst


@hpvm.internal()
def box_blocks(src: hpvm.i64[:, :], dst: hpvm.i64[:, :]):
    """One block: BLOCK_X × BLOCK_Y threads."""
    threads = hpvm.create_node_2d(box_block, BLOCK_X, BLOCK_Y)
    hpvm.bind_in(threads, 0, 0)
    hpvm.bind_in(threads, 1, 1)
    hpvm.bind_out(threads, 0, 0)


@hpvm.internal()
def box_grid(src: hpvm.i64[:, :], dst: hpvm.i64[:, :]):
    """The grid of blocks, rounded up to whole blocks (x over columns, y over rows)."""
    blocks = hpvm.create_node_2d(
        box_blocks, (src.shape[1] + BLOCK_X - 1) // BLOCK_X, (src.shape[0] + BLOCK_Y - 1) // BLOCK_Y
    )
    hpvm.bind_in(blocks, 0, 0)
    hpvm.bind_in(blocks, 1, 1)
    hpvm.bind_out(blocks, 0, 0)


@hpvm.leaf(ins=("blurred",), outs=("mag",))
def sobel(blurred: hpvm.i64[:, :], mag: hpvm.i64[:, :]) -> hpvm.i64[:, :]:
    """|gx| + |gy| inside the frame, 0 on its border."""
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    h, w = blurred.shape[0], blurred.shape[1]
    if x == 0 or y == 0 or x == w - 1 or y == h - 1:
        mag[y, x] = 0
    else:
        gx = (
            blurred[y - 1, x + 1] + 2 * blurred[y, x + 1] + blurred[y + 1, x + 1]
            - blurred[y - 1, x - 1] - 2 * blurred[y, x - 1] - blurred[y + 1, x - 1]
        )  # fmt: skip
        gy = (
            blurred[y + 1, x - 1] + 2 * blurred[y + 1, x] + blurred[y + 1, x + 1]
            - blurred[y - 1, x - 1] - 2 * blurred[y - 1, x] - blurred[y - 1, x + 1]
        )  # fmt: skip
        mag[y, x] = abs(gx) + abs(gy)
    return mag


@hpvm.leaf(ins=("mag",), outs=("mask",))
def threshold(mag: hpvm.i64[:, :], mask: hpvm.i64[:, :], t: hpvm.i64) -> hpvm.i64[:, :]:
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    mask[y, x] = 1 if mag[y, x] > t else 0
    return mask


@hpvm.leaf(ins=("mask",), outs=("counts",))
def row_counts(mask: hpvm.i64[:, :], counts: hpvm.i64[:]) -> hpvm.i64[:]:
    """One instance per row: how many of its pixels are edges."""
    y = hpvm.get_node_instance_id_x(hpvm.get_node())
    n = 0
    for x in range(mask.shape[1]):
        n += mask[y, x]
    counts[y] = n
    return counts


@hpvm.internal()
def video(
    frame: hpvm.i64[:, :],
    blurred: hpvm.i64[:, :],
    mag: hpvm.i64[:, :],
    mask: hpvm.i64[:, :],
    counts: hpvm.i64[:],
    t: hpvm.i64,
):
    """frame → box blur (blocks) → Sobel → threshold → edge pixels per row, streamed."""
    h, w = frame.shape[0], frame.shape[1]
    blur = hpvm.create_node(box_grid)
    edges = hpvm.create_node_2d(sobel, w, h)
    cut = hpvm.create_node_2d(threshold, w, h)
    count = hpvm.create_node_1d(row_counts, h)
    hpvm.bind_in(blur, "frame", "src", stream=True)
    hpvm.bind_in(blur, "blurred", "dst", stream=True)
    hpvm.bind_in(edges, "mag", "mag", stream=True)
    hpvm.bind_in(cut, "mask", "mask", stream=True)
    hpvm.bind_in(cut, "t", "t", stream=True)
    hpvm.bind_in(count, "counts", "counts", stream=True)
    hpvm.edge(blur, edges, hpvm.ALL_TO_ALL, 0, "blurred", stream=True)
    hpvm.edge(edges, cut, hpvm.ALL_TO_ALL, 0, "mag", stream=True)
    hpvm.edge(cut, count, hpvm.ALL_TO_ALL, 0, "mask", stream=True)
    hpvm.bind_out(count, 0, 0, stream=True)


def model(frame: np.ndarray, t: int) -> np.ndarray:
    """NumPy's edge pixels per row."""
    h, w = frame.shape
    padded = np.pad(frame, 1, mode="edge")
    blurred = sum(padded[1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    p = np.pad(blurred, 1)
    gx = (p[:-2, 2:] + 2 * p[1:-1, 2:] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[1:-1, :-2] + p[2:, :-2])
    gy = (p[2:, :-2] + 2 * p[2:, 1:-1] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[:-2, 1:-1] + p[:-2, 2:])
    mag = np.abs(gx) + np.abs(gy)
    mag[0, :] = mag[-1, :] = mag[:, 0] = mag[:, -1] = 0
    return (mag > t).sum(axis=1)


SLOTS = 4


def stream(target: str, frames: list[np.ndarray], t: int) -> list[np.ndarray]:
    """Push each frame in a slot of its own, popping the frame ``SLOTS`` before first (its
    slot is then free): the counts per frame, copied, in push order."""
    h, w = frames[0].shape
    slots = [
        (*(np.zeros((h, w), np.int64) for _ in range(4)), np.zeros(h, np.int64))  # frame, ..., counts
        for _ in range(SLOTS)
    ]
    for slot in slots:
        for array in slot:
            hpvm.track_memory(array)
    handle = hpvm.launch(video, None, stream=True, target=target)
    popped: list[np.ndarray] = []

    def pop() -> None:
        (counts,) = hpvm.pop(handle)
        popped.append(hpvm.request_memory(counts).copy())

    for k, frame in enumerate(frames):
        if k >= SLOTS:
            pop()
        slot = slots[k % SLOTS]
        slot[0][...] = frame
        hpvm.push(handle, (*slot, t))
    while len(popped) < len(frames):
        pop()
    hpvm.wait(handle)
    return popped


pytestmark = pytest.mark.usefixtures("hpvm_runtime_stopped")


@pytest.mark.parametrize(("h", "w"), [(37, 53), (64, 64), (5, 16)])
def test_the_video_pipeline_runs_whole_items_with_numpys_and_the_interpreters_counts(monkeypatch, h, w):
    """Frames whose sizes leave partial blocks (37×53: the last blocks' threads past the
    frame are guarded off) and whole ones."""
    monkeypatch.setattr(streaming, "machine_cores", lambda: 2)
    monkeypatch.setattr(replicas, "REPLICA_SECONDS", 0.0)  # (small frames: replicas at once)
    assert streaming.whole_items(get_backend("cpu"), video, streaming.plan_stages(video))
    ran = StageOverlap(monkeypatch).stages
    rng = np.random.default_rng(h * w)
    frames = [rng.integers(0, 256, (h, w), dtype=np.int64) for _ in range(9)]
    t = 600
    got = stream("cpu", frames, t)
    assert len(ran) == 1 and len(next(iter(ran))) == 4, f"one stage of the four nodes, not {ran}"
    reference = stream("interp", frames[:3], t)
    for k, frame in enumerate(frames):
        want = model(frame, t)
        assert want.any() and not want.all(), "the threshold should keep some pixels of each row set"
        np.testing.assert_array_equal(got[k], want, err_msg=f"frame {k}")
        if k < 3:
            np.testing.assert_array_equal(reference[k], want, err_msg=f"interp, frame {k}")
