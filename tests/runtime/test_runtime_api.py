"""The host API of seed 000: init/cleanup, the memory tracker, launch/wait, dispatch.

``launch`` checks the graph, the arguments and their tracking before it returns, and says
which argument is wrong; handles and tracked memory do not outlive ``cleanup``; cleanup
leaves no runtime thread behind.
"""

from __future__ import annotations

import importlib
import threading
import time
import warnings

import numpy as np
import pytest

import hpvm
from hpvm.backends import available_backends, base

GATE = threading.Event()  # leaves of `gated` wait on it: a launch that runs until we say


@pytest.fixture(autouse=True)
def runtime():
    GATE.clear()
    hpvm.init()
    yield
    GATE.set()  # never leave a gated launch blocking cleanup
    hpvm.cleanup()


def hpvm_threads():
    return [t.name for t in threading.enumerate() if t.name.startswith("hpvm-")]


@hpvm.leaf(ins=("x",), outs=("y",))
def scale(x: hpvm.f32[:], y: hpvm.f32[:], k: hpvm.f32, n: hpvm.i64) -> hpvm.i64:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    y[i] = x[i] * k
    return n


@hpvm.internal
def scale_root(x: hpvm.f32[:], y: hpvm.f32[:], k: hpvm.f32, n: hpvm.i64):
    s = hpvm.create_node_1d(scale, x.shape[0])
    for port in range(4):
        hpvm.bind_in(s, port, port)
    hpvm.bind_out(s, 0, 0)


@hpvm.leaf(outs=("y",))
def gated(y: hpvm.i64[:]):
    GATE.wait(10)
    y[0] = 1


@hpvm.internal
def gated_root(y: hpvm.i64[:]):
    hpvm.bind_in(hpvm.create_node(gated), 0, 0)


@hpvm.leaf
def ident(v: hpvm.i64) -> hpvm.i64:
    return v


@hpvm.internal
def stream_root(v: hpvm.i64):
    a = hpvm.create_node(ident)
    b = hpvm.create_node(ident)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0)


def arrays(n=4):
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    hpvm.track_memory(x)
    hpvm.track_memory(y)
    return x, y


# ---------------------------------------------------------------------------------------
# init / cleanup


def test_init_and_cleanup_are_idempotent():
    hpvm.init()
    hpvm.init()
    hpvm.cleanup()
    hpvm.cleanup()
    hpvm.init()
    x, y = arrays()
    assert hpvm.wait(hpvm.launch(scale_root, (x, y, 2.0, 7), target="interp")) == (7,)
    np.testing.assert_array_equal(y, [0, 2, 4, 6])


def test_api_before_init():
    hpvm.cleanup()
    x = np.zeros(2, np.float32)
    with pytest.raises(hpvm.RuntimeStateError, match=r"launch.*hpvm.init"):
        hpvm.launch(scale_root, (x, x, 1.0, 1), target="interp")
    for call in (hpvm.track_memory, hpvm.untrack_memory, hpvm.request_memory):
        with pytest.raises(hpvm.RuntimeStateError, match=r"init"):
            call(x)


def test_cleanup_forgets_tracked_memory():
    x, y = arrays()
    hpvm.cleanup()
    hpvm.init()
    with pytest.raises(hpvm.MemoryTrackingError, match=r"argument 0 \('x'\).*untracked"):
        hpvm.launch(scale_root, (x, y, 1.0, 1), target="interp")


def test_handles_from_before_cleanup_are_invalid():
    x, y = arrays()
    handle = hpvm.launch(scale_root, (x, y, 1.0, 1), target="interp")
    stream = hpvm.launch(stream_root, None, stream=True, target="interp")
    hpvm.cleanup()
    hpvm.init()
    with pytest.raises(hpvm.RuntimeStateError, match=r"wait.*cleanup"):
        hpvm.wait(handle)
    with pytest.raises(hpvm.RuntimeStateError, match=r"push.*cleanup"):
        hpvm.push(stream, (1,))
    with pytest.raises(hpvm.RuntimeStateError, match=r"pop.*cleanup"):
        hpvm.pop(stream)


