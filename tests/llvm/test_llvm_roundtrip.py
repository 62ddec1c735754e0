"""Export of the shared program suite to HPVM IR in LLVM form, and import back.

Every program the export writes parses and verifies with llvmlite; its internal node
functions hold only graph intrinsics and size arithmetic; and importing the text gives a
graph whose text form (without bodies) is the original's: structure, types, replication,
edges and binds. Programs using an intrinsic the export does not write yet are refused with
an ``LLVMExportError`` naming it.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

import llvmlite.binding as llvm_binding
import pytest

import hpvm
from hpvm import llvm
from hpvm.ir.graph import LeafFunction, functions
from hpvm.ir.printer import print_program
from hpvm.llvm.seedrule import outside_node_functions

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared suite
from markers import fails  # noqa: E402
from programs import PROGRAMS  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "hbir"

SIZE_OPCODES = frozenset({"ret", "add", "sub", "mul", "sdiv", "srem", "udiv", "sext", "zext"})
GRAPH_CALL = re.compile(r"call \w+ @llvm\.hpvm\.(createNode\w*|createEdge|bind\.input|bind\.output)\(")


@cache
def _exported(name: str) -> str:
    program = next(p for p in PROGRAMS if p.name == name)
    return llvm.to_hpvm_ir(program.root)


@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_export_parses_verifies_and_imports_to_the_same_graph(program) -> None:
    text = _exported(program.name)
    llvm_binding.parse_assembly(text).verify()
    imported = llvm.from_hpvm_ir(text)
    assert print_program(imported) == print_program(program.root)


@pytest.mark.parametrize("program", PROGRAMS, ids=str)
def test_internal_nodes_hold_only_graph_intrinsics_and_size_arithmetic(program) -> None:
    module = llvm_binding.parse_assembly(_exported(program.name))
    for fn in module.functions:
        attrs = b" ".join(fn.attributes).decode()
        if '"hpvm.kind"="internal"' not in attrs:
            continue
        for block in fn.blocks:
            for ins in block.instructions:
                text = str(ins).strip()
                sizes = ins.opcode in SIZE_OPCODES or re.search(r"@llvm\.s(min|max)\.i64\(", text)
                assert GRAPH_CALL.search(text) or sizes, f"{fn.name}: {text}"


def test_leaves_call_the_query_intrinsics_and_take_pointer_size_pairs() -> None:
    text = _exported("saxpy_1d")
    define = next(line for line in text.splitlines() if line.startswith("define") and "@p_saxpy(" in line)
    assert '%x, i64 "hpvm.size" %x.size' in define and '"in"' in define and '"out"' in define
    assert define.startswith("define {} @p_saxpy(")
    assert "call i64 @llvm.hpvm.getNodeInstanceID.x(ptr" in text
    assert "call ptr @llvm.hpvm.getNode()" in text
    # A 2-D array takes its extents after the pair; outputs are the returned struct's fields.
    two_d = _exported("one_to_one_arrays")
    assert re.search(
        r"define \{ ptr, i64, i64 \} @p_row_of\(ptr .*%m, i64 .*%m\.size, i64 .*%m\.d0, i64 .*%m\.d1\)", two_d
    )


def test_hints_and_declared_outputs_are_recorded() -> None:
    @hpvm.leaf(hint=hpvm.GPU_TARGET)
    def twice(x: hpvm.i32) -> hpvm.i32:
        return x * 2

    @hpvm.internal(hint=hpvm.CPU_TARGET)
    def root(x: hpvm.i32) -> hpvm.i32:
        n = hpvm.create_node(twice)
        hpvm.bind_in(n, 0, 0)
        hpvm.bind_out(n, 0, 0)

    text = llvm.to_hpvm_ir(root)
    assert '"hpvm.hint"="gpu"' in text and '"hpvm.hint"="cpu"' in text
    back = llvm.from_hpvm_ir(text)
    assert back.hint == "cpu" and back.graph.nodes[0].function.hint == "gpu"
    assert print_program(back) == print_program(root)


@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("atomics_int32", "call i32 @llvm.hpvm.atomic.xor(ptr"),  # the seed's i32 atomics
        ("atomics_int64", "atomicrmw xor ptr"),  # no seed intrinsic: LLVM's own
        # float atomicrmw, exported as LLVM's own instruction: the module is taken before code
        # generation, whose AtomicExpand pass would have made it a cmpxchg loop (leafcode.py)
        ("atomics_float32", "atomicrmw fadd ptr"),
        ("malloc_per_parent_instance", "call ptr @llvm.hpvm.malloc(i64"),
        ("barrier_rotate_malloc", "call void @llvm.hpvm.barrier()"),
        ("two_level_parent_queries", "call ptr @llvm.hpvm.getParentNode(ptr"),
    ],
)
def test_memory_synchronization_and_parent_queries_become_llvm(name: str, call: str) -> None:
    assert call in _exported(name)


@pytest.mark.parametrize(
    "name", ["saxpy_1d", "one_to_one_arrays", "barrier_rotate_malloc", "binds_two_levels"]
)
def test_an_imported_program_exports_again_with_its_llvm_leaves(name: str) -> None:
    first = llvm.from_hpvm_ir(_exported(name))
    text = llvm.to_hpvm_ir(first)
    llvm_binding.parse_assembly(text).verify()
    assert print_program(llvm.from_hpvm_ir(text)) == print_program(first)
    # Each leaf's code came along: under the name its node function calls, or, when it
    # reaches an HPVM intrinsic, inlined into the node function (seed 000).
    module = llvm_binding.parse_assembly(text)
    leaves = [f for f in functions(first) if isinstance(f, LeafFunction)]
    assert leaves
    for leaf in leaves:
        kept = re.search(rf"^define .*@__hpvm_body\.\d+\.{leaf.name}\(", text, re.M)
        assert kept or "@llvm.hpvm." in str(module.get_function(leaf.name)), leaf.name
    assert not outside_node_functions(module)


def test_a_leaf_numba_cannot_compile_is_an_export_error_naming_it() -> None:
    @hpvm.leaf
    def stringy(x: hpvm.i64) -> hpvm.i64:
        return len(str(x) + object.__name__)

    @hpvm.internal
    def root(x: hpvm.i64):
        n = hpvm.create_node(stringy)
        hpvm.bind_in(n, 0, 0)
        hpvm.bind_out(n, 0, 0)

    with fails(llvm.LLVMExportError, "leaf 'stringy'", "Numba cannot compile it"):
        llvm.to_hpvm_ir(root)


def test_only_what_the_leaves_use_is_linked_in() -> None:
    text = _exported("saxpy_1d")
    assert "@cfunc." not in text and "PyErr_" not in text and "Py_DecRef" not in text


@pytest.mark.parametrize("example", ["vadd_one_tile", "vadd_group", "window_sum"])
def test_hbir_programs_round_trip_with_their_layouts(example: str) -> None:
    from hpvm import hbir

    root = hbir.load(str(EXAMPLES / f"{example}.hbir")).to_hpvm()
    text = llvm.to_hpvm_ir(root)
    assert '"hpvm.layout"=' in text
    assert print_program(llvm.from_hpvm_ir(text)) == print_program(root)


def test_a_malformed_layout_is_an_import_error() -> None:
    text = _exported("saxpy_1d").replace(
        '"hpvm.port"="f32[:]" "in" "out" %y', '"hpvm.layout"="zigzag" "hpvm.port"="f32[:]" "in" "out" %y', 1
    )
    assert "zigzag" in text
    with fails(llvm.LLVMImportError, '"hpvm.layout"="zigzag"'):
        llvm.from_hpvm_ir(text)


@hpvm.leaf(outs=("h", "s"))
def grid_atomics(h: hpvm.i32[:, :], s: hpvm.f64[:, :], v: hpvm.i64) -> hpvm.i32:
    i = hpvm.get_node_instance_id_x(hpvm.get_node())
    hpvm.atomic_add(s, (i % 2, 1), 0.5)
    return hpvm.atomic_max(h, (i % 2, i % 3), v)


@hpvm.internal
def grid_atomics_root(h: hpvm.i32[:, :], s: hpvm.f64[:, :], v: hpvm.i64):
    n = hpvm.create_node_1d(grid_atomics, 6)
    for k in range(3):
        hpvm.bind_in(n, k, k)


def test_atomics_on_two_dimensional_arrays_export_with_one_index_per_dimension() -> None:
    text = llvm.to_hpvm_ir(grid_atomics_root)
    llvm_binding.parse_assembly(text).verify()
    assert "call i32 @llvm.hpvm.atomic.max(ptr" in text  # int32: the seed's intrinsic
    # float64: LLVM's own atomicrmw fadd, which Numba's optimizer expands into a cmpxchg loop
    assert re.search(r"atomicrmw fadd ptr |cmpxchg ptr .*, i64 .* seq_cst seq_cst", text)
    assert print_program(llvm.from_hpvm_ir(text)) == print_program(grid_atomics_root)


def test_a_leaf_is_exported_as_numba_optimized_it_before_code_generation() -> None:
    """The tiled sgemm's element leaf (``examples/sgemm.py``), inlined into its adapter: its
    loop over ``p`` addresses ``b[p, col]`` from ``p`` and ``col``, with no pointer carried
    from one iteration to the next — code generation's loop strength reduction would have
    made three (``leafcode._before_code_generation``)."""
    from example_modules import load

    text = llvm.to_hpvm_ir(load("sgemm").root)
    start = text.index("define {} @sgemm_element(")
    body = text[start : text.index("\n}\n", start)]
    assert " phi ptr " not in body
    assert " phi float " in body  # (the running sum: the loop is there)
