"""CUDA's coalesced matrix transpose as NVIDIA's "An Efficient Matrix Transpose in CUDA
C/C++" writes it (``transposeCoalesced``): a thread block per TILE×TILE tile, each thread
loading ``idata[y][x]`` into a shared tile at ``[threadIdx.y][threadIdx.x]``, a
``__syncthreads()``, then writing ``tile[threadIdx.x][threadIdx.y]`` to the transposed
block's position — here as HPVM's Python leaves in the GPU convention (x the fastest
index): a 2-D grid of tiles, each an allocation node (``hpvm.malloc``: the shared tile)
and a 2-D leaf with a barrier.

It checks the transpose against NumPy on ``cpu`` and ``interp`` for non-square matrices,
and the mistake CUDA programmers make with this kernel: the padded tile of the article
(``tile[TILE][TILE + 1]``, against shared-memory bank conflicts) indexed with the padding
but allocated without it. ``cpu``'s checked mode names the node, the line, the buffer and
an instance that indexes past it (its ids from the leaf's group function: ``checked.py``),
in the node's path, the tile block's too, as ``interp`` does (``transpose_root/tile_block[0,
0]/transpose_coalesced[1, 7]``; checked mode names the buffer by the view the leaf
indexes, ``interp`` by the port).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import hpvm
from hpvm.errors import OutOfBoundsError
from markers import SourceMarkers
from running import run_tracked

MARKS = SourceMarkers(__file__)
pytestmark = pytest.mark.usefixtures("hpvm_runtime")

TILE = 8


@hpvm.leaf()
def shared_tile(words: hpvm.i64) -> hpvm.u8[:]:
    """The tile's shared memory: one buffer per instance of the parent (per thread block)."""
    return hpvm.malloc(words * 4)


@hpvm.leaf(ins=("idata", "tile"), outs=("odata", "tile"))
def transpose_coalesced(
    idata: hpvm.f32[:, :], odata: hpvm.f32[:, :], tile: hpvm.u8[:], pitch: hpvm.i64
) -> None:
    """One thread of ``transposeCoalesced``: ``pitch`` is the tile's row length in floats."""
    thread = hpvm.get_node()
    block = hpvm.get_parent_node(thread)
    tx = hpvm.get_node_instance_id_x(thread)
    ty = hpvm.get_node_instance_id_y(thread)
    tile_dim = hpvm.get_num_node_instances_x(thread)
    bx = hpvm.get_node_instance_id_x(block)
    by = hpvm.get_node_instance_id_y(block)
    shared = tile.view(np.float32)
    x = bx * tile_dim + tx
    y = by * tile_dim + ty
    shared[ty * pitch + tx] = idata[y, x]  # @load
    hpvm.barrier()
    x = by * tile_dim + tx  # the transposed block's offset
    y = bx * tile_dim + ty
    odata[y, x] = shared[tx * pitch + ty]


@hpvm.internal()
def tile_block(idata: hpvm.f32[:, :], odata: hpvm.f32[:, :], pitch: hpvm.i64, words: hpvm.i64):
    alloc = hpvm.create_node(shared_tile)
    threads = hpvm.create_node_2d(transpose_coalesced, TILE, TILE)
    hpvm.bind_in(alloc, 3, 0)
    hpvm.bind_in(threads, 0, 0)
    hpvm.bind_in(threads, 1, 1)
    hpvm.edge(alloc, threads, hpvm.ALL_TO_ALL, 0, 2)
    hpvm.bind_in(threads, 2, 3)


@hpvm.internal()
def transpose_root(idata: hpvm.f32[:, :], odata: hpvm.f32[:, :], pitch: hpvm.i64, words: hpvm.i64):
    """A grid of (columns / TILE) × (rows / TILE) thread blocks: dimGrid of the article."""
    blocks = hpvm.create_node_2d(tile_block, idata.shape[1] // TILE, idata.shape[0] // TILE)
    for port in range(4):
        hpvm.bind_in(blocks, port, port)


def _transpose(rows: int, cols: int, target: str, pitch: int = TILE, words: int = TILE * TILE) -> np.ndarray:
    idata = np.random.default_rng(rows * cols).standard_normal((rows, cols)).astype(np.float32)
    odata = np.zeros((cols, rows), np.float32)
    run_tracked(transpose_root, (idata, odata, pitch, words), target)
    np.testing.assert_array_equal(odata, idata.T)
    return odata


@pytest.mark.parametrize("target", ["cpu", "interp"])
@pytest.mark.parametrize(("rows", "cols"), [(TILE, TILE), (3 * TILE, 5 * TILE), (4 * TILE, 2 * TILE)])
def test_the_tiled_transpose_is_numpys(target: str, rows: int, cols: int) -> None:
    _transpose(rows, cols, target)


def test_the_padded_tile_of_the_article_gives_the_same_transpose() -> None:
    """``tile[TILE][TILE + 1]``: the padding changes where threads meet in shared memory,
    not the result."""
    _transpose(2 * TILE, 3 * TILE, "cpu", pitch=TILE + 1, words=TILE * (TILE + 1))


def _padded_without_room(target: str) -> str:
    with pytest.raises(OutOfBoundsError) as raised:
        _transpose(2 * TILE, 2 * TILE, target, pitch=TILE + 1, words=TILE * TILE)
    return str(raised.value)


def test_checked_mode_names_an_instance_that_indexes_past_the_unpadded_tile(checked: None) -> None:
    """Thread (tx, ty) stores at ty * 9 + tx: past the 64 floats for ty = 7 and tx >= 1 — in
    the first tile block (those past it may not run: a thread reports the first failure)."""
    message = _padded_without_room("cpu")
    assert MARKS.at("load") in message and "of 'shared' with size 64" in message, message
    found = re.search(
        r"^node transpose_root/tile_block\[(\d), (\d)\]/transpose_coalesced\[(\d), (\d)\] .*index (\d+) is out",
        message,
    )
    assert found, message
    bx, by, tx, ty, index = (int(g) for g in found.groups())
    assert (ty, index) == (TILE - 1, ty * (TILE + 1) + tx) and tx >= 1, message
    assert 0 <= bx < 2 and 0 <= by < 2, message


def test_the_interpreter_names_the_instance_the_same_way() -> None:
    message = _padded_without_room("interp")
    found = re.search(
        r"^node transpose_root/tile_block\[\d, \d\]/transpose_coalesced\[(\d), (\d)\] ", message
    )
    assert found and int(found.group(2)) == TILE - 1 and int(found.group(1)) >= 1, message
