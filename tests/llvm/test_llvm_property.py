"""Properties of the LLVM form. For generated graph shapes — 1 to 4 children replicated in 0 to 3 dimensions
with sizes from constants, ports, shapes and their arithmetic; edges (one-to-one where the
grids allow it, else all-to-all) and binds of scalars and 2-D arrays; outputs bound out;
sometimes one more level — the LLVM form verifies, calls HPVM intrinsics only in node
functions (seed 000) and imports to the same graph (or, where a size's constants fold
below zero, is refused at the import). And an
exported program edited once anywhere in its graph or signatures imports or fails with an
``HPVMError``, never a crash."""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

import llvmlite.binding as llvm_binding
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hpvm
from hpvm import llvm
from hpvm.errors import HPVMError, VerificationError
from hpvm.ir.expr import BinOp, Call, Const, Expr, Param, Shape
from hpvm.ir.graph import (
    ALL_TO_ALL,
    ONE_TO_ONE,
    ChildGraph,
    Edge,
    InputBind,
    InternalFunction,
    Node,
    OutputBind,
)
from hpvm.ir.graph import Param as Port
from hpvm.ir.printer import print_program
from hpvm.ir.types import ArrayType, f32, i64
from hpvm.llvm.errors import GraphCallError
from hpvm.llvm.seedrule import outside_node_functions

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared suite


@hpvm.leaf
def g_inc(x: hpvm.i64) -> hpvm.i64:
    return x + 1


@hpvm.leaf
def g_pair(x: hpvm.i64, y: hpvm.i64) -> tuple[hpvm.i64, hpvm.i64]:
    return x + y, x - y


@hpvm.leaf(ins=("a",), outs=("a",))
def g_touch(a: hpvm.f32[:, :], k: hpvm.i64) -> hpvm.f32[:, :]:
    a[0, 0] = k
    return a


LEAVES = [g_inc, g_pair, g_touch]
PARAMS = [Port("a", ArrayType(f32, 2)), Port("n", i64), Port("m", i64)]

atoms = st.one_of(
    st.integers(0, 5).map(Const),
    st.sampled_from([Param("n"), Param("m"), Shape("a", 0), Shape("a", 1)]),
)
sizes: st.SearchStrategy[Expr] = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.tuples(st.sampled_from(["+", "-", "*", "//", "%"]), inner, inner).map(lambda t: BinOp(*t)),
        st.tuples(st.sampled_from(["min", "max"]), st.lists(inner, min_size=2, max_size=3)).map(
            lambda t: Call(t[0], tuple(t[1]))
        ),
    ),
    max_leaves=4,
)


@st.composite
def graphs(draw: st.DrawFn, name: str = "g_root") -> InternalFunction:
    graph = ChildGraph()
    used_outputs: set[tuple[int, int]] = set()
    for k in range(draw(st.integers(1, 4))):
        fn = draw(st.sampled_from(LEAVES))
        dims = draw(st.integers(0, 3))
        node = Node(f"{fn.name}_{k}", fn, tuple(draw(sizes) for _ in range(dims)))
        for ic, p in enumerate(fn.params):
            sources = [
                (src, sp)
                for src in graph.nodes
                for sp, t in enumerate(src.function.out_types)
                if t == p.type and (id(src), sp) not in used_outputs
            ]
            if sources and draw(st.booleans()):
                src, sp = draw(st.sampled_from(sources))
                same_grid = src.sizes == node.sizes
                repl = ONE_TO_ONE if same_grid and draw(st.booleans()) else ALL_TO_ALL
                graph.edges.append(Edge(src, sp, node, ic, repl=repl, stream=draw(st.booleans())))
                used_outputs.add((id(src), sp))
            else:
                choices = [ip for ip, q in enumerate(PARAMS) if q.type == p.type]
                graph.in_binds.append(InputBind(draw(st.sampled_from(choices)), node, ic))
        graph.nodes.append(node)
    op = 0
    for node in graph.nodes:
        for oc in range(len(node.function.out_types)):
            if (id(node), oc) not in used_outputs and draw(st.booleans()):
                graph.out_binds.append(OutputBind(node, oc, op))
                op += 1
    inner = InternalFunction(
        name, list(PARAMS), graph=graph, hint=draw(st.sampled_from([None, "cpu", "gpu"]))
    )
    if not draw(st.booleans()):
        return inner
    outer_node = Node("mid", inner, tuple(draw(sizes) for _ in range(draw(st.integers(0, 2)))))
    outer = ChildGraph(nodes=[outer_node])
    outer.in_binds = [InputBind(ip, outer_node, ip) for ip in range(len(PARAMS))]
    outer.out_binds = [OutputBind(outer_node, oc, oc) for oc in range(op)]
    return InternalFunction("g_top", list(PARAMS), graph=outer)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_generated_graphs_round_trip_through_llvm(root: InternalFunction) -> None:
    try:
        hpvm.verify(root)
    except VerificationError:
        assume(False)
    text = llvm.to_hpvm_ir(root)
    module = llvm_binding.parse_assembly(text)
    module.verify()
    assert not outside_node_functions(module)  # seed 000
    if any(folds_negative(size) for size in all_sizes(root)):  # (a node no launch could run)
        with pytest.raises(GraphCallError, match="cannot have a negative number of instances"):
            llvm.from_hpvm_ir(text)
        return
    assert print_program(llvm.from_hpvm_ir(text)) == print_program(root)


def all_sizes(fn: InternalFunction) -> list[Expr]:
    """Every replication size in ``fn``'s graph and the graphs below it."""
    found: list[Expr] = []
    for node in fn.graph.nodes:
        found += node.sizes
        if isinstance(node.function, InternalFunction):
            found += all_sizes(node.function)
    return found


def folds_negative(size: Expr) -> bool:
    """Whether ``size`` reads no port and its constants fold below zero (the import refuses
    it: ``tests/c/test_c_graph_errors.py``)."""
    try:
        return not size.params() and size.evaluate({}) < 0
    except ZeroDivisionError:
        return False


MUTATIONS = {
    "number": lambda line, k: re.sub(r"\b\d+\b", str(k - 2), line, count=1),
    "drop line": lambda line, k: "",
    "drop attribute": lambda line, k: re.sub(r'"hpvm\.\w+"(="[^"]*")?', "", line, count=1),
    "retype": lambda line, k: line.replace("f32", "i64", 1).replace("f64", "i32", 1),
    "narrow": lambda line, k: line.replace("i64 %", "i32 %", 1),
    "pointer": lambda line, k: line.replace("ptr", "i64", 1),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_exports_import_or_fail_with_an_hpvm_error(data: st.DataObject) -> None:
    """Whatever one edit of an exported program's graph or signatures does, import gives a
    graph or an ``HPVMError``, never another exception."""
    from programs import PROGRAMS

    program = data.draw(st.sampled_from(PROGRAMS[::4]), label="program")
    lines = _export_of(program.name).splitlines()
    where = [i for i, line in enumerate(lines) if "hpvm" in line and not line.startswith("declare")]
    i = data.draw(st.sampled_from(where), label="line")
    edit = data.draw(st.sampled_from(sorted(MUTATIONS)), label="edit")
    lines[i] = MUTATIONS[edit](lines[i], data.draw(st.integers(0, 12), label="k"))
    try:
        llvm.from_hpvm_ir("\n".join(lines))
    except HPVMError:
        pass


@cache
def _export_of(name: str) -> str:
    from programs import PROGRAMS

    return llvm.to_hpvm_ir(next(p for p in PROGRAMS if p.name == name).root)
