"""Index facts and ownership by the instance id (``ir/leafir/analyses/indices.py``,
``ownership.py``): worked examples, and properties checked against a generated leaf's
actual accesses when its Python runs for every instance of a small grid."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from analysis_exec import instance, make_leaf, recording
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm.ir.graph import Param
from hpvm.ir.leafir import leaf_ir
from hpvm.ir.leafir.analyses import Affine, index_facts, ownership
from hpvm.ir.leafir.analyses.indices import Guard
from hpvm.ir.types import ArrayType, i64

#: hypothesis examples per property (more while changing the analyses)
EXAMPLES = int(os.environ.get("HPVM_LEAFIR_EXAMPLES", "40"))


@hpvm.leaf(ins=("x", "out"), outs=("out", "x"))
def shapes(x: hpvm.i64[:], out: hpvm.i64[:, :], s: hpvm.i64) -> None:
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    j = hpvm.get_node_instance_id_y(hpvm.get_node())
    k = 3 + i
    out[i, 2 * j + 1] = x[k - 1] + x[i * i]
    if s > 0:
        out[i, 0] = x[i + 5]
    m = 2 * (i + 1)
    x[(m + 1) if s else 0] = 1  # a branch of x if c else y: the test is evaluated, not the branches
    if s > 1:
        return
    out[j, i] = 0  # after a return under an if: not every instance gets here


def test_affine_forms_and_which_accesses_every_instance_evaluates() -> None:
    info = index_facts(leaf_ir(shapes))
    assert info.handles == {"node": 0}
    assert info.ids == {
        "i": Affine(0, 1, 0),
        "j": Affine(1, 1, 0),
        "k": Affine(0, 1, 3),
        "m": Affine(0, 2, 2),
    }
    got = [(a.array, a.store, a.affine, a.unconditional) for a in info.accesses]
    x0, y0 = Affine(0, 1, 0), Affine(1, 1, 0)
    assert got == [
        ("out", True, (x0, Affine(1, 2, 1)), True),
        ("x", False, (Affine(0, 1, 2),), True),
        ("x", False, (None,), True),
        ("out", True, (x0, None), False),  # under the if
        ("x", False, (Affine(0, 1, 5),), False),
        ("x", True, (None,), True),
        ("out", True, (y0, x0), False),  # after the conditional return
    ]


@hpvm.leaf(ins=("src", "b"), outs=("dst", "hist"))
def owned(src: hpvm.f64[:, :], b: hpvm.f64[:], dst: hpvm.f64[:], hist: hpvm.i64[:]) -> None:
    node = hpvm.get_node()
    i = hpvm.get_node_instance_id_x(node)
    k = i + 1
    dst[k] = src[i, 0] + src[k + 1, src.shape[1] - 1] + b[3]
    hpvm.atomic_add(hist, 0, 1)
    hpvm.atomic_sub(hist, 1, 1)


def test_ownership_rows_broadcast_and_combined_atomics() -> None:
    found = ownership(leaf_ir(owned), frozenset({"dst", "hist"}))
    assert found.problem is None
    assert found.rows == {"dst": (1, 1), "src": (0, 2)}
    assert found.broadcast == {"b"} and found.combined == {"hist": "add"}


def test_ownership_names_the_line_of_the_access_it_refuses() -> None:
    @hpvm.leaf(ins=("x",), outs=("out",))
    def neighbour(x: hpvm.i64[:], out: hpvm.i64[:]) -> None:
        i = hpvm.get_node_instance_id_x(hpvm.get_node())
        out[i] = x[i - 1]

    problem = ownership(leaf_ir(neighbour), frozenset({"out"})).problem
    line = Path(__file__).read_text().splitlines().index("        out[i] = x[i - 1]") + 1
    assert problem == (
        f"leaf 'neighbour' indexes 'x' at line {line} before the row of its own instance "
        "(a negative offset from the instance id x)"
    )


# -- properties on generated leaves ------------------------------------------------------


@hpvm.leaf(ins=("a",), outs=("b",))
def guarded(a: hpvm.f32[:], b: hpvm.f32[:], n: hpvm.i64, m: hpvm.i64) -> None:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    j = i + 1
    if i < n:
        b[i] = a[j] + a[i * i]  # (i * i: not affine, no fact)
    if 1 <= j and n - 1 >= i:
        b[i] = a[i - 1] if m else 0.0  # a branch of x if c else y: not evaluated by every instance
    if i != 3:
        b[i] = 1.0  # != is no box of ids: no guards
    if i < n or i > m:
        b[i] = 2.0  # or: not understood, no guards
    if m > 0:
        b[i] = 3.0  # a test of no id: no guards
    if i == 2:
        for t in range(m):
            b[t] = 4.0  # compound statements in the body: not guarded
        b[i] = 5.0
    m = m + 1
    if i < m:
        b[i] = 6.0  # m is assigned: no bound
    if i < n:
        b[0] = 7.0
        if m > 2:
            return
        b[i + 2] = 8.0  # after a statement holding a return: not guarded


def test_guarded_accesses_and_their_guards() -> None:
    info = index_facts(leaf_ir(guarded))
    x0, x1 = Affine(0, 1, 0), Affine(0, 1, 1)
    below_n = (Guard(x0, "n", -1, 1),)  # i - n + 1 <= 0
    got = [(a.array, a.store, a.affine, a.guards) for a in info.accesses if a.guards]
    assert got == [
        ("b", True, (x0,), below_n),
        ("a", False, (x1,), below_n),
        ("a", False, (None,), below_n),
        ("b", True, (x0,), (Guard(Affine(0, -1, -1), None, 0, 1), Guard(x0, "n", -1, 1))),
        ("b", True, (x0,), (Guard(x0, None, 0, -2, True),)),
        ("b", True, (None,), below_n),  # b[0]: a constant, no id
    ]
    assert not any(a.unconditional for a in info.accesses if a.guards)  # (not every instance)


@hpvm.leaf(ins=("a",), outs=("b",))
def exits(a: hpvm.f32[:, :], b: hpvm.f32[:, :], w: hpvm.i64, h: hpvm.i64) -> None:
    """CUDA's early exit and ``else`` branches, on a 2-D grid (``d[y, x]``)."""
    x = hpvm.get_node_instance_id_x(hpvm.get_node())
    y = hpvm.get_node_instance_id_y(hpvm.get_node())
    if x >= w or y >= h:
        return
    b[y, x] = a[y, x] + 0.5  # the instances that go on: x < w and y < h
    if x == 0:
        b[y, 0] = 1.0
    else:
        b[y, x - 1] = 2.0  # not (x == 0) is x != 0: no box, no guards
    if not x < 2:
        b[y, x - 2] = 3.0
    if x < 4:
        b[y, x] = 4.0
    else:
        b[y, x - 4] = 5.0
    if y != 1:
        return  # the instances that go on: y == 1 too
    b[1, x] = 6.0
    if x > 4 and y < h:
        return  # not (a and b) is an or: the facts end here
    b[0, x] = 7.0


