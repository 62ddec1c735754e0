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
N = 6


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
        src = recording("src", np.arange(4 * N + 16), log)
        dst = recording("dst", np.zeros(4 * N + 16, np.int64), log)
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
