"""A wrong ``__hpvm__edge`` / ``__hpvm__bindIn`` / ``__hpvm__createNodeND`` that the importer
refuses is an HPVMCError at the C file and line of the call, quoting the C call (never the
LLVM instruction GenHPVM made of it), saying what is wrong and how to fix it in C
(``hpvm/c/grapherrors.py``). One test per kind of mistake."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from hpvmc_helpers import line_of, needs_clang

from hpvm import c
from hpvm.c import clang

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from markers import fails  # noqa: E402

pytestmark = needs_clang

LEAVES = """#include "hpvm.h"
void leaf(float *a, size_t bytes_a) {
  __hpvm__attributes(1, a, 1, a);
  void *self = __hpvm__getNode();
  a[__hpvm__getNodeInstanceID_x(self)] += 1.0f;
  __hpvm__return(1, bytes_a);
}
void ileaf(int *b, size_t bytes_b) {
  __hpvm__attributes(1, b, 1, b);
  __hpvm__return(1, bytes_b);
}
"""


def graph_error(write_c, graph: str, marker: str, call: str, *fragments: str) -> str:
    """The message compiling ``LEAVES + graph`` gives: at the line marked ``// @marker``,
    quoting the C ``call`` (with the function it is in), with ``fragments``, and no LLVM."""
    source = LEAVES + graph
    path = write_c(source)
    with fails(c.HPVMCError, f"{path}:{line_of(source, marker)}: {call}", *fragments) as info:
        c.compile(path)
    message = str(info.value)
    for llvm in ("@llvm.hpvm", "!dbg", "LLVM", "i32 ", "ptr %"):
        assert llvm not in message, message
    return message


def test_an_edge_from_an_output_the_source_does_not_have(write_c):
    graph = """
void root(float *a, size_t bytes_a) {
  void *l = __hpvm__createNodeND(0, leaf);
  void *m = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
  __hpvm__bindIn(m, 0, 0, 0);
  __hpvm__edge(l, m, 1, 3, 1, 0);  // @edge
}
"""
    graph_error(
        write_c,
        graph,
        "edge",
        "__hpvm__edge(l, m, 1, 3, 1, 0) in root",
        "index 3 is no output of leaf, which has indices 0..0",
        "the values its function passes to __hpvm__return",
    )


def test_an_edge_into_an_input_the_destination_does_not_have(write_c):
    graph = """
void root(float *a, size_t bytes_a) {
  void *l = __hpvm__createNodeND(0, leaf);
  void *m = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
  __hpvm__bindIn(m, 0, 0, 0);
  __hpvm__edge(l, m, 1, 0, 5, 0);  // @edge
}
"""
    graph_error(
        write_c,
        graph,
        "edge",
        "__hpvm__edge(l, m, 1, 0, 5, 0) in root",
        "index 5 is no input of leaf, which has indices 0..1",
        "a node's inputs are its function's parameters",
    )


def test_a_bind_from_an_input_the_parent_does_not_have(write_c):
    graph = """
void root(float *a, size_t bytes_a) {
  void *l = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 4, 1, 0);  // @bind
}
"""
    graph_error(write_c, graph, "bind", "__hpvm__bindIn(l, 4, 1, 0) in root", "index 4 is no input of root")


def test_an_edge_between_ports_of_two_types(write_c):
    graph = """
void root(float *a, size_t bytes_a, int *b, size_t bytes_b) {
  void *l = __hpvm__createNodeND(0, leaf);
  void *m = __hpvm__createNodeND(0, ileaf);
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
  __hpvm__bindIn(m, 3, 1, 0);
  __hpvm__edge(l, m, 1, 0, 0, 0);  // @edge
}
"""
    graph_error(
        write_c,
        graph,
        "edge",
        "__hpvm__edge(l, m, 1, 0, 0, 0) in root",
        "connects a i64 to a u8[*]; both ends must have the same type",
        "a pointer to a pointer",
    )


def test_a_bind_between_ports_of_two_types(write_c):
    graph = """
void root(float *a, size_t bytes_a, int *b, size_t bytes_b) {
  void *m = __hpvm__createNodeND(0, ileaf);
  __hpvm__bindIn(m, 1, 0, 0);  // @bind
  __hpvm__bindIn(m, 3, 1, 0);
}
"""
    graph_error(write_c, graph, "bind", "__hpvm__bindIn(m, 1, 0, 0) in root", "connects a i64 to a u8[*]")


def test_an_edge_from_a_node_this_function_did_not_create(write_c):
    graph = """
