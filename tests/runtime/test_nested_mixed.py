"""Graphs that mix devices inside internal nodes, at any depth (docs/semantics.md §14).

As in test_mixed_graphs.py, the GPU hint is mapped to ``interp`` so these run without a GPU
back end: what is tested is the split at every level, each instance of a mixed node running
its children on their own back ends with its own inputs, values crossing in both directions,
and the errors. tests/gpu/test_nested_mixed_devices.py runs the same programs on ``cpu`` +
``opencl`` and ``cpu`` + ``cuda``.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import hpvm
from hpvm.backends import base
from hpvm.backends.mixed import MixedBackend
from markers import SourceMarkers
from mixed_programs import NESTED, NestedCase, check_nested, stage, two_level

_line = SourceMarkers(__file__).line_of

pytest.importorskip("numba")


@pytest.fixture(autouse=True)
def gpu_means_interp(monkeypatch):
    monkeypatch.setitem(base.HINT_PREFERENCES, hpvm.GPU_TARGET, ("interp",))
    monkeypatch.setattr(importlib.import_module("hpvm.runtime.launch"), "_CHOICES", {})
    hpvm.init()
    yield
    hpvm.cleanup()


@pytest.mark.parametrize("case", NESTED, ids=str)
def test_nested_program_matches_interp(case: NestedCase) -> None:
    handle = check_nested(case, "cpu+interp")
    assert isinstance(handle.backend, MixedBackend)


def test_each_instance_of_a_mixed_node_gets_its_own_inputs() -> None:
    (case,) = [c for c in NESTED if c.name == "replicated_parent"]
    x, y, sums, doubled, k, m = case.make_args()
    for a in (x, y, sums, doubled):
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(case.root, (x, y, sums, doubled, k, m)))
    t = np.repeat(np.arange(m), k)
    np.testing.assert_array_equal(y, x * 3 + t)  # each tile's GPU leaf saw its own tile id
    np.testing.assert_array_equal(sums, (x * 3 + t).reshape(m, k).sum(axis=1))
    np.testing.assert_array_equal(doubled, 2 * sums)  # each instance's sum crossed one-to-one


def test_a_child_hinted_to_a_missing_device_is_refused_by_name(monkeypatch) -> None:
    monkeypatch.setitem(base.HINT_PREFERENCES, hpvm.GPU_TARGET, ("no-such-gpu",))
    (case,) = [c for c in NESTED if c.name == "two_level"]
    with pytest.raises(hpvm.BackendUnavailableError) as info:
        hpvm.launch(two_level, case.make_args())
    msg = str(info.value)
    assert "two_level/stage/gpu_square" in msg and "'gpu'" in msg and "target=" in msg


def test_an_error_below_a_mixed_node_names_the_instance_path() -> None:
    x = np.arange(4, dtype=np.int64)
    sq, y = np.zeros(4, np.int64), np.zeros(4, np.int64)
    for a in (x, sq, y):
        hpvm.track_memory(a)
    with pytest.raises(hpvm.OutOfBoundsError) as info:  # 6 instances index arrays of 4
        hpvm.wait(hpvm.launch(two_level, (x, sq, y, 1, 6)))
    msg = str(info.value)
    assert msg.startswith("in two_level/stage ") and "gpu_square" in msg


@hpvm.leaf(hint=hpvm.GPU_TARGET, outs=("out",))
def asks_grandparent(out: hpvm.i64[:]):
    g = hpvm.get_parent_node(hpvm.get_parent_node(hpvm.get_node()))
    out[hpvm.get_node_instance_id_x(g)] = 1  # @asks


@hpvm.leaf
def cpu_idle(out: hpvm.i64[:]):
    pass


@hpvm.internal
def asking_tile(out: hpvm.i64[:]):
    a = hpvm.create_node(asks_grandparent)
    c = hpvm.create_node(cpu_idle)
    hpvm.bind_in(a, 0, 0)
    hpvm.bind_in(c, 0, 0)


@hpvm.internal
def asking_outer(out: hpvm.i64[:]):
    t = hpvm.create_node(asking_tile)
    hpvm.bind_in(t, 0, 0)


@hpvm.internal
def asking_root(out: hpvm.i64[:], m: hpvm.i64):
    o = hpvm.create_node_1d(asking_outer, m)
    hpvm.bind_in(o, 0, 0)


def test_a_part_querying_above_its_mixed_node_is_refused() -> None:
    out = np.zeros(4, np.int64)
    hpvm.track_memory(out)
    with pytest.raises(hpvm.CompileError) as info:
        hpvm.launch(asking_root, (out, 4))
    msg = str(info.value)
    assert "asking_root/asking_outer/asking_tile/asks_grandparent" in msg and "node 'asking_outer'" in msg
    assert f"{__file__}:{_line('asks')}" in msg and "pass the id in as an input" in msg
    hpvm.wait(hpvm.launch(asking_root, (out, 4), target="interp"))  # one back end sees it all
    np.testing.assert_array_equal(out, [1, 1, 1, 1])


def test_a_part_below_a_replicated_mixed_node_sees_that_instance() -> None:
    (case,) = [c for c in NESTED if c.name == "parent_ids"]
    x, y, sums, doubled, k, m = case.make_args()
    for a in (x, y, sums, doubled):
        hpvm.track_memory(a)
    hpvm.wait(hpvm.launch(case.root, (x, y, sums, doubled, k, m)))
    t = np.repeat(np.arange(m), k)
    np.testing.assert_array_equal(y, x * 5 - t)  # the GPU leaf (interp here) saw its wrapper's id
    np.testing.assert_array_equal(sums, (x * 5 - t).reshape(m, k).sum(axis=1))  # and the cpu leaf


class TensorOnly(base.Backend):
    """A back end that runs only tensor bodies (never run: refused before)."""

    name = "tensor-only"
    accepts = frozenset({"tensor"})

    def run(self, root, args, ctx=None):  # type: ignore[no-untyped-def]
        raise AssertionError("never run")

    def run_stage(self, root, args, nodes, upstream, ctx=None):  # type: ignore[no-untyped-def]
        raise AssertionError("never run")


def test_a_leaf_its_back_end_cannot_run_is_refused_by_path(monkeypatch) -> None:
    monkeypatch.setitem(base._FACTORIES, TensorOnly.name, TensorOnly)
    monkeypatch.setitem(base._INSTANCES, TensorOnly.name, TensorOnly())  # (forgotten after)
    monkeypatch.setitem(base.HINT_PREFERENCES, hpvm.GPU_TARGET, (TensorOnly.name,))
    (case,) = [c for c in NESTED if c.name == "two_level"]
    args = case.make_args()
    for a in args[:3]:
        hpvm.track_memory(a)
    with pytest.raises(hpvm.CompileError) as info:
        hpvm.launch(two_level, args)
    msg = str(info.value)
    assert msg.startswith("node two_level/stage/gpu_square: the tensor-only back end its hints select")
    assert "python body" in msg


@hpvm.leaf
def plus_one(v: hpvm.i64) -> hpvm.i64:
    return v + 1


@hpvm.internal
def streamed_stage(x: hpvm.i64[:], sq: hpvm.i64[:], y: hpvm.i64[:], c: hpvm.i64, n: hpvm.i64):
    s = hpvm.create_node(stage)  # a pipeline stage that mixes devices inside
    for i in range(5):
        hpvm.bind_in(s, i, i)
    p = hpvm.create_node(plus_one)
    hpvm.edge(s, p, hpvm.ALL_TO_ALL, 0, 0, stream=True)
    hpvm.bind_out(p, 0, 0)


def test_a_pipeline_stage_holding_a_mixed_node() -> None:
    x = np.arange(6, dtype=np.int64)
    sq, y = np.zeros(6, np.int64), np.zeros(6, np.int64)
    for a in (x, sq, y):
        hpvm.track_memory(a)
    handle = hpvm.launch(streamed_stage, None, stream=True, capacity=1)
    assert handle.backend.name == "cpu+interp"
    results = []
    for c in (1, 2, 3):
        hpvm.push(handle, (x, sq, y, c, 6))
        results.append(hpvm.pop(handle)[0])
    hpvm.wait(handle)
    assert results == [25 + c + 1 for c in (1, 2, 3)]
    np.testing.assert_array_equal(y, x * x + 3)


@hpvm.leaf(hint=hpvm.GPU_TARGET)
def squared(v: hpvm.i64) -> hpvm.i64:
    return v * v


@hpvm.internal
def streams_and_devices(v: hpvm.i64):
    """A stream edge between a GPU-hinted stage and a CPU stage, one level down."""
    a = hpvm.create_node(squared)
    b = hpvm.create_node(plus_one)
    hpvm.bind_in(a, 0, 0)
    hpvm.edge(a, b, hpvm.ALL_TO_ALL, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0)


@hpvm.internal
def around_streams_and_devices(v: hpvm.i64):
    n = hpvm.create_node(streams_and_devices)
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_out(n, 0, 0)


def test_a_node_with_nested_stages_on_two_devices() -> None:
    stream = hpvm.launch(around_streams_and_devices, None, stream=True, capacity=2)
    assert stream.backend.name == "cpu+interp"
    for i in range(5):
        hpvm.push(stream, (i,))
    assert [hpvm.pop(stream)[0] for _ in range(5)] == [i * i + 1 for i in range(5)]
    hpvm.wait(stream)
    once = hpvm.launch(around_streams_and_devices, (3,))  # not streaming: the node runs on the host
    assert once.backend.name == "cpu+interp" and hpvm.wait(once) == (10,)