def test_cleanup_releases_every_thread():
    x, y = arrays()
    hpvm.launch(scale_root, (x, y, 1.0, 1), target="interp")  # never waited for
    streams = [hpvm.launch(stream_root, None, stream=True, target="interp") for _ in range(3)]
    for s in streams:
        for v in range(5):
            hpvm.push(s, (v,))  # and never popped or ended
    hpvm.pop(streams[0])
    assert hpvm_threads()
    t0 = time.monotonic()
    hpvm.cleanup()
    assert hpvm_threads() == []
    assert time.monotonic() - t0 < 5


def test_cleanup_waits_for_a_running_launch():
    y = np.zeros(1, np.int64)
    hpvm.track_memory(y)
    hpvm.launch(gated_root, (y,), target="interp")
    threading.Timer(0.1, GATE.set).start()
    hpvm.cleanup()
    assert y[0] == 1 and hpvm_threads() == []


# ---------------------------------------------------------------------------------------
# launch checks its arguments itself


def test_launch_returns_before_the_graph_finishes():
    y = np.zeros(1, np.int64)
    hpvm.track_memory(y)
    handle = hpvm.launch(gated_root, (y,), target="interp")
    assert y[0] == 0 and "running" in repr(handle)
    GATE.set()
    assert hpvm.wait(handle) == ()
    assert y[0] == 1


def test_wrong_argument_count():
    x, y = arrays()
    with pytest.raises(hpvm.LaunchError) as info:
        hpvm.launch(scale_root, (x, y, 1.0), target="interp")
    msg = str(info.value)
    assert "'scale_root'" in msg and "4 input(s)" in msg and "3 were given" in msg and "n: i64" in msg


@pytest.mark.parametrize(
    "position, value, words",
    [
        (3, 2.5, ["argument 3 ('n')", "expected i64", "float"]),
        (0, np.arange(4, dtype=np.float64), ["argument 0 ('x')", "f32[:]", "float64"]),
        (0, np.zeros((2, 2), np.float32), ["argument 0 ('x')", "f32[:]", "2-D"]),
        (1, 3.0, ["argument 1 ('y')", "NumPy array", "float"]),
        (2, np.zeros(1, np.float32), ["argument 2 ('k')", "scalar f32"]),
        (3, 2**70, ["argument 3 ('n')", "does not fit in i64"]),
        (2, "2.0", ["argument 2 ('k')", "str"]),
    ],
)
def test_wrong_argument_types(position, value, words):
    x, y = arrays()
    args = [x, y, np.float32(1.0), 4]
    args[position] = value
    if isinstance(value, np.ndarray):
        hpvm.track_memory(value)
    with pytest.raises(hpvm.LaunchError) as info:
        hpvm.launch(scale_root, tuple(args), target="interp")
    for w in words:
        assert w in str(info.value)
    assert hpvm_threads() == []  # nothing was started


def test_args_must_be_a_tuple():
    with pytest.raises(hpvm.LaunchError, match=r"args must be a tuple.*x: f32\[:\]"):
        hpvm.launch(scale_root, 5, target="interp")
    x, y = arrays()
    assert hpvm.wait(hpvm.launch(scale_root, [x, y, 1.0, 3], target="interp")) == (3,)


def test_arguments_outside_the_args_tuple_are_named():
    """``hpvm.launch(root, x, y, ...)`` put an array where ``stream`` goes; NumPy refused to
    test its truth with a ValueError of its own."""
    x, y = arrays()
    with pytest.raises(
        hpvm.LaunchError, match=r"stream must be True or False, not ndarray.*scale_root, \(a, b"
    ):
        hpvm.launch(scale_root, x, y)  # type: ignore[arg-type]
    with pytest.raises(hpvm.LaunchError, match=r"not str"):
        hpvm.launch(scale_root, (x, y, 1.0, 3), "interp")  # type: ignore[arg-type]
    assert hpvm.wait(hpvm.launch(scale_root, [x, y, 1.0, 3], 0, target="interp")) == (3,)


def test_untracked_array_is_named():
    x, _ = arrays()
    y = np.zeros(4, np.float32)
    with pytest.raises(hpvm.MemoryTrackingError) as info:
        hpvm.launch(scale_root, (x, y, 1.0, 1), target="interp")
    msg = str(info.value)
    assert "argument 1 ('y')" in msg and "track_memory(y)" in msg


