"""Launch plans (``runtime/plan.py``): what a launch of one root on one target resolves once
is reused by the next launches, and nothing a launch must catch is cached away — a new
shape (also one set in place), dtype, scalar out of range, read-only array, untracked or
re-tracked array, aliased arguments, or a back-end registry that changed.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.backends import base
from hpvm.runtime import plan, quick
from hpvm.runtime.launch import array_args
from markers import needs_backend

pytestmark = [pytest.mark.usefixtures("hpvm_runtime", "each_replay"), needs_backend("cpu")]


@hpvm.leaf(ins=("src",), outs=("dst",))
def scale(src: hpvm.f32[:, :], dst: hpvm.f32[:, :], factor: hpvm.f32):
    node = hpvm.get_node()
    y = hpvm.get_node_instance_id_x(node)
    x = hpvm.get_node_instance_id_y(node)
    dst[y, x] = src[y, x] * factor


@hpvm.internal
def scale_root(src: hpvm.f32[:, :], dst: hpvm.f32[:, :], factor: hpvm.f32):
    node = hpvm.create_node_2d(scale, src.shape[0] - 1, src.shape[1])
    for port in range(3):
        hpvm.bind_in(node, port, port)


@hpvm.leaf
def spin_to(n: hpvm.i64) -> hpvm.i64:
    k = 0
    while True:  # (left from inside, unbounded: its launches always go to a worker)
        if k >= n:
            break
        k += 1
    return k


@hpvm.internal
def spin_root(n: hpvm.i64):
    node = hpvm.create_node(spin_to)
    hpvm.bind_in(node, 0, 0)
    hpvm.bind_out(node, 0, 0)


def _arrays(rows: int = 5, cols: int = 4) -> tuple[np.ndarray, np.ndarray]:
    src = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    dst = np.zeros_like(src)
    hpvm.track_memory(src)
    hpvm.track_memory(dst)
    return src, dst


def _run(*args):
    handle = hpvm.launch(scale_root, args, target="cpu")
    hpvm.wait(handle)
    return handle


def test_repeated_launches_reuse_one_plan_and_compute_the_same():
    src, dst = _arrays()
    _run(src, dst, 2.0)
    first = plan.plan_for(scale_root, "cpu")
    for factor in (3.0, np.float32(4.0), 5):
        _run(src, dst, factor)
        np.testing.assert_array_equal(dst[:-1], src[:-1] * np.float32(factor))
    assert plan.plan_for(scale_root, "cpu") is first


def test_a_changed_registry_makes_a_new_plan():
    src, dst = _arrays()
    _run(src, dst, 2.0)
    first = plan.plan_for(scale_root, "cpu")
    base.REGISTRY_VERSION[0] += 1  # (as register_backend does: only ever grows)
    _run(src, dst, 3.0)
    assert plan.plan_for(scale_root, "cpu") is not first
    np.testing.assert_array_equal(dst[:-1], src[:-1] * 3)


def test_launches_after_good_ones_still_refuse_what_they_must():
    src, dst = _arrays()
    for _ in range(3):
        _run(src, dst, 2.0)
    with pytest.raises(hpvm.LaunchError, match="argument 0 .'src'."):
        _run(src.astype(np.float64), dst, 2.0)
    with pytest.raises(hpvm.LaunchError, match="argument 2 .'factor'."):
        _run(src, dst, "2")
    with pytest.raises(hpvm.LaunchError, match="takes 3 input"):
        _run(src, dst)
    with pytest.raises(hpvm.MemoryTrackingError, match="untracked"):
        _run(src, dst.copy(), 2.0)
    dst.flags.writeable = False  # read-only now: the graph writes it
    with pytest.raises(hpvm.LaunchError, match="dst"):
        _run(src, dst, 2.0)
    dst.flags.writeable = True
    hpvm.untrack_memory(src)
    with pytest.raises(hpvm.MemoryTrackingError, match="untracked"):
        _run(src, dst, 2.0)
    hpvm.track_memory(src)
    _run(src, dst, 2.0)  # tracked again: a new entry, accepted
    np.testing.assert_array_equal(dst[:-1], src[:-1] * 2)


def test_bad_roots_and_targets_are_refused_after_a_plan_exists():
    src, dst = _arrays()
    _run(src, dst, 2.0)
    with pytest.raises(hpvm.LaunchError, match="target must be a back-end name"):
        hpvm.launch(scale_root, (src, dst, 2.0), target=["cpu"])
    with pytest.raises(hpvm.BackendUnavailableError, match="no-such-target"):
        hpvm.launch(scale_root, (src, dst, 2.0), target="no-such-target")
    with pytest.raises(hpvm.LaunchError, match="@hpvm.internal root"):
        hpvm.launch(scale, (src, dst, 2.0), target="cpu")


def test_a_shape_set_in_place_is_checked_again():
    src, dst = _arrays(rows=4, cols=6)
    _run(src, dst, 2.0)
    src.shape = dst.shape = (2, 12)  # (same memory, same tracking entry): 1 × 12 instances now
    _run(src, dst, 3.0)
    np.testing.assert_array_equal(dst[0], src[0] * 3)
    src.shape = dst.shape = (24,)
    with pytest.raises(hpvm.LaunchError, match="argument 0 .'src'."):  # rank 1 now
        _run(src, dst, 2.0)


def test_run_keys_tell_aliased_and_retracked_arrays_apart():
    src, dst = _arrays()
    keys = {_run(src, dst, 2.0).quick[1], _run(dst, src, 2.0).quick[1], _run(src, src, 2.0).quick[1]}
    assert len(keys) == 3  # (the same shapes: only the tracking entries differ)
    old_entry = hpvm.runtime.default_runtime().tracker.find(dst)
    hpvm.untrack_memory(dst)
    hpvm.track_memory(dst)
    # A new entry, a new key. (Keys name entries by id: once the old entry is gone, a new one
    # may reuse its id and key — for the same array, so the same work: harmless for what
    # the key predicts, a run's duration. Held here so that the ids differ.)
    assert _run(src, dst, 2.0).quick[1] not in keys
    del old_entry


def test_a_finished_launch_leaves_no_garbage_cycle():
    """A waited handle is freed as soon as the host drops it (reference counting alone): a
    cycle through the handle's job left every launch — handle, arrays, outputs — to the
    cyclic garbage collector, whose collections then came every ~20 launches."""
    src, dst = _arrays()
    for _ in range(3):
        _run(src, dst, 2.0)  # (compiled; then quick, run inside launch)
        hpvm.wait(hpvm.launch(spin_root, (5,), target="cpu"))  # (on a worker)
    gc.collect()
    gc.disable()
    try:
        quick_handle = _run(src, dst, 2.0)
        assert quick_handle.quick is not None and quick_handle.job is None
        worker_handle = hpvm.launch(spin_root, (5,), target="cpu")
        assert worker_handle.slot is not None  # (queued for a worker)
        assert hpvm.wait(worker_handle) == (5,)
        refs = [weakref.ref(quick_handle), weakref.ref(worker_handle)]
        del quick_handle, worker_handle
        assert [r() for r in refs] == [None, None]
    finally:
        gc.enable()


_VALUES = st.one_of(
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, width=32),
    st.sampled_from([np.float32(1.5), np.int32(7), np.float64(2.0), True, None, "x"]),
    st.sampled_from([(5, 4), (3, 3), (6,)]).map(lambda shape: np.ones(shape, np.float32)),
    st.just(np.ones((5, 4), np.float64)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_VALUES, min_size=2, max_size=4))
def test_accept_agrees_with_the_acceptors_and_arg_key(values):
    """``LaunchPlan.accept`` takes exactly what every acceptor takes, and its one-pass key is
    ``quick.arg_key``'s (the run key and the size check both rely on it)."""
    root_plan = plan.plan_for(scale_root, "cpu")
    accepted = root_plan.accept(tuple(values))
    takes = len(values) == 3 and all(accept(v) for accept, v in zip(root_plan.acceptors, values))
    assert (accepted is not None) == takes
    if accepted is not None:
        assert accepted[0] == list(values) or all(a is b for a, b in zip(accepted[0], values))
        assert accepted[1] == quick.arg_key(values)
        arrays = array_args(values)  # (the arrays among them, as the runtime holds them)
        assert len(accepted[2]) == len(arrays) and all(a is b for a, b in zip(accepted[2], arrays))


