"""``ir/bounded.py``: whether a leaf's run is bounded by its scalars and shapes (the runtime
runs only such leaves on the launching thread). It must never accept a leaf that can spin
(a ``while`` on array contents), stop on a value (``break``/``return`` in a loop), loop over
bounds read from array contents, or call the user's own code; and it should accept the plain
loops leaves are made of, a ``while`` on scalars (a tree reduction's halving stride) among them.
"""

from __future__ import annotations

import textwrap

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.ir.bounded import keyed_reason, unbounded_reason
from hpvm.ir.graph import LeafFunction, Param
from hpvm.ir.types import ArrayType, ScalarType


def helper(x: float) -> float:
    return x * 2.0


@hpvm.leaf(ins=("a", "b"), outs=("b",))
def plain(a: hpvm.f32[:], b: hpvm.f32[:], n: hpvm.i64):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    k = n * 2
    s = np.float32(0.0)
    for j in range(min(k, a.shape[0])):
        for q in range(len(b)):
            if a[j] > 0:
                continue
            s += a[j] + np.sqrt(abs(a[q]))
    for v in a:  # iterating over an array is bounded by its shape
        s += v
    b[i] = s


@hpvm.leaf(ins=("flag",), outs=())
def spins(flag: hpvm.i32[:]):
    while flag[0] == 0:
        pass


@hpvm.leaf(ins=("flag",), outs=("flag",))
def spins_on_an_atomic(flag: hpvm.i32[:]):
    while hpvm.atomic_add(flag, 0, 0) == 0:
        pass


@hpvm.leaf(ins=("a",), outs=("a",))
def halves(a: hpvm.f32[:], block: hpvm.i64):
    """A tree reduction's rounds: a ``while`` on a local halved from a scalar."""
    lid = hpvm.get_node_instance_id_x(hpvm.get_node())
    stride = block // 2
    while stride > 0:
        if lid < stride:
            a[lid] += a[lid + stride]
        stride //= 2


@hpvm.leaf(ins=("a",), outs=("a",))
def while_on_a_read(a: hpvm.f32[:], n: hpvm.i64):
    m = int(a[0])
    k = n
    while k < m:
        k += 1
    a[1] = k


@hpvm.leaf(ins=("a",), outs=())
def while_stops(a: hpvm.f32[:], n: hpvm.i64):
    k = 0
    while k < n:
        if a[k] < 0:
            break
        k += 1


@hpvm.leaf(ins=("a",), outs=())
def stops(a: hpvm.f32[:], n: hpvm.i64):
    for j in range(n):
        if a[j] < 0:
            break


@hpvm.leaf(ins=("a",), outs=("b",))
def read_bound(a: hpvm.f32[:], b: hpvm.f32[:]):
    m = int(a[0])
    t = m + 1
    for j in range(t):
        b[0] += j


@hpvm.leaf(ins=("a",), outs=("b",))
def element_bound(a: hpvm.f32[:], b: hpvm.f32[:]):
    for v in a:
        for j in range(int(v)):
            b[0] += j


@hpvm.leaf(ins=("a",), outs=("a",))
def calls_helper(a: hpvm.f32[:]):
    a[0] = helper(a[0])


def test_plain_loops_over_scalars_shapes_and_arrays_are_bounded():
    assert unbounded_reason(plain) is None
    assert keyed_reason(plain) is None


def test_a_while_on_scalars_is_set_by_the_run_key_but_may_not_end():
    """A tree reduction's halving stride turns as often on every run with the same scalars
    (a quick launch may run it: ``keyed_reason``); a stream, which runs new values on the
    host unkeyed, keeps every ``while`` on its thread (``unbounded_reason``)."""
    assert keyed_reason(halves) is None
    assert "has a while loop" in unbounded_reason(halves)


