"""The cpu back end orders a replicated Python leaf's instance loops by its accesses
(``graphgen.loop_order``, ``ir/leafstride.py``): the id that indexes arrays at unit stride
runs innermost, x innermost means the whole nest reversed (z outermost, in parallel).

The programs of ``tests/gpu_convention.py`` (2-D and 3-D nodes, multi-dimensional and
flattened indices, a flattened hierarchy, a fused group, the peeled last instance,
privatized atomics) give the interpreter's results exactly, and each generated loop nest is
the one ``loop_order`` chose.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import hpvm
from gpu_convention import (
    CASES,
    Case,
    blur2,
    blur2_root,
    flat2_root,
    flat3_root,
    fused_root,
    grid,
    histogram2_root,
    same_as_interp,
    stencil3,
    stencil3_root,
    tile,
    tiles_root,
    y_fastest_root,
)
from hpvm.backends import get_backend
from hpvm.backends.cpu import loopnest
from hpvm.backends.cpu.graphgen import loop_order
from hpvm.ir.graph import InternalFunction

pytestmark = pytest.mark.usefixtures("hpvm_runtime")


def generated(root) -> str:
    return "\n".join(get_backend("cpu").prepare(root).gen.sources)


def function(source: str, name: str) -> str:
    """The generated function ``name`` of ``source``."""
    start = source.index(f"def {name}(")
    end = source.find("\ndef ", start + 1)
    return source[start : end if end >= 0 else len(source)]


def chunk0(source: str) -> str:
    """The name of the first chunk function of ``source``."""
    return re.search(r"^def (\w+_chunk0)\(", source, flags=re.M).group(1)


def loops(source: str, prefix: str) -> list[str]:
    """The loop variables of the generated loops whose names start with ``prefix``, in
    nesting order, and the narrowed (vectorized) innermost id last."""
    found = []
    for line in source.splitlines():
        line = line.strip()
        if line.startswith("for ") and line.split()[1].startswith(prefix):
            found.append(line.split()[1])
        if "__hpvm_narrow(" in line and line.startswith(prefix):
            found.append("narrow:" + line.split(" =")[0])
    return found


ORDERS = {
    "blur_2d": (1, 0),
    "stencil_3d": (2, 1, 0),
    "y_fastest_3d": (0, 2, 1),  # d[x, z, y]: y innermost, x before z
    "flat_2d": (1, 0),
    "flat_3d": (2, 1, 0),
    "fused": (1, 0),
    "histogram_2d": (1, 0),
}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_gpu_convention_programs_match_interp(case: Case) -> None:
    same_as_interp(case.root, case.args(), "cpu", case.disagrees)


@pytest.mark.parametrize("name", sorted(ORDERS))
def test_the_loop_order_follows_the_unit_stride_id(name: str) -> None:
    case = next(c for c in CASES if c.name == name)
    assert loop_order(list(case.root.graph.nodes)) == ORDERS[name]


def test_2d_nest_runs_y_outside_and_x_innermost_bounded():
    source = generated(blur2_root)
    chunk = chunk0(source)
    # Two chunk functions for the one parallel loop: x's loop bounded below 2^32 (vectorized)
    # and x as it is, called where x's extent does not fit in 32 bits (or arrays overlap).
    assert loops(function(source, chunk), "__hg0_i") == ["__hg0_i1", "__hg0_i0_w"]
    assert "for __hg0_i0_w in range(min(__hn0_s0, 4294967295)):" in function(source, chunk)
    assert "__hpvm_narrow(" not in function(source, chunk)
    assert loops(function(source, chunk + "w"), "__hg0_i") == ["__hg0_i1", "__hg0_i0_w"]
    assert "for __hg0_i0_w in range(__hn0_s0):" in function(source, chunk + "w")
    assert "__hg0_i0_small = __hn0_s0 <= 4294967295\n" in source  # x's extent, tested once
    assert "__hpo0_fast = __hg0_i0_small and __hpvm_disjoint((" in source
    assert f"    if __hpo0_fast:\n        __hpvm_try_call({chunk}, " in source
    assert f"    else:\n        __hpvm_try_call_noinline({chunk}w, " in source  # (out of line)
    assert "__hpo0_n = __hn0_s1\n" in source  # the parallel loop (outlined) is y's


def test_3d_nest_runs_z_outermost_x_innermost():
    source = generated(stencil3_root)
    chunk = chunk0(source)
    assert loops(function(source, chunk), "__hg0_i") == ["__hg0_i2", "__hg0_i1", "__hg0_i0_w"]
    assert "range(min(__hn0_s0, 4294967295))" in function(source, chunk)
    assert loops(function(source, chunk + "w"), "__hg0_i") == ["__hg0_i2", "__hg0_i1", "__hg0_i0_w"]


@hpvm.leaf(ins=("src",), outs=("dst",))
def blur1(src: hpvm.i64[:], dst: hpvm.i64[:]):
    x = hpvm.get_node_instance_id_x(hpvm.get_node()) + 1
    dst[x] = src[x - 1] + 2 * src[x + 1] + 100 * x


@hpvm.internal()
def blur1_root(src: hpvm.i64[:], dst: hpvm.i64[:]):
    n = hpvm.create_node_1d(blur1, src.shape[0] - 2)
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_in(n, 1, 1)


def test_a_1d_loop_keeps_one_chunk_function_and_the_run_time_flag():
    """LLVM unswitches a 1-D loop on the flag itself: one chunk function compiles faster."""
    source = generated(blur1_root)
    chunk = chunk0(source)
    assert f"def {chunk}w(" not in source
    assert "__hpvm_narrow(__hg0_i0_w, __hg0_i0_small)" in function(source, chunk)
    same_as_interp(blur1_root, (grid(11), np.zeros(11, np.int64)), "cpu")


@hpvm.internal()
def wide_blur2_root(src: hpvm.i64[:, :], dst: hpvm.i64[:, :]):
    n = hpvm.create_node_2d(blur2, src.shape[1] - 2, src.shape[0] - 2)
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_in(n, 1, 1)


@hpvm.internal()
def wide_stencil3_root(src: hpvm.i64[:, :, :], dst: hpvm.i64[:, :, :]):
    n = hpvm.create_node_3d(stencil3, src.shape[2] - 2, src.shape[1] - 2, src.shape[0] - 2)
    hpvm.bind_in(n, 0, 0)
    hpvm.bind_in(n, 1, 1)


@pytest.mark.parametrize(
    "root, shape", [(wide_blur2_root, (7, 9)), (wide_stencil3_root, (5, 6, 7))], ids=["2d", "3d"]
)
def test_the_unmasked_chunk_runs_where_the_extent_is_too_wide(monkeypatch, root, shape) -> None:
    """Extents of 2^32 and more (too many to run in a test) take the chunk function without
    the mask: with the limit lowered to 3 for these roots (compiled here first), the
    innermost extents 7 and 5 take it, and every result is still the interpreter's."""
    monkeypatch.setattr(loopnest, "MASK", 3)
    source = generated(root)
    assert "_small = __hn0_s0 <= 3\n" in source
    same_as_interp(root, (grid(shape), np.zeros(shape, np.int64)), "cpu")