@hpvm.leaf(ins=("w", "r", "p"), outs=("w",))
def every_kind(
    w: hpvm.f32[:, :], r: hpvm.f64[:], p: hpvm.u8[...], small: hpvm.i8, x: hpvm.f64, flag: bool, n: hpvm.i64
):
    if flag and n > 0:
        w[0, 0] = r[0] + x + small + p[0]


@hpvm.internal
def every_kind_root(
    w: hpvm.f32[:, :], r: hpvm.f64[:], p: hpvm.u8[...], small: hpvm.i8, x: hpvm.f64, flag: bool, n: hpvm.i64
):
    node = hpvm.create_node(every_kind)
    for port in range(7):
        hpvm.bind_in(node, port, port)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


_KIND_VALUES = st.one_of(
    st.integers(-300, 300),
    st.floats(allow_nan=False),
    st.sampled_from([True, False, np.int8(-3), np.int64(5), np.float32(0.5), np.uint8(200), None]),
    st.sampled_from([np.float32, np.float64, np.uint8, np.int8]).flatmap(
        lambda dtype: st.sampled_from([(3,), (2, 3), (0,)]).map(lambda shape: np.zeros(shape, dtype))
    ),
    st.just(np.zeros(6, np.uint8)[::2]),  # not contiguous: refused for a pointer port
    st.just(np.zeros((2, 2), np.float32)).map(_read_only),  # refused where written
)


