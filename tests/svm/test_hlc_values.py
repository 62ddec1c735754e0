"""The HLC mapping's values and costs: fixed-size values travel by value in the streams'
SVM memory (the bytes are there, the host tables stay empty), the others by reference;
a place too small for one element is a located error; link costs steer the placement."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import svm
from hpvm.runtime.svm_target import plan, plan_with_layouts
from hpvm.svm.mapping import map_pipeline

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "runtime"))
sys.path.insert(0, str(ROOT / "examples"))

import edge_detection  # noqa: E402
from test_streaming import expect, three_stages  # noqa: E402

pytestmark = pytest.mark.timeout(60)

THREE_PROCS = """
[machine]
name = "three"
[processors.CONTROL]
master = "CONTROL"
[processors.P1]
master = "CONTROL"
supported_kernels = ["USER_DEFINED_KERNEL"]
[processors.P2]
master = "CONTROL"
supported_kernels = ["USER_DEFINED_KERNEL"]
[processors.P3]
master = "CONTROL"
supported_kernels = ["USER_DEFINED_KERNEL"]
[memories.RAM]
size = "1M"
[links.BUS]
ends = ["CONTROL", "P1", "P2", "P3", "RAM"]
"""


@pytest.fixture(autouse=True)
def runtime(monkeypatch):
    monkeypatch.setenv("HPVM_SVM_LEAVES", "interp")
    monkeypatch.delenv("HPVM_SVM_MACHINE", raising=False)
    hpvm.init()
    yield
    hpvm.cleanup()
    assert not [t for t in threading.enumerate() if t.name.startswith("svm-")]


def machine_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.toml"
    path.write_text(text)
    return path


def wait_delivered(stream, count: int) -> None:
    deadline = time.monotonic() + 20
    while min(stream._delivered.values()) < count:
        assert time.monotonic() < deadline, "the results did not arrive"
        time.sleep(0.01)


# -- values in SVM memory -------------------------------------------------------------------


def test_scalar_values_are_bytes_in_the_streams_memory(tmp_path, monkeypatch):
    """Three kernels on one RAM: after 40 items, each stream's ring in RAM holds the last
    items' records (number and values), the host's tables hold nothing, and the popped
    results are interp's."""
    monkeypatch.setenv("HPVM_SVM_MACHINE", str(machine_file(tmp_path, THREE_PROCS)))
    n = 40
    h = hpvm.launch(three_stages, None, stream=True, target="svm")
    stream = h.stream
    places = {(p.src, p.dst): p for p in stream.mapping.streams}
    for x in range(n):
        hpvm.push(h, (x,))
    wait_delivered(stream, n)
    expected = {
        ("kernel0", "kernel1"): lambda x: (x + 1,),  # add_one.0
        ("kernel1", "kernel2"): lambda x: ((x + 1) * 2, x + 1),  # double.0, double.1
        ("kernel2", "host"): expect,  # the root's two outputs
    }
    for ends, values in expected.items():
        place = places[ends]
        layout = stream.layouts[place.name]
        assert not layout.plain and place.kind == "memory" and place.location == "RAM"
        assert layout.dtype.itemsize == place.element_bytes == 8 + 8 * len(values(0))
        records = svm.memory_view("RAM", place.address, place.capacity, layout.dtype)
        names = [f.name for f in layout.fields]
        seen = {int(r["seq"]): tuple(int(r[f]) for f in names) for r in records if r["seq"] or r[names[0]]}
        last = range(max(0, n - place.capacity), n)
        assert set(last) <= set(seen), f"{place.name}: the last items are not in RAM"
        for x in last:
            assert seen[x] == values(x), f"{place.name}: item {x}"
        assert stream._tables[place.name] == {}, "values by value must not wait in a host table"
    assert [hpvm.pop(h) for _ in range(n)] == [expect(x) for x in range(n)]
    hpvm.wait(h)


def test_the_result_stream_on_pca_tiled_holds_the_results_in_a_local_memory(monkeypatch):
    monkeypatch.setenv("HPVM_SVM_MACHINE", "pca_tiled")
    h = hpvm.launch(three_stages, None, stream=True, target="svm")
    place = next(p for p in h.stream.mapping.streams if p.to_host)
    assert place.location == "LOCALMEM3"
    for x in range(5):
        hpvm.push(h, (x,))
    wait_delivered(h.stream, 5)
    layout = h.stream.layouts[place.name]
    records = svm.memory_view("LOCALMEM3", place.address, 5, layout.dtype)
    assert records["seq"].tolist() == list(range(5))
    assert [(int(a), int(b)) for a, b in zip(records["out0"], records["out1"])] == [
        expect(x) for x in range(5)
    ]
    # the FIFOs between the tiles carry records too (16 B: number and add_one's i64)
    fifo = next(p for p in h.stream.mapping.streams if p.kind == "FIFO")
    assert h.stream.layouts[fifo.name].dtype.names == ("seq", "v0")
    assert [hpvm.pop(h) for _ in range(5)] == [expect(x) for x in range(5)]
    hpvm.wait(h)


