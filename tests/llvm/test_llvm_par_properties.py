"""Seed 004's correctness properties A–D under LLVM's own pipeline (``llvm.optimize`` at
-O1, -O2, -O3): each with code an unconstrained transformation breaks — shown on small
directive IR, asserting what LLVM 22 does (so that these fail if LLVM changes) — and a check
that what PREPARE writes keeps the property (docs/llvm.md, "What PREPARE guarantees")."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from hpvm import llvm
from hpvm.llvm.directives import ENTRY, EXIT, MARKER, callee
from hpvm.llvm.extract import Regions, name_values, read_regions

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared suite
from programs import PROGRAMS  # noqa: E402

LEVELS = [1, 2, 3]
NESTED = ("two_level_parent_queries", "three_level_grandparent_queries", "binds_two_levels", "atomics_int32")
DECLARATIONS = """
declare token @llvm.directive.region.entry() {attrs}
declare void @llvm.directive.region.exit(token) {attrs}
declare i1 @llvm.directive.marker() {attrs}
declare void @use(i64)
"""


@cache
def optimized(name: str, level: int) -> str:
    return llvm.optimize(llvm.prepare(next(p for p in PROGRAMS if p.name == name).root), level)


def _function(text: str, name: str | None = None) -> Any:
    """The (named) function of ``text`` holding regions, or ``name``."""
    import llvmlite.binding as binding

    module = binding.parse_assembly(text)
    module.verify()
    fn = next(
        f
        for f in module.functions
        if (f.name == name if name else any(callee(i) == ENTRY for b in f.blocks for i in b.instructions))
    )
    name_values(fn)
    return fn


def _body(text: str) -> str:
    start = text.index("define void @f")
    return text[start : text.index("\n}", start)]


def _instructions(fn: Any) -> list[tuple[Any, Any]]:
    return [(b, i) for b in fn.blocks for i in b.instructions]


def _leaf_tasks(regions: Regions) -> dict[int, set[str]]:
    """Each leaf region's task: the names of its instructions (the reattach/exit left out)."""
    out = {}
    for nid, r in regions.regions.items():
        if any(x.parent == nid for x in regions.regions.values()):
            continue
        outline, _, _ = regions.task(r)
        out[nid] = {i.name for b in outline.blocks for i in outline.part(b) if i.name}
    return out


# -- (A) structural: legal LLVM, compiled by LLVM's passes ------------------------------------
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", NESTED)
def test_a_prepared_ir_stays_legal_llvm_that_extracts(level: int, name: str) -> None:
    text = optimized(name, level)
    _function(text)  # parses and verifies
    original = next(p for p in PROGRAMS if p.name == name).root
    assert len(llvm.extract(text).graph.nodes) == len(original.graph.nodes)


# -- (B) control flow -------------------------------------------------------------------------
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", NESTED)
def test_b1_each_region_keeps_one_entry_and_one_exit(level: int, name: str) -> None:
    fn = _function(optimized(name, level))
    entries = [i.name for _, i in _instructions(fn) if callee(i) == ENTRY]
    exits = [list(i.operands)[0].name for _, i in _instructions(fn) if callee(i) == EXIT]
    assert entries and sorted(entries) == sorted(exits)


B2_LOOP = """
define void @f(ptr %x) {
entry:
  %r = call token @llvm.directive.region.entry() [ "dataflow_values"(ptr %x) ]
  br label %h
h:
  %i = phi i64 [0, %entry], [%i2, %l]
  %more = icmp ult i64 %i, 4
  br i1 %more, label %d, label %j
d:
  %c = call i1 @llvm.directive.marker() [ "detach_task"() ]
  br i1 %c, label %b, label %l
b:
  %p = getelementptr i64, ptr %x, i64 %i
  store i64 %i, ptr %p
  %z = call i1 @llvm.directive.marker() [ "reattach_task"() ]
  br label %l
l:
  %i2 = add i64 %i, 1
  br label %h
j:
  %q = call i1 @llvm.directive.marker() [ "local_barrier"() ]
  call void @llvm.directive.region.exit(token %r) [ "dataflow_values"() ]
  ret void
}
"""