def _passing(guards: tuple[Guard, ...], ids: tuple[int, int], scalars: dict[str, int]) -> bool:
    for g in guards:
        value = g.term.stride * ids[g.term.dim] + g.term.offset + g.constant
        value += g.k * scalars[g.scalar] if g.scalar is not None else 0
        if value != 0 if g.equal else value > 0:
            return False
    return True


def test_an_early_exit_and_an_else_guard_the_accesses_after_them() -> None:
    info = index_facts(leaf_ir(exits))
    scalars = {"w": 6, "h": 3}
    grid = [(x, y) for y in range(5) for x in range(9)]
    # each store by its line in the leaf (its decorator the first)
    stores = {a.line - exits.pyfunc.__code__.co_firstlineno: a for a in info.accesses if a.store}

    def instances(offset: int) -> set[tuple[int, int]]:
        return {ids for ids in grid if _passing(stores[offset].guards, ids, scalars)}

    inside = {(x, y) for x, y in grid if x < 6 and y < 3}
    assert instances(7) == inside and not stores[7].unconditional
    assert stores[7].affine == (Affine(1, 1, 0), Affine(0, 1, 0))
    assert instances(9) == {(x, y) for x, y in inside if x == 0}
    assert not stores[11].guards  # (the else of an == test)
    assert instances(13) == {(x, y) for x, y in inside if x >= 2}
    assert instances(15) == {(x, y) for x, y in inside if x < 4}
    assert instances(17) == {(x, y) for x, y in inside if x >= 4}
    assert instances(20) == {(x, y) for x, y in inside if y == 1}
    assert not stores[23].guards and not stores[23].unconditional
    loads = [a for a in info.accesses if not a.store]
    assert [(a.array, a.affine, a.guards) for a in loads] == [("a", stores[7].affine, stores[7].guards)]


