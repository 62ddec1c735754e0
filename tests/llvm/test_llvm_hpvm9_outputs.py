"""A GenHPVM program whose leaf loops and whose root has outputs (``hpvm9/saxpy_two_level.ll``,
LLVM 9 text): each instance i of the 1-D leaf computes ``Z[4i+j] = a * X[4i+j] + Y[4i+j]``
for j = 0..3 in a loop, and returns its last element and Z's byte size, which the root binds
as its two outputs — GenHPVM's usual shape, a leaf's byte size bound up to the root.

Two things kept such programs off the launching thread's fast paths, and both are gone:

- the leaf's loop (four turns, a constant): any loop made an LLVM leaf "unbounded", so
  every launch went to a worker (``ir/llvmbounded.py`` now accepts loops whose exits test
  what the host determines);
- the root's scalar outputs: a replay called the runner, never the compiled entry
  (``CPUBackend.direct`` now gives a direct call whose ``results`` converts them, as the
  runner does, to the ports' NumPy types), and no native call was made (a native call now
  writes them into its block, and the C makes the NumPy scalars: ``NativeCall.returns``,
  ``makers``).

A hot host loop over byte views made once is checked step for step against NumPy, with
the outputs' values and NumPy types, on all threads and on one: through the Python
replay's direct call, and the compiled replay's native calls once the record is hot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import llvm
from hpvm.ir.weakid import WeakIdTable
from hpvm.runtime import api, fastpath, plan, quick
from running import every_run_quick, spy_direct_calls

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]

SAXPY = Path(__file__).parent / "hpvm9" / "saxpy_two_level.ll"


@pytest.fixture(scope="module")
def root():
    return llvm.from_hpvm_ir(SAXPY.read_text(), file=str(SAXPY))


@pytest.fixture
def hot_after_two(monkeypatch, root):
    """New plans get the compiled replay where it is built, a record is hot after two
    replays, and every run counts as quick."""
    monkeypatch.setattr(plan, "_PLANS", WeakIdTable())
    monkeypatch.setattr(plan, "HOT_REPLAYS", 2)
    every_run_quick(monkeypatch, root)


def _saxpy(x: np.ndarray, y: np.ndarray, a: np.float32, instances: int) -> np.ndarray:
    """Z's first ``4 * instances`` elements as the leaf computes them (one ``fmul`` and one
    ``fadd`` in float32, compared exactly)."""
    return a * x[: 4 * instances] + y[: 4 * instances]


def test_the_leafs_four_turn_loop_is_bounded(root):
    assert quick.bounded_graph(root) is None


@pytest.mark.usefixtures("hot_after_two")
@pytest.mark.parametrize(("threads", "replay"), [("all", "compiled"), ("all", "python"), ("one", "compiled")])
def test_a_hot_loop_replays_the_direct_call_with_the_roots_outputs_as_numpy_scalars(
    root, monkeypatch, replay, threads
):
    """(On one thread, the compiled replay: a record made while its key ran on all threads
    has no function for one thread until it is hot, ``fastpath.hot``; the Python replay
    runs the runner then, which calls that function itself.)"""
    if replay == "compiled" and not fastpath.built():
        pytest.skip(fastpath.REASON or "the extension is not built")
    monkeypatch.setattr(fastpath, "ENABLED", replay == "compiled")
    size, instances = 64, 13
    rng = np.random.default_rng(5)
    x, y = (rng.standard_normal(size).astype(np.float32) for _ in range(2))
    z = np.zeros(size, np.float32)
    for v in (x, y, z):
        hpvm.track_memory(v)
    args = (x.view(np.uint8), y.view(np.uint8), z.view(np.uint8), np.float32(0.0), np.int64(instances))

    def step(a: np.float32) -> None:
        y[:] += np.float32(0.25)  # (the host's write between launches: other outputs each time)
        out = hpvm.wait(hpvm.launch(root, (*args[:3], a, args[4]), target="cpu"))
        want = _saxpy(x, y, a, instances)
        np.testing.assert_array_equal(z[: 4 * instances], want)
        assert [type(v) for v in out] == [np.float32, np.int64]
        assert out == (want[-1], np.int64(z.nbytes))

    a = np.float32(1.25)
    for _ in range(3):
        step(a)
    (record,) = [r for r in api.default_runtime().tracker.replays.values() if r.root is root]
    assert record.entry is not None and record.results is not None  # a direct call, converting
    runs = record.runs
    runs.probes = quick.ONE_THREAD_PROBES  # (settled here: a loaded machine must not decide)
    if threads == "one":
        runs.plain, runs.one, runs.every, runs.choices = False, 1e-9, 1.0, 0
    else:
        runs.plain, runs.one, runs.every = True, 1.0, 1e-9
    for _ in range(plan.HOT_REPLAYS + 1):
        step(a)
    if replay == "compiled":  # (hot: its native calls made, each returning the two outputs)
        native = record.native if threads == "all" else record.native_single
        assert native is not None and native.returns == b"fi"
        assert native.makers == (np.float32, np.int64)
    calls = spy_direct_calls(record)
    for _ in range(4):
        step(a)
    assert calls.count("entry" if threads == "all" else "single") == (4 if replay == "python" else 0)
    assert [r for r in api.default_runtime().tracker.replays.values() if r.root is root] == [record]
    for v in (x, y, z):
        hpvm.untrack_memory(v)
