"""A graph that mixes devices for real: CPU leaves on ``cpu``, a GPU-hinted leaf on ``cuda``
(the simulator here), with the memory tracker moving only what each part needs."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import hpvm
from hpvm.backends import available_backends
from hpvm.runtime.memory import runtime_tracker
from mixed_programs import cpu_gpu_cpu, scaled, shifted, streamed, summed

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif("cuda" not in available_backends(), reason="numba-cuda is not installed"),
]


@pytest.fixture(autouse=True)
def runtime(monkeypatch):
    monkeypatch.setattr(importlib.import_module("hpvm.runtime.launch"), "_CHOICES", {})
    hpvm.init()
    yield
    hpvm.cleanup()


def test_cpu_then_gpu_then_cpu() -> None:
    n = 64
    x = np.arange(n, dtype=np.float64)
    out = np.zeros(n)
    total = np.zeros(1)
    for a in (x, out, total):
        hpvm.track_memory(a)
    handle = hpvm.launch(cpu_gpu_cpu, (x, out, total, 2.0, n))
    assert handle.backend.name == "cpu+cuda"
    s, last = hpvm.wait(handle)
    # 'summed' (cpu) read what 'shifted' (cuda) wrote: the tracker brought it back first.
    assert s == (x * 2.0 + 1.0).sum() and total[0] == s and last == n - 1
    moved = handle.transfers
    assert moved.to_device == out.nbytes  # only the array the GPU part uses went over
    assert moved.to_host == out.nbytes  # and came back once, for the CPU part that reads it
    assert runtime_tracker().residency(out) == {"host"}  # the CPU part may write it: host only
    np.testing.assert_array_equal(hpvm.request_memory(out), x * 2.0 + 1.0)


def test_streaming_stages_on_different_devices() -> None:
    x = np.arange(8, dtype=np.float64)
    out = np.zeros(8)
    total = np.zeros(1)
    for a in (x, out, total):
        hpvm.track_memory(a)
    handle = hpvm.launch(streamed, None, stream=True, capacity=2)
    results = []
    for k in (1.0, 2.0, 3.0):  # one item at a time: every item reuses the same 'out'
        hpvm.push(handle, (x, out, total, k, 8))
        results.append(hpvm.pop(handle)[0])
    hpvm.wait(handle)
    assert results == [(x * k + 1.0).sum() for k in (1.0, 2.0, 3.0)]


@hpvm.internal
def stage_per_node(x: hpvm.f64[:], out: hpvm.f64[:], total: hpvm.f64[:], k: hpvm.f64, n: hpvm.i64):
    a = hpvm.create_node_1d(scaled, n)  # cpu
    b = hpvm.create_node_1d(shifted, n)  # cuda
    c = hpvm.create_node(summed)  # cpu
    hpvm.bind_in(a, 0, 0)
    hpvm.bind_in(a, 3, 1)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)  # per-instance scalars: cpu stage -> cuda stage
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 1, 1, stream=True)
    hpvm.bind_in(b, 1, 2)
    hpvm.edge(b, c, hpvm.ALL_TO_ALL, 0, 0, stream=True)  # an array: cuda stage -> cpu stage
    hpvm.bind_in(c, 2, 1)
    hpvm.bind_out(c, 0, 0)


def test_cuda_stages_exchange_values_with_stages_on_other_back_ends() -> None:
    """docs/backends/gpu.md once said they could not."""
    x = np.arange(8, dtype=np.float64)
    out = np.zeros(8)
    total = np.zeros(1)
    for a in (x, out, total):
        hpvm.track_memory(a)
    handle = hpvm.launch(stage_per_node, None, stream=True, capacity=2)
    assert handle.backend.name == "cpu+cuda"
    results = []
    for k in (1.0, 2.0, 3.0):
        hpvm.push(handle, (x, out, total, k, 8))
        results.append(hpvm.pop(handle)[0])
    hpvm.wait(handle)
    assert results == [(x * k + 1.0).sum() for k in (1.0, 2.0, 3.0)]
