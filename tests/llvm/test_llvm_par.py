"""Seed 004's PREPARE and EXTRACT: the program as LLVM IR with directive regions, and back —
after LLVM's optimizer too — for the whole shared suite."""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import hpvm
from hpvm import llvm
from hpvm.ir.bodies import LLVMBody
from hpvm.ir.graph import LeafFunction, functions
from hpvm.ir.printer import print_program

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared suite
from markers import fails  # noqa: E402
from programs import PROGRAMS, Program, _ints, run_program  # noqa: E402


@cache
def prepared(name: str) -> str:
    return llvm.prepare(next(p for p in PROGRAMS if p.name == name).root)


def _sizes_masked(text: str) -> str:
    return re.sub(r"(= node @\w+)\[.*\]$", r"\1[...]", text, flags=re.M)


def _module(text: str):
    import llvmlite.binding as binding

    module = binding.parse_assembly(text)
    module.verify()
    return module


@hpvm.leaf(ins=("A", "B"), outs=("C",))
def vector_add(A: hpvm.i32[:], B: hpvm.i32[:], C: hpvm.i32[:]):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    C[i] = A[i] + B[i]


@hpvm.internal
def rfc_example(A: hpvm.i32[:], B: hpvm.i32[:], C: hpvm.i32[:]):
    node = hpvm.create_node_1d(vector_add, A.shape[0])
    for port in range(3):
        hpvm.bind_in(node, port, port)


#: The RFC's HPVM example as PREPARE writes it for ``rfc_example`` (its lines, in order; the
#: inlined body's own instructions between the task's first lines and its end are left out).
RFC_FORM = [
    '  %.n0 = call token @llvm.directive.region.entry() #{G} [ "HPVM_create_node"(i64 %.g-1.s0), '
    '"dataflow_values"(ptr %A, i64 %A.size, ptr %B, i64 %B.size, ptr %C, i64 %C.size, ptr %.n0.in0, '
    "ptr %.n0.in1, ptr %.n0.in2, ptr %.n0.in3, ptr %.n0.in4, ptr %.n0.in5, ptr %.n0.size0), "
    '"attributes"(i32 0, i32 -1, i32 0, i32 -1, i32 1, i32 -1, i32 0, i32 0, i32 0, i32 0, i32 0, i32 0, i32 0) ]',
    ".n0.header:",
    "  %.n0.i = phi i64 [ 0, %.n0.preheader ], [ %.n0.i.next, %.n0.latch ]",
    '  %.n0.c = call i1 @llvm.directive.marker() [ "detach_task"() ]',
    "  br i1 %.n0.c, label %.n0.body, label %.n0.latch",
    ".n0.body:",
    '  %.n0.r = call i1 @llvm.directive.marker() [ "reattach_task"() ]',
    "  br label %.n0.latch",
    ".n0.latch:",
    "  %.n0.i.next = add nuw nsw i64 %.n0.i, 1",
    "  %.n0.exitcond = icmp eq i64 %.n0.i.next, %.n0.n0",
    "  br i1 %.n0.exitcond, label %.n0.end, label %.n0.header",
    ".n0.end:",
    '  call void @llvm.directive.region.exit(token %.n0) [ "HPVM_create_node"(), "dataflow_values"() ]',
]


def test_prepare_writes_the_rfcs_hpvm_example() -> None:
    """Seed 004's HPVM example: the node function inlined into its region (no call of it, no
    HPVM query left: the loop index instead), the RFC's three bundles on the entry and its
    two empty ones on the exit, the replication loop marked detach_task / reattach_task."""
    text = llvm.prepare(rfc_example)
    _module(text)
    start = text.index("define {} @rfc_example(")
    root = text[start : text.index("\n}", start)]
    lines = [re.sub(r" +;.*$", "", line) for line in root.splitlines()]
    group = re.search(r"region\.entry\(\) #(\d+) \[", root).group(1)
    expected = [line.replace("{G}", group) for line in RFC_FORM]
    found = [line for line in lines if line in expected]
    assert found == expected
    assert re.search(
        rf'^attributes #{group} = {{ "hpvm.connections"="in 0 0 0 0; in 1 1 1 0; in 2 2 2 0; in 3 3 3 0; '
        rf'in 4 4 4 0; in 5 5 5 0" "hpvm.function"="vector_add" "hpvm.id"="0 -1 0" "hpvm.node"="vector_add" }}$',
        text,
        re.M,
    )
    assert re.search(r"attributes #\d+ = \{ noduplicate nounwind \}", text)
    assert "adapter" not in root and "@llvm.hpvm." not in root  # inlined; queries substituted
    assert "%.n0.x = add i64 %.n0.i, 0" in root  # the instance's index is the loop's
    assert re.search(r"^declare \{\} @vector_add\(ptr \"hpvm.arg\"=\"A\"", text, re.M)


def test_the_rfc_example_round_trips_and_runs_after_o2() -> None:
    opt = llvm.optimize(llvm.prepare(rfc_example), 2)
    root = llvm.extract(opt)
    assert print_program(root, bodies=False) == print_program(rfc_example, bodies=False)
    program = Program(
        "rfc_example",
        root,
        lambda rng: (
            _ints(rng, 20).astype(np.int32),
            _ints(rng, 20).astype(np.int32),
            np.zeros(20, np.int32),
        ),
        lambda a, b, c: (c.__setitem__(slice(None), a + b), ())[1],
    )
    for target in ("cpu", "interp"):
        outputs, arrays = run_program(program, target)
        assert (arrays["C"] == arrays["A"] + arrays["B"]).all() and arrays["C"].any()


