"""Every misuse of HPVM-C is an HPVMCError at the C line, saying what is wrong."""

from __future__ import annotations

import sys
from pathlib import Path

from hpvmc_helpers import line_of, needs_clang

from hpvm import HPVMError, c

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from markers import fails  # noqa: E402

pytestmark = needs_clang

LEAF = """#include "hpvm.h"
void leaf(float *a, size_t bytes_a) {
  __hpvm__attributes(1, a, 1, a);
  void *self = __hpvm__getNode();
  a[__hpvm__getNodeInstanceID_x(self)] += 1.0f;
  __hpvm__return(1, bytes_a);
}
"""


def compile_error(write_c, source: str, marker: str | None, *fragments: str, name: str = "prog.c") -> None:
    path = write_c(source, name)
    where = f"{path}:{line_of(source, marker)}" if marker else str(path)
    with fails(c.HPVMCError, where, *fragments):
        c.compile(path)


def test_is_an_hpvm_error():
    assert issubclass(c.HPVMCError, HPVMError)


def test_clang_errors_come_back(write_c):
    source = '#include "hpvm.h"\nvoid root(void) { int x = ; }  // @bad\n'
    path = write_c(source)
    with fails(c.HPVMCError, f"{path}: clang could not compile it", "prog.c:2", "expected expression"):
        c.compile(path)


def test_missing_file(tmp_path):
    with fails(c.HPVMCError, "no such file"):
        c.compile(tmp_path / "nothing.c")


def test_graph_call_inside_a_leaf(write_c):
    source = """#include "hpvm.h"
void inner(float *a, size_t n) { a[0] = 1; }
void leaf(float *a, size_t n) {
  void *self = __hpvm__getNode();
  void *x = __hpvm__createNodeND(0, inner);  // @create
  a[__hpvm__getNodeInstanceID_x(self)] = 0;
}
void root(float *a, size_t n) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindIn(l, 1, 1, 0); }
"""
    compile_error(write_c, source, "create", "__hpvm__createNodeND in leaf", "either builds a graph")


def test_computation_in_an_internal_node(write_c):
    source = (
        LEAF
        + """
void root(float *a, size_t bytes_a) {
  void *l = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
  a[3] = 2.0f;  // @store
}
"""
    )
    compile_error(write_c, source, "store", "a[3] = 2.0f; in root", "move the computation into a leaf")


def test_bind_to_a_port_that_does_not_exist(write_c):
    source = (
        LEAF
        + """
void root(float *a, size_t bytes_a) {
  void *l = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
  __hpvm__bindIn(l, 1, 7, 0);  // @bind
}
"""
    )
    compile_error(
        write_c, source, "bind", "__hpvm__bindIn(l, 1, 7, 0) in root", "index 7 is no input of leaf"
    )


def test_bind_out_of_an_output_that_does_not_exist(write_c):
    source = (
        LEAF
        + """
void root(float *a, size_t bytes_a) {
  void *l = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
  __hpvm__bindOut(l, 2, 0, 0);  // @out
}
"""
    )
    compile_error(write_c, source, "out", "binds output 2 of leaf, which has 1 output field")


def test_a_pointer_left_unbound_beside_its_bound_size(write_c):
    # A pointer and its size are two ports (HPVM's numbering): the size alone may be bound,
    # and then the pointer, an input of its own, has no feed.
    source = (
        LEAF
        + """
void root(float *a, size_t bytes_a) {
  void *l = __hpvm__createNodeND(0, leaf);  // @node
  __hpvm__bindIn(l, 1, 1, 0);
}
"""
    )
    compile_error(write_c, source, "node", "input 0 ('a') of node 'l'", "has no feed")


def test_host_call_in_a_node_function(write_c):
    source = """#include "hpvm.h"
void leaf(float *a, size_t n) {
  llvm_hpvm_track_mem(a, n);  // @track
}
void root(float *a, size_t n) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindIn(l, 1, 1, 0); }
"""
    compile_error(write_c, source, "track", "llvm_hpvm_track_mem in node function leaf", "host calls")


def test_graph_call_in_host_code(write_c):
    source = (
        LEAF
        + """
void root(float *a, size_t bytes_a) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindIn(l, 1, 1, 0); }
int main(void) {
  __hpvm__init();
  void *g = __hpvm__launch(0, root, (void *)0);
  void *x = __hpvm__createNodeND(0, leaf);  // @host
  __hpvm__bindIn(x, 0, 0, 0);
  return 0;
}
"""
    )
    compile_error(write_c, source, "host", "in main(), which is host code")


def test_node_function_returning_a_value(write_c):
    source = """#include "hpvm.h"
int leaf(int x) {  // @leaf
  return x + 1;
}
void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); }
"""
    compile_error(write_c, source, "leaf", "node function leaf returns i32", "return void")


def test_fpga_hint(write_c):
    source = """#include "hpvm.h"
void leaf(int x) {
  __hpvm__hint(FPGA_TARGET);  // @hint
}
void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); }
"""
    compile_error(write_c, source, "hint", "__hpvm__hint(FPGA_TARGET)", "no back end")