N = 6
LENGTH = 4 * N + 16  # (the arrays of ``_run``)
PARAMS = [Param("src", ArrayType(i64, 1)), Param("dst", ArrayType(i64, 1)), Param("s", i64)]
INDEX = st.one_of(
    st.builds(lambda c: f"i + {c}", st.integers(0, 3)),
    st.builds(lambda c: f"i - {c}", st.integers(1, 2)),
    st.builds(lambda c: f"{c} + i", st.integers(0, 2)),
    st.builds(lambda a, c: f"{a} * i + {c}", st.integers(2, 3), st.integers(0, 2)),
    st.builds(lambda c: f"k + {c}", st.integers(0, 2)),
    st.builds(str, st.integers(0, 3)),
    st.just("i * i"),
    st.just("s"),
)
STATEMENT = st.one_of(
    st.builds(lambda w, r: f"dst[{w}] = src[{r}]", INDEX, INDEX),
    st.builds(lambda w, r: f"dst[{w}] = src[{r}] + dst[{w}]", INDEX, INDEX),
    st.builds(lambda r: f"if s > 1:\n        dst[0] = src[{r}]", INDEX),
    st.builds(lambda r: f"t = src[{r}] + i", INDEX),
    st.builds(lambda r, c: f"if s > {c}:\n        return\n    t = src[{r}]", INDEX, st.integers(0, 3)),
)
#: tests of the id and a bound: those of guarded accesses, and some that give none
TEST = st.one_of(
    st.builds(
        lambda op, c: f"i {op} s + {c}", st.sampled_from(["<", "<=", ">", ">=", "=="]), st.integers(-2, 2)
    ),
    st.builds(
        lambda op, c: f"s - {c} {op} k", st.sampled_from(["<", "<=", ">", ">=", "=="]), st.integers(-2, 2)
    ),
    st.builds(lambda c: f"2 * i + 1 < {c}", st.integers(0, 9)),
    st.builds(lambda a, b: f"{a} <= i < s + {b}", st.integers(0, 3), st.integers(-1, 2)),
    st.builds(lambda c: f"i >= {c} and i - 1 < s", st.integers(0, 4)),
    st.builds(lambda c: f"not i < s + {c}", st.integers(-2, 2)),
    st.builds(lambda c: f"i < len(dst) - {c}", st.integers(LENGTH - N - 1, LENGTH - 1)),
    st.builds(lambda c: f"src.shape[0] - {c} > k", st.integers(LENGTH - N - 1, LENGTH - 1)),
    st.builds(lambda c: f"i > {c} or i < s", st.integers(0, 4)),
    st.sampled_from(["i != 2", "i < s or i > 3", "s > 1", "i * i < s", "not (i > 1 and i < s)"]),
)
GUARDED = st.builds(lambda t, w, r: f"if {t}:\n        dst[{w}] = src[{r}]", TEST, INDEX, INDEX)
#: the same tests on an ``else`` branch and as an early exit (the statements after it)
ELSE = st.builds(
    lambda t, w, r: f"if {t}:\n        t = 1\n    else:\n        dst[{w}] = src[{r}]", TEST, INDEX, INDEX
)
EXIT = st.builds(lambda t: f"if {t}:\n        return", TEST)


def _leaf(statements: list[str], offset: int):
    body = "    i = hpvm.get_node_instance_id_x(hpvm.get_node())\n"
    body += f"    k = i + {offset}\n    t = 0\n"
    body += "".join(f"    {s}\n" for s in statements)
    return make_leaf(PARAMS, body)


