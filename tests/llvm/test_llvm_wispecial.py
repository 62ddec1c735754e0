"""Work-item loops specialized on constant extents (``backends/llvm_native/wispecial.py``).

A barrier leaf's node of constant extents runs, on ``cpu``, a copy of its work-item loops
compiled for exactly those extents; a node whose extents are computed at launch runs the
plain runner. Generated barrier leaves (``test_llvm_wiloops.Leaf``: 1-, 2- and 3-D groups,
values live across barriers, a neighbour's value read between two, a uniform loop around
them, the leaf reading its own extents) give the NumPy model's memory either way, and the
graph code calls the copy named by the extents. The copy's module defines the one entry and
nothing else outside, with the extents as constants.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import llvmlite.binding as llvm_binding
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from hpvm import llvm
from hpvm.backends import get_backend
from hpvm.backends.llvm_native import wispecial

sys.path.insert(0, str(Path(__file__).resolve().parent))
from barrier_lowering import barrier_leaf  # noqa: E402
from test_llvm_leaves_run import DECLS, _run  # noqa: E402
from test_llvm_wiloops import Leaf, leaves  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]


def _constant_extents(leaf: Leaf) -> str:
    """``leaf``'s program with its node's extents written as constants, not root arguments."""
    dims = "xyz"[: leaf.dims]
    given_ = ", ".join(f"i64 %n{a}" for a in dims)
    constants = ", ".join(f"i64 {n}" for n in leaf.sizes[: leaf.dims])
    text = leaf.text()
    assert f"(ptr @wi, {given_})" in text
    return text.replace(f"(ptr @wi, {given_})", f"(ptr @wi, {constants})")


def _launch(text: str, leaf: Leaf) -> tuple[np.ndarray, np.ndarray, str]:
    """``buf`` and ``out`` after a cpu launch of ``text``, and the graph code it ran."""
    root = llvm.from_hpvm_ir(DECLS + text)
    assert barrier_leaf(root).barrier_lowering == "workitem"
    n = int(np.prod(leaf.sizes))
    buf = np.zeros(n, np.int64)
    out = np.zeros(n, np.int64)
    _run(root, (buf.view(np.uint8), out.view(np.uint8), leaf.reps, *leaf.sizes), "cpu")
    return buf, out, "\n".join(get_backend("cpu").prepare(root).gen.sources)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(leaf=leaves(max_extent=9, max_shifts=2))
def test_a_node_of_constant_extents_runs_the_copy_for_them_and_matches_the_model(leaf: Leaf) -> None:
    want_buf, want_out = leaf.model()
    buf, out, source = _launch(_constant_extents(leaf), leaf)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(buf, want_buf)
    nx, ny, nz = leaf.sizes
    assert re.search(rf"_group_k{nx}x{ny}x{nz}\(", source), "the node did not run its specialized copy"


def test_a_node_whose_extents_are_computed_at_launch_runs_the_plain_runner() -> None:
    leaf = Leaf(2, (3, 5, 1), 2, (1,), True, 2, False)
    want_buf, want_out = leaf.model()
    buf, out, source = _launch(leaf.text(), leaf)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(buf, want_buf)
    assert "_group(" in source and "_group_k" not in source


def test_nodes_of_one_leaf_with_different_constant_extents_each_run_their_own_copy() -> None:
    one, other = Leaf(1, (4, 1, 1), 3, (1,), False, 0, True), Leaf(1, (7, 1, 1), 3, (1,), False, 0, True)
    # a root with two nodes of the one leaf, 4 and 7 instances, each on its own buffers
    text = one.text().split("define {} @root(")[0] + (
        "define {} @root(ptr %buf, i64 %bb, ptr %out, i64 %ob, i64 %reps, ptr %buf2, i64 %bb2, "
        "ptr %out2, i64 %ob2) {\nentry:\n"
        "  %w = call ptr @llvm.hpvm.createNode1D(ptr @wi, i64 4)\n"
        "  %v = call ptr @llvm.hpvm.createNode1D(ptr @wi, i64 7)\n"
        + "".join(
            f"  call void @llvm.hpvm.bind.input(ptr %w, i32 {p}, i32 {p}, i1 false)\n" for p in range(5)
        )
        + "".join(
            f"  call void @llvm.hpvm.bind.input(ptr %v, i32 {q}, i32 {p}, i1 false)\n"
            for p, q in zip(range(5), (5, 6, 7, 8, 4))
        )
        + "  ret {} undef\n}\n"
    )
    root = llvm.from_hpvm_ir(DECLS + text)
    bufs = [np.zeros(n, np.int64) for n in (4, 4, 7, 7)]
    _run(
        root,
        (bufs[0].view(np.uint8), bufs[1].view(np.uint8), 0, bufs[2].view(np.uint8), bufs[3].view(np.uint8)),
        "cpu",
    )
    for leaf, (buf, out) in ((one, bufs[:2]), (other, bufs[2:])):
        want_buf, want_out = leaf.model()
        np.testing.assert_array_equal(buf, want_buf)
        np.testing.assert_array_equal(out, want_out)
    source = "\n".join(get_backend("cpu").prepare(root).gen.sources)
    assert "_group_k4x1x1(" in source and "_group_k7x1x1(" in source


def test_a_node_of_no_instances_runs_none() -> None:
    leaf = Leaf(2, (3, 1, 1), 1, (0,), False, 0, False)
    text = _constant_extents(leaf).replace("(ptr @wi, i64 3, i64 1)", "(ptr @wi, i64 3, i64 0)")
    root = llvm.from_hpvm_ir(DECLS + text)
    buf, out = np.full(3, 7, np.int64), np.full(3, 7, np.int64)
    _run(root, (buf.view(np.uint8), out.view(np.uint8), 0, 3, 0, 1), "cpu")
    assert (buf == 7).all() and (out == 7).all()
    assert "_group_k3x0x1(" in "\n".join(get_backend("cpu").prepare(root).gen.sources)


def test_the_copy_s_module_defines_its_entry_alone_with_the_extents_as_constants() -> None:
    leaf = Leaf(2, (8, 4, 1), 1, (1,), True, 2, False)
    clone = barrier_leaf(llvm.from_hpvm_ir(DECLS + _constant_extents(leaf)))
    text = wispecial.specialized_text(clone, (8, 4, 1))
    symbol = wispecial.specialized_symbol(clone, (8, 4, 1))
    assert symbol == f"{clone.group_symbol}.k8x4x1"
    outside = [line for line in text.splitlines() if re.match(r"define (?!internal|private)", line)]
    assert len(outside) == 1 and f"@{symbol}(" in outside[0]
    assert "%nx = add i64 8, 0" in text and "%ny = add i64 4, 0" in text and "%nz = add i64 1, 0" in text
    module = llvm_binding.parse_assembly(text)
    module.verify()


def test_with_specialization_off_a_node_of_constant_extents_runs_the_plain_runner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``HPVM_WORKITEM_SPECIALIZE=0`` (``wispecial.SPECIALIZE``): the same memory, the plain runner."""
    monkeypatch.setattr(wispecial, "SPECIALIZE", False)
    leaf = Leaf(2, (5, 3, 1), 2, (1, 4), True, 2, True)
    want_buf, want_out = leaf.model()
    buf, out, source = _launch(_constant_extents(leaf), leaf)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(buf, want_buf)
    assert "_group(" in source and "_group_k" not in source