@pytest.mark.parametrize("level", LEVELS)
def test_b2_llvm_unrolls_a_marked_loop_unless_the_markers_are_noduplicate(level: int) -> None:
    """Observed with LLVM 22: a task loop of 4 instances is unrolled and its markers copied
    4 times; ``noduplicate`` (PREPARE's) keeps one loop, one task."""
    plain = llvm.optimize(DECLARATIONS.format(attrs="nounwind") + B2_LOOP, level)
    assert plain.count('"detach_task"()') == 4
    kept = llvm.optimize(DECLARATIONS.format(attrs="noduplicate nounwind") + B2_LOOP, level)
    assert kept.count('"detach_task"()') == 1 and kept.count('"reattach_task"()') == 1


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", NESTED)
def test_b2_b4_each_replicated_node_keeps_one_loop_and_its_marker_fed_branch(
    parse: Callable[[str], Any], level: int, name: str
) -> None:
    """One detach/reattach per replicated node, the detach marker still feeding the
    conditional branch into its task (``Regions.task`` checks it), the task reaching its
    reattach marker; no marker anywhere else."""
    text = optimized(name, level)
    regions = read_regions(parse, text)
    fn = regions.fn
    replicated = [r for r in regions.regions.values() if r.sizes]
    for r in replicated:
        outline, _, index = regions.task(r)
        assert outline.blocks and '"reattach_task"' in str(outline.end) and index is not None
    markers = [str(i) for _, i in _instructions(fn) if callee(i) == MARKER]
    assert sum('"detach_task"' in m for m in markers) == len(replicated)
    assert sum('"reattach_task"' in m for m in markers) == len(replicated)


# -- (C) dataflow -----------------------------------------------------------------------------
C1_REGIONS = """
define void @f(i64 %n) {
entry:
  %r1 = call token @llvm.directive.region.entry() [ "dataflow_values"(i64 %n) ]
  %a = udiv i64 %n, 4
  call void @use(i64 %a)
  call void @llvm.directive.region.exit(token %r1) [ "dataflow_values"() ]
  %r2 = call token @llvm.directive.region.entry() [ "dataflow_values"(i64 %n) ]
  %b = udiv i64 %n, 4
  call void @use(i64 %b)
  call void @llvm.directive.region.exit(token %r2) [ "dataflow_values"() ]
  ret void
}
"""
C1_REREAD = """
define void @f(i64 %n) {
entry:
  %s1 = alloca i64
  %s2 = alloca i64
  store i64 %n, ptr %s1
  %r1 = call token @llvm.directive.region.entry() [ "dataflow_values"(ptr %s1) ]
  %n1 = load i64, ptr %s1
  %a = udiv i64 %n1, 4
  call void @use(i64 %a)
  call void @llvm.directive.region.exit(token %r1) [ "dataflow_values"() ]
  store i64 %n, ptr %s2
  %r2 = call token @llvm.directive.region.entry() [ "dataflow_values"(ptr %s2) ]
  %n2 = load i64, ptr %s2
  %b = udiv i64 %n2, 4
  call void @use(i64 %b)
  call void @llvm.directive.region.exit(token %r2) [ "dataflow_values"() ]
  ret void
}
"""


@pytest.mark.parametrize("level", LEVELS)
def test_c1_llvm_reuses_a_value_of_one_region_in_another_despite_the_bundles(level: int) -> None:
    """Observed with LLVM 22: ``%n`` is listed in both regions' bundles, yet the second
    region uses the quotient the first computed (GVN/EarlyCSE): property C1 broken. Re-read
    through a slot each region lists (PREPARE's form), each keeps its own."""
    broken = _body(llvm.optimize(DECLARATIONS.format(attrs="noduplicate nounwind") + C1_REGIONS, level))
    assert broken.count("lshr i64 %n, 2") == 1 and broken.count("call void @use(i64 %a1)") == 2
    kept = _body(llvm.optimize(DECLARATIONS.format(attrs="noduplicate nounwind") + C1_REREAD, level))
    assert "lshr i64 %n1, 2" in kept and "lshr i64 %n2, 2" in kept


