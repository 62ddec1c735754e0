"""The HLC mapping: streaming graphs launched with ``target="svm"`` run as SVM kernels and
streams placed by the machine's metadata, with the results of ``interp``; the placement
rules; ``hpvm svm map``; and every error of the mapping."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import svm
from hpvm.cli import main
from hpvm.runtime.svm_target import plan
from hpvm.svm.mapping import group_stages, map_pipeline

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "runtime"))
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "tests"))

import edge_detection  # noqa: E402
from test_streaming import (  # noqa: E402
    array_stream,
    childless,
    expect,
    failing_middle,
    three_stages,
    warn_stream,
)

from mixed_programs import streamed  # noqa: E402
from streaming_programs import FAILING_ITEM, FAILING_NODE, NESTED, nested_failing  # noqa: E402

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def runtime(monkeypatch):
    """Leaves on ``interp`` (no Numba compile: the tests stay fast) on this computer."""
    monkeypatch.setenv("HPVM_SVM_LEAVES", "interp")
    monkeypatch.delenv("HPVM_SVM_MACHINE", raising=False)
    hpvm.init()
    yield
    hpvm.cleanup()
    assert not [t for t in threading.enumerate() if t.name.startswith("svm-")]


def run_items(root, items, target, **kw):
    h = hpvm.launch(root, None, stream=True, target=target, **kw)
    for item in items:
        hpvm.push(h, item)
    got = [hpvm.pop(h) for _ in items]
    hpvm.wait(h)
    return got


# -- running on the SVM ---------------------------------------------------------------------


@pytest.mark.parametrize("machine", ["this", "pca_tiled"])
def test_three_stages_give_interps_results(monkeypatch, machine):
    monkeypatch.setenv("HPVM_SVM_MACHINE", machine)
    items = [(x,) for x in range(40)]
    assert run_items(three_stages, items, "svm") == run_items(three_stages, items, "interp")
    assert run_items(three_stages, items, "svm") == [expect(x) for x in range(40)]


@pytest.mark.parametrize("name", sorted(NESTED))
def test_nested_stages_are_kernels_with_interps_results(monkeypatch, name):
    """A pipeline inside an internal node: each of its stages a kernel of its own."""
    monkeypatch.setenv("HPVM_SVM_MACHINE", "pca_tiled")
    root, expect_item, stages = NESTED[name]
    _, mapping = plan(root, svm.load_machine("pca_tiled"), 16)
    members = sorted(i for k in mapping.kernels for i in k.stages)
    assert members == list(range(stages))
    assert "three_stages/double" in mapping.describe()
    items = [(x,) for x in range(20)]
    assert run_items(root, items, "svm") == run_items(root, items, "interp")
    assert run_items(root, items, "svm") == [expect_item(x) for (x,) in items]


def test_an_error_in_a_nested_stage_reaches_pop_naming_its_node_path():
    h = hpvm.launch(nested_failing, None, stream=True, target="svm")
    for x in range(FAILING_ITEM + 1):  # the failing item pushed last: a push after it raises
        hpvm.push(h, (x,))
    assert [hpvm.pop(h) for _ in range(FAILING_ITEM)] == [(x + 2,) for x in range(FAILING_ITEM)]
    with pytest.raises(hpvm.NodeExecutionError, match=FAILING_NODE):
        hpvm.pop(h)


def test_leaves_run_on_cpu_by_default(monkeypatch):
    """Without ``HPVM_SVM_LEAVES`` the kernels run leaves with the ``cpu`` back end (batches
    of items in one compiled loop), when Numba is installed."""
    pytest.importorskip("numba")
    monkeypatch.delenv("HPVM_SVM_LEAVES")
    h = hpvm.launch(three_stages, None, stream=True, target="svm")
    assert "leaves on cpu" in repr(h)
    for x in range(100):
        hpvm.push(h, (x,))
    assert [hpvm.pop(h) for _ in range(100)] == [expect(x) for x in range(100)]
    hpvm.wait(h)


def test_arrays_and_replication_sizes_that_change_per_push():
    def run(target):
        h = hpvm.launch(array_stream, None, stream=True, target=target)
        outs = []
        for n in (1, 3, 5, 2):
            src, dst = np.arange(1.0, 6.0), np.zeros(5)
            hpvm.track_memory(src)
            hpvm.track_memory(dst)
            outs.append(dst)
            hpvm.push(h, (src, dst, n))
        got = [hpvm.pop(h) for _ in range(4)]
        hpvm.wait(h)
        return got, outs

    (got, outs), (want, want_outs) = run("svm"), run("interp")
    assert got == want == [(1.0,), (14.0,), (55.0,), (5.0,)]
    for a, b in zip(outs, want_outs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("leaves", ["interp", "cpu"])
def test_a_stage_of_several_nodes_with_per_instance_edges(monkeypatch, leaves):
    """The shared suite's mixed program: two replicated nodes joined by one-to-one edges in
    one stage, an array across the stage boundary (the GPU hint of its middle leaf is
    not followed: the kernels run every leaf on the leaves' back end)."""
    if leaves == "cpu":
        pytest.importorskip("numba")
    monkeypatch.setenv("HPVM_SVM_LEAVES", leaves)

    def run(target):
        h = hpvm.launch(streamed, None, stream=True, target=target, capacity=1)
        got = []
        for k in (1.0, 2.0, 3.0):
            x, out, total = np.arange(4.0), np.zeros(4), np.zeros(1)
            for a in (x, out, total):
                hpvm.track_memory(a)
            hpvm.push(h, (x, out, total, k, 4))
            got.append(hpvm.pop(h))
        hpvm.wait(h)
        return got

    assert run("svm") == run("interp") == [((np.arange(4.0) * k + 1.0).sum(),) for k in (1.0, 2.0, 3.0)]


def test_warnings_of_the_kernels_reach_the_host_at_pop():
    h = hpvm.launch(warn_stream, None, stream=True, target="svm")
    hpvm.push(h, (10,))
    with pytest.warns(hpvm.HPVMWarning, match="disagreeing"):
        assert hpvm.pop(h) == (11,)
    hpvm.wait(h)


def test_the_handle_names_the_svm_and_the_leaves_back_end():
    h = hpvm.launch(three_stages, None, stream=True, target="svm")
    assert "svm (leaves on interp)" in repr(h)
    hpvm.wait(h)


def test_many_pushes_before_any_pop_do_not_deadlock():
    """More items than the streams between kernels hold: results wait in the result stream,
    and those not popped before ``wait`` are popped after it."""
    h = hpvm.launch(three_stages, None, stream=True, target="svm", capacity=4)
    for x in range(200):
        hpvm.push(h, (x,))
    hpvm.wait(h)
    assert [hpvm.pop(h) for _ in range(200)] == [expect(x) for x in range(200)]
    with pytest.raises(hpvm.StreamError, match="ended"):
        hpvm.pop(h)


def test_a_producer_thread_pushes_while_the_host_pops():
    h = hpvm.launch(three_stages, None, stream=True, target="svm", capacity=2)
    producer = threading.Thread(target=lambda: [hpvm.push(h, (x,)) for x in range(300)], name="producer")
    producer.start()
    got = [hpvm.pop(h) for _ in range(300)]
    producer.join(10)
    hpvm.wait(h)
    assert got == [expect(x) for x in range(300)]


def test_several_producer_threads_keep_each_ones_order():
    """Items pushed by three threads at once: every result comes out once, and each
    thread's items in the order it pushed them."""
    h = hpvm.launch(three_stages, None, stream=True, target="svm", capacity=2)
    per_thread = 100

    def produce(t: int) -> None:
        for i in range(per_thread):
            hpvm.push(h, (t * 1000 + i,))

    threads = [threading.Thread(target=produce, args=(t,), name=f"producer-{t}") for t in range(3)]
    for t in threads:
        t.start()
    got = [hpvm.pop(h) for _ in range(3 * per_thread)]
    for t in threads:
        t.join(10)
    hpvm.wait(h)
    inputs = [g[1] - 1 for g in got]  # expect(x)[1] is x + 1
    assert got == [expect(x) for x in inputs]
    for t in range(3):
        assert [x for x in inputs if x // 1000 == t] == [t * 1000 + i for i in range(per_thread)]


@pytest.mark.parametrize("machine", ["this", "pca_tiled"])
def test_edge_detection_frames_equal_interps(monkeypatch, machine):
    """Arrays in, arrays out: the six-stage edge-detection graph, frame by frame."""
    monkeypatch.setenv("HPVM_SVM_MACHINE", machine)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import kernels

    frames = kernels.synthetic_frames(4, 12)
    pipe = kernels.EdgePipeline(12, 12, 2)
    want = pipe.stream(frames, "interp")
    got = pipe.stream(frames, "svm")
    assert np.array_equal(got, want)
    reference = edge_detection.reference_edges(frames[-1], pipe.kernel, float(pipe.theta))
    assert np.allclose(got[-1], reference, atol=1e-5)


def test_stages_that_each_fill_the_cores_run_as_one_kernel(monkeypatch):
    """As ``runtime.streaming`` runs them as one stage thread (``one_stage``): with more
    stages than cores, each a replicated node whose loops the leaves' back end spreads
    over every core, the six edge-detection stages map to one kernel — two kernels on two
    cores gave each one core for its loops, and the smoothing's kernel bound the stream.
    Not for a back end that runs no loops on this process's threads (``interp``), nor
    with ``FUSE_PARALLEL`` off."""
    from hpvm.backends import get_backend
    from hpvm.runtime import streaming
    from hpvm.runtime.svm_target import plan_with_layouts

    monkeypatch.setattr(streaming, "machine_cores", lambda: 1)  # (fewer cores than stages anywhere)
    root, machine = edge_detection.root, svm.this_computer(cores=4)
    stages, mapping, _ = plan_with_layouts(root, machine, 8, get_backend("cpu"))
    assert [k.stages for k in mapping.kernels] == [tuple(range(len(stages)))]
    assert [(s.src, s.dst) for s in mapping.streams] == [("host", "kernel0"), ("kernel0", "host")]
    apart = [len(plan_with_layouts(root, machine, 8, b)[1].kernels) for b in (None, get_backend("interp"))]
    monkeypatch.setattr(streaming, "FUSE_PARALLEL", False)
    apart.append(len(plan_with_layouts(root, machine, 8, get_backend("cpu"))[1].kernels))
    assert apart == [4, 4, 4]


def test_edge_detection_as_one_kernel_equals_interps(monkeypatch):
    """The one kernel runs every stage on each batch, in stage order: the frames' edges
    are ``interp``'s (leaves on ``interp`` here, made to fill the machine)."""
    from hpvm.runtime import svm_target

    monkeypatch.setattr(svm_target, "one_stage", lambda backend, stages: True)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import kernels

    frames = kernels.synthetic_frames(5, 12)
    pipe = kernels.EdgePipeline(12, 12, 2)
    want = pipe.stream(frames, "interp")
    h = hpvm.launch(edge_detection.root, None, stream=True, target="svm")
    assert len(h.stream.mapping.kernels) == 1
    hpvm.wait(h)
    assert np.array_equal(pipe.stream(frames, "svm"), want)


def test_map_pipeline_takes_at_most_max_kernels():
    machine = svm.this_computer(cores=8)
    chain = [(i, i + 1) for i in range(5)]
    for most, groups in ((None, 6), (3, 3), (1, 1)):
        mapping = map_pipeline(machine, list("abcdef"), chain, [5], 16, max_kernels=most)
        assert [k.stages for k in mapping.kernels] == group_stages(6, groups)


def test_the_stage_kernels_run_on_the_mapped_processors(monkeypatch):
    monkeypatch.setenv("HPVM_SVM_MACHINE", "pca_tiled")
    h = hpvm.launch(three_stages, None, stream=True, target="svm")
    hpvm.push(h, (1,))
    assert hpvm.pop(h) == expect(1)
    placed = {k.name: k.processor for k in h.stream.mapping.kernels}
    kernels, uses = svm.program_uses()
    assert kernels == placed
    on = {u.name: u.location for u in uses}
    assert on == {s.name: s.location for s in h.stream.mapping.streams}
    hpvm.wait(h)


def test_the_mapped_program_passes_the_assertion_mode(monkeypatch):
    """``HPVM_SVM_CHECK=1`` runs the mapped program with svm's restriction checks (A6: every
    stream in a place its kernels reach; A7: one reader and one writer)."""
    monkeypatch.setenv("HPVM_SVM_MACHINE", "pca_tiled")
    monkeypatch.setenv("HPVM_SVM_CHECK", "1")
    assert run_items(three_stages, [(x,) for x in range(30)], "svm") == [expect(x) for x in range(30)]


def test_the_assertion_mode_catches_a_stream_placed_out_of_reach(monkeypatch):
    """The check above can fail: a mapping moved by hand so that the stream between PROC1
    and PROC2 is in LOCALMEM4, which neither reaches, is caught as A6 by ``kernel_run``."""
    import dataclasses

    from hpvm.runtime import svm_target

    real = svm_target.map_pipeline

    def misplaced(*args, **kwargs):
        mapping = real(*args, **kwargs)
        mapping.streams = [
            dataclasses.replace(s, location="LOCALMEM4", kind="memory", address=0, capacity=16)
            if (s.src, s.dst) == ("kernel0", "kernel1")
            else s
            for s in mapping.streams
        ]
        return mapping

    monkeypatch.setattr(svm_target, "map_pipeline", misplaced)
    monkeypatch.setenv("HPVM_SVM_MACHINE", "pca_tiled")
    monkeypatch.setenv("HPVM_SVM_CHECK", "1")
    with pytest.raises(
        svm.SVMRestrictionError, match="A6: kernel_run.kernel0.*PROC1 uses stream s1 in LOCALMEM4"
    ):
        hpvm.launch(three_stages, None, stream=True, target="svm")  # (kernel_run checks members)
    monkeypatch.setattr(svm_target, "map_pipeline", real)
    assert run_items(three_stages, [(1,)], "svm") == [expect(1)]  # the failed launch left no SVM


# -- failures and blocking ------------------------------------------------------------------


def test_a_failing_item_reaches_pop_after_the_items_before_it():
    h = hpvm.launch(failing_middle, None, stream=True, target="svm")
    for x in range(5):  # item 4 fails (add_one gives 5); pushed last, as a push after the failure raises
        hpvm.push(h, (x,))
    assert [hpvm.pop(h) for _ in range(4)] == [(100 // (x + 1 - 5),) for x in range(4)]
    with pytest.raises(hpvm.NodeExecutionError, match="fragile") as info:
        hpvm.pop(h)
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    with pytest.raises(hpvm.NodeExecutionError, match="fragile"):
        hpvm.push(h, (1,))
    with pytest.raises(hpvm.NodeExecutionError, match="fragile"):
        hpvm.wait(h)


def test_after_a_failed_wait_the_items_before_the_failure_can_still_be_popped():
    h = hpvm.launch(failing_middle, None, stream=True, target="svm")
    for x in range(5):  # item 4 fails (pushed last: a push after the failure raises)
        hpvm.push(h, (x,))
    with pytest.raises(hpvm.NodeExecutionError, match="fragile"):
        hpvm.wait(h)
    assert [hpvm.pop(h) for _ in range(4)] == [(100 // (x + 1 - 5),) for x in range(4)]
    with pytest.raises(hpvm.NodeExecutionError, match="fragile"):
        hpvm.pop(h)


def test_a_wait_after_the_failure_still_lets_the_items_before_it_arrive():
    # The failure (item 4, in the middle stage) is known before wait is called while the
    # slow last stage still holds items 0-3: wait must not end that kernel before it
    # delivers them (it used to, and the pops below waited for ever).
    h = hpvm.launch(failing_middle, None, stream=True, target="svm")
    for x in range(5):  # the failing item last (a push after the failure would raise)
        hpvm.push(h, (x,))
    time.sleep(0.03)
    with pytest.raises(hpvm.NodeExecutionError, match="fragile"):
        hpvm.wait(h)
    assert [hpvm.pop(h) for _ in range(4)] == [(100 // (x + 1 - 5),) for x in range(4)]


def test_a_kernel_that_breaks_between_items_fails_the_stream(monkeypatch):
    """An error outside any item's leaves (here: a broken kernel loop) stops the stream at
    the first item that kernel had not handed on: pop raises there instead of waiting."""
    from hpvm.runtime import svm_kernels

    real = svm_kernels.KernelWork.run_items

    def breaks_on_item_3(self, k, seqs, popped):
        if 3 in seqs:
            raise RuntimeError("kernel loop broke")
        return real(self, k, seqs, popped)

    monkeypatch.setattr(svm_kernels.KernelWork, "run_items", breaks_on_item_3)
    h = hpvm.launch(three_stages, None, stream=True, target="svm", capacity=1)
    for x in range(3):
        hpvm.push(h, (x,))
    assert [hpvm.pop(h) for _ in range(3)] == [expect(x) for x in range(3)]
    hpvm.push(h, (3,))
    with pytest.raises(hpvm.NodeExecutionError, match="kernel loop broke"):
        hpvm.pop(h)
    with pytest.raises(hpvm.NodeExecutionError, match="kernel loop broke"):
        hpvm.wait(h)


def test_pushing_past_a_full_result_stream_raises_instead_of_hanging(tmp_path, monkeypatch):
    """A memory with room for 16 items in and 16 results (24-byte records: the number and
    two i64 outputs by value): the 16 + 16 + 2 items after them can go nowhere while the
    host pushes and never pops; the SVM sees that nothing can move and says so."""
    path = machine_file(
        tmp_path,
        """
[machine]
name = "small"
[processors.CONTROL]
master = "CONTROL"
[processors.P]
master = "CONTROL"
supported_kernels = ["USER_DEFINED_KERNEL"]
[memories.RAM]
size = 512
[links.BUS]
ends = ["CONTROL", "P", "RAM"]
""",
    )
    monkeypatch.setenv("HPVM_SVM_MACHINE", str(path))
    h = hpvm.launch(three_stages, None, stream=True, target="svm")
    assert [s.capacity for s in h.stream.mapping.streams] == [16, 16]
    with pytest.raises(hpvm.HPVMError, match="nothing can ever make it possible"):
        for x in range(100):
            hpvm.push(h, (x,))
    assert [hpvm.pop(h) for _ in range(16)] == [expect(x) for x in range(16)]


def test_pop_with_nothing_pushed_raises_instead_of_hanging():
    h = hpvm.launch(three_stages, None, stream=True, target="svm")
    with pytest.raises(hpvm.StreamError, match="push before popping"):
        hpvm.pop(h)
    hpvm.wait(h)


def test_pop_times_out():
    h = hpvm.launch(three_stages, None, stream=True, target="svm")
    other = threading.Thread(target=lambda: threading.Event().wait(1.0), name="a-possible-producer")
    other.start()
    with pytest.raises(hpvm.StreamError, match="timed out"):
        hpvm.pop(h, timeout=0.1)
    other.join()
    hpvm.wait(h)


def test_cleanup_ends_a_running_stream():
    h = hpvm.launch(three_stages, None, stream=True, target="svm")
    hpvm.push(h, (1,))
    hpvm.cleanup()  # the fixture's check: no SVM thread left
    hpvm.init()
    assert run_items(three_stages, [(2,)], "svm") == [expect(2)]


# -- placement ------------------------------------------------------------------------------


def test_groups_are_consecutive_and_even():
    assert group_stages(6, 2) == [(0, 1, 2), (3, 4, 5)]
    assert group_stages(5, 3) == [(0, 1), (2, 3), (4,)]


def test_neighbour_stages_are_joined_by_fifos_and_the_host_by_local_memories():
    _, mapping = plan(three_stages, svm.load_machine("pca_tiled"), 16)
    assert [k.processor for k in mapping.kernels] == ["PROC1", "PROC2", "PROC3"]
    kinds = {(s.src, s.dst): (s.kind, s.location) for s in mapping.streams}
    assert kinds == {
        ("host", "kernel0"): ("memory", "LOCALMEM1"),
        ("kernel0", "kernel1"): ("FIFO", "FIFO12"),
        ("kernel1", "kernel2"): ("FIFO", "FIFO23"),
        ("kernel2", "host"): ("memory", "LOCALMEM3"),
    }
    # processors, memories and FIFOs, then links (each 1.0): CONTROL reaches a local memory
    # over two buses, a tile its own memory and FIFOs over one link
    links = {s.name: s.link_cost for s in mapping.streams}
    assert sorted(links.values()) == [2.0, 2.0, 3.0, 3.0]
    assert mapping.cost == pytest.approx(3 * 1.0 + 2 * 1.0 + 2 * 0.25 + 10.0)
    # 64 slots of 4 bytes; elements: the item number and the i64 values by value
    fifos = [(s.element_bytes, s.capacity) for s in mapping.streams if s.kind == "FIFO"]
    assert fifos == [(16, 16), (24, 10)]


def machine_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.toml"
    path.write_text(text)
    return path


TWO_PROCS = """
[machine]
name = "two"
[processors.CONTROL]
master = "CONTROL"
[processors.CHEAP]
master = "CONTROL"
supported_kernels = ["USER_DEFINED_KERNEL"]
cost = {cheap}
[processors.DEAR]
master = "CONTROL"
supported_kernels = ["USER_DEFINED_KERNEL"]
cost = 5.0
[memories.SLOW]
size = "1M"
cost = 3.0
[memories.FAST]
size = "1M"
cost = 0.5
[links.BUS]
ends = ["CONTROL", "CHEAP", "DEAR", "SLOW", "FAST"]
"""


def test_the_cheapest_processor_and_memory_are_chosen(tmp_path):
    machine = svm.load_machine(machine_file(tmp_path, TWO_PROCS.format(cheap=0.5)))
    mapping = map_pipeline(machine, ["a"], [], [0], 16)
    assert [k.processor for k in mapping.kernels] == ["CHEAP"]
    assert {s.location for s in mapping.streams} == {"FAST"}
    machine = svm.load_machine(machine_file(tmp_path, TWO_PROCS.format(cheap=9.0)))
    assert [k.processor for k in map_pipeline(machine, ["a"], [], [0], 16).kernels] == ["DEAR"]


def test_the_search_weighs_streams_too_not_only_processors(tmp_path):
    """The cheapest processor reaches the host only through a dear memory: the mapping on
    the dearer processor with a cheap memory costs less in all, and is the one taken."""
    machine = svm.load_machine(
        machine_file(
            tmp_path,
            """
[machine]
name = "tradeoff"
[processors.CONTROL]
master = "CONTROL"
[processors.A]
master = "CONTROL"
supported_kernels = ["USER_DEFINED_KERNEL"]
cost = 1.0
[processors.B]
master = "CONTROL"
supported_kernels = ["USER_DEFINED_KERNEL"]
cost = 2.0
[memories.DEAR]
size = "1M"
cost = 10.0
[memories.CHEAP]
size = "1M"
cost = 0.0
[links.TO_A]
ends = ["CONTROL", "A", "DEAR"]
[links.TO_B]
ends = ["CONTROL", "B", "CHEAP"]
""",
        )
    )
    mapping = map_pipeline(machine, ["only"], [], [0], 16)
    assert [k.processor for k in mapping.kernels] == ["B"]
    assert mapping.cost == 2.0 + 2 * 2 * 1.0  # and two streams over link TO_B at each end


def test_stages_merge_when_links_allow_no_more_kernels():
    """On pca_tiled's line of tiles, stage 0 feeding stages 1, 2 and 3 cannot be four
    kernels (PROC1 reaches only PROC2): fewer kernels, each running several stages."""
    mapping = map_pipeline(
        svm.load_machine("pca_tiled"), ["a", "b", "c", "d"], [(0, 1), (0, 2), (0, 3)], [1, 2, 3], 16
    )
    assert len(mapping.kernels) < 4
    assert sorted(i for k in mapping.kernels for i in k.stages) == [0, 1, 2, 3]


def test_interchangeable_processors_keep_the_search_short():
    """64 identical cores: a mapping that fits is found at once, and one that cannot fit
    (streams bigger than RAM) is reported at once instead of trying 64^6 placements."""
    import time

    machine = svm.this_computer(cores=64)
    chain = [(i, i + 1) for i in range(5)]
    start = time.perf_counter()
    assert len(map_pipeline(machine, list("abcdef"), chain, [5], 16).kernels) == 6
    with pytest.raises(svm.SVMError, match="no free FIFO or memory with room"):
        map_pipeline(machine, list("abcdef"), chain, [5], 1 << 27)  # 1 GiB per stream
    assert time.perf_counter() - start < 2


# -- errors ---------------------------------------------------------------------------------


def test_a_machine_without_user_kernel_processors_is_an_error(tmp_path, monkeypatch):
    path = machine_file(
        tmp_path,
        """
[machine]
name = "no_users"
[processors.CONTROL]
master = "CONTROL"
[processors.DMA]
master = "CONTROL"
dma = true
supported_kernels = ["Move"]
[memories.RAM]
size = "1M"
[links.BUS]
ends = ["CONTROL", "DMA", "RAM"]
""",
    )
    monkeypatch.setenv("HPVM_SVM_MACHINE", str(path))
    with pytest.raises(svm.SVMError, match="USER_DEFINED_KERNEL") as info:
        hpvm.launch(three_stages, None, stream=True, target="svm")
    assert str(path) in str(info.value) and "stage0 (add_one)" in str(info.value)


def test_no_path_between_the_host_and_a_stage_is_an_error(tmp_path, monkeypatch):
    path = machine_file(
        tmp_path,
        """
[machine]
name = "islands"
[processors.CONTROL]
master = "CONTROL"
[processors.P]
master = "CONTROL"
supported_kernels = ["USER_DEFINED_KERNEL"]
[memories.HOSTMEM]
size = "1M"
[memories.PMEM]
size = "1M"
[links.HOST_LINK]
ends = ["CONTROL", "HOSTMEM"]
[links.P_LINK]
ends = ["P", "PMEM"]
""",
    )
    monkeypatch.setenv("HPVM_SVM_MACHINE", str(path))
    with pytest.raises(svm.SVMError, match="host -> kernel0 between P and CONTROL") as info:
        hpvm.launch(three_stages, None, stream=True, target="svm")
    assert str(path) in str(info.value) and "Fix the machine file" in str(info.value)


def test_no_path_between_two_stages_is_an_error_naming_the_edge(tmp_path):
    """Two processors that each share a memory with the host but nothing with each other,
    and memories too small for a single kernel's two streams: the error names the stream
    between the two stages' kernels, and why one kernel does not fit either."""
    machine = svm.load_machine(
        machine_file(
            tmp_path,
            """
[machine]
name = "apart"
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
size = 128
[links.L1]
ends = ["CONTROL", "P1", "M1"]
[links.L2]
ends = ["CONTROL", "P2", "M2"]
""",
        )
    )
    with pytest.raises(svm.SVMError, match="cannot map stage.s. 'b'") as info:
        map_pipeline(machine, ["a", "b"], [(0, 1)], [1], 16)
    msg = str(info.value)
    assert "kernel0 -> kernel1 between P2 and P1" in msg or "kernel0 -> kernel1 between P1 and P2" in msg
    assert "With every stage in one kernel" in msg and "m.toml" in msg and "Fix the machine file" in msg


def test_a_graph_without_children_is_an_error():
    with pytest.raises(svm.SVMError, match="no stages to map"):
        hpvm.launch(childless, None, stream=True, target="svm")


def test_an_unknown_machine_in_the_environment_is_an_error(monkeypatch):
    monkeypatch.setenv("HPVM_SVM_MACHINE", "no_such_machine")
    with pytest.raises(svm.SVMError, match="HPVM_SVM_MACHINE='no_such_machine'.*shipped"):
        hpvm.launch(three_stages, None, stream=True, target="svm")


def test_a_leaves_back_end_other_than_cpu_or_interp_is_an_error(monkeypatch):
    monkeypatch.setenv("HPVM_SVM_LEAVES", "cuda")
    with pytest.raises(hpvm.LaunchError, match="HPVM_SVM_LEAVES='cuda'.*'cpu' or 'interp'"):
        hpvm.launch(three_stages, None, stream=True, target="svm")


def test_a_launch_that_is_not_streaming_is_an_error():
    with pytest.raises(hpvm.LaunchError, match="stream=True"):
        hpvm.launch(three_stages, (1,), target="svm")


def test_one_svm_stream_at_a_time():
    h = hpvm.launch(three_stages, None, stream=True, target="svm")
    with pytest.raises(svm.SVMError, match="already running"):
        hpvm.launch(three_stages, None, stream=True, target="svm")
    hpvm.wait(h)
    svm.init()
    with pytest.raises(svm.SVMError, match="svm.cleanup"):
        hpvm.launch(three_stages, None, stream=True, target="svm")
    svm.cleanup()


# -- hpvm svm map ---------------------------------------------------------------------------


def test_cli_map_prints_and_draws(tmp_path, capsys):
    out = tmp_path / "map.png"
    assert (
        main(
            [
                "svm",
                "map",
                str(ROOT / "examples" / "edge_detection.py"),
                "--machine",
                "pca_tiled",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "kernel0 on PROC1" in text and "on FIFO FIFO12" in text and "total cost" in text
    assert out.stat().st_size > 1000


def test_cli_map_takes_the_machine_from_the_environment(monkeypatch, capsys):
    monkeypatch.setenv("HPVM_SVM_MACHINE", "pca_tiled")
    path = ROOT / "tests" / "runtime" / "test_streaming.py"
    assert main(["svm", "map", str(path), "--root", "three_stages", "--capacity", "4"]) == 0
    text = capsys.readouterr().out
    assert "graph 'three_stages'" in text and "'pca_tiled'" in text
    assert "s0: host -> kernel0 on memory LOCALMEM1 @ 0x0, 4 element(s)" in text
    # (a FIFO holds what its slots hold), and what each stream carries: these i64 values by value
    assert "s1: kernel0 -> kernel1 on FIFO FIFO12, 16 element(s) of 16 B (cost 2.25: links 2)" in text
    assert "    add_one.0 -> double.0: by value (one i64 per item)" in text
    assert "    combine.1 -> output 1: by value (one i64 per item)" in text
    assert "by reference" in text  # (the root arguments)


def test_cli_map_reports_a_mapping_error(tmp_path, capsys):
    path = tmp_path / "m.toml"
    path.write_text('[machine]\nname = "bare"\n[processors.CONTROL]\nmaster = "CONTROL"\n')
    assert main(["svm", "map", str(ROOT / "examples" / "edge_detection.py"), "--machine", str(path)]) == 1
    assert "USER_DEFINED_KERNEL" in capsys.readouterr().err
