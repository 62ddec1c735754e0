"""Graphs whose nodes carry different hints: the root's children run on different back ends.

The GPU and tensor back ends may be missing, so these tests map the GPU hint to ``interp``
(monkeypatched preferences): what is tested is the split and the exchange of values between
two back ends with different value forms (``cpu``'s per-port dicts, ``interp``'s per-instance
tuples), in both directions, for one-to-one scalars, all-to-all values, arrays, output
binds and streaming.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import hpvm
from hpvm.backends import base
from hpvm.backends.mixed import MixedBackend
from mixed_programs import cpu_gpu_cpu, scaled, shifted, streamed

launch_module = importlib.import_module(
    "hpvm.runtime.launch"
)  # (the name hpvm.runtime.launch is also the launch function)

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def gpu_means_interp(monkeypatch):
    monkeypatch.setitem(base.HINT_PREFERENCES, hpvm.GPU_TARGET, ("interp",))
    monkeypatch.setattr(launch_module, "_CHOICES", {})
    hpvm.init()
    yield
    hpvm.cleanup()


def _arrays(n: int = 8):
    x = np.arange(n, dtype=np.float64)
    out = np.zeros(n)
    total = np.zeros(1)
    for a in (x, out, total):
        hpvm.track_memory(a)
    return x, out, total


def test_children_split_between_back_ends():
    x, out, total = _arrays()
    handle = hpvm.launch(cpu_gpu_cpu, (x, out, total, 2.0, 8))
    assert isinstance(handle.backend, MixedBackend)
    assert handle.backend.name == "cpu+interp"
    s, last = hpvm.wait(handle)
    np.testing.assert_array_equal(out, x * 2.0 + 1.0)
    assert s == total[0] == (x * 2.0 + 1.0).sum()
    assert last == 7


def test_mixed_run_matches_one_back_end():
    x, out, total = _arrays()
    with pytest.warns(hpvm.HPVMWarning, match="disagree"):  # the ids bound out differ: interp says so
        want = hpvm.wait(hpvm.launch(cpu_gpu_cpu, (x, out, total, 3.0, 8), target="interp"))
    expected_out = out.copy()
    out[:] = 0
    got = hpvm.wait(hpvm.launch(cpu_gpu_cpu, (x, out, total, 3.0, 8)))
    assert got == want
    np.testing.assert_array_equal(out, expected_out)


@hpvm.leaf(hint=hpvm.GPU_TARGET)
def ids() -> tuple[hpvm.i64, hpvm.i64]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    return i * i, i


@hpvm.leaf(outs=("out",))
def store(v: hpvm.i64, i: hpvm.i64, out: hpvm.i64[:]):
    out[i] = v


@hpvm.internal
def interp_to_cpu(out: hpvm.i64[:], n: hpvm.i64):
    a = hpvm.create_node_1d(ids, n)
    b = hpvm.create_node_1d(store, n)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0)  # per-instance scalars interp -> cpu
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 1, 1)
    hpvm.bind_in(b, 0, 2)


def test_per_instance_values_from_interp_to_cpu():
    out = np.zeros(6, dtype=np.int64)
    hpvm.track_memory(out)
    hpvm.wait(hpvm.launch(interp_to_cpu, (out, 6)))
    np.testing.assert_array_equal(out, np.arange(6) ** 2)


def test_streaming_across_back_ends():
    x, out, total = _arrays(4)
    handle = hpvm.launch(streamed, None, stream=True, capacity=1)
    results = []
    for k in (1.0, 2.0, 3.0):
        hpvm.push(handle, (x, out, total, k, 4))
        results.append(hpvm.pop(handle)[0])
    hpvm.wait(handle)
    assert results == [(x * k + 1.0).sum() for k in (1.0, 2.0, 3.0)]


@hpvm.internal
def inner_mixed(x: hpvm.f64[:], out: hpvm.f64[:], k: hpvm.f64, n: hpvm.i64):
    a = hpvm.create_node_1d(scaled, n)
    b = hpvm.create_node_1d(shifted, n)
    hpvm.bind_in(a, 0, 0)
    hpvm.bind_in(a, 2, 1)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 1, 1)
    hpvm.bind_in(b, 1, 2)


@hpvm.internal
def nested_mix(x: hpvm.f64[:], out: hpvm.f64[:], k: hpvm.f64, n: hpvm.i64):
    child = hpvm.create_node(inner_mixed)
    for i in range(4):
        hpvm.bind_in(child, i, i)


def test_a_child_mixing_back_ends_runs_each_leaf_on_its_own():
    x, out, _ = _arrays(4)
    handle = hpvm.launch(nested_mix, (x, out, 1.0, 4))
    assert handle.backend.name == "cpu+interp"
    hpvm.wait(handle)
    np.testing.assert_array_equal(out, x + 1.0)
    out[:] = 0
    hpvm.wait(hpvm.launch(nested_mix, (x, out, 1.0, 4), target="cpu"))  # forcing one works too
    np.testing.assert_array_equal(out, x + 1.0)


@hpvm.internal(hint=hpvm.GPU_TARGET)
def inherits(x: hpvm.f64[:], out: hpvm.f64[:], k: hpvm.f64, n: hpvm.i64):
    child = hpvm.create_node(inner_mixed)
    for i in range(4):
        hpvm.bind_in(child, i, i)


def test_unhinted_leaves_take_the_nearest_hint():
    # 'scaled' has no hint and inherits the root's GPU hint, like 'shifted': one back end.
    x, out, _ = _arrays(4)
    handle = hpvm.launch(inherits, (x, out, 2.0, 4))
    assert handle.backend.name == "interp"
    hpvm.wait(handle)
    np.testing.assert_array_equal(out, x * 2.0 + 1.0)
