"""A field program: time steps of a 2-D integer diffusion, written as a CUDA programmer
writes a stencil loop — one kernel in the GPU convention (instance x the column, the
fastest index; ``d[y, x]``), the border left alone under a guard, and a host loop that
launches it once a step and swaps the two grids (``a, b = b, a``) without copying them back.

What it holds on the GPU back ends (``opencl`` on PoCL, ``cuda`` on its simulator): after
the first launches of each order of the two grids, the steps run inside ``launch`` on the
calling thread (``runtime/quick.py``: no worker hand-off), the grids stay on the device
between steps, and the grid the host asks for at the end is exactly NumPy's after the same
steps.
"""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from markers import needs_backend
from running import every_run_quick

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hpvm_runtime")]

TARGETS = [pytest.param(t, marks=needs_backend(t)) for t in ("opencl", "cuda")]


@hpvm.leaf(ins=("src",), outs=("dst",))
def diffuse(src: hpvm.i32[:, :], dst: hpvm.i32[:, :]):
    """One point: the floor of the mean of its four neighbours; the border copied."""
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    h, w = src.shape[0], src.shape[1]
    if x == 0 or y == 0 or x == w - 1 or y == h - 1:
        dst[y, x] = src[y, x]
    else:
        dst[y, x] = (src[y - 1, x] + src[y + 1, x] + src[y, x - 1] + src[y, x + 1]) // 4


@hpvm.internal
def step(src: hpvm.i32[:, :], dst: hpvm.i32[:, :]):
    node = hpvm.create_node_2d(diffuse, src.shape[1], src.shape[0])  # (x over columns, y over rows)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


def numpy_steps(grid: np.ndarray, steps: int) -> np.ndarray:
    a = grid.copy()
    for _ in range(steps):
        b = a.copy()
        b[1:-1, 1:-1] = (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:]) // 4
        a = b
    return a


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("h", "w"), [(24, 40), (7, 5)])
def test_a_host_loop_of_steps_runs_inside_launch_and_ends_with_numpys_grid(monkeypatch, target, h, w) -> None:
    every_run_quick(monkeypatch, step)
    rng = np.random.default_rng(h * w)
    start = rng.integers(0, 1 << 20, (h, w), dtype=np.int32)
    a, b = start.copy(), np.zeros_like(start)
    for grid in (a, b):
        hpvm.track_memory(grid)
    steps = 12
    handles = []
    for _ in range(steps):
        handles.append(hpvm.launch(step, (a, b), target=target))
        hpvm.wait(handles[-1])
        a, b = b, a  # (no copy back: both stay on the device)
    ran_in_launch = [h.slot is None and h.done.is_set() for h in handles]
    # (each order of the two grids: a first run on the host's copies, then one on the
    # device's, both on a worker; the steps after them are quick)
    assert ran_in_launch[4:] == [True] * (steps - 4), ran_in_launch
    assert all(h.transfers.total == 0 for h in handles[4:])
    np.testing.assert_array_equal(hpvm.request_memory(a), numpy_steps(start, steps))