@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_the_suite_prepared_and_extracted_prints_like_the_original(program) -> None:
    root = llvm.extract(prepared(program.name))
    assert print_program(root, bodies=False) == print_program(program.root, bodies=False)
    leaves = [fn for fn in functions(root) if isinstance(fn, LeafFunction)]
    assert leaves and all(isinstance(fn.body, LLVMBody) for fn in leaves)


@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_the_suite_survives_prepare_o2_extract(program) -> None:
    """The same graph after LLVM's -O2, up to replication sizes LLVM folded: those are
    compared by value, with the program's own arguments, for the root's children."""
    root = llvm.extract(llvm.optimize(prepared(program.name), 2))
    mine, theirs = print_program(root, bodies=False), print_program(program.root, bodies=False)
    assert _sizes_masked(mine) == _sizes_masked(theirs)
    args = program.make_args(np.random.default_rng(0))
    env = {p.name: a for p, a in zip(program.root.params, args)}
    for a, b in zip(root.graph.nodes, program.root.graph.nodes, strict=True):
        assert [e.evaluate(env) for e in a.sizes] == [e.evaluate(env) for e in b.sizes]


def test_extracted_leaves_are_exported_again() -> None:
    """An extracted program is HPVM IR like any import: it exports, prepares and extracts."""
    once = llvm.extract(llvm.optimize(prepared("one_to_one_arrays"), 2))
    again = llvm.extract(llvm.prepare(once))
    assert print_program(again, bodies=False) == print_program(once, bodies=False)
    llvm.from_hpvm_ir(llvm.to_hpvm_ir(again))


def test_extract_of_ir_without_regions_says_what_it_reads() -> None:
    with fails(
        llvm.LLVMExtractError,
        "no function holds llvm.directive.region.entry or llvm.directive.marker",
        "llvm.prepare",
    ):
        llvm.extract(llvm.to_hpvm_ir(PROGRAMS[0].root))


def test_extract_of_text_that_is_not_llvm_is_an_import_error() -> None:
    with fails(llvm.LLVMImportError, "extract(): the text is not valid LLVM IR"):
        llvm.extract("define i64 @f( {")


def test_a_duplicated_region_is_refused_naming_it() -> None:
    text = prepared("saxpy_1d")
    entry = next(line for line in text.splitlines() if "= call token @llvm.directive.region.entry()" in line)
    twice = text.replace(entry, entry + "\n" + entry.replace("%.n0 =", "%.n0.dup ="))
    with fails(llvm.LLVMExtractError, "a second region of node 0", "noduplicate"):
        llvm.extract(twice)


@pytest.mark.parametrize("level", [0, 1, 3])
@pytest.mark.parametrize("program", PROGRAMS[::2], ids=str)
def test_the_suite_survives_the_other_levels(program, level: int) -> None:
    root = llvm.extract(llvm.optimize(prepared(program.name), level))
    mine, theirs = print_program(root, bodies=False), print_program(program.root, bodies=False)
    assert _sizes_masked(mine) == _sizes_masked(theirs)


@hpvm.leaf(ins=("a",), outs=("b",))
def clipped_row_sums(a: hpvm.f32[:, :], b: hpvm.f32[:], limit: hpvm.f32):
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    total = np.float32(0)
    for j in range(a.shape[1]):
        v = a[i, j]
        if v > limit:
            v = limit
        total += v
    b[i] = total


@hpvm.internal
def clipped(a: hpvm.f32[:, :], b: hpvm.f32[:], limit: hpvm.f32):
    node = hpvm.create_node_1d(clipped_row_sums, a.shape[0])
    for port in range(3):
        hpvm.bind_in(node, port, port)


@pytest.mark.parametrize("level", [0, 2, 3])
def test_a_task_with_a_loop_and_a_branch_is_outlined_whole(level: int) -> None:
    """A leaf whose body loops and branches: inlined, its task is many blocks (the loop
    LLVM may vectorize in place), and EXTRACT outlines them all back into a leaf that
    prints like the original and computes what NumPy does."""
    text = llvm.optimize(llvm.prepare(clipped), level)
    start = text.index("define {} @clipped(")
    task = text[start : text.index('"reattach_task"', start)]
    assert task.count("\nbr") + task.count("  br ") > 3  # several blocks inside the task
    root = llvm.extract(text)
    assert print_program(root, bodies=False) == print_program(clipped, bodies=False)
    program = Program(
        "clipped",
        root,
        lambda rng: (
            rng.standard_normal((9, 33)).astype(np.float32),
            np.zeros(9, np.float32),
            np.float32(0.5),
        ),
        lambda a, b, limit: (b.__setitem__(slice(None), np.minimum(a, limit).sum(axis=1)), ())[1],
    )
    for target in ("cpu", "interp"):
        _, arrays = run_program(program, target)
        assert np.allclose(arrays["b"], np.minimum(arrays["a"], np.float32(0.5)).sum(axis=1), rtol=1e-5)
