"""The cpu back end orders a replicated Python leaf's instance loops by its accesses
(``graphgen.loop_order``, ``ir/leafstride.py``): the id that indexes arrays at unit stride
runs innermost, x innermost means the whole nest reversed (z outermost, in parallel).

Programs in the GPU convention (x the fastest index: ``d[y, x]``, ``d[z, y, x]``,
``d[y * w + x]``) in 2-D and 3-D nodes, a flattened hierarchy, a fused group, the peeled
last instance and privatized atomics: each gives the interpreter's results exactly
(integers), and its generated loop nest is the one ``loop_order`` chose.
"""

# No ``from __future__ import annotations``: the roots are built with their port types as
# annotation values.

import numpy as np
import pytest

import hpvm
from hpvm.backends import get_backend
from hpvm.backends.cpu.graphgen import loop_order
from hpvm.ir.graph import InternalFunction

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


def run(root, args, target):
    """Launch ``root`` on copies of ``args``; the copies (arrays updated) and the outputs."""
    copies = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    for a in copies:
        if isinstance(a, np.ndarray):
            hpvm.track_memory(a)
    outs = hpvm.wait(hpvm.launch(root, copies, target=target))
    return copies, outs


def same_as_interp(root, args, disagrees=False):
    got = run(root, args, "cpu")
    if disagrees:  # instances send different values to an output bind: interp warns
        with pytest.warns(hpvm.HPVMWarning):
            want = run(root, args, "interp")
    else:
        want = run(root, args, "interp")
    for g, w in zip(got[0], want[0]):
        np.testing.assert_array_equal(g, w)
    assert [np.asarray(v).tolist() for v in got[1]] == [np.asarray(v).tolist() for v in want[1]]
    return got


def generated(root) -> str:
    return "\n".join(get_backend("cpu").prepare(root).gen.sources)


def loops(source: str, prefix: str) -> list[str]:
    """The loop variables of the generated loops whose names start with ``prefix``, in
    nesting order, and the narrowed (vectorized) innermost id last."""
    found = []
    for line in source.splitlines():
        line = line.strip()
        if line.startswith("for ") and line.split()[1].startswith(prefix):
            found.append(line.split()[1])
        if "__hpvm_narrow(" in line and line.startswith(prefix):
            found.append("narrow:" + line.split(" =")[0])
    return found


def grid(shape, seed=0):
    return np.random.default_rng(seed).integers(-50, 50, size=shape, dtype=np.int64)


# -- 2-D, multi-dimensional indexing --------------------------------------------------------


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


def test_2d_gpu_convention_runs_x_innermost():
    (node,) = blur2_root.graph.nodes
    assert loop_order([node]) == (1, 0)
    assert loops(generated(blur2_root), "__hg0_i") == ["__hg0_i1", "__hg0_i0_w", "narrow:__hg0_i0"]
    (src, dst), _ = same_as_interp(blur2_root, (grid((7, 9)), np.zeros((7, 9), np.int64)))
    assert np.all(dst[1:-1, 1:-1] != 0)


# -- 3-D, multi-dimensional indexing --------------------------------------------------------


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


def test_3d_gpu_convention_runs_z_outermost_x_innermost():
    (node,) = stencil3_root.graph.nodes
    assert loop_order([node]) == (2, 1, 0)
    assert loops(generated(stencil3_root), "__hg0_i") == [
        "__hg0_i2",
        "__hg0_i1",
        "__hg0_i0_w",
        "narrow:__hg0_i0",
    ]
    shape = (5, 6, 7)
    (_, dst), _ = same_as_interp(stencil3_root, (grid(shape), np.zeros(shape, np.int64)))
    assert np.all(dst[1:-1, 1:-1, 1:-1] != 0)


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


def test_3d_y_fastest_puts_y_innermost_and_keeps_x_before_z():
    (node,) = y_fastest_root.graph.nodes
    assert loop_order([node]) == (0, 2, 1)
    shape = (3, 4, 5)
    same_as_interp(y_fastest_root, (grid(shape), np.zeros(shape, np.int64)))


# -- flattened indices ------------------------------------------------------------------------


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


def test_flattened_2d_and_3d_indices_run_x_innermost():
    assert loop_order(list(flat2_root.graph.nodes)) == (1, 0)
    assert loop_order(list(flat3_root.graph.nodes)) == (2, 1, 0)
    w, h, d = 7, 5, 3
    (_, dst, *_), _ = same_as_interp(flat2_root, (grid(w * h), np.zeros(w * h, np.int64), w, h))
    assert np.all(dst != 0)
    (_, dst, *_), _ = same_as_interp(flat3_root, (grid(w * h * d), np.zeros(w * h * d, np.int64), w, h, d))
    assert np.count_nonzero(dst) > w * h * d // 2


# -- a flattened hierarchy (flatten.py): tiles × their children as one parallel loop ----------


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


def test_flattened_hierarchy_runs_the_childrens_x_innermost():
    (parent,) = tiles_root.graph.nodes
    assert isinstance(parent.function, InternalFunction)
    (child,) = tile.graph.nodes
    assert loop_order([child]) == (1, 0)
    source = generated(tiles_root)
    assert "__hf0_" in source  # flattened: parents × children in one prange
    # the children's loops: y (split between the chunks), then x (narrowed)
    assert loops(source, "__hg0f_i") == ["__hg0f_i1", "__hg0f_i0_w", "narrow:__hg0f_i0"]
    assert "__hf0_p * __hn0_0_s1" in source  # chunks split the children's y extent
    # 3 × 2 tiles of 5 × 3: 15 rows (y) of 10... with odd extents the chunks cut mid-tile
    tw, th = 5, 3
    shape = (2 * th, 3 * tw)
    (_, dst, *_), _ = same_as_interp(tiles_root, (grid(shape), np.zeros(shape, np.int64), tw, th))
    assert np.all(dst[1:, 1:] != 0)


# -- a fused group, the peeled last instance --------------------------------------------------


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


def test_a_fused_group_follows_the_id_its_leaves_agree_on_and_peels_the_last_instance():
    assert loop_order(list(fused_root.graph.nodes)) == (1, 0)
    shape = (5, 6)
    src = grid(shape)
    (_, dst), (last,) = same_as_interp(fused_root, (src, np.zeros(shape, np.int64)), disagrees=True)
    x, y = shape[1] - 1, shape[0] - 1
    assert last == 1000 * y + x + 2 * src[y, x] + 7 * x  # by id, not the last iteration run


def test_a_fused_group_whose_leaves_disagree_keeps_the_default():
    assert loop_order([next(iter(blur2_root.graph.nodes)), next(iter(y_fastest_root.graph.nodes))]) == (0, 1)


# -- privatized atomics: the chunks split the outermost loop of the order -------------------


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


def test_privatized_atomics_chunk_the_outer_loop_of_the_order():
    assert loop_order(list(histogram2_root.graph.nodes)) == (1, 0)
    assert get_backend("cpu").prepare(histogram2_root).gen.privatized
    assert "__hp0_c * __hn0_s1 // __hp0_nc" in generated(histogram2_root)  # split y
    same_as_interp(histogram2_root, (grid((9, 11)), np.zeros(16, np.int64)))