void inner(float *a, size_t bytes_a, void *other) {
  void *l = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__edge(other, l, 1, 0, 1, 0);  // @edge
}
void root(float *a, size_t bytes_a) {
  void *l = __hpvm__createNodeND(0, leaf);
  void *i = __hpvm__createNodeND(0, inner);
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
  __hpvm__bindIn(i, 0, 0, 0);
  __hpvm__bindIn(i, 1, 1, 0);
}
"""
    graph_error(
        write_c,
        graph,
        "edge",
        "__hpvm__edge(other, l, 1, 0, 1, 0) in inner",
        "'other' is not a node this function created",
        "a node created in another function is connected there",
    )


def test_computation_beside_the_graph_calls(write_c):
    graph = """
void root(float *a, size_t bytes_a, long n) {
  void *l = __hpvm__createNodeND(1, leaf, n ^ 3);  // @create
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
}
"""
    graph_error(
        write_c,
        graph,
        "create",
        "void *l = __hpvm__createNodeND(1, leaf, n ^ 3); in root",
        "nor a replication size's integer arithmetic",
        "move the computation into a leaf",
    )


def test_two_graph_calls_on_one_line_quote_the_one_at_fault(write_c):
    """The call is found at its ``!dbg`` column, not by the first call of its name."""
    graph = """
void root(float *a, size_t bytes_a) {
  void *l = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindIn(l, 1, 6, 0);  // @bind
}
"""
    graph_error(write_c, graph, "bind", "__hpvm__bindIn(l, 1, 6, 0) in root", "index 6 is no input of leaf")


def test_an_input_fed_by_a_bind_and_an_edge_names_both_lines(write_c):
    """The verifier's message (not a refused call): at the line of the feed it meets second,
    naming the first by its C line too, so either can be removed."""
    graph = """
void root(float *a, size_t bytes_a) {
  void *l = __hpvm__createNodeND(0, leaf);
  void *m = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
  __hpvm__bindIn(m, 0, 0, 0);
  __hpvm__bindIn(m, 1, 1, 0);  // @bind
  __hpvm__edge(l, m, 1, 0, 1, 0);  // @edge
}
"""
    source = LEAVES + graph
    path = write_c(source)
    bind, edge = line_of(source, "bind"), line_of(source, "edge")
    with fails(
        c.HPVMCError,
        f"{path}:{bind}: ",
        f"input bind 1 -> m.1 ({path}:{bind}): input 1 ('bytes_a') of 'm' is already fed by edge l.0 -> m.1",
        f"(all_to_all, {path}:{edge})",
    ):
        c.compile(path)


def test_a_constant_negative_replication_size_is_refused_at_compile_time(write_c):
    """Before, ``createNodeND(1, leaf, -4)`` compiled and was refused only when launched."""
    graph = """
void root(float *a, size_t bytes_a) {
  void *l = __hpvm__createNodeND(1, leaf, -4);  // @create
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
}
"""
    graph_error(
        write_c,
        graph,
        "create",
        "__hpvm__createNodeND(1, leaf, -4) in root",
        "its size is -4: a node of leaf cannot have a negative number of instances",
        "write 0 or more",
    )


def test_a_constant_expression_folding_negative_names_its_dimension(write_c):
    graph = """
