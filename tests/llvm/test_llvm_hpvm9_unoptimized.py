"""A leaf compiled without optimization, as HPVM's GenHPVM leaves clang ``-O0``'s code
(``hpvm9/matvec_unoptimized.ll``, LLVM 9 text): every argument spilled to a slot and loaded
back, the ``int`` counter ``k`` in a slot, ``if (x < n)`` and ``k < m`` on loaded values,
``noinline optnone``. ``y = Aᵀ v`` over a grid rounded up past ``n``, the same program as
``matvec_guarded.ll`` but for ``m``, an ``int`` port here.

What it checks: its loop is one the host bounds — read after LLVM's SROA has made the
slots SSA values (``ir/llvmbounded.py``, ``_promoted``); read as written, every slot's load
was "read from memory", and every launch of such a leaf went to a worker — so a host loop
over the same arrays runs on the calling thread and is replayed; and its sums are NumPy's,
on ``cpu`` and ``interp``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import llvm
from hpvm.ir import llvmbounded
from hpvm.ir.graph import LeafFunction, functions
from hpvm.ir.printer import print_program
from hpvm.runtime import quick
from running import full_path_launches

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]

MATVEC = Path(__file__).parent / "hpvm9" / "matvec_unoptimized.ll"


@pytest.fixture(scope="module")
def root():
    return llvm.from_hpvm_ir(MATVEC.read_text(), file=str(MATVEC))


def _leaf(root) -> LeafFunction:
    (leaf,) = [f for f in functions(root) if isinstance(f, LeafFunction)]
    return leaf


def _matvec(a: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``Aᵀ v`` as the leaf sums it: k from 0 up, one ``fmul`` and one ``fadd`` a turn."""
    total = np.zeros(a.shape[1], np.float32)
    for k in range(a.shape[0]):
        total = total + a[k] * v[k]
    return total


def _args(n: int, m: int, grid: int, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray], tuple]:
    """The arrays (tracked), their byte views as HPVM-C passes them, and the launch's arguments."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((m, n)).astype(np.float32), rng.standard_normal(m).astype(np.float32)]
    arrays.append(np.full(n, -1.0, np.float32))
    for a in arrays:
        hpvm.track_memory(a)
    views = [a.reshape(-1).view(np.uint8) for a in arrays]
    return arrays, views, (*views, np.int64(n), np.int32(m), np.int64(grid))


def test_it_imports_and_its_slots_do_not_hide_its_loop_bound(root, monkeypatch):
    graph = print_program(root, bodies=False)
    assert "internal @MatvecRoot_cloned(A: u8[:], v: u8[:], y: u8[:], n: i64, m: i32, grid: i64)" in graph
    assert '%"matvecT_cloned.node" = node @matvecT_cloned[grid]' in graph
    assert quick.bounded_graph(root) is None  # (k < m: both loaded from slots the host's values fill)
    leaf = _leaf(root)
    monkeypatch.setattr(
        llvmbounded, "_promoted", lambda parse, body: parse(body.module).get_function(body.function)
    )
    # (the answer read again, not the one this process or hpvm's cache holds)
    monkeypatch.setattr(llvmbounded, "_ANSWERS", {})
    monkeypatch.setattr(llvmbounded, "stored_json", lambda *args: args[-1]())
    as_written = llvmbounded.llvm_unbounded_reason(leaf.body, "leaf 'matvecT_cloned'")
    assert (
        as_written
        == "leaf 'matvecT_cloned' has a loop that leaves on a value read from memory (block 'for.cond')"
    )


@pytest.mark.parametrize("target", ["cpu", "interp"])
@pytest.mark.parametrize(("n", "m", "grid"), [(100, 7, 128), (8, 1, 8), (5, 0, 16), (33, 12, 40)])
def test_each_sum_is_numpys_and_the_grid_s_extra_instances_write_nothing(root, target, n, m, grid):
    arrays, views, args = _args(n, m, grid, seed=n + m)
    assert hpvm.wait(hpvm.launch(root, args, target=target)) == ()
    hpvm.request_memory(views[2])
    np.testing.assert_array_equal(arrays[2], _matvec(arrays[0], arrays[1]))
    for a in arrays:
        hpvm.untrack_memory(a)


def test_a_host_loop_over_the_same_arrays_is_replayed(root, monkeypatch):
    """Ten launches of the same arguments, ``v`` changed by the host between them (its
    views stay the same objects): the first two take the full path (the second records, a
    view's key when it comes again: ``plan.record_replay``), every later one is a replay —
    an unbounded leaf's would all take it, each queued for a worker."""
    full_path = full_path_launches(monkeypatch)
    arrays, views, args = _args(64, 9, 64)
    for step in range(10):
        arrays[1][:] = np.float32(step) - arrays[1]  # (written in place: the view stays current)
        assert hpvm.wait(hpvm.launch(root, args, target="cpu")) == ()
        hpvm.request_memory(views[2])
        np.testing.assert_array_equal(arrays[2], _matvec(arrays[0], arrays[1]))
    for a in arrays:
        hpvm.untrack_memory(a)
    assert full_path[0] <= 3, f"{full_path[0]} of 10 launches took the full path"
