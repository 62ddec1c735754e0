"""Quick launches on the GPU back ends (``runtime/quick.py``, ``GPUBackend.runs_quick_on_launch``):
a launch whose last run with the same arguments was quick runs inside ``launch`` on the
calling thread, without a worker's two wake-ups (a one-kernel launch's host path 118–137 µs
on a worker, 46–70 µs here: ``benchmarks/gpu.py``). That changes only where it runs: its
arrays stay on the device as a worker's run leaves them, a host write declared between
launches reaches the next quick run, a run's transfers are its own, and an error of the
kernel's node still surfaces at ``wait``."""

from __future__ import annotations

import numpy as np
import pytest

import hpvm
from hpvm.runtime.memory import runtime_tracker
from markers import needs_backend
from programs import r_saxpy_1d as axpy_root  # (y = a·x + y, one instance per element)
from running import every_run_quick

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("hpvm_runtime")]

TARGETS = [pytest.param(t, marks=needs_backend(t)) for t in ("opencl", "cuda")]


@pytest.fixture(autouse=True)
def quick_runs(monkeypatch):
    every_run_quick(monkeypatch, axpy_root)


def _ran_in_launch(handle) -> bool:
    return handle.slot is None and handle.done.is_set()


@pytest.mark.parametrize("target", TARGETS)
def test_a_repeated_gpu_launch_runs_inside_launch_and_keeps_its_arrays_on_the_device(target: str) -> None:
    x = np.arange(64, dtype=np.float32)
    y = np.ones(64, dtype=np.float32)
    for a in (x, y):
        hpvm.track_memory(a)
    # The run key holds where the arrays are: the first launch finds them on the host, the
    # second on the device (a new key); from the third on, the key's last run was quick.
    handles = [hpvm.launch(axpy_root, (x, y, np.float32(2.0)), target=target) for _ in range(1)]
    hpvm.wait(handles[0])
    for _ in range(3):
        handles.append(hpvm.launch(axpy_root, (x, y, np.float32(2.0)), target=target))
        hpvm.wait(handles[-1])
    assert [_ran_in_launch(h) for h in handles] == [False, False, True, True]
    assert all(h.transfers.total == 0 for h in handles[2:])  # (both arrays stay on the device)
    tracker = runtime_tracker()
    assert target in tracker.residency(y) and not tracker.host_only()
    np.testing.assert_array_equal(hpvm.request_memory(y), 1 + 4 * (2 * x))

    # A host write, declared, reaches the next run, quick or not.
    x[:] = 1.0
    hpvm.mark_host_modified(x)
    for _ in range(3):
        hpvm.wait(hpvm.launch(axpy_root, (x, y, np.float32(3.0)), target=target))
    np.testing.assert_array_equal(hpvm.request_memory(y), 1 + 8 * np.arange(64, dtype=np.float32) + 9)


@pytest.mark.parametrize("target", TARGETS)
def test_a_quick_gpu_launch_with_a_wrong_argument_fails_at_launch_as_before(target: str) -> None:
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    for a in (x, y):
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(axpy_root, (x, y, np.float32(1.0)), target=target))
    hpvm.wait(hpvm.launch(axpy_root, (x, y, np.float32(1.0)), target=target))
    untracked = np.zeros(8, np.float32)
    with pytest.raises(hpvm.HPVMError, match="track"):
        hpvm.launch(axpy_root, (untracked, y, np.float32(1.0)), target=target)
