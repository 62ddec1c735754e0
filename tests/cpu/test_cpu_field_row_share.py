"""A kernel as CUDA programmers write one, in fixed point: each thread's prefix of its row
(a loop whose trip count is the thread's x), scaled by a gain of ``2**shift`` made by a
loop every thread runs alike, plus the row against the thread's column of weights
(``img[y, t] * wts[t, x]``). The prefix and the gain loop reuse one variable ``k``, as such
kernels do. The cpu back end jams the weights' loop (8 lanes along x); the gain loop runs
per lane in the jammed clone (its ``k`` varies: the prefix loop's), and its gain, the same
for every thread, must still be each lane's own: before ``874b34e`` one lane's gain ran on
into the next's (``2**(3 * (lane + 1))``), and every column past the first of each block of
lanes was wrong. The same kernel with the gain's loop over its own ``t`` makes the gain
once for its lanes.

Run on cpu and on the interpreter, and against NumPy, exactly (integers), for widths that
are and are not a multiple of the lanes.
"""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from markers import needs_backend

pytestmark = [pytest.mark.usefixtures("hpvm_runtime"), needs_backend("cpu")]


@hpvm.leaf(ins=("img", "wts"), outs=("share",))
def row_share(
    img: hpvm.i64[:, :], wts: hpvm.i64[:, :], share: hpvm.i64[:, :], width: hpvm.i64, shift: hpvm.i64
):
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)  # the column: the fastest index
    y = hpvm.get_node_instance_id_y(node)
    upto = 0
    for k in range(x + 1):  # this thread's prefix: x + 1 steps
        upto += img[y, k]
    gain = 1
    for k in range(shift):  # noqa: B007 — a fixed-point gain, 2**shift: alike in every thread
        gain = gain * 2
    dot = 0
    for t in range(width):  # the row against this column's weights: what is jammed
        dot += img[y, t] * wts[t, x]
    share[y, x] = upto * gain + dot


@hpvm.leaf(ins=("img", "wts"), outs=("share",))
def row_share_own_t(
    img: hpvm.i64[:, :], wts: hpvm.i64[:, :], share: hpvm.i64[:, :], width: hpvm.i64, shift: hpvm.i64
):
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    upto = 0
    for k in range(x + 1):
        upto += img[y, k]
    gain = 1
    for t in range(shift):  # noqa: B007 — its own variable: a loop the lanes run together
        gain = gain * 2
    dot = 0
    for t in range(width):
        dot += img[y, t] * wts[t, x]
    share[y, x] = upto * gain + dot


def _root(leaf):
    @hpvm.internal
    def root(
        img: hpvm.i64[:, :], wts: hpvm.i64[:, :], share: hpvm.i64[:, :], width: hpvm.i64, shift: hpvm.i64
    ):
        node = hpvm.create_node_2d(leaf, img.shape[1], img.shape[0])  # x over columns
        for port in range(5):
            hpvm.bind_in(node, port, port)

    return root


ROOTS = {"k reused": _root(row_share), "own t": _root(row_share_own_t)}


def expected(img: np.ndarray, wts: np.ndarray, shift: int) -> np.ndarray:
    return np.cumsum(img, axis=1) * 2**shift + img @ wts


@pytest.mark.parametrize("form", sorted(ROOTS))
@pytest.mark.parametrize("shape", [(3, 16), (5, 21), (2, 7)])
def test_each_thread_gets_its_scaled_prefix_and_its_column(form, shape):
    rng = np.random.default_rng(sum(shape))
    img = rng.integers(1, 100, size=shape, dtype=np.int64)
    wts = rng.integers(-5, 6, size=(shape[1], shape[1]), dtype=np.int64)
    hpvm.track_memory(img)
    hpvm.track_memory(wts)
    want = expected(img, wts, 3)
    for target in ("cpu", "interp"):
        share = np.zeros(shape, np.int64)
        hpvm.track_memory(share)
        hpvm.wait(hpvm.launch(ROOTS[form], (img, wts, share, shape[1], 3), target=target))
        np.testing.assert_array_equal(share, want, err_msg=target)
        hpvm.untrack_memory(share)


def test_which_form_the_cpu_back_end_jams():
    from hpvm.backends.cpu.jam import jam_problem
    from hpvm.passes.clone_leaves import clone_leaf

    assert jam_problem(clone_leaf(row_share).ir, 0) is None
    assert jam_problem(clone_leaf(row_share_own_t).ir, 0) is None