_GOOD = (
    st.sampled_from([(2, 3), (1, 1)]).map(lambda shape: np.zeros(shape, np.float32)),
    st.sampled_from([(3,), (0,)]).map(lambda shape: np.zeros(shape, np.float64)),
    st.just(np.zeros(4, np.uint8)),
    st.one_of(st.integers(-200, 200), st.just(np.int8(-3))),  # (some out of i8's range)
    st.one_of(st.floats(allow_nan=False), st.integers(-5, 5), st.just(np.float32(0.5))),
    st.booleans(),
    st.one_of(st.integers(-(2**70), 2**70), st.just(np.int64(5))),  # (some out of i64's range)
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.tuples(*(st.one_of(good, good, _KIND_VALUES) for good in _GOOD)))
def test_the_generated_accept_agrees_with_every_kind_of_acceptor(values):
    """The plan's generated ``accept`` takes what each port's acceptor takes — written and
    read arrays, pointer-only arrays, ranged integers, floats, bools — with ``arg_key``'s
    key, and only what ``check_value`` accepts."""
    from hpvm.ir.types import check_value

    root_plan = plan.plan_for(every_kind_root, "cpu")
    accepted = root_plan.accept(list(values))  # (a list is taken as a tuple is)
    takes = all(accept(v) for accept, v in zip(root_plan.acceptors, values))
    assert (accepted is not None) == takes
    if accepted is not None:
        assert all(a is b for a, b in zip(accepted[0], values))
        assert accepted[1] == quick.arg_key(values)
        arrays = array_args(values)  # (the arrays among them, as the runtime holds them)
        assert len(accepted[2]) == len(arrays) and all(a is b for a, b in zip(accepted[2], arrays))
        assert not any(check_value(p.type, v) for p, v in zip(every_kind_root.params, values))
