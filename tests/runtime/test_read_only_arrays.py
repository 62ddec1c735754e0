"""Read-only arrays (``flags.writeable = False``) and the graphs that write them.

A read-only array may be read by any graph. Given where a leaf writes it, ``launch`` and
``push`` refuse it, naming the argument and the leaf (before, ``interp`` blamed a missing
``outs`` entry, ``cpu`` failed to compile the store, and the GPU back ends ran and then
failed to copy the result back — at ``request_memory`` and at every later ``cleanup``).
Cleanup always finishes: contents that cannot be copied back are reported once.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import hpvm
from hpvm.backends.memory import HOST, MemoryTracker
from hpvm.runtime import Runtime
from markers import fails, needs_backend

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


@hpvm.leaf(ins=("a",), outs=("c",))
def copy(a: hpvm.f32[:], c: hpvm.f32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    c[i] = a[i] + 1


@hpvm.internal
def copy_root(a: hpvm.f32[:], c: hpvm.f32[:]):
    node = hpvm.create_node_1d(copy, a.shape[0])
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_in(node, 1, 1)


@hpvm.internal
def nested_root(src: hpvm.f32[:], dst: hpvm.f32[:]):
    inner = hpvm.create_node(copy_root)
    hpvm.bind_in(inner, 0, 0)
    hpvm.bind_in(inner, 1, 1)


@hpvm.leaf(ins=("a",))
def forward(a: hpvm.f32[:]) -> hpvm.f32[:]:
    return a


@hpvm.leaf(outs=("b",))
def zero(b: hpvm.f32[:]):
    b[0] = 0


@hpvm.internal
def forwarded_root(a: hpvm.f32[:]):
    f = hpvm.create_node(forward)
    z = hpvm.create_node(zero)
    hpvm.bind_in(f, 0, 0)
    hpvm.edge(f, z, hpvm.ALL_TO_ALL, 0, 0)


@hpvm.leaf(ins=("a",))
def fresh(a: hpvm.f32[:]) -> hpvm.f32[:]:
    out = np.zeros(1, np.float32)
    out[0] = a[0]
    return out


@hpvm.internal
def fresh_root(a: hpvm.f32[:]):
    f = hpvm.create_node(fresh)
    z = hpvm.create_node(zero)
    hpvm.bind_in(f, 0, 0)
    hpvm.edge(f, z, hpvm.ALL_TO_ALL, 0, 0)


def tracked(*arrays: np.ndarray, writeable: bool = True) -> None:
    for a in arrays:
        a.flags.writeable = writeable
        hpvm.track_memory(a)


@pytest.mark.parametrize("target", ["interp", "cpu", pytest.param("cuda", marks=needs_backend("cuda"))])
def test_launch_refuses_a_read_only_array_a_leaf_writes(target: str) -> None:
    a, c = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    tracked(a)
    tracked(c, writeable=False)
    with fails(
        hpvm.LaunchError,
        "launch(): argument 1 ('c') of 'copy_root' is a read-only array",
        "leaf 'copy'",
        "writes it as parameter 'c', which its outs declares",
        "np.array(c)",
    ):
        hpvm.launch(copy_root, (a, c), target=target)


def test_read_only_arrays_that_are_only_read_run() -> None:
    a, c = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    tracked(a, writeable=False)
    tracked(c)
    hpvm.wait(hpvm.launch(copy_root, (a, c), target="interp"))
    np.testing.assert_array_equal(c, a + 1)


def test_the_writer_is_found_through_nested_graphs() -> None:
    a, c = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    tracked(a)
    tracked(c, writeable=False)
    with fails(hpvm.LaunchError, "argument 1 ('dst') of 'nested_root'", "leaf 'copy'", "parameter 'c'"):
        hpvm.launch(nested_root, (a, c), target="interp")


def test_the_writer_is_found_along_edges_that_carry_the_array() -> None:
    a = np.arange(4, dtype=np.float32)
    tracked(a, writeable=False)
    with fails(hpvm.LaunchError, "argument 0 ('a') of 'forwarded_root'", "leaf 'zero'", "parameter 'b'"):
        hpvm.launch(forwarded_root, (a,), target="interp")


def test_an_array_a_leaf_makes_is_not_its_read_only_input() -> None:
    a = np.arange(4, dtype=np.float32)
    tracked(a, writeable=False)
    assert hpvm.wait(hpvm.launch(fresh_root, (a,), target="interp")) == ()


def test_push_refuses_a_read_only_array_a_leaf_writes() -> None:
    a, c = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    tracked(a)
    tracked(c, writeable=False)
    handle = hpvm.launch(copy_root, None, stream=True, target="interp")
    with fails(hpvm.LaunchError, "push(): argument 1 ('c') of 'copy_root' is a read-only array"):
        hpvm.push(handle, (a, c))
    hpvm.wait(handle)


def test_a_read_only_subclass_is_refused_too() -> None:
    class Sub(np.ndarray):
        pass

    a = np.arange(4, dtype=np.float32)
    c = np.zeros(4, np.float32).view(Sub)  # not the exact type: the slow path checks it
    tracked(a)
    tracked(c, writeable=False)
    with fails(hpvm.LaunchError, "argument 1 ('c')", "read-only"):
        hpvm.launch(copy_root, (a, c), target="interp")


@needs_backend("cuda")
def test_contents_that_cannot_come_back_are_reported_once_and_cleanup_finishes() -> None:
    """Made read-only after the launch, the array cannot take the device's results."""
    a, c = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    tracked(a, c)
    hpvm.wait(hpvm.launch(copy_root, (a, c), target="cuda"))
    c.flags.writeable = False
    with fails(hpvm.MemoryTrackingError, "is read-only", "computed on cuda", "flags.writeable = True"):
        hpvm.request_memory(c)
    with fails(hpvm.MemoryTrackingError, "hpvm.cleanup() finished", "1 array(s)", "read-only"):
        hpvm.cleanup()
    hpvm.cleanup()  # nothing left to report
    hpvm.init()
    hpvm.cleanup()


