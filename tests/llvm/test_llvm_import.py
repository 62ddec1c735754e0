"""Import of HPVM IR written by others (no hpvm string attributes), and every malformed use
as an ``LLVMImportError`` naming the function and the instruction."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hpvm import llvm
from hpvm.ir.bodies import LLVMBody
from hpvm.ir.printer import print_program

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from markers import fails  # noqa: E402

DECLS = """
declare ptr @llvm.hpvm.createNode(ptr)
declare ptr @llvm.hpvm.createNode1D(ptr, i64)
declare ptr @llvm.hpvm.createEdge(ptr, ptr, i1, i32, i32, i1)
declare void @llvm.hpvm.bind.input(ptr, i32, i32, i1)
declare void @llvm.hpvm.bind.output(ptr, i32, i32, i1)
declare ptr @llvm.hpvm.getNode()
declare i64 @llvm.hpvm.getNodeInstanceID.x(ptr)
declare ptr @llvm.hpvm.launch(ptr, ptr, i1)
"""

# What HPVM's C front end makes of a vector scale: a (pointer, size) pair, a replicated
# leaf and a root binding its inputs; the leaf's code is ordinary LLVM.
LEAF = """
define { i32 } @scale(ptr "in" "out" %x, i64 %bytes, i32 %k) {
entry:
  %node = call ptr @llvm.hpvm.getNode()
  %i = call i64 @llvm.hpvm.getNodeInstanceID.x(ptr %node)
  %p = getelementptr i32, ptr %x, i64 %i
  %v = load i32, ptr %p
  %w = mul i32 %v, %k
  store i32 %w, ptr %p
  ret { i32 } { i32 0 }
}
"""
ROOT = """
define { i32 } @root(ptr %x, i64 %bytes, i32 %k, i64 %n) {
entry:
  %half = sdiv i64 %n, 2
  %leaf = call ptr @llvm.hpvm.createNode1D(ptr @scale, i64 %half)
  call void @llvm.hpvm.bind.input(ptr %leaf, i32 0, i32 0, i1 false)
  call void @llvm.hpvm.bind.input(ptr %leaf, i32 1, i32 1, i1 false)
  call void @llvm.hpvm.bind.input(ptr %leaf, i32 2, i32 2, i1 false)
  call void @llvm.hpvm.bind.output(ptr %leaf, i32 0, i32 0, i1 false)
  ret { i32 } undef
}
"""


def test_a_foreign_program_becomes_a_graph_with_llvm_leaves() -> None:
    root = llvm.from_hpvm_ir(DECLS + LEAF + ROOT)
    assert print_program(root) == (
        "# hpvm IR v1\n"
        "leaf @scale(x: u8[:], k: i32) -> (i32) ins(x) outs(x)\n"
        "internal @root(x: u8[:], k: i32, n: i64) {  # -> (i32)\n"
        "  %leaf = node @scale[n // 2]\n"
        "  bind in 0 -> %leaf.0\n"
        "  bind in 1 -> %leaf.1\n"
        "  bind out %leaf.0 -> 0\n"
        "}\n"
    )
    leaf = root.graph.nodes[0].function
    assert leaf.body == LLVMBody(DECLS + LEAF + ROOT, "scale")


def test_the_launched_function_is_the_root() -> None:
    host = """