def test_views_of_tracked_arrays_count_as_tracked():
    base = np.zeros((3, 8), np.float32)
    hpvm.track_memory(base)
    x = np.arange(8, dtype=np.float32)
    hpvm.track_memory(x)
    # a row, a strided slice, a sub-range: all inside tracked memory
    hpvm.wait(hpvm.launch(scale_root, (x, base[1], 2.0, 0), target="interp"))
    hpvm.wait(hpvm.launch(scale_root, (x[:4], base[2, ::2], 3.0, 0), target="interp"))
    np.testing.assert_array_equal(base[1], x * 2)
    np.testing.assert_array_equal(base[2, ::2], x[:4] * 3)
    assert not base[0].any() and not base[2, 1::2].any()
    bigger = np.zeros(20, np.float32)
    hpvm.track_memory(bigger[:8])  # only part of it is tracked
    with pytest.raises(hpvm.MemoryTrackingError, match=r"'y'"):
        hpvm.launch(scale_root, (x, bigger[4:12], 1.0, 0), target="interp")


def test_leaf_as_root():
    with pytest.raises(hpvm.LaunchError) as info:
        hpvm.launch(scale, (), target="interp")
    assert "leaf 'scale'" in str(info.value) and "@hpvm.internal" in str(info.value)
    with pytest.raises(hpvm.LaunchError, match="internal"):
        hpvm.launch(lambda: None, (), target="interp")


def test_invalid_graph_fails_at_launch():
    @hpvm.internal
    def unfed(n: hpvm.i64):
        hpvm.create_node(ident)

    with pytest.raises(hpvm.VerificationError, match=r"input 0 \('v'\) of node 'ident'.*no feed"):
        hpvm.launch(unfed, (1,), target="interp")


def test_wait_needs_a_handle():
    with pytest.raises(hpvm.LaunchError, match="handle"):
        hpvm.wait(42)


def test_wait_twice_returns_the_same_outputs():
    x, y = arrays()
    handle = hpvm.launch(scale_root, (x, y, 1.0, 9), target="interp")
    first = hpvm.wait(handle)
    assert first == (9,)
    assert hpvm.wait(handle) is first


def test_wait_twice_raises_twice():
    x, y = arrays(2)
    handle = hpvm.launch(scale_root, (x, y[:1], 1.0, 9), target="interp")  # y too short
    for _ in range(2):
        with pytest.raises(hpvm.OutOfBoundsError, match="'y'"):
            hpvm.wait(handle)


def test_root_without_outputs_gives_empty_tuple():
    y = np.zeros(1, np.int64)
    hpvm.track_memory(y)
    GATE.set()
    assert hpvm.wait(hpvm.launch(gated_root, (y,), target="interp")) == ()


# ---------------------------------------------------------------------------------------
# The memory tracker


def test_untrack_unknown_array():
    a = np.zeros(3)
    with pytest.raises(hpvm.MemoryTrackingError, match=r"\(3,\) float64 array.*not tracked"):
        hpvm.untrack_memory(a)
    hpvm.track_memory(a)
    hpvm.untrack_memory(a)
    with pytest.raises(hpvm.MemoryTrackingError, match="not tracked"):
        hpvm.untrack_memory(a)
    with pytest.raises(hpvm.MemoryTrackingError, match="NumPy array"):
        hpvm.untrack_memory([1, 2])
    with pytest.raises(hpvm.MemoryTrackingError, match="NumPy array"):
        hpvm.track_memory(3.0)


def test_track_twice_is_harmless():
    x, y = arrays()
    hpvm.track_memory(x)
    hpvm.untrack_memory(x)
    with pytest.raises(hpvm.MemoryTrackingError, match=r"argument 0 \('x'\)"):
        hpvm.launch(scale_root, (x, y, 1.0, 1), target="interp")


def test_untrack_while_a_launch_runs():
    y = np.zeros(1, np.int64)
    hpvm.track_memory(y)
    handle = hpvm.launch(gated_root, (y,), target="interp")
    with pytest.raises(hpvm.MemoryTrackingError, match=r"in use by 1 running launch"):
        hpvm.untrack_memory(y)
    GATE.set()
    hpvm.wait(handle)
    hpvm.untrack_memory(y)  # fine once it finished


def test_request_memory():
    x, y = arrays()
    hpvm.wait(hpvm.launch(scale_root, (x, y, 4.0, 1), target="interp"))
    assert hpvm.request_memory(y) is y
    np.testing.assert_array_equal(hpvm.request_memory(y[1:3]), [4, 8])
    with pytest.raises(hpvm.MemoryTrackingError, match=r"request_memory.*not tracked"):
        hpvm.request_memory(np.zeros(2))