class FailingDevice:
    """A device whose copies back to the host fail (a lost GPU, a driver error)."""

    name = "fake"

    def to_device(self, host: np.ndarray) -> Any:
        return host.copy()

    def copy_to_host(self, handle: Any, host: np.ndarray) -> None:
        raise ValueError("device lost")

    def copy_to_device(self, host: np.ndarray, handle: Any) -> None:
        handle[...] = host

    def view(self, base_handle: Any, base: np.ndarray, view: np.ndarray) -> Any:
        return base_handle


def test_a_failing_copy_back_is_a_memory_tracking_error_not_the_devices() -> None:
    tracker = MemoryTracker()
    a = np.zeros(4)
    tracker.track(a)
    tracker.device_copy(a, FailingDevice(), None)
    tracker.device_wrote(a, FailingDevice())
    with fails(
        hpvm.MemoryTrackingError, "copying the (4,) float64 array", "back from fake failed", "device lost"
    ):
        tracker.request(a)
    assert tracker.residency(a) == {"fake"}  # the device copy is still the valid one
    assert HOST not in tracker.residency(a)


def test_cleanup_forgets_everything_and_ends_threads_when_a_copy_back_fails() -> None:
    runtime = Runtime()
    runtime.init()
    a, c = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    runtime.track_memory(a)
    runtime.track_memory(c)
    before = set(threading.enumerate())
    runtime.launch(copy_root, (a, c), target="interp")  # starts a worker, never waited for
    started = set(threading.enumerate()) - before
    runtime.tracker.device_copy(a, FailingDevice(), None)
    runtime.tracker.device_wrote(a, FailingDevice())
    with fails(hpvm.MemoryTrackingError, "1 array(s) could not be copied back", "device lost"):
        runtime.cleanup()
    assert len(runtime.tracker) == 0 and not runtime.initialized
    assert started and not any(t.is_alive() for t in started)
    runtime.cleanup()  # reported once: nothing left
