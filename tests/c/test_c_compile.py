"""compile(): the graphs HPVM-C programs build, as hpvm's text form prints them."""

from __future__ import annotations

import pytest
from hpvmc_helpers import EXAMPLES, needs_clang

from hpvm import c
from hpvm.ir.bodies import LLVMBody
from hpvm.ir.graph import LeafFunction
from hpvm.ir.printer import print_program

pytestmark = needs_clang


def printed(name: str) -> str:
    program = c.compile(EXAMPLES / name)
    return "".join(print_program(r) for r in program.roots)


def test_vector_add():
    text = printed("vector_add.c")
    assert "leaf @vector_add(a: u8[:], b: u8[:], c: u8[:]) -> (i64) hint(cpu) ins(a, b) outs(c)" in text
    assert "%add = node @vector_add[c.shape[0] // 4]" in text
    assert "bind out %add.0 -> 0" in text


def test_cpp_program_keeps_c_names():
    program = c.compile(EXAMPLES / "vector_add.cpp")
    text = print_program(program.roots[0])
    assert "leaf @vector_add(a: u8[:], b: u8[:], c: u8[:]) -> () hint(cpu)" in text
    leaf = program.roots[0].graph.nodes[0].function
    assert isinstance(leaf, LeafFunction) and isinstance(leaf.body, LLVMBody)
    assert leaf.body.function.startswith("_Z")  # the mangled symbol, in the module text
    assert leaf.location.file.endswith("vector_add.cpp") and leaf.location.line == 15
    assert program.roots[0].location.line == 23  # the C++ root's definition, not the LLVM text's line


def test_two_levels():
    text = printed("two_level.c")
    assert "internal @wrapper(a: f32, x: u8[:], y: u8[:])" in text
    assert "%inner = node @wrapper\n" in text
    assert "%leaf = node @saxpy[y.shape[0] // 4]" in text


def test_sgemm_allocation_node_and_replication():
    text = printed("sgemm.c")
    assert "leaf @allocate_tile(bytes_tile: i64) -> (u8[:])" in text
    assert "%mul = node @sgemm_tile[8, 8]" in text
    assert "edge %alloc.0 -> %mul.8 all_to_all" in text
    assert "%grid = node @sgemm_group[n // 8, m // 8]" in text


def test_stencil_3d():
    assert "%point = node @stencil_point[nx + -2, ny + -2, nz + -2]" in printed("stencil.c")


def test_streaming_pipeline():
    text = printed("pipeline.c")
    assert "edge %sum.0 -> %scaled.0 one_to_one stream" in text
    assert "bind out %scaled.0 -> 0 stream" in text
    assert "leaf @sum_frame(frame: u8[:]) -> (f64)" in text  # a float vararg is a double


def test_atomics_become_hpvm_intrinsics():
    program = c.compile(EXAMPLES / "histogram.c")
    leaf = program.roots[0].graph.nodes[0].function
    code = leaf.body.module
    assert "call i32 @llvm.hpvm.atomic.add(ptr" in code
    assert "@__hpvm__" not in code.split("\n!")[0].replace("!DISubprogram", "")  # no marker calls left


@pytest.mark.parametrize(
    "name", ["vector_add.c", "two_level.c", "sgemm.c", "stencil.c", "pipeline.c", "histogram.c"]
)
def test_examples_keep_their_c_locations(name):
    program = c.compile(EXAMPLES / name)
    for root in program.roots:
        assert root.location.file.endswith(name) and root.location.line > 0


def test_defines_and_include_dirs(write_c, tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "sizes.h").write_text("#define LANES 4\n")
    path = write_c(
        '#include "hpvm.h"\n#include "sizes.h"\n'
        "void leaf(int *a, size_t n) { __hpvm__attributes(0, 1, a); a[0] = SCALE; }\n"
        "void root(int *a, size_t n) { void *l = __hpvm__createNodeND(1, leaf, (long)LANES);\n"
        "  __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindIn(l, 1, 1, 0); }\n"
    )
    program = c.compile(path, defines=["SCALE=3"], include_dirs=[str(inc)])
    assert "%l = node @leaf[4]" in print_program(program.roots[0])
    assert "store i32 3" in program.roots[0].graph.nodes[0].function.body.module


def test_cli_lower_and_show(tmp_path, capfd):
    from hpvm.cli import main as cli

    assert cli(["c", "lower", str(EXAMPLES / "stencil.c")]) == 0
    assert "%point = node @stencil_point[nx + -2, ny + -2, nz + -2]" in capfd.readouterr().out
    out = tmp_path / "g.dot"
    assert cli(["c", "show", str(EXAMPLES / "sgemm.c"), "-o", str(out)]) == 0
    assert "sgemm_tile" in out.read_text()
    assert cli(["c", "show", str(EXAMPLES / "sgemm.c"), "--root", "nope"]) == 1
    assert "no root named 'nope'" in capfd.readouterr().err


def test_cli_reports_errors(write_c, capfd):
    from hpvm.cli import main as cli

    assert cli(["c", "lower", str(write_c("int main(void) { return x; }\n"))]) == 1
    assert "clang could not compile it" in capfd.readouterr().err