def test_every_instance_runs_once():
    """Interior points all written (the order skips none), flattened indices included."""
    (_, dst), _ = same_as_interp(blur2_root, (np.ones((7, 9), np.int64), np.zeros((7, 9), np.int64)), "cpu")
    assert np.all(dst[1:-1, 1:-1] != 0) and np.all(dst[0] == 0)
    w, h = 7, 5
    (_, dst, *_), _ = same_as_interp(
        flat2_root, (np.ones(w * h, np.int64), np.zeros(w * h, np.int64), w, h), "cpu"
    )
    assert np.all(dst == 3 + 100 * np.repeat(np.arange(h), w) + np.tile(np.arange(w), h))
    assert loop_order(list(flat3_root.graph.nodes)) == (2, 1, 0)


def test_flattened_hierarchy_runs_the_childrens_x_innermost():
    (parent,) = tiles_root.graph.nodes
    assert isinstance(parent.function, InternalFunction)
    (child,) = tile.graph.nodes
    assert loop_order([child]) == (1, 0)
    source = generated(tiles_root)
    assert "__hf0_" in source  # flattened: parents × children in one prange
    # the children's loops: y (split between the chunks), then x (narrowed)
    assert loops(source, "__hg0f_i") == ["__hg0f_i1", "__hg0f_i0_w", "narrow:__hg0f_i0"]
    assert "__hf0_p * __hn0_0_s1" in source  # chunks split the children's y extent


def test_the_peeled_last_instance_is_the_last_by_id():
    src = np.arange(30, dtype=np.int64).reshape(5, 6)
    _, (last,) = same_as_interp(fused_root, (src, np.zeros((5, 6), np.int64)), "cpu", disagrees=True)
    x, y = 5, 4
    assert last == 1000 * y + x + 2 * src[y, x] + 7 * x  # by id, not the last iteration run


def test_a_fused_group_whose_leaves_disagree_keeps_the_default():
    (gpu_style,) = blur2_root.graph.nodes
    (y_last,) = y_fastest_root.graph.nodes
    assert loop_order([gpu_style, y_last]) == (0, 1)


def test_privatized_atomics_chunk_the_outer_loop_of_the_order():
    assert get_backend("cpu").prepare(histogram2_root).gen.privatized
    assert "__hp0_c * __hn0_s1 // __hp0_nc" in generated(histogram2_root)  # chunks split y
