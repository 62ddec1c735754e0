"""An all-pairs n-body step as CUDA's samples write it (``nbody``'s ``bodyBodyInteraction``
and ``computeBodyAccel``): one instance per body, ``float4`` positions with the mass in the
fourth component, a loop over every body with a softening factor, and the integration in a
second node — here as Python leaves in the GPU convention (x the body).

Its force leaf is what the ``cpu`` back end jams (``backends/cpu/jam.py``): 8 neighbouring
bodies per call walk the other bodies together, each with its own sum; it returns the
array it wrote over an edge, as HPVM's stages do, and only the last body's call returns it. The step matches a
NumPy reference, and the jammed run is bit for bit the run with jamming off (each body's
sum keeps its order). A body count that is not a multiple of 8 runs its last bodies plain.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import hpvm
from hpvm.backends.cpu import jam
from hpvm.backends.cpu.backend import CPUBackend

pytestmark = pytest.mark.usefixtures("hpvm_runtime")

SOFTENING_SQUARED = 0.01


@hpvm.leaf(ins=("pos",), outs=("accel",))
def body_accel(pos: hpvm.f32[:, :], accel: hpvm.f32[:, :], eps2: hpvm.f32) -> hpvm.f32[:, :]:
    """The acceleration of body i: Σ_j m_j r_ij / (|r_ij|² + ε²)^(3/2)."""
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    xi = pos[i, 0]
    yi = pos[i, 1]
    zi = pos[i, 2]
    ax = np.float32(0.0)
    ay = np.float32(0.0)
    az = np.float32(0.0)
    for j in range(pos.shape[0]):
        rx = pos[j, 0] - xi
        ry = pos[j, 1] - yi
        rz = pos[j, 2] - zi
        dist2 = rx * rx + ry * ry + rz * rz + eps2
        inv = np.float32(1.0) / np.float32(math.sqrt(dist2))
        s = pos[j, 3] * inv * inv * inv
        ax += rx * s
        ay += ry * s
        az += rz * s
    accel[i, 0] = ax
    accel[i, 1] = ay
    accel[i, 2] = az
    return accel  # (to the integration, over an edge: it runs after every body's force)


@hpvm.leaf(ins=("pos", "vel", "accel"), outs=("pos", "vel"))
def integrate(pos: hpvm.f32[:, :], vel: hpvm.f32[:, :], accel: hpvm.f32[:, :], dt: hpvm.f32):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    for d in range(3):
        vel[i, d] = vel[i, d] + accel[i, d] * dt
        pos[i, d] = pos[i, d] + vel[i, d] * dt


@hpvm.internal()
def step(pos: hpvm.f32[:, :], vel: hpvm.f32[:, :], accel: hpvm.f32[:, :], eps2: hpvm.f32, dt: hpvm.f32):
    forces = hpvm.create_node_1d(body_accel, pos.shape[0])
    hpvm.bind_in(forces, 0, 0)
    hpvm.bind_in(forces, 2, 1)
    hpvm.bind_in(forces, 3, 2)
    moves = hpvm.create_node_1d(integrate, pos.shape[0])
    hpvm.bind_in(moves, 0, 0)
    hpvm.bind_in(moves, 1, 1)
    hpvm.bind_in(moves, 4, 3)
    hpvm.edge(forces, moves, hpvm.ALL_TO_ALL, 0, 2)


def bodies(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    pos = rng.standard_normal((n, 4)).astype(np.float32)
    pos[:, 3] = rng.uniform(0.5, 2.0, n).astype(np.float32)  # masses
    return pos, (0.1 * rng.standard_normal((n, 4))).astype(np.float32), np.zeros((n, 4), np.float32)


def numpy_step(pos: np.ndarray, vel: np.ndarray, eps2: float, dt: float) -> tuple[np.ndarray, np.ndarray]:
    r = pos[None, :, :3].astype(np.float64) - pos[:, None, :3]
    dist2 = (r * r).sum(axis=2) + eps2
    accel = (r * (pos[None, :, 3] / dist2**1.5)[:, :, None]).sum(axis=1)
    new_vel = vel[:, :3] + accel * dt
    return pos[:, :3] + new_vel * dt, new_vel


def run_step(backend, pos, vel, accel, steps=1):  # type: ignore[no-untyped-def]
    pos, vel, accel = pos.copy(), vel.copy(), accel.copy()
    for array in (pos, vel, accel):
        hpvm.track_memory(array)
    for _ in range(steps):
        backend.run(step, [pos, vel, accel, np.float32(SOFTENING_SQUARED), np.float32(0.01)])
    return pos, vel


def test_one_step_matches_numpy():
    pos, vel, accel = bodies(203)  # 25 blocks of 8 bodies and 3 more
    got_pos, got_vel = run_step(CPUBackend(), pos, vel, accel)
    want_pos, want_vel = numpy_step(pos, vel, SOFTENING_SQUARED, 0.01)
    np.testing.assert_allclose(got_vel[:, :3], want_vel, rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(got_pos[:, :3], want_pos, rtol=2e-4, atol=2e-5)
    np.testing.assert_array_equal(got_pos[:, 3], pos[:, 3])  # (the masses stay)


def test_jammed_steps_are_bit_for_bit_the_plain_ones(monkeypatch):
    monkeypatch.setattr(jam.JAM, "enabled", True)  # (even where HPVM_CPU_JAM=0 turned it off)
    pos, vel, accel = bodies(77, seed=1)
    jammed = CPUBackend()
    assert any("_jam0" in symbol for symbol in jammed.prepare(step).gen.variants)
    got = run_step(jammed, pos, vel, accel, steps=3)
    monkeypatch.setattr(jam.JAM, "enabled", False)
    plain = CPUBackend()
    assert not any("_jam" in symbol for symbol in plain.prepare(step).gen.variants)
    want = run_step(plain, pos, vel, accel, steps=3)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
