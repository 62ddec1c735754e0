"""The HLC mapping's one kernel running items whole side by side (``svm_kernels``'
``KernelWork._loop_side_by_side``): when every stage runs in one kernel and its items may run whole at
once (``streaming.whole_items``), each item is a back-end call on a helper thread, as many
at once as there are cores. Results come out in item order; items that share an array they
write run one at a time; a failure reaches pop after the items before it; the helpers end
with the stream.

The rule's conditions (more stages than cores, a back end whose stages release the GIL,
items of at least ``REPLICA_SECONDS``) are set here, so that small programs on ``interp``
leaves (no Numba compile) take that path on any machine."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm.runtime import replicas, svm_kernels, svm_target

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "runtime"))
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import edge_detection  # noqa: E402
import kernels  # noqa: E402
from test_streaming import array_stream, failing_middle  # noqa: E402

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def side_by_side(monkeypatch):
    """Leaves on ``interp``, one kernel for every stage, its items side by side on two
    helpers; no helper left once the runtime is cleaned up."""
    monkeypatch.setenv("HPVM_SVM_LEAVES", "interp")
    monkeypatch.delenv("HPVM_SVM_MACHINE", raising=False)
    monkeypatch.setattr(svm_target, "one_stage", lambda backend, stages: True)
    monkeypatch.setattr(svm_kernels, "whole_items", lambda backend, root, stages: True)
    monkeypatch.setattr(svm_kernels, "machine_cores", lambda: 2)
    monkeypatch.setattr(replicas, "REPLICA_SECONDS", 0.0)
    hpvm.init()
    yield
    hpvm.cleanup()
    assert not [t for t in threading.enumerate() if t.name.startswith("svm-")]


class Calls:
    """Each back-end call of the stream's kernel: on which thread, and how many ran at
    once at most (each call held a little, so that calls that may overlap do)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, hold: float = 0.02) -> None:
        self.threads: list[str] = []
        self.sharing: list[int] = []  # (how many calls each was told share the cores)
        self.running = self.most = 0
        lock = threading.Lock()
        call = svm_kernels.KernelWork.call

        def spied(work, nodes, args, upstream, sharing):  # type: ignore[no-untyped-def]
            with lock:
                self.threads.append(threading.current_thread().name)
                self.sharing.append(sharing)
                self.running += 1
                self.most = max(self.most, self.running)
            try:
                time.sleep(hold)
                return call(work, nodes, args, upstream, sharing)
            finally:
                with lock:
                    self.running -= 1

        monkeypatch.setattr(svm_kernels.KernelWork, "call", spied)


def test_edge_detection_frames_run_side_by_side_with_interps_edges(monkeypatch):
    frames = kernels.synthetic_frames(6, 12)
    pipe = kernels.EdgePipeline(12, 12, 4)
    want = pipe.stream(frames, "interp")
    calls = Calls(monkeypatch)
    got = pipe.stream(frames, "svm")
    assert np.array_equal(got, want)
    assert any(name.startswith("svm-item") for name in calls.threads)
    assert calls.most == 2


def _squares(shared: bool) -> tuple[list[float], list[float]]:
    """Eight items of ``array_stream`` pushed before any pop: each a sum of squares, its
    ``dst`` one array for all (``shared``) or its own."""
    rng = np.random.default_rng(7)
    sources = [rng.random(16) for _ in range(8)]
    one = np.zeros(16)
    outs = [one if shared else np.zeros(16) for _ in sources]
    for a in [*sources, *outs]:
        hpvm.track_memory(a)
    h = hpvm.launch(array_stream, None, stream=True, target="svm")
    for src, dst in zip(sources, outs):
        hpvm.push(h, (src, dst, 16))
    got = [hpvm.pop(h)[0] for _ in sources]
    hpvm.wait(h)
    return got, [float(np.sum(src * src)) for src in sources]


def test_items_of_their_own_arrays_run_at_once_and_come_out_in_order(monkeypatch):
    calls = Calls(monkeypatch)
    got, want = _squares(shared=False)
    np.testing.assert_allclose(got, want)
    assert calls.most == 2


def test_an_item_that_runs_alone_gets_every_core_for_its_loops(monkeypatch):
    """A host that pops each item before it pushes the next: no item has another beside
    it, so none is told to share the cores; with eight pushed at once, they are."""
    calls = Calls(monkeypatch)
    h = hpvm.launch(failing_middle, None, stream=True, target="svm")
    for x in range(4):
        hpvm.push(h, (x,))
        assert hpvm.pop(h) == (100 // (x + 1 - 5),)
    hpvm.wait(h)
    assert calls.sharing == [1] * 4
    calls = Calls(monkeypatch)
    _squares(shared=False)
    assert 2 in calls.sharing


def test_items_writing_one_array_run_one_at_a_time(monkeypatch):
    """Two at once would square into the same ``dst`` and sum each other's squares."""
    calls = Calls(monkeypatch)
    got, want = _squares(shared=True)
    np.testing.assert_allclose(got, want)
    assert calls.most == 1 and len(calls.threads) == 8


def test_a_failing_item_reaches_pop_after_the_items_before_it(monkeypatch):
    """Item 4 fails (``fragile`` divides by zero) while items after it run beside it: pop
    gives the four before it, then raises naming the node; push and wait raise too; the
    items after it are dropped."""
    Calls(monkeypatch)
    h = hpvm.launch(failing_middle, None, stream=True, target="svm")
    for x in range(8):
        try:
            hpvm.push(h, (x,))
        except hpvm.NodeExecutionError:  # (the failure came before this push)
            break
    assert [hpvm.pop(h) for _ in range(4)] == [(100 // (x + 1 - 5),) for x in range(4)]
    with pytest.raises(hpvm.NodeExecutionError, match="fragile") as info:
        hpvm.pop(h)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    with pytest.raises(hpvm.NodeExecutionError, match="fragile"):
        hpvm.wait(h)


def test_cleanup_ends_a_stream_with_items_in_flight(monkeypatch):
    """``hpvm.cleanup`` with items running side by side: it returns, and no helper is
    left (the fixture checks)."""
    Calls(monkeypatch, hold=0.05)
    frames = kernels.synthetic_frames(4, 12)
    pipe = kernels.EdgePipeline(12, 12, 4)
    h = hpvm.launch(edge_detection.root, None, stream=True, target="svm")
    for k, frame in enumerate(frames):
        hpvm.push(h, pipe._load(pipe.slots[k], frame))
    hpvm.cleanup()
    hpvm.init()