def _tree_leaves(fn: Any, value: Any, named: dict[str, Any]) -> list[Any]:
    """The loads and arguments a value is computed from."""
    if value.value_kind.name == "argument":
        return [value]
    if value.value_kind.name != "instruction":
        return []
    ins = named[value.name]
    if ins.opcode == "load":
        return [ins]
    ops = list(ins.operands)[:-1] if ins.opcode == "call" else list(ins.operands)
    return [leaf for op in ops for leaf in _tree_leaves(fn, op, named)]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(
    "name", ("two_level_parent_queries", "three_level_grandparent_queries", "size_expressions")
)
def test_c1_sizes_inside_a_region_come_from_its_own_rereads(
    parse: Callable[[str], Any], level: int, name: str
) -> None:
    """A nested node's replication size is computed from its parent's re-reads of its own
    input slots (or the root's arguments, for the root's children), never from a value
    another region computed."""
    regions = read_regions(parse, optimized(name, level))
    fn = regions.fn
    named = {i.name: i for _, i in _instructions(fn) if i.name}
    for r in regions.regions.values():
        parent = r.parent
        allowed = set(regions.regions[parent].in_slots) if parent >= 0 else set()
        for size in r.sizes:
            for leaf in _tree_leaves(fn, size, named):
                if parent < 0:
                    assert leaf.value_kind.name == "argument", str(leaf)
                else:
                    assert leaf.opcode == "load" and list(leaf.operands)[0].name in allowed, str(leaf)


C2_SLOT = """
define void @f(i64 %n) {{
entry:
  %s = alloca i64
  store i64 %n, ptr %s
  %r = call token @llvm.directive.region.entry() [ "dataflow_values"({listed}) ]
  %v = load i64, ptr %s
  call void @use(i64 %v)
  call void @llvm.directive.region.exit(token %r) [ "dataflow_values"() ]
  ret void
}}
"""


@pytest.mark.parametrize("level", LEVELS)
def test_c2_a_load_of_an_unlisted_slot_is_forwarded_across_the_entry(level: int) -> None:
    """Observed: a slot the bundles do not list is promoted, its load gone (the value now
    flows into the region from outside); listed, the load stays after the entry."""
    decls = DECLARATIONS.format(attrs="noduplicate nounwind")
    unlisted = _body(llvm.optimize(decls + C2_SLOT.format(listed=""), level))
    assert "load" not in unlisted and "call void @use(i64 %n)" in unlisted
    listed = _body(llvm.optimize(decls + C2_SLOT.format(listed="ptr %s"), level))
    assert re.search(r"region\.entry\(\) \[[^\n]*\]\n  %v = load i64, ptr %s", listed)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", NESTED)
def test_c2_each_task_rereads_its_slots_inside_and_its_memory_is_its_own(
    parse: Callable[[str], Any], level: int, name: str
) -> None:
    """Every load of a leaf's input slot is inside its task (none hoisted above the detach
    marker or the entry), and every alloca a task uses beside its slots (the inliner hoists
    the body's to the function's entry) is used by no code outside it, so EXTRACT can give
    each instance its own."""
    regions = read_regions(parse, optimized(name, level))
    fn = regions.fn
    named = {i.name: i for _, i in _instructions(fn) if i.name}
    tasks = _leaf_tasks(regions)
    assert tasks
    for nid, task in tasks.items():
        r = regions.regions[nid]
        slots = set(r.in_slots)
        everywhere = {
            i.name for _, i in _instructions(fn) if i.opcode == "load" and list(i.operands)[0].name in slots
        }
        assert everywhere <= task
        used = {op.name for t in task for op in named[t].operands if op.value_kind.name == "instruction"}
        private = (
            {u for u in used if u not in task and named[u].opcode == "alloca"} - slots - set(r.out_slots)
        )
        private -= set(r.size_slots)
        for a in private:
            users = {i.name or str(i) for _, i in _instructions(fn) if a in {op.name for op in i.operands}}
            assert users <= task | {i for i in users if not named.get(i)}, (a, users - task)


