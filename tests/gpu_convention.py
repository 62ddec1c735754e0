"""Programs written in the GPU convention (x the fastest index: ``d[y, x]``, ``d[z, y, x]``,
``d[y * w + x]``), integers only, for the back ends that order instances by a leaf's
accesses (``ir/leafstride.py``: the cpu back end's loop nests, the GPU back ends' direct
launches). ``CASES`` holds each root with its arguments; ``same_as_interp`` runs one on a
back end and on the interpreter and compares everything exactly.

No ``from __future__ import annotations``: the roots are built with their port types as
annotation values.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import hpvm


def grid(shape, seed=0):
    return np.random.default_rng(seed).integers(-50, 50, size=shape, dtype=np.int64)


def run(root, args, target):
    """Launch ``root`` on copies of ``args``; the copies (arrays updated) and the outputs."""
    copies = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    for a in copies:
        if isinstance(a, np.ndarray):
            hpvm.track_memory(a)
    outs = hpvm.wait(hpvm.launch(root, copies, target=target))
    for a in copies:
        if isinstance(a, np.ndarray):
            hpvm.request_memory(a)  # (device back ends keep results until asked)
    return copies, outs


def same_as_interp(root, args, target, disagrees=False):
    """Run ``root`` on ``target`` and on interp; every array and output must be equal."""
    got = run(root, args, target)
    if disagrees:  # instances send different values to an output bind: interp warns
        with pytest.warns(hpvm.HPVMWarning):
            want = run(root, args, "interp")
    else:
        want = run(root, args, "interp")
    for g, w in zip(got[0], want[0]):
        np.testing.assert_array_equal(g, w)
    assert [np.asarray(v).tolist() for v in got[1]] == [np.asarray(v).tolist() for v in want[1]]
    return got


@hpvm.leaf(ins=("src",), outs=("dst",))
def blur2(src: hpvm.i64[:, :], dst: hpvm.i64[:, :]):
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node) + 1
    y = hpvm.get_node_instance_id_y(node) + 1
    dst[y, x] = src[y, x - 1] + 2 * src[y, x + 1] + 3 * src[y - 1, x] + 5 * src[y + 1, x] + 100 * x + y


@hpvm.internal()
def blur2_root(src: hpvm.i64[:, :], dst: hpvm.i64[:, :]):
    n = hpvm.create_node_2d(blur2, src.shape[1] - 2, src.shape[0] - 2)
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_in(n, 1, 1)


@hpvm.leaf(ins=("src",), outs=("dst",))
def stencil3(src: hpvm.i64[:, :, :], dst: hpvm.i64[:, :, :]):
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node) + 1
    y = hpvm.get_node_instance_id_y(node) + 1
    z = hpvm.get_node_instance_id_z(node) + 1
    dst[z, y, x] = (
        src[z, y, x - 1]
        + 2 * src[z, y, x + 1]
        + 3 * src[z, y - 1, x]
        + 5 * src[z, y + 1, x]
        + 7 * src[z - 1, y, x]
        + 11 * src[z + 1, y, x]
        + 1000 * z
        + 100 * y
        + x
    )


@hpvm.internal()
def stencil3_root(src: hpvm.i64[:, :, :], dst: hpvm.i64[:, :, :]):
    n = hpvm.create_node_3d(stencil3, src.shape[2] - 2, src.shape[1] - 2, src.shape[0] - 2)
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_in(n, 1, 1)


@hpvm.leaf(ins=("src",), outs=("dst",))
def y_fastest(src: hpvm.i64[:, :, :], dst: hpvm.i64[:, :, :]):
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    z = hpvm.get_node_instance_id_z(node)
    dst[x, z, y] = 3 * src[x, z, y] + 100 * x + 10 * y + z


@hpvm.internal()
def y_fastest_root(src: hpvm.i64[:, :, :], dst: hpvm.i64[:, :, :]):
    n = hpvm.create_node_3d(y_fastest, src.shape[0], src.shape[2], src.shape[1])
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_in(n, 1, 1)


@hpvm.leaf(ins=("src",), outs=("dst",))
def flat2(src: hpvm.i64[:], dst: hpvm.i64[:], w: hpvm.i64):
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    i = y * w + x
    dst[i] = 3 * src[i] + 100 * y + x


@hpvm.internal()
def flat2_root(src: hpvm.i64[:], dst: hpvm.i64[:], w: hpvm.i64, h: hpvm.i64):
    n = hpvm.create_node_2d(flat2, w, h)
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_in(n, 1, 1)
    hpvm.bind_in(n, 2, 2)


@hpvm.leaf(ins=("src",), outs=("dst",))
def flat3(src: hpvm.i64[:], dst: hpvm.i64[:], w: hpvm.i64, h: hpvm.i64):
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    z = hpvm.get_node_instance_id_z(node)
    dst[(z * h + y) * w + x] = 3 * src[(z * h + y) * w + x] + 1000 * z + 100 * y + x


@hpvm.internal()
def flat3_root(src: hpvm.i64[:], dst: hpvm.i64[:], w: hpvm.i64, h: hpvm.i64, d: hpvm.i64):
    n = hpvm.create_node_3d(flat3, w, h, d)
    for port in range(4):
        hpvm.bind_in(n, port, port)


@hpvm.leaf(ins=("src",), outs=("dst",))
def tile_elem(src: hpvm.i64[:, :], dst: hpvm.i64[:, :], tw: hpvm.i64, th: hpvm.i64):
    node = hpvm.get_node()
    tile = hpvm.get_parent_node(node)
    x = hpvm.get_node_instance_id_x(tile) * tw + hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(tile) * th + hpvm.get_node_instance_id_y(node)
    dst[y, x] = 3 * src[y, x] + 1000 * y + x


@hpvm.internal()
def tile(src: hpvm.i64[:, :], dst: hpvm.i64[:, :], tw: hpvm.i64, th: hpvm.i64):
    n = hpvm.create_node_2d(tile_elem, tw, th)
    for port in range(4):
        hpvm.bind_in(n, port, port)


@hpvm.internal()
def tiles_root(src: hpvm.i64[:, :], dst: hpvm.i64[:, :], tw: hpvm.i64, th: hpvm.i64):
    n = hpvm.create_node_2d(tile, src.shape[1] // tw, src.shape[0] // th)
    for port in range(4):
        hpvm.bind_in(n, port, port)


@hpvm.leaf(ins=("src",))
def first_stage(src: hpvm.i64[:, :]) -> hpvm.i64:
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    return 2 * src[y, x] + 7 * x


@hpvm.leaf(ins=("src",), outs=("dst",))
def second_stage(v: hpvm.i64, src: hpvm.i64[:, :], dst: hpvm.i64[:, :]) -> hpvm.i64:
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    dst[y, x] = v + src[y, x] * 100 + y
    return 1000 * y + x + v  # the last instance's reaches the root's output


@hpvm.internal()
def fused_root(src: hpvm.i64[:, :], dst: hpvm.i64[:, :]) -> hpvm.i64:
    a = hpvm.create_node_2d(first_stage, src.shape[1], src.shape[0])
    b = hpvm.create_node_2d(second_stage, src.shape[1], src.shape[0])
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.bind_in(b, 0, 1)
    hpvm.bind_in(b, 1, 2)
    hpvm.bind_out(b, 0, 0)


@hpvm.leaf(ins=("src", "bins"), outs=("bins",))
def histogram2(src: hpvm.i64[:, :], bins: hpvm.i64[:]):
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    hpvm.atomic_add(bins, (src[y, x] + 50) % bins.shape[0], src[y, x + 1] + y)


@hpvm.internal()
def histogram2_root(src: hpvm.i64[:, :], bins: hpvm.i64[:]):
    n = hpvm.create_node_2d(histogram2, src.shape[1] - 1, src.shape[0])
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_in(n, 1, 1)


@dataclass(frozen=True)
class Case:
    name: str
    root: Any
    args: Callable[[], tuple]
    disagrees: bool = False

    def __str__(self) -> str:
        return self.name


W, H, D = 7, 5, 3
CASES = [
    Case("blur_2d", blur2_root, lambda: (grid((7, 9)), np.zeros((7, 9), np.int64))),
    Case("stencil_3d", stencil3_root, lambda: (grid((5, 6, 7)), np.zeros((5, 6, 7), np.int64))),
    Case("y_fastest_3d", y_fastest_root, lambda: (grid((3, 4, 5)), np.zeros((3, 4, 5), np.int64))),
    Case("flat_2d", flat2_root, lambda: (grid(W * H), np.zeros(W * H, np.int64), W, H)),
    Case("flat_3d", flat3_root, lambda: (grid(W * H * D), np.zeros(W * H * D, np.int64), W, H, D)),
    Case("tiles", tiles_root, lambda: (grid((6, 15)), np.zeros((6, 15), np.int64), 5, 3)),
    Case("fused", fused_root, lambda: (grid((5, 6)), np.zeros((5, 6), np.int64)), disagrees=True),
    Case("histogram_2d", histogram2_root, lambda: (grid((9, 11)), np.zeros(16, np.int64))),
]