def test_arrays_travel_by_reference_and_the_report_says_why():
    stages, mapping, layouts = plan_with_layouts(edge_detection.root, svm.load_machine("pca_tiled"), 16)
    assert len(stages) == 6
    assert all(layout.plain for layout in layouts.values())
    text = mapping.describe()
    assert "gaussian_smooth.1 -> gradient.0: by reference (f32[:, :] is an array" in text
    assert "root arguments: by reference" in text
    _, scalar = plan(three_stages, svm.load_machine("pca_tiled"), 16)
    assert "add_one.0 -> double.0: by value (one i64 per item)" in scalar.describe()
    assert "combine.1 -> output 1: by value" in scalar.describe()


@hpvm.leaf
def scale(x: hpvm.i64) -> hpvm.i64:
    return x * (hpvm.get_node_instance_id_x(hpvm.get_node()) + 1)


@hpvm.leaf
def plus_one(v: hpvm.i64) -> hpvm.i64:
    """x + 1 in every instance only if each reads its own instance of ``scale`` (else the
    instances disagree, and the output bind warns)."""
    return v // (hpvm.get_node_instance_id_x(hpvm.get_node()) + 1) + 1


@hpvm.internal
def per_instance(x: hpvm.i64):
    """Four instances hand four values each per item: a constant (4,) record field."""
    a = hpvm.create_node_1d(scale, 4)
    b = hpvm.create_node_1d(plus_one, 4)
    hpvm.bind_in(a, 0, 0, stream=True)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0, stream=True)


@hpvm.internal
def per_instance_n(x: hpvm.i64, n: hpvm.i64):
    """As ``per_instance``, but ``n`` instances: the size may change per push."""
    a = hpvm.create_node_1d(scale, n)
    b = hpvm.create_node_1d(plus_one, n)
    hpvm.bind_in(a, 0, 0, stream=True)
    hpvm.edge(a, b, hpvm.ONE_TO_ONE, 0, 0, stream=True)
    hpvm.bind_out(b, 0, 0, stream=True)


@pytest.mark.parametrize("machine", ["three", "pca_tiled"])
def test_per_instance_values_of_constant_replication_travel_by_value(tmp_path, monkeypatch, machine):
    spec = str(machine_file(tmp_path, THREE_PROCS)) if machine == "three" else machine
    monkeypatch.setenv("HPVM_SVM_MACHINE", spec)
    _, mapping, layouts = plan_with_layouts(per_instance, svm.load_machine(spec), 16)
    between = next(p for p in mapping.streams if p.src == "kernel0" and p.dst == "kernel1")
    assert layouts[between.name].dtype == np.dtype([("seq", np.int64), ("v0", np.int64, (4,))])
    assert "by value (i64 per instance, replication (4,) constant)" in mapping.describe()
    items = [(x,) for x in range(12)]
    got = {}
    for target in ("svm", "interp"):
        h = hpvm.launch(per_instance, None, stream=True, target=target)
        for item in items:
            hpvm.push(h, item)
        got[target] = [hpvm.pop(h) for _ in items]
        hpvm.wait(h)
    assert got["svm"] == got["interp"]


def test_per_instance_values_by_value_with_cpu_leaves(tmp_path, monkeypatch):
    """The same through the cpu back end's exchange form (its compiled stages)."""
    pytest.importorskip("numba")
    monkeypatch.setenv("HPVM_SVM_LEAVES", "cpu")
    monkeypatch.setenv("HPVM_SVM_MACHINE", str(machine_file(tmp_path, THREE_PROCS)))
    items = [(x,) for x in range(12)]
    h = hpvm.launch(per_instance, None, stream=True, target="svm")
    for item in items:
        hpvm.push(h, item)
    assert [hpvm.pop(h) for _ in items] == [(x + 1,) for x in range(12)]
    hpvm.wait(h)