def _run(leaf, s: int) -> list[list[tuple[str, str, tuple[int, ...]]]]:
    """Each instance's accesses, for instances 0 .. N - 1."""
    logs = []
    for x in range(N):
        log: list = []
        src = recording("src", np.arange(LENGTH), log)
        dst = recording("dst", np.zeros(LENGTH, np.int64), log)
        with instance((x, 0, 0), (N, 1, 1)):
            leaf.pyfunc(src, dst, s)
        logs.append(log)
    return logs


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STATEMENT, min_size=1, max_size=4), st.integers(0, 2), st.integers(0, 3))
def test_unconditional_facts_hold_for_every_instance(statements: list[str], offset: int, s: int) -> None:
    leaf = _leaf(statements, offset)
    facts = [a for a in index_facts(leaf_ir(leaf)).accesses if a.unconditional and a.affine[0] is not None]
    logs = _run(leaf, s)
    for x, log in enumerate(logs):
        for fact in facts:
            term = fact.affine[0]
            assert term is not None and term.dim == 0
            want = ("store" if fact.store else "load", fact.array, (term.stride * x + term.offset,))
            assert want in log, (fact, x, log)


def _plain(statement: str) -> bool:
    """A statement that is no ``if``: every instance reaching it accesses."""
    return not statement.startswith("if")


def _meets(guard: Guard, x: int, s: int) -> bool:
    bound = s if guard.scalar == "s" else 0 if guard.scalar is None else LENGTH  # (src, dst: LENGTH)
    value = guard.term.stride * x + guard.term.offset + guard.k * bound + guard.constant
    return value == 0 if guard.equal else value <= 0


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(STATEMENT, GUARDED, ELSE, EXIT), min_size=1, max_size=4),
    st.integers(0, 2),
    st.integers(-1, 5),
)
def test_guarded_facts_hold_for_every_instance_passing_the_test(
    statements: list[str], offset: int, s: int
) -> None:
    """Each guarded access is made by every instance meeting its guards (the bounds
    pre-check's soundness), and — the leaf's only access at its index otherwise — by no
    instance failing them."""
    leaf = _leaf(statements, offset)
    facts = [a for a in index_facts(leaf_ir(leaf)).accesses if a.guards and a.affine[0] is not None]
    logs = _run(leaf, s)
    for x, log in enumerate(logs):
        for fact in facts:
            term = fact.affine[0]
            assert term is not None
            want = ("store" if fact.store else "load", fact.array, (term.stride * x + term.offset,))
            if all(_meets(g, x, s) for g in fact.guards):
                assert want in log, (fact, x, s, log)
    if len(statements) == 1 and facts and statements[0].startswith("if"):
        for x, log in enumerate(logs):  # (one guarded statement: nothing else accesses)
            assert bool(log) == all(_meets(g, x, s) for g in facts[0].guards), (facts[0], x, s, log)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(EXIT, min_size=1, max_size=2),
    st.one_of(GUARDED, ELSE, STATEMENT.filter(_plain)),
    st.integers(-1, 5),
)
def test_exits_guard_exactly_the_instances_that_go_on(tests: list[str], last: str, s: int) -> None:
    """After early exits, an access's guards are met by exactly the instances that make it."""
    leaf = _leaf([*tests, last], 0)
    facts = [a for a in index_facts(leaf_ir(leaf)).accesses if a.guards]
    for x, log in enumerate(_run(leaf, s)):
        for fact in facts:  # (no test reads an array: every access is the last statement's)
            assert bool(log) == all(_meets(g, x, s) for g in fact.guards), (fact, x, s, log)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STATEMENT, min_size=1, max_size=4), st.integers(0, 2), st.integers(0, 3))
def test_an_owned_leaf_touches_only_its_rows(statements: list[str], offset: int, s: int) -> None:
    leaf = _leaf(statements, offset)
    found = ownership(leaf_ir(leaf), frozenset({"dst"}))
    if found.problem is not None:
        return
    for x, log in enumerate(_run(leaf, s)):
        for kind, array, (index,) in log:
            if array in found.broadcast:
                assert kind == "load" and array not in found.rows
                continue
            lo, hi = found.rows[array]
            assert lo <= index - x <= hi
            if kind == "store" or array == "dst":
                assert lo == hi  # a written array: one row per instance, its own
