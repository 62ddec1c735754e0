"""Seed 000's rule in the export: "the auxiliary functions are not allowed to include any HPVM
intrinsics". Every program of the shared suites, exported, calls ``llvm.hpvm.*`` only in
node functions (the rule's checker, ``hpvm.llvm.seedrule``); the checker finds a query in a
helper; the export inlines helpers reaching intrinsics (whoever wrote them: Numba, or a
hand-written leaf imported and exported again), keeps the others, and the result runs the
same (a Hypothesis property over generated call graphs of helpers); a query reached through
recursion or a function pointer is an ``LLVMExportError`` naming the leaf.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

import llvmlite.binding as llvm_binding
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpvm import llvm
from hpvm.ir.bodies import PYTHON_KINDS
from hpvm.ir.graph import LeafFunction, functions
from hpvm.ir.printer import function_refs
from hpvm.llvm.seedrule import CallGraph, Violation, outside_node_functions

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared suites
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_llvm_leaves_run import DECLS, _run  # noqa: E402

from markers import fails  # noqa: E402
from mixed_programs import cpu_gpu_cpu, streamed  # noqa: E402
from programs import PROGRAMS  # noqa: E402
from streaming_programs import three_stages  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::hpvm.HPVMWarning"), pytest.mark.usefixtures("hpvm_runtime")]

SUITE = {p.name: p.root for p in PROGRAMS} | {
    "mixed/cpu_gpu_cpu": cpu_gpu_cpu,
    "mixed/streamed": streamed,
    "streaming/three_stages": three_stages,
}
#: A Python leaf calling one of these calls a seed intrinsic in LLVM (atomics on types other
#: than int32 are LLVM's atomicrmw: not counted).
USES_INTRINSICS = re.compile(r"hpvm\.(get_|barrier\(|malloc\()")


@cache
def _exported(name: str) -> str:
    return llvm.to_hpvm_ir(SUITE[name])


@pytest.mark.parametrize("name", sorted(SUITE))
def test_every_exported_program_calls_intrinsics_only_in_node_functions(name: str) -> None:
    module = llvm_binding.parse_assembly(_exported(name))
    assert outside_node_functions(module) == []
    # Not vacuous: a leaf whose Python calls hpvm's intrinsics calls the seed's in its node function.
    graph = CallGraph(module)
    refs = function_refs(list(functions(SUITE[name])))
    for fn in functions(SUITE[name]):
        if (
            isinstance(fn, LeafFunction)
            and fn.body_kind in PYTHON_KINDS
            and USES_INTRINSICS.search(fn.source)
        ):
            assert refs[id(fn)][1:] in graph.intrinsics, fn.name


def test_the_suite_exercises_the_rule() -> None:
    """Queries, parent queries, malloc, atomics and barriers all end up in node functions."""
    seen: set[str] = set()
    for name in SUITE:
        graph = CallGraph(llvm_binding.parse_assembly(_exported(name)))
        seen |= {short for calls in graph.intrinsics.values() for short, _ in calls}
    assert {"getNode", "getParentNode", "getNodeInstanceID.x", "malloc", "atomic.add", "barrier"} <= seen


# -- hand-written leaves with helper functions, as a C front end writes them ---------------

HELPERS = """
define internal i64 @instance() {
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  ret i64 %i
}

define internal i64 @twice_instance() {
entry:
  %i = call i64 @instance()
  %t = mul i64 %i, 2
  ret i64 %t
}

define internal i64 @plus_thousand(i64 %v) {
entry:
  %r = add i64 %v, 1000
  ret i64 %r
}

define {} @fill(ptr "in" "out" %out, i64 %bytes) {
entry:
  %i = call i64 @instance()
  %t = call i64 @twice_instance()
  %p = call i64 @plus_thousand(i64 %t)
  %s = add i64 %i, %p
  %slot = getelementptr i64, ptr %out, i64 %i
  store i64 %s, ptr %slot
  ret {} zeroinitializer
}
"""


def _root(leaf: str) -> str:
    return f"""
define {{}} @root(ptr %out, i64 %bytes, i64 %n) {{
entry:
  %f = call ptr @llvm.hpvm.createNode1D(ptr @{leaf}, i64 %n)
  call void @llvm.hpvm.bind.input(ptr %f, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %f, i32 1, i32 1, i1 false)
  ret {{}} undef
}}
"""


def test_the_checker_finds_queries_in_helper_functions() -> None:
    found = outside_node_functions(DECLS + HELPERS + _root("fill"))
    assert found == [
        Violation("instance", "%n = call ptr @llvm.hpvm.getNode()"),
        Violation("instance", "%i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)"),
    ]
    assert str(found[0]) == "@instance: %n = call ptr @llvm.hpvm.getNode()"


def test_host_intrinsics_are_host_code_not_counted() -> None:
    host = """
