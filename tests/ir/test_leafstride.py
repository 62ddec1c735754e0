"""Which instance id a Python leaf indexes its arrays with at unit stride (``ir/leafstride.py``):
the last subscript of a multi-dimensional access, the id with coefficient 1 in a flattened
index, and no answer when the accesses disagree or say nothing."""

from __future__ import annotations

import itertools
import linecache

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.ir.graph import LeafFunction
from hpvm.ir.leafstride import SYMBOLIC, access_votes, unit_stride_axis

AXES = "xyz"


def leaf_from(source: str, ins: tuple[str, ...] = ("src",), outs: tuple[str, ...] = ("dst",)) -> LeafFunction:
    """A leaf made from ``source`` (its ``def``), with a file name of its own so that its
    source can be read back, as from a file."""
    filename = f"<leafstride {next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"hpvm": hpvm, "np": np}
    exec(compile(source, filename, "exec"), namespace)
    name = source.split("def ", 1)[1].split("(", 1)[0]
    return hpvm.leaf(ins=ins, outs=outs)(namespace[name])


_COUNTER = itertools.count()

IDS = """\
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    z = hpvm.get_node_instance_id_z(node)
"""


def axis_of(
    body: str, params: str = "src: hpvm.f32[:, :, :], dst: hpvm.f32[:, :, :], w: hpvm.i64"
) -> int | None:
    return unit_stride_axis(leaf_from(f"def k({params}):\n{IDS}{body}"))


def test_gpu_convention_multi_dimensional_picks_x():
    assert axis_of("    dst[z, y, x] = src[z, y, x + 1] + src[z + 1, y, x]\n") == 0


def test_numpy_convention_picks_the_last_index():
    assert axis_of("    dst[x, y, z] = src[x, y, z - 1]\n") == 2


def test_chained_subscripts_count_as_one_access():
    assert axis_of("    dst[z][y][x] = src[z][y][x]\n") == 0


def test_flattened_index_picks_the_id_with_coefficient_one():
    params = "src: hpvm.f32[:], dst: hpvm.f32[:], w: hpvm.i64"
    assert axis_of("    dst[y * w + x] = src[(y + 1) * w + x - 1]\n", params) == 0
    assert axis_of("    dst[x * w + y] = src[x * w + y]\n", params) == 1
    assert axis_of("    dst[(z * w + y) * w + x] = 0\n", params) == 0


def test_locals_carry_their_form_and_augmented_offsets_keep_it():
    params = "src: hpvm.f32[:], dst: hpvm.f32[:], w: hpvm.i64"
    body = "    row = y * w\n    i = row + x\n    i += 1\n    dst[i] = src[int(i)]\n"
    assert axis_of(body, params) == 0


def test_a_parents_id_is_uniform():
    params = "src: hpvm.f32[:, :], dst: hpvm.f32[:, :], w: hpvm.i64"
    body = (
        "    p = hpvm.get_parent_node(node)\n"
        "    px = hpvm.get_node_instance_id_x(p)\n"
        "    dst[y, px * w + x] = src[y, px * w + x]\n"
    )
    assert axis_of(body, params) == 0


def test_no_answer_without_votes_or_on_a_tie():
    params = "src: hpvm.f32[:], dst: hpvm.f32[:], w: hpvm.i64"
    assert axis_of("    dst[0] = src[w]\n", params) is None  # no id
    assert axis_of("    dst[x // 2] = src[x * y]\n", params) is None  # not affine
    assert axis_of("    dst[2 * x] = src[x + y]\n", params) is None  # stride 2; two unit ids
    body = "    dst[x] = src[y]\n"
    assert axis_of(body, params) is None  # one vote each


def test_a_gather_does_not_vote_but_its_index_read_does():
    leaf = leaf_from(
        f"def k(src: hpvm.f32[:], dst: hpvm.f32[:], w: hpvm.i64):\n{IDS}    dst[int(src[y])] = 1.0\n"
    )
    assert access_votes(leaf) == {1: 1}


def test_a_local_with_two_different_forms_has_none():
    params = "src: hpvm.f32[:], dst: hpvm.f32[:], w: hpvm.i64"
    body = "    i = x\n    if w > 0:\n        i = y\n    dst[i] = 0\n"
    assert axis_of(body, params) is None


def test_loop_variables_over_uniform_ranges_are_uniform():
    params = "src: hpvm.f32[:, :], dst: hpvm.f32[:, :], w: hpvm.i64"
    body = "    s = 0.0\n    for k in range(w):\n        s += src[k, y]\n    dst[x, y] = s\n"
    assert access_votes(leaf_from(f"def k({params}):\n{IDS}{body}")) == {1: 2}


def test_the_answer_is_cached_and_dropped_with_a_new_source():
    leaf = leaf_from(
        f"def k(src: hpvm.f32[:, :], dst: hpvm.f32[:, :], w: hpvm.i64):\n{IDS}    dst[y, x] = 0\n"
    )
    assert unit_stride_axis(leaf) == 0
    source = f"def k(src: hpvm.f32[:, :], dst: hpvm.f32[:, :], w: hpvm.i64):\n{IDS}    dst[x, y] = 0\n"
    leaf.set_source(source, leaf.body.line)
    assert unit_stride_axis(leaf) == 1


def test_coefficients_of_non_constant_factors_are_symbolic():
    from hpvm.ir.leafstride import _scaled

    assert _scaled({0: 1, 1: 2}, None) == {0: SYMBOLIC, 1: SYMBOLIC}
    assert _scaled({0: 1}, 0) == {}


@settings(max_examples=40, deadline=None)
@given(
    dims=st.integers(2, 3),
    data=st.data(),
    offsets=st.lists(st.integers(-2, 2), min_size=3, max_size=3),
    accesses=st.integers(1, 4),
    flattened=st.booleans(),
)
def test_the_picked_id_is_the_one_in_the_last_subscript(dims, data, offsets, accesses, flattened):
    """Random permutations of the ids over the subscripts (and the same as a flattened
    row-major index): the leaf's unit-stride id is the last one, whatever the offsets."""
    perm = data.draw(st.permutations(range(dims)))
    terms = [f"{AXES[a]} + {off}" if off else AXES[a] for a, off in zip(perm, offsets)]
    rank = ", ".join([":"] * dims)
    if flattened:
        index = f"({terms[0]})"
        for term in terms[1:]:
            index = f"({index}) * w + ({term})"
        params = "src: hpvm.f32[:], dst: hpvm.f32[:], w: hpvm.i64"
        read = f"src[{index}]"
    else:
        index = ", ".join(terms)
        params = f"src: hpvm.f32[{rank}], dst: hpvm.f32[{rank}], w: hpvm.i64"
        read = f"src[{index}]"
    body = f"    dst[{index}] = " + " + ".join([read] * accesses) + "\n"
    assert axis_of(body, params) == perm[-1]