def test_replication_sizes_from_the_arguments_travel_by_reference(tmp_path, monkeypatch):
    monkeypatch.setenv("HPVM_SVM_MACHINE", str(machine_file(tmp_path, THREE_PROCS)))
    _, mapping = plan(per_instance_n, svm.load_machine(str(machine_file(tmp_path, THREE_PROCS))), 16)
    assert (
        "by reference (i64 per instance of replication (n), which may change per push)" in mapping.describe()
    )
    items = [(x, 1 + x % 4) for x in range(12)]
    got = {}
    for target in ("svm", "interp"):
        h = hpvm.launch(per_instance_n, None, stream=True, target=target)
        for item in items:
            hpvm.push(h, item)
        got[target] = [hpvm.pop(h) for _ in items]
        hpvm.wait(h)
    assert got["svm"] == got["interp"]


@hpvm.leaf(ins=("src",), outs=("dst",))
def square_count(src: hpvm.f64[:], dst: hpvm.f64[:]) -> tuple[hpvm.i64, hpvm.f64[:]]:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    dst[i] = src[i] * src[i]
    return hpvm.get_num_node_instances_x(hpvm.get_node()), dst


@hpvm.leaf(ins=("dst",))
def sum_first(count: hpvm.i64, dst: hpvm.f64[:]) -> hpvm.f64:
    s = 0.0
    for k in range(count):
        s += dst[k]
    return s


@hpvm.internal
def mixed_ports(src: hpvm.f64[:], dst: hpvm.f64[:]):
    """One node hands the next stage a scalar (by value) and an array (by reference) over
    the same stream; four constant instances."""
    sq = hpvm.create_node_1d(square_count, 4)
    tot = hpvm.create_node(sum_first)
    hpvm.bind_in(sq, 0, 0)
    hpvm.bind_in(sq, 1, 1)
    hpvm.edge(sq, tot, hpvm.ALL_TO_ALL, 0, 0, stream=True)
    hpvm.edge(sq, tot, hpvm.ALL_TO_ALL, 1, 1, stream=True)
    hpvm.bind_out(tot, 0, 0)


@pytest.mark.parametrize("leaves", ["interp", "cpu"])
def test_a_node_with_a_port_by_value_and_one_by_reference(tmp_path, monkeypatch, leaves):
    if leaves == "cpu":
        pytest.importorskip("numba")
    monkeypatch.setenv("HPVM_SVM_LEAVES", leaves)
    monkeypatch.setenv("HPVM_SVM_MACHINE", str(machine_file(tmp_path, THREE_PROCS)))
    _, mapping = plan(mixed_ports, svm.load_machine(str(machine_file(tmp_path, THREE_PROCS))), 16)
    text = mapping.describe()
    assert "square_count.0 -> sum_first.0: by value" in text
    assert "square_count.1 -> sum_first.1: by reference" in text
    h = hpvm.launch(mixed_ports, None, stream=True, target="svm")
    items = [(np.arange(4.0) + x, np.zeros(4)) for x in range(6)]
    for src, dst in items:
        hpvm.track_memory(src)
        hpvm.track_memory(dst)
        hpvm.push(h, (src, dst))
    got = [hpvm.pop(h)[0] for _ in items]
    hpvm.wait(h)
    assert got == [float(np.sum((np.arange(4.0) + x) ** 2)) for x in range(6)]


# -- room for one element -------------------------------------------------------------------

TINY_FIFO = """
[machine]
name = "tiny_fifo"
[processors.CONTROL]
master = "CONTROL"
[processors.P1]
master = "CONTROL"
supported_kernels = ["USER_DEFINED_KERNEL"]
[processors.P2]
master = "CONTROL"
supported_kernels = ["USER_DEFINED_KERNEL"]
[memories.M1]
size = 128
[memories.M2]
size = 400
[fifos.F12]
depth = 2
element_size = 4
[links.L1]
ends = ["CONTROL", "P1", "M1"]
[links.L2]
ends = ["CONTROL", "P2", "M2"]
[links.F_IN]
ends = ["P1", "F12"]
[links.F_OUT]
ends = ["F12", "P2"]
"""


def test_a_fifo_too_small_for_one_element_is_a_located_error(tmp_path, monkeypatch):
    """double's two i64 values and the number make 24-byte elements; the only place between
    the tiles is an 8-byte FIFO, and one kernel does not fit either memory."""
    path = machine_file(tmp_path, TINY_FIFO)
    monkeypatch.setenv("HPVM_SVM_MACHINE", str(path))
    with pytest.raises(svm.SVMError) as info:
        hpvm.launch(three_stages, None, stream=True, target="svm")
    msg = str(info.value)
    assert str(path) in msg and "stage2 (combine)" in msg
    assert "kernel0 -> kernel1 between P2 and P1 (24-byte elements: FIFO F12 holds 8 B in all)" in msg
    assert "hold at least one of the stream's elements" in msg
    assert isinstance(info.value, hpvm.HPVMError)