declare ptr @llvm.hpvm.launch(ptr, ptr, i1)
declare void @llvm.hpvm.wait(ptr)
define void @main(ptr %args) {
entry:
  %g = call ptr @llvm.hpvm.launch(ptr @root, ptr %args, i1 false)
  call void @llvm.hpvm.wait(ptr %g)
  ret void
}
"""
    found = outside_node_functions(DECLS + HELPERS + _root("fill") + host)
    assert {v.function for v in found} == {"instance"}


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_helpers_reaching_intrinsics_are_inlined_and_the_rest_kept(target: str) -> None:
    first = llvm.from_hpvm_ir(DECLS + HELPERS + _root("fill"))
    text = llvm.to_hpvm_ir(first)
    module = llvm_binding.parse_assembly(text)
    assert outside_node_functions(module) == []
    defined = {f.name for f in module.functions if not f.is_declaration}
    assert not any(name.startswith(("instance", "twice_instance")) for name in defined), defined
    assert any(name.startswith("plus_thousand") for name in defined)  # no intrinsic: still a call
    fill = str(module.get_function("fill"))
    assert "@llvm.hpvm.getNodeInstanceID.x(" in fill and "@plus_thousand" in fill
    for root in (first, llvm.from_hpvm_ir(text)):
        out = np.zeros(6, dtype=np.int64)
        _run(root, (out.view(np.uint8), 6), target)
        np.testing.assert_array_equal(out, 3 * np.arange(6) + 1000)


RECURSIVE_QUERY = """
define internal i64 @down(i64 %k) {
entry:
  %stop = icmp sle i64 %k, 0
  br i1 %stop, label %base, label %more
base:
  %n = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  ret i64 %i
more:
  %k1 = sub i64 %k, 1
  %r = call i64 @down(i64 %k1)
  ret i64 %r
}

define {} @rec(ptr "in" "out" %out, i64 %bytes) {
entry:
  %i = call i64 @down(i64 3)
  %slot = getelementptr i64, ptr %out, i64 %i
  store i64 %i, ptr %slot
  ret {} zeroinitializer
}
"""


def test_an_intrinsic_reached_through_recursion_is_an_export_error_naming_the_leaf() -> None:
    root = llvm.from_hpvm_ir(DECLS + RECURSIVE_QUERY + _root("rec"), file="rec.ll")
    with fails(
        llvm.LLVMExportError,
        "leaf 'rec' (rec.ll:",
        "@down reaches llvm.hpvm.getNode through recursion (@down → @down)",
        "cannot be inlined",
    ):
        llvm.to_hpvm_ir(root)


def test_mutual_recursion_reaching_an_intrinsic_is_named_as_a_cycle() -> None:
    text = (
        RECURSIVE_QUERY.replace("call i64 @down(i64 %k1)", "call i64 @up(i64 %k1)")
        + """
define internal i64 @up(i64 %k) {
entry:
  %r = call i64 @down(i64 %k)
  ret i64 %r
}
"""
    )
    root = llvm.from_hpvm_ir(DECLS + text + _root("rec"))
    with fails(llvm.LLVMExportError, "leaf 'rec'", "through recursion (@down → @up → @down)"):
        llvm.to_hpvm_ir(root)


RECURSIVE_PURE = """
define internal i64 @fact(i64 %k) {
entry:
  %stop = icmp sle i64 %k, 1
  br i1 %stop, label %base, label %more
base:
  ret i64 1
more:
  %k1 = sub i64 %k, 1
  %r = call i64 @fact(i64 %k1)
  %m = mul i64 %r, %k
  ret i64 %m
}

