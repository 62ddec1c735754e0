"""Lowering, emitting and compiling with Numba computes what the leaf computes when it runs
as Python with its node handles (as the interpreter runs it), on generated leaves rich in
queries: handle variables and chains of parents, ids, counts and dimensions of three
levels, used in arithmetic, conditions, stores and atomics.

The generator is this file's own: the random programs of ``test_leafir_text.py`` loop
without bound and index anywhere, which a run cannot take; these are built to run (every
index in range, loops bounded) while drawing the queries the lowering rewrites."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from analysis_exec import make_leaf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpvm.ir import instance_context as ictx
from hpvm.ir.execution import executing
from hpvm.ir.graph import Param
from hpvm.ir.intrinsics import AXES
from hpvm.ir.leafir import leaf_ir
from hpvm.ir.leafir.lowering import lower_queries
from hpvm.ir.leafir.pyemit import emit_python, namespace
from hpvm.ir.types import parse_type

PARAMS = (Param("out", parse_type("i64[:]")), Param("hist", parse_type("i64[:]")))
#: The replication of each level: the node, its parent, its grandparent, the root.
SIZES = ((3, 2), (2,), (), ())
HANDLES = {
    0: ["hpvm.get_node()", "n"],
    1: ["hpvm.get_parent_node(n)", "p", "hpvm.get_parent_node(hpvm.get_node())"],
    2: ["hpvm.get_parent_node(p)", "g"],
}


class _Levels:
    """An instance's context for running a leaf as Python: node handles are level numbers."""

    def __init__(self, ids: tuple[tuple[int, ...], ...]):
        self.ids = ids

    def get_node(self) -> int:
        return 0

    def get_parent_node(self, node: int) -> int:
        return node + 1

    def get_num_dims(self, node: int) -> int:
        return len(SIZES[node])

    def instance_id(self, node: int, axis: int) -> int:
        return self.ids[node][axis] if axis < len(self.ids[node]) else 0

    def num_instances(self, node: int, axis: int) -> int:
        return SIZES[node][axis] if axis < len(SIZES[node]) else 1

    def atomic(self, op: str, array: Any, index: Any, value: Any) -> Any:
        old = array[index]
        array[index] = old + value
        return old

    def malloc(self, nbytes: int) -> Any:  # pragma: no cover - not drawn
        return np.zeros(nbytes, np.uint8)

    def barrier(self) -> None:  # pragma: no cover - not drawn
        pass


def _instances() -> list[tuple[tuple[int, ...], ...]]:
    found = []
    for p in range(SIZES[1][0]):
        for x in range(SIZES[0][0]):
            for y in range(SIZES[0][1]):
                found.append(((x, y), (p,), (), ()))
    return found


@st.composite
def leaf_bodies(draw: st.DrawFn) -> str:
    names: list[str] = []

    def query() -> str:
        level = draw(st.sampled_from(sorted(HANDLES)))
        handle = draw(st.sampled_from(HANDLES[level]))
        what = draw(st.sampled_from(["id", "count", "dims"]))
        if what == "dims":
            return f"hpvm.get_num_dims({handle})"
        axis = AXES[draw(st.integers(0, 2))]
        return f"hpvm.get_{'node_instance_id' if what == 'id' else 'num_node_instances'}_{axis}({handle})"

    def expr(depth: int) -> str:
        kind = draw(st.sampled_from(["query", "const", "var"] + ["op"] * (2 if depth else 0)))
        if kind == "var" and names:
            return draw(st.sampled_from(names))
        if kind == "const":
            return str(draw(st.integers(-5, 9)))
        if kind != "op":
            return query()
        op = draw(st.sampled_from(["+", "-", "*", "min", "max"]))
        a, b = expr(depth - 1), expr(depth - 1)
        return f"{op}({a}, {b})" if op in ("min", "max") else f"({a} {op} {b})"

    lines = ["    n = hpvm.get_node()", "    p = hpvm.get_parent_node(n)", "    g = hpvm.get_parent_node(p)"]
    slot = (
        "hpvm.get_node_instance_id_x(hpvm.get_parent_node(n)) * 6"
        " + hpvm.get_node_instance_id_x(n) * 2 + hpvm.get_node_instance_id_y(n)"
    )
    for k in range(draw(st.integers(1, 4))):
        value = expr(2)
        if draw(st.booleans()):
            test = f"    if {expr(1)} < {expr(1)}:"
            lines += [test, f"        v{k} = {value}", "    else:", f"        v{k} = {expr(1)}"]
        else:
            lines.append(f"    v{k} = {value}")
        names.append(f"v{k}")
    lines.append(f"    for k in range({query()}):")
    lines.append(f"        hpvm.atomic_add(hist, (k + {draw(st.sampled_from(names))}) % 8, {expr(1)})")
    lines.append(f"    out[{slot}] = {expr(2)}")
    return "\n".join(lines) + "\n"


@numba.njit
def _atomic_add(array, index, value):  # type: ignore[no-untyped-def]
    old = array[index]
    array[index] += value
    return old


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(leaf_bodies())
def test_the_lowered_clone_computes_what_the_leaf_computes(body: str) -> None:
    fn = make_leaf(PARAMS, body)
    expected = (np.zeros(12, np.int64), np.zeros(8, np.int64))
    for ids in _instances():
        with executing(_Levels(ids)):  # type: ignore[arg-type]
            fn.pyfunc(*expected)

    lowered = lower_queries(leaf_ir(fn))
    text, _ = emit_python(lowered.ir, "clone", clone=True)
    scope: dict[str, Any] = {**namespace(), "__hpvm_atomic_add": _atomic_add}
    exec(compile(text, "<clone>", "exec"), scope)
    clone = numba.njit(scope["clone"])
    got = (np.zeros(12, np.int64), np.zeros(8, np.int64))
    for ids in _instances():
        ctx = [v for level, sizes in zip(ids, SIZES) for v in ictx.level(len(sizes), level, sizes)]
        clone(*got, tuple(ctx[: ictx.STRIDE * lowered.levels]))
    assert np.array_equal(got[0], expected[0]), body
    assert np.array_equal(got[1], expected[1]), body
