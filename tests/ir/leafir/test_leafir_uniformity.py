"""Uniformity (``ir/leafir/analyses/uniformity.py``): worked examples, and a property: a
value the analysis calls uniform is the same in every instance of a group when a generated
leaf runs."""

from __future__ import annotations

import os

import numpy as np
from analysis_exec import instance, make_leaf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.ir.graph import Param
from hpvm.ir.leafir import leaf_ir
from hpvm.ir.leafir.analyses import uniformity
from hpvm.ir.types import ArrayType, i64

#: hypothesis examples per property (more while changing the analyses)
EXAMPLES = int(os.environ.get("HPVM_LEAFIR_EXAMPLES", "40"))


@hpvm.leaf(ins=("data", "buffer"), outs=("buffer", "out"))
def group_code(data: hpvm.f64[:], n: hpvm.i64, buffer: hpvm.u8[:], out: hpvm.f64[:]) -> None:
    node = hpvm.get_node()
    lid = hpvm.get_node_instance_id_x(node)
    bid = hpvm.get_node_instance_id_x(hpvm.get_parent_node(node))  # the group's id: uniform
    size = hpvm.get_num_node_instances_x(node)  # uniform
    shared = buffer.view(np.float64)
    first = data[bid * size]  # a read-only array at a uniform index: uniform
    mine = shared[lid]  # varying (and the buffer is written)
    stride = size // 2
    while stride > 0:  # uniform loop
        if lid < stride:  # divergent
            shared[lid] = shared[lid] + shared[lid + stride]
        hpvm.barrier()
        stride = stride // 2
    total = 0.0
    for k in range(lid):  # divergent bounds: k and total vary
        total = total + data[k]
    done = 0
    while n > 0:
        if lid == 3:  # a divergent break: the loop runs a varying number of times
            break
        done = done + 1
        n = n - 1
    out[bid] = first + mine + total + done


def test_worked_example() -> None:
    found = uniformity(leaf_ir(group_code))
    assert found.varying == {"lid", "mine", "k", "total", "done", "n"}
    lines = {s.line: s for s in leaf_ir(group_code).body}
    first_loop = min(line for line, s in lines.items() if type(s).__name__ == "While")
    assert first_loop not in found.divergent  # the barrier's loop is uniform
    assert len(found.divergent) == 4  # the if in it, the for, the second while and its if


@hpvm.leaf(ins=("a",), outs=("out",))
def by_axis(a: hpvm.i64[:, :], out: hpvm.i64[:, :]) -> None:
    node = hpvm.get_node()
    x = hpvm.get_node_instance_id_x(node)
    y = hpvm.get_node_instance_id_y(node)
    row = a[y, 0]
    col = a[0, x]
    acc = 0
    for k in range(y):  # its bounds vary between rows, not along a row
        acc += row * col + k
    out[y, x] = acc


def test_axes_ask_about_instances_that_differ_along_some_ids_only() -> None:
    """``Uniformity(axes=...)``: the cpu back end's jammed neighbours differ in one id only
    (``backends/cpu/jam.py``); the default asks about a group, whose ids all differ."""
    from hpvm.ir.leafir.analyses import Uniformity
    from hpvm.ir.leafir.analyses.manager import ANALYSES

    ir = leaf_ir(by_axis)
    loop = next(s.line for s in ir.body if type(s).__name__ == "For")
    group = uniformity(ir)
    along_x = ANALYSES.get(Uniformity(axes=(0,)), ir)
    along_y = ANALYSES.get(Uniformity(axes=(1,)), ir)
    assert group.varying == {"x", "y", "row", "col", "k", "acc"} and loop in group.divergent
    assert along_x.varying == {"x", "col", "acc"} and loop not in along_x.divergent
    assert along_y.varying == {"y", "row", "k", "acc"} and loop in along_y.divergent


PARAMS = [Param("a", i64), Param("out", ArrayType(i64, 1))]
VARS = ["v0", "v1", "v2"]
ATOM = st.sampled_from(["i", "a", "g", "0", "1", "3", *VARS])
EXPR = st.recursive(
    ATOM,
    lambda inner: st.builds(lambda x, op, y: f"({x} {op} {y})", inner, st.sampled_from("+-*"), inner),
    max_leaves=4,
)
STATEMENT = st.one_of(
    st.builds(lambda v, e: f"{v} = {e}", st.sampled_from(VARS), EXPR),
    st.builds(lambda c, v, e: f"if {c} > 1:\n        {v} = {e}", EXPR, st.sampled_from(VARS), EXPR),
    st.builds(
        lambda c, v, e: f"for q in range({c} % 3):\n        {v} = {v} + {e}",
        EXPR,
        st.sampled_from(VARS),
        EXPR,
    ),
    st.builds(
        lambda c, v: f"while {v} < 5:\n        {v} = {v} + 1\n        if {c} > 0:\n            break",
        EXPR,
        st.sampled_from(VARS),
    ),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STATEMENT, min_size=1, max_size=4), st.integers(-2, 2))
def test_a_uniform_value_is_the_same_in_every_instance_of_a_group(statements: list[str], a: int) -> None:
    body = "    i = hpvm.get_node_instance_id_x(hpvm.get_node())\n"
    body += "    g = hpvm.get_node_instance_id_x(hpvm.get_parent_node(hpvm.get_node()))\n"
    body += "".join(f"    {v} = 0\n" for v in VARS)
    body += "".join(f"    {s}\n" for s in statements)
    body += "".join(f"    out[{k}] = {v}\n" for k, v in enumerate(VARS))
    leaf = make_leaf(PARAMS, body)
    found = uniformity(leaf_ir(leaf))
    results = []
    for x in range(4):
        out = np.zeros(len(VARS), object)  # (Python integers: no overflow)
        with instance((x, 0, 0), (4, 1, 1)):
            leaf.pyfunc(a, out)
        results.append(list(out))
    for k, v in enumerate(VARS):
        if v not in found.varying:
            assert len({r[k] for r in results}) == 1, (v, results, body)


@hpvm.leaf(ins=("buf", "out"), outs=("buf", "out"))
def intervals(buf: hpvm.i64[:], out: hpvm.i64[:], limit: hpvm.i64) -> None:
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    before = buf[0]  # buf is written in this interval (next line): varying
    buf[lid] = buf[lid] // 2
    hpvm.barrier()
    after = buf[0] + buf[1]  # no instance writes buf until the next barrier: uniform
    while after > limit:  # so this loop may hold barriers
        hpvm.barrier()
        buf[lid] = after
        late = buf[0]  # written in this interval again: varying
        hpvm.barrier()
        after = after // 2
    out[lid] = before + late  # (into buf, it would share the interval of `after = ...`)


def test_a_load_right_after_a_barrier_is_uniform_when_its_interval_writes_no_such_array() -> None:
    found = uniformity(leaf_ir(intervals))
    assert {"lid", "before", "late"} <= found.varying
    assert "after" not in found.varying
    loop = next(s for s in leaf_ir(intervals).body if type(s).__name__ == "While")
    assert loop.line not in found.divergent