def test_the_plain_runner_is_compiled_only_for_a_node_that_calls_it() -> None:
    """Every node of the leaf has constant extents: only their copies are compiled (the
    plain runner's 0.6 s is saved); a node with computed extents compiles the plain one."""
    from hpvm.backends.llvm_native import numba_call

    leaf = Leaf(1, (6, 1, 1), 11, (2,), False, 0, False)  # (a leaf no other test makes)
    constant = llvm.from_hpvm_ir(DECLS + _constant_extents(leaf))
    buf, out, _ = _launch(_constant_extents(leaf), leaf)
    np.testing.assert_array_equal(out, leaf.model()[1])
    assert barrier_leaf(constant).digest not in numba_call._REGISTERED
    _launch(leaf.text(), leaf)
    assert barrier_leaf(llvm.from_hpvm_ir(DECLS + leaf.text())).digest in numba_call._REGISTERED


@pytest.mark.parametrize("linkage", ["", "dso_local ", "linkonce_odr ", "weak_odr dso_local "])
def test_other_definitions_of_the_copy_s_module_become_internal_whatever_their_linkage(linkage: str) -> None:
    import dataclasses

    leaf = Leaf(1, (4, 1, 1), 1, (), False, 0, False)
    clone = barrier_leaf(llvm.from_hpvm_ir(DECLS + _constant_extents(leaf)))
    extra = dataclasses.replace(
        clone, text=clone.text + f"\ndefine {linkage}void @extra() {{\n  ret void\n}}\n"
    )
    text = wispecial.specialized_text(extra, (4, 1, 1))
    assert "define internal void @extra()" in text
    llvm_binding.parse_assembly(text).verify()


def test_a_leaf_run_as_coroutines_keeps_its_one_group_function(monkeypatch: pytest.MonkeyPatch) -> None:
    """Coroutines (here: work-item loops off) have no loops to specialize: a node of
    constant extents calls the leaf's group function, and gives the model's memory."""
    from hpvm.backends.llvm_native import native

    monkeypatch.setattr(native, "WORKITEM_LOOPS", False)
    leaf = Leaf(2, (3, 2, 1), 5, (1,), True, 1, False)
    root = llvm.from_hpvm_ir(DECLS + _constant_extents(leaf))
    assert barrier_leaf(root).barrier_lowering == "coroutine"
    n = int(np.prod(leaf.sizes))
    buf, out = np.zeros(n, np.int64), np.zeros(n, np.int64)
    _run(root, (buf.view(np.uint8), out.view(np.uint8), leaf.reps, *leaf.sizes), "cpu")
    want_buf, want_out = leaf.model()
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(buf, want_buf)
    source = "\n".join(get_backend("cpu").prepare(root).gen.sources)
    assert "_group(" in source and "_group_k" not in source


def test_a_copy_that_cannot_be_made_leaves_the_node_on_the_plain_runner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """If the runner's text could not be specialized (LLVM refusing the copy), the node runs
    on the plain runner — registered then, though no node has computed extents."""

    def refuse(native: object, extents: object) -> str:
        raise RuntimeError("LLVM refused the copy")

    monkeypatch.setattr(wispecial, "specialized_text", refuse)
    leaf = Leaf(1, (5, 1, 1), 13, (3,), False, 0, True)  # (a leaf no other test makes)
    want_buf, want_out = leaf.model()
    buf, out, source = _launch(_constant_extents(leaf), leaf)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(buf, want_buf)
    assert "_group(" in source and "_group_k" not in source