# ---------------------------------------------------------------------------------------
# Choosing the back end


def test_unknown_target_lists_available_back_ends():
    x, y = arrays()
    with pytest.raises(hpvm.BackendUnavailableError) as info:
        hpvm.launch(scale_root, (x, y, 1.0, 1), target="fpga")
    msg = str(info.value)
    assert "'fpga'" in msg and "interp" in msg
    assert all(name in msg for name in available_backends())


def test_target_must_be_a_name():
    x, y = arrays()
    with pytest.raises(hpvm.LaunchError, match="target"):
        hpvm.launch(scale_root, (x, y, 1.0, 1), target=3)


@hpvm.leaf(hint=hpvm.GPU_TARGET)
def on_gpu(v: hpvm.i64) -> hpvm.i64:
    return v


@hpvm.internal
def gpu_root(v: hpvm.i64):
    k = hpvm.create_node(on_gpu)
    hpvm.bind_in(k, 0, 0)
    hpvm.bind_out(k, 0, 0)


def test_gpu_hint_without_a_gpu_back_end(monkeypatch):
    # As on a machine without numba-cuda or PyOpenCL: take the GPU back ends out of the registry.
    for name in ("cuda", "opencl"):
        monkeypatch.delitem(base._FACTORIES, name, raising=False)
    monkeypatch.setattr(importlib.import_module("hpvm.runtime.launch"), "_CHOICES", {})
    with pytest.raises(hpvm.BackendUnavailableError) as info:
        hpvm.launch(gpu_root, (1,))
    msg = str(info.value)
    assert "'gpu'" in msg and "cuda" in msg and "opencl" in msg and "interp" in msg
    assert hpvm.wait(hpvm.launch(gpu_root, (5,), target="interp")) == (5,)  # forcing works


def test_no_hint_runs_on_the_default_back_end():
    x, y = arrays()
    assert hpvm.wait(hpvm.launch(scale_root, (x, y, 3.0, 2))) == (2,)
    np.testing.assert_array_equal(y, [0, 3, 6, 9])


# ---------------------------------------------------------------------------------------
# Warnings of a run reach the host at wait


@hpvm.leaf
def own_id() -> hpvm.i64:
    return hpvm.get_node_instance_id_x(hpvm.get_node())


@hpvm.internal
def disagree(n: hpvm.i64):
    k = hpvm.create_node_1d(own_id, n)
    hpvm.bind_out(k, 0, 0)


def test_warnings_are_issued_at_wait_pointing_at_the_caller():
    handle = hpvm.launch(disagree, (3,), target="interp")
    time.sleep(0.05)  # the run is over: nothing was issued on the runtime's thread
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert hpvm.wait(handle) == (2,)
    assert [w.category for w in caught] == [hpvm.HPVMWarning]
    assert caught[0].filename == __file__ and "own_id" in str(caught[0].message)


# ---------------------------------------------------------------------------------------
# Handles do not keep results alive


@hpvm.leaf
def fresh_buffer() -> hpvm.u8[:]:
    return hpvm.malloc(1024)


@hpvm.internal
def buffer_root():
    hpvm.bind_out(hpvm.create_node(fresh_buffer), 0, 0)


def test_finished_launches_are_not_retained_by_the_runtime():
    import gc
    import weakref

    handle = hpvm.launch(buffer_root, (), target="interp")
    (buf,) = hpvm.wait(handle)
    ref = weakref.ref(buf.base if buf.base is not None else buf)
    del handle, buf
    gc.collect()
    assert ref() is None


def test_many_launches_in_flight():
    ys = [np.zeros(4, np.float32) for _ in range(20)]
    x = np.arange(4, dtype=np.float32)
    hpvm.track_memory(x)
    for y in ys:
        hpvm.track_memory(y)
    handles = [hpvm.launch(scale_root, (x, y, float(k), k), target="interp") for k, y in enumerate(ys)]
    assert [hpvm.wait(h) for h in reversed(handles)] == [(k,) for k in reversed(range(20))]
    for k, y in enumerate(ys):
        np.testing.assert_array_equal(y, x * k)
