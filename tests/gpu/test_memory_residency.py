"""The memory tracker across address spaces: device copies made on first use and kept,
copied back on request / untrack / for host back ends, invalidated by declared host writes,
and the bytes each launch moved."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import hpvm
from hpvm.runtime.memory import runtime_tracker
from markers import fails

pytestmark = pytest.mark.gpu


@hpvm.leaf(ins=("x", "y"), outs=("y",))
def axpy(x: hpvm.f64[:], y: hpvm.f64[:], a: hpvm.f64):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    y[i] = a * x[i] + y[i]


@hpvm.internal
def r_axpy(x: hpvm.f64[:], y: hpvm.f64[:], a: hpvm.f64):
    k = hpvm.create_node_1d(axpy, x.shape[0])
    for port in range(3):
        hpvm.bind_in(k, port, port)


@pytest.fixture
def arrays() -> Iterator[tuple[np.ndarray, np.ndarray]]:
    hpvm.init()
    x = np.arange(16, dtype=np.float64)
    y = np.ones(16, dtype=np.float64)
    hpvm.track_memory(x)
    hpvm.track_memory(y)
    yield x, y
    hpvm.cleanup()


def run(x: np.ndarray, y: np.ndarray, a: float = 2.0, target: str = "cuda") -> hpvm.runtime.LaunchHandle:
    handle = hpvm.launch(r_axpy, (x, y, a), target=target)
    hpvm.wait(handle)
    return handle


def where(a: np.ndarray) -> set[str]:
    return runtime_tracker().residency(a)


def test_first_launch_copies_inputs_and_results_stay_on_the_device(arrays) -> None:
    x, y = arrays
    first = run(x, y)
    assert first.transfers.to_device == x.nbytes + y.nbytes
    assert first.transfers.to_host == 0 and first.transfers.copies == 2
    assert where(x) == {"host", "cuda"}  # only read: both copies stay valid
    assert where(y) == {"cuda"}  # written by the kernel: the host copy is stale
    assert (y == 1).all()  # nothing was copied back


def test_second_launch_does_not_copy_again(arrays) -> None:
    x, y = arrays
    run(x, y)
    second = run(x, y)
    assert second.transfers.to_device == 0 and second.transfers.to_host == 0
    assert hpvm.request_memory(y) is y
    np.testing.assert_array_equal(y, 2 * (2 * x) + 1)  # both launches' results, on the device


def test_request_memory_copies_back_once(arrays) -> None:
    x, y = arrays
    run(x, y)
    before = hpvm.memory_stats()
    hpvm.request_memory(y)
    after = hpvm.memory_stats()
    assert after.to_host - before.to_host == y.nbytes
    np.testing.assert_array_equal(y, 2 * x + 1)
    assert where(y) == {"host", "cuda"}
    hpvm.request_memory(y)  # already current: no copy
    assert hpvm.memory_stats().to_host == after.to_host


def test_declared_host_write_invalidates_the_device_copy(arrays) -> None:
    x, y = arrays
    run(x, y)
    hpvm.request_memory(y)
    y[:] = 100.0
    hpvm.mark_host_modified(y)
    assert where(y) == {"host"}
    again = run(x, y)
    assert again.transfers.to_device == y.nbytes  # y again; x was not touched
    hpvm.request_memory(y)
    np.testing.assert_array_equal(y, 2 * x + 100)


def test_undeclared_host_write_is_not_seen(arrays) -> None:
    """Without mark_host_modified the device keeps using its copy (that is the contract)."""
    x, y = arrays
    run(x, y)
    hpvm.request_memory(y)
    y[:] = 100.0
    run(x, y)
    hpvm.request_memory(y)
    np.testing.assert_array_equal(y, 2 * (2 * x) + 1)


def test_declaring_a_write_to_a_stale_host_copy_is_an_error(arrays) -> None:
    x, y = arrays
    run(x, y)
    with fails(hpvm.MemoryTrackingError, "mark_host_modified()", "not current", "cuda", "request_memory"):
        hpvm.mark_host_modified(y)
    with fails(hpvm.MemoryTrackingError, "mark_host_modified()", "not tracked"):
        hpvm.mark_host_modified(np.zeros(3))


def test_untrack_keeps_the_device_results(arrays) -> None:
    x, y = arrays
    run(x, y)
    hpvm.untrack_memory(y)
    np.testing.assert_array_equal(y, 2 * x + 1)
    with fails(hpvm.MemoryTrackingError, "not tracked"):
        runtime_tracker().residency(y)


def test_cleanup_keeps_the_device_results(arrays) -> None:
    x, y = arrays
    run(x, y)
    hpvm.cleanup()
    np.testing.assert_array_equal(y, 2 * x + 1)
    hpvm.init()  # for the fixture's cleanup


@pytest.mark.parametrize("host_target", ["cpu", "interp"])
def test_host_back_end_after_gpu_sees_device_results_and_invalidates(arrays, host_target: str) -> None:
    x, y = arrays
    run(x, y)
    on_host = run(x, y, target=host_target)
    assert on_host.transfers.to_host == y.nbytes  # y brought back; x's host copy was valid
    assert where(y) == {"host"}  # the host back end wrote y
    assert where(x) == {"host", "cuda"}  # only read there (not in the leaf's outs)
    back = run(x, y)
    assert back.transfers.to_device == y.nbytes
    hpvm.request_memory(y)
    np.testing.assert_array_equal(y, 3 * (2 * x) + 1)  # three launches, none lost


def test_views_of_tracked_arrays_alias_the_device_copy(arrays) -> None:
    x, y = arrays
    run(x[:8], y[:8])
    run(x[8:], y[8:])
    handle = run(x, y)
    assert handle.transfers.to_device == 0  # one device copy per tracked array
    hpvm.request_memory(y)
    np.testing.assert_array_equal(y, 2 * (2 * x) + 1)  # each half once, then the whole


def test_stats_are_cumulative() -> None:
    hpvm.init()
    try:
        x, y = np.zeros(4), np.zeros(4)
        hpvm.track_memory(x)
        hpvm.track_memory(y)
        before = hpvm.memory_stats()
        handle = run(x, y)
        after = hpvm.memory_stats()
        assert after.to_device - before.to_device == handle.transfers.to_device == 64
        assert handle.transfers.internal_to_device > 0  # the instance table
        assert "to device" in str(handle.transfers)
    finally:
        hpvm.cleanup()


def test_cli_timings_report_bytes_moved(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from cli.test_cli import PROGRAM, run_args
    from hpvm.cli import main

    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    a = np.arange(4, dtype=np.float32)
    assert main(["run", str(path), "--target", "cuda", *run_args(tmp_path, a, "2"), "--timings"]) == 0
    captured = capsys.readouterr()
    assert "output 0: 8.0" in captured.out
    # a and b (16 bytes each) go to the device; b, written there, comes back at cleanup
    assert "moved 32 B to device, 16 B to host in 3 array copies" in captured.err
