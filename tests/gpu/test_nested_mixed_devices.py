"""Nested mixed-device programs for real: CPU parts on ``cpu``, GPU-hinted parts on ``opencl``
(PoCL here) or ``cuda`` (the simulator here), each against ``interp`` exactly."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import hpvm
from hpvm.backends import available_backends, base, get_backend
from mixed_programs import NESTED, NestedCase, check_nested

pytestmark = pytest.mark.gpu

GPUS = [
    pytest.param(
        name, marks=pytest.mark.skipif(name not in available_backends(), reason=f"no {name} back end here")
    )
    for name in ("opencl", "cuda")
]


@pytest.fixture(params=GPUS)
def gpu(request, monkeypatch) -> str:
    monkeypatch.setitem(base.HINT_PREFERENCES, hpvm.GPU_TARGET, (request.param,))
    monkeypatch.setattr(importlib.import_module("hpvm.runtime.launch"), "_CHOICES", {})
    hpvm.init()
    yield request.param
    hpvm.cleanup()


@pytest.mark.parametrize("case", NESTED, ids=str)
def test_nested_program_on_cpu_and_gpu(gpu: str, case: NestedCase) -> None:
    handle = check_nested(case, f"cpu+{gpu}")
    moved = handle.transfers
    assert moved.to_device > 0 and moved.to_host > 0  # each boundary moved data, counted


def test_a_gpu_node_of_gpu_leaves_stays_one_call(gpu: str, monkeypatch) -> None:
    backend = get_backend(gpu)
    calls = []
    original = backend.run_stage

    def spy(root, args, nodes, upstream, ctx=None):  # type: ignore[no-untyped-def]
        calls.append((root.name, [n.name for n in nodes]))
        return original(root, args, nodes, upstream, ctx)

    monkeypatch.setattr(backend, "run_stage", spy)
    (case,) = [c for c in NESTED if c.name == "three_level"]
    check_nested(case, f"cpu+{gpu}")
    m = case.make_args()[-1]
    # per instance of 'outer': tile's GPU leaf, then gpu_block whole (its leaf inside it)
    assert calls == [("tile", ["gpu_tile"]), ("outer", ["gpu_block"])] * m


def test_the_tracker_moves_what_each_instance_needs(gpu: str) -> None:
    (case,) = [c for c in NESTED if c.name == "replicated_parent"]
    x, y, sums, doubled, k, m = case.make_args()
    for a in (x, y, sums, doubled):
        hpvm.track_memory(a)
    handle = hpvm.launch(case.root, (x, y, sums, doubled, k, m))
    hpvm.wait(handle)
    t = np.repeat(np.arange(m), k)
    np.testing.assert_array_equal(hpvm.request_memory(y), x * 3 + t)
    np.testing.assert_array_equal(hpvm.request_memory(doubled), 2 * (x * 3 + t).reshape(m, k).sum(axis=1))
    # x goes to the GPU once (no host part reaches it). Per instance, y comes back for the
    # CPU part (the GPU part wrote it) and goes to the GPU again: the CPU part may write it
    # as far as the tracker knows (which parameters a part writes is judged for the whole
    # level, where the GPU leaf writes y). sums and doubled never leave the host.
    assert handle.transfers.to_host == m * y.nbytes
    assert handle.transfers.to_device == x.nbytes + m * y.nbytes