def test_attributes_naming_something_else(write_c):
    source = """#include "hpvm.h"
float buffer[4];
void leaf(float *a, size_t n) {
  __hpvm__attributes(1, buffer, 0);  // @attrs
  a[0] = buffer[0];
}
void root(float *a, size_t n) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindIn(l, 1, 1, 0); }
"""
    compile_error(write_c, source, "attrs", "__hpvm__attributes names @buffer", "not a pointer parameter")


def test_attributes_counts_do_not_match(write_c):
    source = """#include "hpvm.h"
void leaf(float *a, size_t n) {
  __hpvm__attributes(2, a, 0);  // @attrs
  a[0] = 1;
}
void root(float *a, size_t n) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindIn(l, 1, 1, 0); }
"""
    compile_error(write_c, source, "attrs", "the counts do not match")


def test_return_count_mismatch(write_c):
    source = """#include "hpvm.h"
void leaf(int x) {
  __hpvm__return(2, x);  // @ret
}
void root(int x) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); }
"""
    compile_error(write_c, source, "ret", "__hpvm__return(2, ...) gives 1 value(s)")


def test_return_in_an_internal_node(write_c):
    source = """#include "hpvm.h"
void leaf(int x) { __hpvm__return(1, x); }
void root(int x) {
  void *l = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__return(1, x);  // @ret
}
"""
    compile_error(write_c, source, None, "__hpvm__createNodeND in root, which also calls __hpvm__return")


def test_dims_and_sizes_disagree(write_c):
    source = """#include "hpvm.h"
void leaf(int x) { }
void root(int x) {
  void *l = __hpvm__createNodeND(2, leaf, 4L);  // @create
  __hpvm__bindIn(l, 0, 0, 0);
}
"""
    compile_error(write_c, source, "create", "takes 2 replication size(s)", "but 1 were given")


def test_dims_not_constant(write_c):
    source = """#include "hpvm.h"
void leaf(int x) { }
void root(int x) {
  void *l = __hpvm__createNodeND(x, leaf, 4L);  // @create
  __hpvm__bindIn(l, 0, 0, 0);
}
"""
    compile_error(write_c, source, "create", "dims must be a constant")


def test_port_not_constant(write_c):
    source = """#include "hpvm.h"
void leaf(int x) { }
void root(int x) {
  void *l = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, x, 0, 0);  // @bind
}
"""
    compile_error(write_c, source, "bind", "must be constants")


def test_replication_size_from_a_float(write_c):
    source = """#include "hpvm.h"
void leaf(int x) { }
void root(int x, float f) {
  void *l = __hpvm__createNodeND(1, leaf, f);  // @create
  __hpvm__bindIn(l, 0, 0, 0);
}
"""
    compile_error(write_c, source, "create", "replication size 0 of __hpvm__createNodeND is a double")


def test_no_graph(write_c):
    compile_error(write_c, "int main(void) { return 0; }\n", None, "no dataflow graph")


def test_launch_of_a_non_node_pointer(write_c):
    source = (
        LEAF
        + """
void root(float *a, size_t bytes_a) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindIn(l, 1, 1, 0); }
int main(int argc, char **argv) {
  void (*f)(float *, size_t) = argc > 1 ? root : leaf;
  void *g = __hpvm__launch(0, f, (void *)0);  // @launch
  return 0;
}
"""
    )
    compile_error(write_c, source, "launch", "must name a node function defined in the program")


def test_early_return_without_outputs(write_c):
    source = """#include "hpvm.h"
void leaf(int *a, size_t n, int x) {
  if (x > 3) {
    a[0] = 1;
    return;  // @early
  }
  a[1] = 2;
  __hpvm__return(1, x);  // @ret
}
void root(int *a, size_t n, int x) { void *l = __hpvm__createNodeND(0, leaf); for (int p = 0; p < 3; p++) __hpvm__bindIn(l, p, p, 0); }
"""
    compile_error(write_c, source, "ret", "another path returns without it", "on every path")


def test_create_node_of_a_computed_pointer(write_c):
    source = """#include "hpvm.h"
void a(int x) { }
void b(int x) { }
void root(int x) {
  void *l = __hpvm__createNodeND(0, x > 0 ? a : b);  // @create
  __hpvm__bindIn(l, 0, 0, 0);
}
"""
    compile_error(write_c, source, "create", "not a computed pointer")


def test_create_node_of_a_declared_function(write_c):
    source = """#include "hpvm.h"
void elsewhere(int x);
void root(int x) {
  void *l = __hpvm__createNodeND(0, elsewhere);
  __hpvm__bindIn(l, 0, 0, 0);
}
"""
    compile_error(write_c, source, None, "elsewhere is created as a node but no source file defines it")


def test_bind_types_differ(write_c):
    source = """#include "hpvm.h"
void leaf(float y) { }
void root(int x) {
  void *l = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 0);  // @bind
}
"""
    compile_error(write_c, source, "bind", "connects a i32 to a f32")


def test_run_on_a_target_without_llvm_leaves():
    from hpvmc_helpers import EXAMPLES

    program = c.compile(EXAMPLES / "vector_add.c")
    with fails(c.HPVMCError, "target 'cuda'", "cpu"):
        program.run(target="cuda")
