"""Seed 004's PREPARE and EXTRACT: the program as LLVM IR with directive regions, and back —
after LLVM's optimizer too — for the whole shared suite."""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from hpvm import llvm
from hpvm.ir.bodies import LLVMBody
from hpvm.ir.graph import LeafFunction, functions
from hpvm.ir.printer import print_program

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared suite
from markers import fails  # noqa: E402
from programs import PROGRAMS  # noqa: E402


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


def test_prepare_writes_regions_with_the_rfcs_bundles_and_task_markers() -> None:
    text = prepared("saxpy_1d")
    _module(text)  # parses and verifies
    assert "declare token @llvm.directive.region.entry() #" in text
    entry = next(
        line for line in text.splitlines() if "@llvm.directive.region.entry()" in line and "call" in line
    )
    for tag in (
        '"HPVM_create_node"(ptr @',
        '"dataflow_values"(',
        '"attributes"(i32 0, i32 -1, i32 2, i32 -1, i32 -1)',
    ):
        assert tag in entry
    for marker in ("detach_task", "reattach_task", "local_barrier"):
        assert re.search(rf'call i1 @llvm\.directive\.marker\(\) \[ "{marker}"\(\)', text)
    assert re.search(
        r"call void @llvm\.directive\.region\.exit\(token %\.n0\) \[ \"HPVM_create_node\"\(\)", text
    )
    assert re.search(r"attributes #\d+ = \{ noduplicate nounwind \}", text)
    # no graph intrinsics: the node functions are inlined, the leaves' bodies called
    assert "call ptr @llvm.hpvm.createNode" not in text
    assert re.search(r"call i32 @\S*adapter\S*\(.*\) #\d+", text)


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


def test_extracted_leaves_call_their_bodies_without_prepares_noinline() -> None:
    """PREPARE makes each body call noinline to keep it whole through -O2; EXTRACT drops that
    mark, so the cpu back end can inline a body into its loop over instances (vector add ran
    4× slower, the stencil 19×, with the mark kept)."""
    text = prepared("saxpy_1d")
    assert re.search(r"^attributes #\d+ = \{ noinline \}$", text, re.M)
    root = llvm.extract(llvm.optimize(text, 2))
    for leaf in (f for f in functions(root) if isinstance(f, LeafFunction)):
        body = leaf.body
        assert isinstance(body, LLVMBody)
        groups = set(re.findall(r"^attributes #(\d+) = \{[^}]*\bnoinline\b", body.module, re.M))
        start = body.module.index(f"@{body.function}(")
        define = body.module[start : body.module.index("\n}", start)]
        calls = [line for line in define.splitlines() if " call " in line]
        assert calls and not [
            c for c in calls if re.search(r" #(\d+)$", c) and re.search(r" #(\d+)$", c).group(1) in groups
        ]


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