#define TILE 4
void root(float *a, size_t bytes_a) {
  void *l = __hpvm__createNodeND(2, leaf, TILE, TILE - 8);  // @create
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
}
"""
    graph_error(
        write_c,
        graph,
        "create",
        "__hpvm__createNodeND(2, leaf, TILE, TILE - 8) in root",
        "size 2 of 2 is -4: a node of leaf",
    )


def test_a_negative_size_left_unfolded_in_an_ll_file_is_refused_with_its_arithmetic(write_c, tmp_path):
    """LLVM text may keep ``sub i64 4, 8`` as an instruction (clang folds it; a hand-edited
    or another tool's ``.ll`` need not): the size's arithmetic is read, folded and refused,
    at the C line the debug information records."""
    source = (
        LEAVES
        + """
void root(float *a, size_t bytes_a, long n) {
  void *l = __hpvm__createNodeND(2, leaf, 3, n);  // @create
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
}
"""
    )
    path = write_c(source)
    text = clang.to_llvm(Path(path), include_dirs=[str(c.include_dir())])
    call = re.search(r"  %\w+ = (tail )?call ptr \(i32, \.\.\.\) @__hpvm__createNodeND\(", text)
    assert call is not None and text.count("i32 noundef 3, i64 noundef %n)") == 1, text
    edited = text.replace("i32 noundef 3, i64 noundef %n)", "i32 noundef 3, i64 noundef %negative)")
    edited = edited[: call.start()] + "  %negative = sub i64 4, 8\n" + edited[call.start() :]
    ll = tmp_path / "edited.ll"
    ll.write_text(edited)
    with fails(
        c.HPVMCError,
        f"{path}:{line_of(source, 'create')} (in {ll}): __hpvm__createNodeND(2, leaf, 3, n) in root",
        "size 2 of 2 is -4 (4 - 8 folds to -4)",
    ):
        c.compile(ll)


# A pointer and its size are one port of the imported graph, two parameters of the C
# function: the verifier's messages number ports as the C calls do (``ir.graph.WrittenPorts``).
# Before, ``__hpvm__bindIn(l, 2, 3, 0)`` read "input bind 1 -> l.2" and "input 2 ('m')".
SCALED = """#include "hpvm.h"
void scaled(float *a, size_t bytes_a, long n, long m) {
  __hpvm__attributes(1, a, 1, a);
  void *self = __hpvm__getNode();
  a[__hpvm__getNodeInstanceID_x(self)] *= (float)(n + m);
  __hpvm__return(1, bytes_a);
}
"""


def test_an_input_fed_twice_is_numbered_as_the_c_calls_number_it(write_c):
    source = (
        SCALED
        + """
void root(float *a, size_t bytes_a, long n, long m) {
  void *l = __hpvm__createNodeND(1, scaled, n);
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
  __hpvm__bindIn(l, 2, 2, 0);
  __hpvm__bindIn(l, 3, 3, 0);  // @first
  __hpvm__bindIn(l, 2, 3, 0);  // @second
}
"""
    )
    path = write_c(source)
    first, second = line_of(source, "first"), line_of(source, "second")
    with fails(
        c.HPVMCError,
        f"{path}:{second}: ",
        f"input bind 2 -> l.3 ({path}:{second}): input 3 ('m') of 'l' is already fed by "
        f"input bind 3 -> l.3 ({path}:{first})",
    ):
        c.compile(path)


def test_an_edge_into_an_input_already_bound_is_numbered_as_the_c_calls_number_it(write_c):
    source = (
        SCALED
        + """
void root(float *a, size_t bytes_a, long n, long m) {
  void *l = __hpvm__createNodeND(0, scaled);
  void *k = __hpvm__createNodeND(0, scaled);
  for (int p = 0; p < 4; p++) __hpvm__bindIn(l, p, p, 0);
  for (int p = 0; p < 4; p++) __hpvm__bindIn(k, p, p, 0);  // @binds
  __hpvm__edge(l, k, 1, 0, 3, 0);  // @edge
}
"""
    )
    path = write_c(source)
    binds, edge = line_of(source, "binds"), line_of(source, "edge")
    with fails(
        c.HPVMCError,
        f"input bind 3 -> k.3 ({path}:{binds}): input 3 ('m') of 'k' is already fed by "
        f"edge l.0 -> k.3 (all_to_all, {path}:{edge})",
    ):
        c.compile(path)


def test_an_input_without_a_feed_is_numbered_as_the_c_function_numbers_it(write_c):
    source = (
        SCALED
        + """
void root(float *a, size_t bytes_a, long n, long m) {
  void *l = __hpvm__createNodeND(1, scaled, n);  // @node
  __hpvm__bindIn(l, 0, 0, 0);
  __hpvm__bindIn(l, 1, 1, 0);
  __hpvm__bindIn(l, 2, 2, 0);
}
"""
    )
    path = write_c(source)
    with fails(c.HPVMCError, "input 3 ('m') of node 'l' (", "has no feed"):
        c.compile(path)


def test_a_refused_call_that_reads_like_one_in_an_earlier_function_is_named_at_its_own_line(write_c):
    """``mid_b``'s first bind prints, in LLVM, as ``mid_a``'s does (the same value names):
    the message names ``mid_b``'s line, not the first such call in the file; and a node
    function without inputs is said to have none."""
    graph = """
void none(void) {
  __hpvm__hint(CPU_TARGET);
}
void mid_a(float *a, size_t bytes_a) {
  void *n = __hpvm__createNodeND(0, leaf);
  __hpvm__bindIn(n, 0, 0, 0);
  __hpvm__bindIn(n, 1, 1, 0);
}
void mid_b(float *a, size_t bytes_a) {
  void *n = __hpvm__createNodeND(0, none);
  __hpvm__bindIn(n, 0, 0, 0);  // @bind
}
void root(float *a, size_t bytes_a) {
  void *x = __hpvm__createNodeND(0, mid_a);
  void *y = __hpvm__createNodeND(0, mid_b);
  __hpvm__bindIn(x, 0, 0, 0);
  __hpvm__bindIn(x, 1, 1, 0);
  __hpvm__bindIn(y, 0, 0, 0);
  __hpvm__bindIn(y, 1, 1, 0);
}
"""
    graph_error(
        write_c,
        graph,
        "bind",
        "__hpvm__bindIn(n, 0, 0, 0) in mid_b",
        "index 0 is no input of none, which has no inputs",
    )