def test_what_is_refused_and_why():
    assert "has a while loop" in unbounded_reason(spins)
    for spinning in (spins, spins_on_an_atomic, while_on_a_read):
        assert "has a while loop whose test depends on array contents" in keyed_reason(spinning)
    assert "leaves a while loop early" in keyed_reason(while_stops)
    assert "leaves a for loop early" in unbounded_reason(stops)
    assert "depend on array contents" in unbounded_reason(read_bound)
    assert "depend on array contents" in unbounded_reason(element_bound)
    assert "calls a function of its own (helper)" in unbounded_reason(calls_helper)
    assert f"{spins.location.file}:" in unbounded_reason(spins)  # says where


def test_the_verdict_is_cached_and_forgotten_with_the_source():
    source = "def leaf(a, n):\n    for j in range(n):\n        a[j] = 0\n"
    fn = _leaf(source)
    assert unbounded_reason(fn) is None
    assert keyed_reason(fn) is None
    fn.set_source("def leaf(a, n):\n    while a[0] > 0:\n        n -= 1\n", 1)
    assert "while" in unbounded_reason(fn)
    assert "while" in keyed_reason(fn)


# --- property: random loop nests against a model of the rule -------------------------

# A loop's bound: (the iterable's text, whether it reads array contents).
_BOUNDS = {
    "scalar": ("range(n)", False),
    "shape": ("range(a.shape[0])", False),
    "len": ("range(len(a) - 1)", False),
    "clean alias": ("range(k)", False),  # k = n * 2
    "array": ("a", False),  # iterates over the elements: bounded by the shape
    "element": ("range(int(a[1]))", True),
    "read alias": ("range(m)", True),  # m = int(a[0])
    "outer variable": ("range(int({outer}))", None),  # as contentful as the outer loop variable
}


@st.composite
def nests(draw):
    depth = draw(st.integers(1, 3))
    return (
        [draw(st.sampled_from(sorted(_BOUNDS))) for _ in range(depth)],
        draw(st.sampled_from(["none", "break", "return", "while", "while on a read", "while left early"])),
    )


def _leaf(source: str) -> LeafFunction:
    namespace: dict = {"np": np}
    exec(source, namespace)
    params = [Param("a", ArrayType(ScalarType("f32"), 1)), Param("n", ScalarType("i64"))]
    return LeafFunction(namespace["leaf"], "leaf", params, [], source=source)


@settings(max_examples=60, deadline=None)
@given(nests())
def test_random_nests_are_judged_as_the_rule_says(nest):
    bounds, exit_kind = nest
    lines = ["def leaf(a, n):", "    k = n * 2", "    m = int(a[0])", "    s = 0.0"]
    expected_bounded, outer, outer_reads = True, "n", False
    for depth, kind in enumerate(bounds):
        text, reads = _BOUNDS[kind]
        if reads is None:
            text, reads = text.format(outer=outer), outer_reads
        expected_bounded &= not reads
        var = f"v{depth}"
        lines.append("    " * (depth + 1) + f"for {var} in {text}:")
        outer, outer_reads = var, reads or kind == "array"
    body = "    " * (len(bounds) + 1)
    keyed = expected_bounded
    if exit_kind == "while":  # a test of locals and scalars: set by the run key, may not end
        lines.append(body + "while s < n:")
        lines.append(body + "    s += 1.0")
        expected_bounded = False
    elif exit_kind == "while on a read":  # m holds an element: could spin on another launch
        lines.append(body + "while s < m:")
        lines.append(body + "    s += 1.0")
        expected_bounded = keyed = False
    elif exit_kind == "while left early":
        lines.append(body + "while s < n:")
        lines.append(body + "    if s > 3.0:")
        lines.append(body + "        break")
        lines.append(body + "    s += 1.0")
        expected_bounded = keyed = False
    elif exit_kind != "none":
        lines.append(body + "if s > 3.0:")
        lines.append(body + f"    {exit_kind}")
        expected_bounded = keyed = False
    lines.append(body + "s += 1.0")
    source = "\n".join(lines) + "\n"
    fn = _leaf(source)
    assert (unbounded_reason(fn) is None) == expected_bounded, textwrap.indent(source, "  ")
    assert (keyed_reason(fn) is None) == keyed, textwrap.indent(source, "  ")