define {} @facts(ptr "in" "out" %out, i64 %bytes) {
entry:
  %n = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)
  %f = call i64 @fact(i64 %i)
  %slot = getelementptr i64, ptr %out, i64 %i
  store i64 %f, ptr %slot
  ret {} zeroinitializer
}
"""


def test_recursion_that_reaches_no_intrinsic_stays_a_call() -> None:
    text = llvm.to_hpvm_ir(llvm.from_hpvm_ir(DECLS + RECURSIVE_PURE + _root("facts")))
    assert outside_node_functions(text) == []
    assert re.search(r"^define internal i64 @fact\(", text, re.M)
    out = np.zeros(6, dtype=np.int64)
    _run(llvm.from_hpvm_ir(text), (out.view(np.uint8), 6), "interp")
    np.testing.assert_array_equal(out, [1, 1, 2, 6, 24, 120])


def test_a_query_reached_through_a_function_pointer_is_an_export_error() -> None:
    pointer = HELPERS.replace(
        "  %i = call i64 @instance()\n  %t = call i64 @twice_instance()",
        "  %fp = alloca ptr\n  store volatile ptr @instance, ptr %fp\n  %f = load volatile ptr, ptr %fp\n"
        "  %i = call i64 %f()\n  %t = call i64 @twice_instance()",
    )
    root = llvm.from_hpvm_ir(DECLS + pointer + _root("fill"))
    with fails(llvm.LLVMExportError, "could not be inlined", "@instance", "function pointer"):
        llvm.to_hpvm_ir(root)


# -- a property: generated call graphs of helpers ------------------------------------------


@st.composite
def helper_graphs(draw: st.DrawFn) -> tuple[int, list[tuple[int, int, bool, list[int]]], list[int]]:
    """``n`` helpers ``h<k>(v) = v * a + c [+ instance id] + sum of h<j>(v), j > k``, and
    the helpers the leaf calls with its instance id: a call DAG, some helpers querying."""
    n = draw(st.integers(1, 5))
    helpers = []
    for k in range(n):
        calls = draw(st.lists(st.integers(k + 1, n - 1), max_size=2, unique=True)) if k + 1 < n else []
        helpers.append((draw(st.integers(1, 3)), draw(st.integers(0, 9)), draw(st.booleans()), calls))
    roots = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3, unique=True))
    return n, helpers, roots


def _helper_module(helpers: list[tuple[int, int, bool, list[int]]], roots: list[int]) -> str:
    lines = []
    for k, (a, c, query, calls) in enumerate(helpers):
        body = [f"  %m = mul i64 %v, {a}", f"  %s0 = add i64 %m, {c}"]
        last = "%s0"
        if query:
            body += [
                "  %n = call ptr @llvm.hpvm.getNode()",
                "  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)",
                f"  %q = add i64 {last}, %i",
            ]
            last = "%q"
        for j in calls:
            body += [f"  %c{j} = call i64 @h{j}(i64 %v)", f"  %t{j} = add i64 {last}, %c{j}"]
            last = f"%t{j}"
        lines += [f"define internal i64 @h{k}(i64 %v) {{", "entry:", *body, f"  ret i64 {last}", "}", ""]
    leaf = [
        "  %n = call ptr @llvm.hpvm.getNode()",
        "  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %n)",
    ]
    last = "0"
    for r in roots:
        leaf += [f"  %r{r} = call i64 @h{r}(i64 %i)", f"  %u{r} = add i64 {last}, %r{r}"]
        last = f"%u{r}"
    leaf += ["  %slot = getelementptr i64, ptr %out, i64 %i", f"  store i64 {last}, ptr %slot"]
    lines += ['define {} @calls(ptr "in" "out" %out, i64 %bytes) {', "entry:", *leaf]
    lines += ["  ret {} zeroinitializer", "}"]
    return "\n".join(lines) + "\n"


def _queries(helpers: list[tuple[int, int, bool, list[int]]], k: int) -> bool:
    """Whether helper ``k`` reaches a query."""
    return helpers[k][2] or any(_queries(helpers, j) for j in helpers[k][3])


def _called(helpers: list[tuple[int, int, bool, list[int]]], roots: list[int], k: int) -> bool:
    """Whether the leaf reaches helper ``k``."""
    return k in roots or any(
        k in calls and _called(helpers, roots, j) for j, (*_, calls) in enumerate(helpers)
    )


def _helper_value(helpers: list[tuple[int, int, bool, list[int]]], k: int, v: int) -> int:
    a, c, query, calls = helpers[k]
    return v * a + c + (v if query else 0) + sum(_helper_value(helpers, j, v) for j in calls)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(helper_graphs())
def test_inlined_helper_graphs_obey_the_rule_and_compute_the_same(
    shape: tuple[int, list[tuple[int, int, bool, list[int]]], list[int]],
) -> None:
    _, helpers, roots = shape
    text = llvm.to_hpvm_ir(llvm.from_hpvm_ir(DECLS + _helper_module(helpers, roots) + _root("calls")))
    module = llvm_binding.parse_assembly(text)
    assert outside_node_functions(module) == []
    # a helper that reaches a query is inlined and gone; one that reaches none stays a call
    defined = {f.name for f in module.functions if not f.is_declaration}
    for k in range(len(helpers)):
        assert (f"h{k}" in defined) == (_called(helpers, roots, k) and not _queries(helpers, k)), k
    out = np.zeros(5, dtype=np.int64)
    _run(llvm.from_hpvm_ir(text), (out.view(np.uint8), 5), "interp")
    want = [sum(_helper_value(helpers, r, i) for r in roots) for i in range(5)]
    np.testing.assert_array_equal(out, want)