def test_a_deeper_fifo_takes_the_same_program(tmp_path, monkeypatch):
    path = machine_file(tmp_path, TINY_FIFO.replace("depth = 2", "depth = 12"))
    monkeypatch.setenv("HPVM_SVM_MACHINE", str(path))
    h = hpvm.launch(three_stages, None, stream=True, target="svm")
    fifo = next(p for p in h.stream.mapping.streams if p.kind == "FIFO")
    assert (fifo.element_bytes, fifo.capacity) == (24, 2)  # 12 slots of 4 B: two elements
    for x in range(20):
        hpvm.push(h, (x,))
    assert [hpvm.pop(h) for _ in range(20)] == [expect(x) for x in range(20)]
    hpvm.wait(h)


def test_a_capacity_below_one_element_is_an_error():
    with pytest.raises(hpvm.LaunchError, match="capacity must be a positive int"):
        hpvm.launch(three_stages, None, stream=True, target="svm", capacity=0)
    with pytest.raises(svm.SVMError, match="capacity 0: a stream must hold at least one element"):
        map_pipeline(svm.load_machine("pca_tiled"), ["a"], [], [0], 0)


# -- link costs -----------------------------------------------------------------------------

LINKED = """
[machine]
name = "linked"
[processors.CONTROL]
master = "CONTROL"
[processors.A]
master = "CONTROL"
supported_kernels = ["USER_DEFINED_KERNEL"]
[processors.B]
master = "CONTROL"
supported_kernels = ["USER_DEFINED_KERNEL"]
[memories.RAM]
size = "1M"
[links.CTRL]
ends = ["CONTROL", "RAM"]
[links.LA]
ends = ["A", "RAM"]
cost = {a}
[links.LB]
ends = ["B", "RAM"]
cost = {b}
"""


def test_machines_differing_only_in_link_costs_map_differently(tmp_path):
    cheap_a = svm.load_machine(machine_file(tmp_path, LINKED.format(a=0.5, b=3.0)))
    mapping = map_pipeline(cheap_a, ["only"], [], [0], 16)
    assert [k.processor for k in mapping.kernels] == ["A"]
    # the processor, and two streams: RAM, the control's link and A's link each
    assert mapping.cost == pytest.approx(1.0 + 2 * (1.0 + 1.0 + 0.5))
    cheap_b = svm.load_machine(machine_file(tmp_path, LINKED.format(a=3.0, b=0.5)))
    assert [k.processor for k in map_pipeline(cheap_b, ["only"], [], [0], 16).kernels] == ["B"]


def test_a_path_over_two_links_costs_both():
    machine = svm.load_machine("pca_tiled")
    costs = machine.link_costs("CONTROL")
    assert costs["GLOBALMEM1"] == 1.0 and costs["LOCALMEM1"] == 2.0  # GLOBAL_BUS, then LOCAL_BUS
    assert set(costs) == machine.reachable("CONTROL")
    assert machine.link_costs("PROC2") == {"LOCALMEM2": 1.0, "FIFO12": 1.0, "FIFO23": 1.0}


def test_a_cheap_link_out_of_the_controls_reach_is_not_taken(tmp_path):
    """A's link is free but leads to a memory the control processor does not reach (A6):
    the kernel goes on B, over its dear link; with no B, the error names the stream."""
    text = LINKED.format(a=0.0, b=9.0).replace('ends = ["A", "RAM"]', 'ends = ["A", "AMEM"]')
    text += '[memories.AMEM]\nsize = "1M"\ncost = 0.0\n'
    machine = svm.load_machine(machine_file(tmp_path, text))
    assert [k.processor for k in map_pipeline(machine, ["only"], [], [0], 16).kernels] == ["B"]
    alone = svm.load_machine(
        machine_file(
            tmp_path,
            """
[machine]
name = "alone"
[processors.CONTROL]
master = "CONTROL"
[processors.A]
master = "CONTROL"
supported_kernels = ["USER_DEFINED_KERNEL"]
[memories.RAM]
size = "1M"
[memories.AMEM]
size = "1M"
[links.CTRL]
ends = ["CONTROL", "RAM"]
[links.LA]
ends = ["A", "AMEM"]
cost = 0.0
""",
        )
    )
    with pytest.raises(svm.SVMError, match="host -> kernel0 between A and CONTROL") as info:
        map_pipeline(alone, ["only"], [], [0], 16)
    assert "cannot map stage(s) 'only'" in str(info.value)
