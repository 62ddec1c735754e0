"""Row norms as HPVM's GenHPVM writes a GPU-convention kernel (``hpvm9/row_norms_global.ll``,
LLVM 9 text): a CPU root replicating a GPU wrapper over ``groups``, the wrapper the leaf 32
times; each instance finds its row as ``i = gx * gridx + lx`` (its parent's id times its
own instance count, ``getNumNodeInstances``, plus its id, in ``int``), sums the squares of
the row's ``m`` elements in a loop (``m`` an ``i32`` port), stores ``llvm.sqrt.f32`` of the
sum at ``Out[i]`` after the loop, unguarded (the host launches exactly ``groups * 32``
rows), and returns Out's byte size, which the root binds as its output.

Everything issue 24's last stop changed meets here: the loop is one the host bounds
(``ir/llvmbounded.py``: the launch runs on the calling thread and is replayed), the root's
output comes back through the direct call and native calls as an ``np.int64``
(``DirectCall.results``, ``NativeCall.returns``), and the store after the loop at the
global index is a fact of the bounds pre-check (``access.py``, ``affine.GLOBAL``): a launch
with more groups than ``Out`` has rows is refused before the leaf runs, on unchecked
``cpu`` as on ``interp``, naming ``Out`` and the form."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import llvm
from hpvm.ir.printer import print_program
from hpvm.ir.weakid import WeakIdTable
from hpvm.runtime import api, fastpath, plan, quick
from running import every_run_quick, spy_direct_calls

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]

NORMS = Path(__file__).parent / "hpvm9" / "row_norms_global.ll"
GROUP = 32  # (the wrapper's createNode1D)


@pytest.fixture(scope="module")
def root():
    return llvm.from_hpvm_ir(NORMS.read_text(), file=str(NORMS))


def _norms(x: np.ndarray) -> np.ndarray:
    """Each row's norm as the leaf computes it: squares summed left to right in float32 (an
    ``fmul`` and an ``fadd`` each, no contraction), then a correctly rounded square root."""
    total = np.zeros(x.shape[0], np.float32)
    for k in range(x.shape[1]):
        total = total + x[:, k] * x[:, k]
    return np.sqrt(total)


def _tracked(*arrays: np.ndarray) -> tuple:
    for a in arrays:
        hpvm.track_memory(a)
    return tuple(a.reshape(-1).view(np.uint8) for a in arrays)


def test_it_imports_as_genhpvm_wrote_it_and_its_loop_is_bounded(root):
    graph = print_program(root, bodies=False)
    assert "leaf @norms_cloned(X: u8[:], Out: u8[:], m: i32) -> (i64) hint(gpu) ins(X) outs(Out)" in graph
    assert '%"norms_cloned.node" = node @norms_cloned[32]' in graph
    assert '%"NormsGroup_cloned.node" = node @NormsGroup_cloned[groups]' in graph
    assert quick.bounded_graph(root) is None  # (the loop leaves on k == m: an i32 port)


@pytest.mark.parametrize("target", ["cpu", "interp"])
@pytest.mark.parametrize(("groups", "m"), [(1, 7), (3, 1), (2, 0)])
def test_each_row_norm_is_numpys_and_the_root_returns_outs_bytes(root, target, groups, m):
    rows = groups * GROUP
    x = np.random.default_rng(rows + m).standard_normal((rows, m)).astype(np.float32)
    out = np.full(rows, -1.0, np.float32)
    views = _tracked(x, out)
    got = hpvm.wait(hpvm.launch(root, (*views, np.int32(m), np.int64(groups)), target=target))
    hpvm.request_memory(views[1])
    assert got == (np.int64(out.nbytes),) and type(got[0]) is np.int64
    np.testing.assert_array_equal(out, _norms(x))


@pytest.fixture
def hot_after_two(monkeypatch, root):
    """The compiled replay, a record hot after two replays, every run quick."""
    monkeypatch.setattr(fastpath, "ENABLED", True)
    monkeypatch.setattr(plan, "_PLANS", WeakIdTable())
    monkeypatch.setattr(plan, "HOT_REPLAYS", 2)
    every_run_quick(monkeypatch, root)


@pytest.mark.skipif(not fastpath.built(), reason=fastpath.REASON or "the extension is not built")
@pytest.mark.usefixtures("hot_after_two")
def test_a_hot_host_loop_is_numpys_step_for_step_through_native_calls(root):
    """The host scales X between launches (the same key): after two replays the record has
    its native calls, which return the root's output, and later launches make no
    dispatcher call."""
    groups, m = 2, 5
    x = np.random.default_rng(3).standard_normal((groups * GROUP, m)).astype(np.float32)
    out = np.zeros(groups * GROUP, np.float32)
    views = _tracked(x, out)
    args = (*views, np.int32(m), np.int64(groups))

    def step() -> None:
        x[:] *= np.float32(1.25)
        assert hpvm.wait(hpvm.launch(root, args, target="cpu")) == (np.int64(out.nbytes),)
        np.testing.assert_array_equal(out, _norms(x))

    for _ in range(plan.HOT_REPLAYS + 3):
        step()
    (record,) = [r for r in api.default_runtime().tracker.replays.values() if r.root is root]
    native = record.native_single if not record.runs.plain else record.native
    assert native is not None and native.returns == b"i" and native.makers == (np.int64,)
    calls = spy_direct_calls(record)
    for _ in range(4):
        step()
    assert calls == []


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_more_groups_than_rows_are_refused_before_the_leaf_runs(root, target):
    """Three groups (96 rows) over an ``Out`` of 64: every instance stores ``Out[i]`` after
    its loop at the global index, so the pre-check refuses the launch, unchecked ``cpu``
    included (it wrote past ``Out``), and nothing past ``Out`` changes."""
    m = 3
    x = np.ones((3 * GROUP, m), np.float32)
    buffer = np.full(2 * GROUP + 8, -7.0, np.float32)
    views = _tracked(x, buffer[: 2 * GROUP])
    with pytest.raises(hpvm.OutOfBoundsError) as raised:
        hpvm.wait(hpvm.launch(root, (*views, np.int32(m), np.int64(3)), target=target))
    message = str(raised.value)
    assert (
        "accesses bytes 4*(parent.x*instances.x + x) to 4*(parent.x*instances.x + x) + 3 of 'Out'" in message
    )
    assert "that is bytes 0 to 383: some instances would index past its end" in message
    assert "256 bytes long" in message
    hpvm.request_memory(views[1])
    assert (buffer == -7.0).all()
