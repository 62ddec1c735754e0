"""A field program: Rodinia's HotSpot, a chip's temperature stepped in time, written as its
CUDA version writes the kernel — instance x the column (the fastest index), y the row,
``temp[y, x]``, the grid rounded up to whole 16×16 blocks with the work under the guard
``if x < cols and y < rows``, the neighbours clamped at the chip's edge, the chip's
constants (``Cap``, ``Rx``, ``Ry``, ``Rz``, ``step``, the ambient temperature) and the grid's
size (``int``) passed as scalars of a launch. The host loop launches one step at a time and
swaps the two temperature grids (``src, dst = dst, src``) without copying them back.

Run on the GPU back ends (``opencl`` on PoCL, ``cuda`` on its simulator) and ``cpu``, on two
chips one after the other: the same kernel (one array layout, one built program) gets the
second chip's scalar values in its later launches. Each result is NumPy's float32 steps of
the same formula (to a rounding: OpenCL C may fuse a multiply and an add).
"""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from markers import needs_backend

pytestmark = [pytest.mark.usefixtures("hpvm_runtime")]

TARGETS = ["cpu"] + [pytest.param(t, marks=[pytest.mark.gpu, needs_backend(t)]) for t in ("opencl", "cuda")]
BLOCK = 16

# Rodinia's chip: 0.5 mm thick, 16 × 16 mm, silicon's heat capacity and conductivity.
T_CHIP, CHIP_HEIGHT, CHIP_WIDTH = 0.0005, 0.016, 0.016
FACTOR_CHIP, SPEC_HEAT_SI, K_SI, MAX_PD, PRECISION, AMB_TEMP = 0.5, 1.75e6, 100.0, 3.0e6, 0.001, 80.0


@hpvm.leaf(ins=("power", "src"), outs=("dst",))
def calculate_temp(
    power: hpvm.f32[:, :],
    src: hpvm.f32[:, :],
    dst: hpvm.f32[:, :],
    rows: hpvm.i32,
    cols: hpvm.i32,
    cap: hpvm.f32,
    rx: hpvm.f32,
    ry: hpvm.f32,
    rz: hpvm.f32,
    step: hpvm.f32,
    amb_temp: hpvm.f32,
):
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)  # the column
    y = hpvm.get_node_instance_id_y(node)  # the row
    if x < cols and y < rows:
        north = src[max(y - 1, 0), x]
        south = src[min(y + 1, rows - 1), x]
        west = src[y, max(x - 1, 0)]
        east = src[y, min(x + 1, cols - 1)]
        here = src[y, x]
        delta = (step / cap) * (
            power[y, x]
            + (south + north - np.float32(2.0) * here) / ry
            + (east + west - np.float32(2.0) * here) / rx
            + (amb_temp - here) / rz
        )
        dst[y, x] = here + delta


@hpvm.internal
def hotspot_step(
    power: hpvm.f32[:, :],
    src: hpvm.f32[:, :],
    dst: hpvm.f32[:, :],
    rows: hpvm.i32,
    cols: hpvm.i32,
    cap: hpvm.f32,
    rx: hpvm.f32,
    ry: hpvm.f32,
    rz: hpvm.f32,
    step: hpvm.f32,
    amb_temp: hpvm.f32,
):
    grid_x = (cols + BLOCK - 1) // BLOCK * BLOCK
    grid_y = (rows + BLOCK - 1) // BLOCK * BLOCK
    node = hpvm.create_node_2d(calculate_temp, grid_x, grid_y)
    for port in range(11):
        hpvm.bind_in(node, port, port)


def chip_constants(rows: int, cols: int) -> tuple[np.float32, ...]:
    """Rodinia's ``compute_tran_temp`` constants for a grid of ``rows`` × ``cols`` cells."""
    grid_height, grid_width = CHIP_HEIGHT / rows, CHIP_WIDTH / cols
    cap = FACTOR_CHIP * SPEC_HEAT_SI * T_CHIP * grid_width * grid_height
    rx = grid_width / (2.0 * K_SI * T_CHIP * grid_height)
    ry = grid_height / (2.0 * K_SI * T_CHIP * grid_width)
    rz = T_CHIP / (K_SI * grid_height * grid_width)
    step = PRECISION / (MAX_PD / (FACTOR_CHIP * T_CHIP * SPEC_HEAT_SI))
    return tuple(np.float32(v) for v in (cap, rx, ry, rz, step, AMB_TEMP))


def numpy_steps(
    power: np.ndarray, temp: np.ndarray, steps: int, constants: tuple[np.float32, ...]
) -> np.ndarray:
    cap, rx, ry, rz, step, amb = constants
    t = temp.copy()
    for _ in range(steps):
        north = np.vstack([t[:1], t[:-1]])
        south = np.vstack([t[1:], t[-1:]])
        west = np.hstack([t[:, :1], t[:, :-1]])
        east = np.hstack([t[:, 1:], t[:, -1:]])
        two = np.float32(2.0)
        t = t + (step / cap) * (
            power + (south + north - two * t) / ry + (east + west - two * t) / rx + (amb - t) / rz
        )
    return t


def run_chip(target: str, rows: int, cols: int, steps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    power = rng.uniform(0.0, 0.5, (rows, cols)).astype(np.float32)
    start = rng.uniform(323.0, 343.0, (rows, cols)).astype(np.float32)
    src, dst = start.copy(), np.zeros_like(start)
    constants = chip_constants(rows, cols)
    for array in (power, src, dst):
        hpvm.track_memory(array)
    try:
        for _ in range(steps):
            args = (power, src, dst, np.int32(rows), np.int32(cols), *constants)
            hpvm.wait(hpvm.launch(hotspot_step, args, target=target))
            src, dst = dst, src  # (no copy back: both stay where the back end keeps them)
        got = hpvm.request_memory(src).copy()
    finally:
        for array in (power, src, dst):
            hpvm.untrack_memory(array)
    want = numpy_steps(power, start, steps, constants)
    assert np.abs(got - start).max() > 1e-3  # (the chip's temperature moved)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)


@pytest.mark.parametrize("target", TARGETS)
def test_two_chips_step_in_time_as_numpy_steps_them(target: str) -> None:
    run_chip(target, rows=40, cols=56, steps=10, seed=1)  # (grid 64 × 48: the guard cuts it)
    run_chip(target, rows=32, cols=32, steps=7, seed=2)  # (other sizes and constants, same program)