# -- (D) synchronization ----------------------------------------------------------------------
D_TASK = """
define void @f(ptr %x, i64 %n) {{
entry:
  %r = call token @llvm.directive.region.entry() [ "dataflow_values"(ptr %x) ]
  br label %h
h:
  %i = phi i64 [0, %entry], [%i2, %l]
  %more = icmp ult i64 %i, %n
  br i1 %more, label %d, label %j
d:
  %c = call i1 @llvm.directive.marker() [ "detach_task"(), "dataflow_values"({listed}) ]
  br i1 %c, label %b, label %l
b:
  %old = atomicrmw add ptr %x, i64 1 seq_cst
  fence seq_cst
  %v = load atomic i64, ptr %x acquire, align 8
  call void @use(i64 %v)
  %z = call i1 @llvm.directive.marker() [ "reattach_task"(), "dataflow_values"({listed}) ]
  br label %l
l:
  %i2 = add i64 %i, 1
  br label %h
j:
  %q = call i1 @llvm.directive.marker() [ "local_barrier"() ]
  call void @llvm.directive.region.exit(token %r) [ "dataflow_values"(ptr %x) ]
  ret void
}}
"""


@pytest.mark.parametrize("level", LEVELS)
def test_d_atomics_and_fences_stay_between_the_markers(level: int) -> None:
    text = llvm.optimize(
        DECLARATIONS.format(attrs="noduplicate nounwind") + D_TASK.format(listed="ptr %x"), level
    )
    body = _body(text)
    task = body[body.index('"detach_task"') : body.index('"reattach_task"')]
    for op in ("atomicrmw add ptr %x, i64 1 seq_cst", "fence seq_cst", "load atomic i64, ptr %x acquire"):
        assert op in task and body.count(op) == 1


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", ("atomics_int32", "atomics_float32", "barrier_rotate_malloc"))
def test_d_the_suites_atomics_and_barriers_stay_in_their_tasks(
    parse: Callable[[str], Any], level: int, name: str
) -> None:
    """The leaves' bodies are inlined into their tasks: every atomic, fence and HPVM atomic
    or barrier call of the function lies inside a leaf task (between its detach and reattach
    markers, or its region's entry and exit)."""
    regions = read_regions(parse, optimized(name, level))
    inside: set[tuple[str, str]] = set()
    for nid, r in regions.regions.items():
        if not any(x.parent == nid for x in regions.regions.values()):
            outline, _, _ = regions.task(r)
            inside |= {(b.name, str(i)) for b in outline.blocks for i in outline.part(b)}
    sync = [
        (b.name, str(i))
        for b, i in _instructions(regions.fn)
        if i.opcode in ("atomicrmw", "cmpxchg", "fence")
        or (callee(i) or "").startswith(("llvm.hpvm.atomic", "llvm.hpvm.barrier"))
    ]
    assert sync and all(s in inside for s in sync), [s for s in sync if s not in inside]


C2_INLINED_ALLOCA = """
define internal void @body(ptr %x) alwaysinline {{
entry:
  %tmp = alloca i64
  store i64 1, ptr %tmp
  %v = load i64, ptr %tmp
  store i64 %v, ptr %x
  ret void
}}

define void @f(ptr %x) {{
entry:
  %r = call token @llvm.directive.region.entry() [ "dataflow_values"(ptr %x) ]
  br label %task
task:
  call void @body(ptr %x)
  call void @llvm.directive.region.exit(token %r) [ "dataflow_values"() ]
  ret void
}}
"""


def test_c2_llvms_inliner_hoists_a_bodys_alloca_out_of_its_region() -> None:
    """Observed with LLVM 22: the always-inliner (PREPARE's, and -O1..3's) moves an inlined
    body's static alloca to the function's entry block, above the region's entry — what the
    RFC asks the inliner not to do. So PREPARE does not rely on allocas staying in their
    task: EXTRACT gives each instance its own copy of every alloca a task uses, and refuses
    one that code outside the task uses too (``test_c2_each_task_rereads_its_slots_inside_and_its_memory_is_its_own`` checks that
    none does)."""
    import llvmlite.binding as binding

    from hpvm.llvm.seedrule import run_passes

    module = binding.parse_assembly(
        DECLARATIONS.format(attrs="noduplicate nounwind") + C2_INLINED_ALLOCA.format()
    )
    run_passes(module, ("always_inliner",))
    entry = str(module.get_function("f")).split("task:")[0]
    assert re.search(r"%tmp\.i = alloca i64", entry) and entry.index("alloca") < entry.index("region.entry")