define void @main(ptr %args) {
entry:
  %g = call ptr @llvm.hpvm.launch(ptr @root, ptr %args, i1 false)
  ret void
}
"""
    root = llvm.from_hpvm_ir(DECLS + LEAF + ROOT + host)
    assert root.name == "root"


def _root_with(
    *lines: str, signature: str = "ptr %x, i64 %bytes, i32 %k, i64 %n", ret: str = "{ i32 }"
) -> str:
    body = "\n".join(f"  {line}" for line in lines)
    return DECLS + LEAF + f"define {ret} @root({signature}) {{\nentry:\n{body}\n  ret {ret} undef\n}}\n"


NODE = "%leaf = call ptr @llvm.hpvm.createNode1D(ptr @scale, i64 %n)"


def graph_call(text: str, instruction: str, function: str = "root") -> str:
    """How a ``GraphCallError`` names a graph call of ``text``: its function, its line (the
    first that starts with ``instruction``) and its text."""
    line = 1 + next(k for k, t in enumerate(text.splitlines()) if t.strip().startswith(instruction))
    return f"@{function} (<llvm>:{line}): '{instruction}"


def test_text_that_is_not_llvm_ir() -> None:
    with fails(llvm.LLVMImportError, "not valid LLVM IR"):
        llvm.from_hpvm_ir("define oops")


def test_a_query_in_an_internal_node() -> None:
    text = _root_with(NODE, "%h = call ptr @llvm.hpvm.getNode()")
    with fails(
        llvm.GraphCallError, graph_call(text, "%h = call ptr @llvm.hpvm.getNode()"), "in an internal node"
    ) as info:
        llvm.from_hpvm_ir(text)
    assert info.value.kind == "computation"


def test_computation_beside_graph_intrinsics() -> None:
    text = _root_with(NODE, "store i32 %k, ptr %x")
    # (llvmlite prints the store with its alignment, which the line does not have: the
    # function's define line is named)
    define = 1 + text.splitlines().index("define { i32 } @root(ptr %x, i64 %bytes, i32 %k, i64 %n) {")
    with fails(
        llvm.GraphCallError,
        f"@root (<llvm>:{define}): 'store i32 %k, ptr %x",
        "a leaf may not call graph intrinsics",
    ) as info:
        llvm.from_hpvm_ir(text)
    assert info.value.kind == "computation"


def test_a_host_intrinsic_in_a_leaf() -> None:
    leaf = LEAF.replace(
        "  ret { i32 }", "  %g = call ptr @llvm.hpvm.launch(ptr null, ptr null, i1 false)\n  ret { i32 }"
    )
    text = DECLS + leaf + ROOT.replace("@root", "@root")
    with fails(llvm.LLVMImportError, "@scale: '%g = call ptr @llvm.hpvm.launch", "host intrinsic in a leaf"):
        llvm.from_hpvm_ir(text)


def test_a_bad_port_index() -> None:
    bind = "call void @llvm.hpvm.bind.input(ptr %leaf, i32 0, i32 7, i1 false)"
    text = _root_with(NODE, bind)
    with fails(llvm.GraphCallError, graph_call(text, bind), "index 7 is no input of @scale", "0..2") as info:
        llvm.from_hpvm_ir(text)
    assert info.value.kind == "input"


def test_a_bind_to_an_output_of_a_function_without_outputs_says_it_has_none() -> None:
    bind = "call void @llvm.hpvm.bind.output(ptr %leaf, i32 0, i32 0, i1 false)"
    text = _root_with(NODE, bind, ret="{}")
    with fails(
        llvm.GraphCallError, graph_call(text, bind), "index 0 is no output of @root, which has no outputs"
    ) as info:
        llvm.from_hpvm_ir(text)
    assert info.value.kind == "output"


def test_a_type_mismatch_between_an_edges_ends() -> None:
    edge = "%e = call ptr @llvm.hpvm.createEdge(ptr %a, ptr %b, i1 false, i32 0, i32 2, i1 false)"
    other = (
        LEAF.replace("@scale(", "@twice(")
        .replace("i32 %k", "double %k")
        .replace("mul i32 %v, %k", "add i32 %v, 1")
    )
    text = (
        DECLS
        + LEAF
        + other
        + _root_with(
            "%a = call ptr @llvm.hpvm.createNode(ptr @scale)",
            "%b = call ptr @llvm.hpvm.createNode(ptr @twice)",
            edge,
        ).removeprefix(DECLS + LEAF)
    )
    with fails(llvm.GraphCallError, graph_call(text, edge), "connects a i32 to a f64") as info:
        llvm.from_hpvm_ir(text)
    assert info.value.kind == "type"


def test_a_size_bound_without_its_pointer() -> None:
    # A pointer and its size are two ports (tests/llvm/test_llvm_ports.py): the size alone
    # may be bound, and then the pointer, an input of its own, has no feed.
    binds = [f"call void @llvm.hpvm.bind.input(ptr %leaf, i32 {k}, i32 {k}, i1 false)" for k in (1, 2)]
    with fails(llvm.LLVMImportError, "input 0 ('x') of node 'leaf' (<llvm>:", "has no feed"):
        llvm.from_hpvm_ir(_root_with(NODE, *binds))


def test_a_node_function_that_returns_no_struct() -> None:
    text = DECLS + LEAF + "define void @root(i64 %n) {\nentry:\n  " + NODE + "\n  ret void\n}\n"
    with fails(llvm.LLVMImportError, "@root: a node function returns a struct", "not void"):
        llvm.from_hpvm_ir(text)


def test_a_size_that_is_not_an_integer_port() -> None:
    # The byte size of a float array is no count of its elements (a byte array's is).
    node = "%leaf = call ptr @llvm.hpvm.createNode1D(ptr @scale, i64 %bytes)"
    signature = 'ptr "hpvm.port"="f32[:]" %x, i64 "hpvm.size" %bytes, i32 %k, i64 %n'
    text = _root_with(node, signature=signature)
    with fails(
        llvm.GraphCallError, graph_call(text, node), "uses argument %bytes, which is not an integer port"
    ) as info:
        llvm.from_hpvm_ir(text)
    assert info.value.kind == "size"


def test_a_node_of_a_function_the_module_does_not_define() -> None:
    text = "declare { i32 } @elsewhere(i32)\n" + _root_with(
        "%leaf = call ptr @llvm.hpvm.createNode(ptr @elsewhere)"
    )
    with fails(
        llvm.GraphCallError,
        graph_call(text, "%leaf = call ptr @llvm.hpvm.createNode(ptr @elsewhere)"),
        "does not define",
    ) as info:
        llvm.from_hpvm_ir(text)
    assert info.value.kind == "function"


def test_a_handle_that_is_no_node() -> None:
    bind = "call void @llvm.hpvm.bind.input(ptr %x, i32 0, i32 0, i1 false)"
    text = _root_with(NODE, bind)
    with fails(llvm.GraphCallError, graph_call(text, bind), "x is not a node this function created") as info:
        llvm.from_hpvm_ir(text)
    assert info.value.kind == "node"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("", "no root node function"),
        (ROOT.replace("@root(", "@root2("), "several functions build a graph that no one creates"),
    ],
)
def test_no_root_or_several(extra: str, message: str) -> None:
    text = DECLS + LEAF + extra if not extra else DECLS + LEAF + ROOT + extra
    with fails(llvm.LLVMImportError, message):
        llvm.from_hpvm_ir(text)


def test_a_graph_that_breaks_hpvms_rules() -> None:
    twice = "call void @llvm.hpvm.bind.input(ptr %leaf, i32 2, i32 2, i1 false)"
    with fails(llvm.LLVMImportError, "the imported graph breaks HPVM's rules"):
        llvm.from_hpvm_ir(_root_with(NODE, twice, twice))


def test_hpvm_llvm_is_loaded_on_first_use() -> None:
    import subprocess

    code = (
        "import sys, hpvm; assert 'hpvm.llvm' not in sys.modules and 'llvmlite' not in sys.modules; "
        "assert hpvm.llvm.from_hpvm_ir is not None and 'hpvm.llvm' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_foreign_program_exports_again_with_its_code() -> None:
    first = llvm.from_hpvm_ir(DECLS + LEAF + ROOT)
    text = llvm.to_hpvm_ir(first)
    # the leaf's own instructions, inlined into the new node function (seed 000: its
    # queries may not stay in the function it calls); the inliner suffixes their names
    assert "mul i32 %v.i, %k" in text
    assert print_program(llvm.from_hpvm_ir(text)) == print_program(first)


def test_an_internal_output_no_bind_feeds_is_reported_not_a_crash() -> None:
    """The middle function's return struct has two fields; with one of its output binds
    gone, its parent's bind of that output is still checked against the struct."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from programs import PROGRAMS

    program = next(p for p in PROGRAMS if p.name == "binds_two_levels")
    text = llvm.to_hpvm_ir(program.root)
    lines = text.splitlines()
    binds = [i for i, line in enumerate(lines) if "@llvm.hpvm.bind.output(ptr %p_stats," in line]
    assert binds
    del lines[binds[-1]]
    with fails(llvm.LLVMImportError, "the imported graph breaks HPVM's rules"):
        llvm.from_hpvm_ir("\n".join(lines))


def test_node_functions_are_located_at_their_define() -> None:
    text = DECLS + LEAF + ROOT
    root = llvm.from_hpvm_ir(text, file="scale.ll")
    leaf = root.graph.nodes[0].function
    lines = text.splitlines()
    assert lines[leaf.location.line - 1].startswith("define { i32 } @scale(")
    assert str(root.location) == f"scale.ll:{lines.index(ROOT.splitlines()[1]) + 1}"
