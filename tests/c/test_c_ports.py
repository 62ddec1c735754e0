"""HPVM-C ports as HPVM numbers them: a pointer and its ``size_t`` are two ports, which a
program may bind and connect apart. Programs of our own in the style of HPVM's pipeline
benchmark (wrapper internal nodes; leaves returning sizes with ``__hpvm__return(2, bytes,
bytes)``; edges carrying those sizes into a sibling's size parameter while its pointer is
bound from the root), streaming included; pointers without sizes (HPVM's pass tests); a
pointer the root returns alone; and what is an error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hpvmc_helpers import line_of, needs_clang, needs_llvm_leaves

from hpvm import c
from hpvm.c.errors import CMemoryTrackingError
from hpvm.ir.graph import functions

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from markers import fails  # noqa: E402

pytestmark = [needs_clang, needs_llvm_leaves, pytest.mark.usefixtures("clean_runtime")]
TARGETS = ["cpu", "interp"]


def _signatures(program: c.CProgram) -> dict[str, str]:
    return {
        f.name: ", ".join(f"{p.name}: {p.type}" for p in f.params) + " -> " + ", ".join(map(str, f.out_types))
        for root in program.roots
        for f in functions(root)
    }


# A streaming two-stage pipeline, as HPVM's pipeline benchmark streams frames: the smoothing
# stage returns its image's size twice; the scaling stage's pointer is bound from the root and
# its size comes from the first stage by a streaming edge (and the second copy of the size
# reaches the root's output through the second stage).
STREAM = r"""#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"
#define FRAMES 5
struct out_t { size_t bytes; long count; };
typedef struct __attribute__((__packed__)) {
  float *In; size_t bytesIn; float *Mid; size_t bytesMid; float *Out; size_t bytesOut; long m; long n;
  struct out_t out;
} RootIn;
void smooth(float *In, size_t bytesIn, float *Mid, size_t bytesMid, long m, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, In, 1, Mid);
  void *self = __hpvm__getNode();
  long x = __hpvm__getNodeInstanceID_x(self), y = __hpvm__getNodeInstanceID_y(self);
  long l = x > 0 ? x - 1 : x, r = x < n - 1 ? x + 1 : x;
  Mid[y * n + x] = In[y * n + l] + In[y * n + x] + In[y * n + r];
  __hpvm__return(2, bytesMid, bytesMid);
}
void WrapperSmooth(float *In, size_t bytesIn, float *Mid, size_t bytesMid, long m, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, In, 1, Mid);
  void *node = __hpvm__createNodeND(2, smooth, n, m);
  for (int k = 0; k < 6; k++) __hpvm__bindIn(node, k, k, 0);
  __hpvm__bindOut(node, 0, 0, 0);
  __hpvm__bindOut(node, 1, 1, 0);
}
void scale(float *Mid, size_t bytesMid, float *Out, size_t bytesOut, long m, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, Mid, 1, Out);
  void *self = __hpvm__getNode();
  long x = __hpvm__getNodeInstanceID_x(self), y = __hpvm__getNodeInstanceID_y(self);
  Out[y * n + x] = Mid[y * n + x] * (float)(bytesMid / sizeof(float));
  __hpvm__return(2, bytesOut, (long)(bytesMid / sizeof(float)));
}
void WrapperScale(float *Mid, size_t bytesMid, float *Out, size_t bytesOut, long m, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, Mid, 1, Out);
  void *node = __hpvm__createNodeND(2, scale, n, m);
  for (int k = 0; k < 6; k++) __hpvm__bindIn(node, k, k, 0);
  __hpvm__bindOut(node, 0, 0, 0);
  __hpvm__bindOut(node, 1, 1, 0);
}
void frames(float *In, size_t bytesIn, float *Mid, size_t bytesMid, float *Out, size_t bytesOut,
            long m, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, In, 2, Mid, Out);
  void *SNode = __hpvm__createNodeND(0, WrapperSmooth);
  void *CNode = __hpvm__createNodeND(0, WrapperScale);
  __hpvm__bindIn(SNode, 0, 0, 1);
  __hpvm__bindIn(SNode, 1, 1, 1);
  __hpvm__bindIn(SNode, 2, 2, 1);
  __hpvm__bindIn(SNode, 3, 3, 1);
  __hpvm__bindIn(SNode, 6, 4, 1);
  __hpvm__bindIn(SNode, 7, 5, 1);
  __hpvm__bindIn(CNode, 2, 0, 1);          // Bind Mid
  __hpvm__edge(SNode, CNode, 1, 0, 1, 1);  // Get bytesMid  // @edge
  __hpvm__bindIn(CNode, 4, 2, 1);
  __hpvm__bindIn(CNode, 5, 3, 1);
  __hpvm__bindIn(CNode, 6, 4, 1);
  __hpvm__bindIn(CNode, 7, 5, 1);
  __hpvm__bindOut(CNode, 0, 0, 1);
  __hpvm__bindOut(CNode, 1, 1, 1);
}
int main(void) {
  long m = 4, n = 6, count = m * n;
  size_t bytes = count * sizeof(float);
  float *In[FRAMES], *Out[FRAMES], *Mid = malloc(bytes);
  RootIn args[FRAMES];
  int bad = 0;
  __hpvm__init();
  llvm_hpvm_track_mem(Mid, bytes);
  void *dfg = __hpvm__launch(1, frames, NULL);
  for (int f = 0; f < FRAMES; f++) {
    In[f] = malloc(bytes);
    Out[f] = malloc(bytes);
    for (long i = 0; i < count; i++) In[f][i] = (float)((i * 5 + f) % 7);
    llvm_hpvm_track_mem(In[f], bytes);
    llvm_hpvm_track_mem(Out[f], bytes);
    RootIn a = {In[f], bytes, Mid, bytes, Out[f], bytes, m, n};
    args[f] = a;
    __hpvm__push(dfg, &args[f]);
    struct out_t *got = (struct out_t *)__hpvm__pop(dfg);
    llvm_hpvm_request_mem(Out[f], bytes);
    for (long y = 0; y < m; y++)
      for (long x = 0; x < n; x++) {
        long l = x > 0 ? x - 1 : x, r = x < n - 1 ? x + 1 : x;
        float want = (In[f][y * n + l] + In[f][y * n + x] + In[f][y * n + r]) * (float)count;
        bad += Out[f][y * n + x] != want;
      }
    bad += got->bytes != bytes || got->count != count;
  }
  __hpvm__wait(dfg);
  for (int f = 0; f < FRAMES; f++) {
    llvm_hpvm_untrack_mem(In[f]);
    llvm_hpvm_untrack_mem(Out[f]);
  }
  llvm_hpvm_untrack_mem(Mid);
  __hpvm__cleanup();
  printf("frames: %d wrong\n", bad);
  return bad != 0;
}
"""


@pytest.fixture(scope="module")
def stream_program(tmp_path_factory):
    path = tmp_path_factory.mktemp("ports") / "stream.c"
    path.write_text(STREAM)
    return c.compile(path)


def test_a_size_carried_by_an_edge_splits_the_pair_at_every_level(stream_program):
    sig = _signatures(stream_program)
    assert sig["smooth"] == "In: u8[:], Mid: u8[*], bytesMid: i64, m: i64, n: i64 -> i64, i64"
    assert sig["WrapperScale"] == "Mid: u8[*], bytesMid: i64, Out: u8[:], m: i64, n: i64 -> i64, i64"
    assert sig["frames"] == "In: u8[:], Mid: u8[*], bytesMid: i64, Out: u8[:], m: i64, n: i64 -> i64, i64"


@pytest.mark.parametrize("target", TARGETS)
def test_a_streaming_pipeline_with_sizes_on_edges(stream_program, target, capfd):
    assert stream_program.run(target=target) == 0
    assert "frames: 0 wrong" in capfd.readouterr().out


# HPVM's pass tests pass pointers with no size (define ... @F(i32* in %In, i32* out %Out)):
# in HPVM-C, a node function whose pointer parameters have no size_t after them. The root's
# pointer is the tracked memory around it: here a pointer into the middle of a buffer.
NO_SIZE = r"""#include <stdio.h>
#include "hpvm.h"
typedef struct __attribute__((__packed__)) { int *In; int *Out; long n; } RootIn;
void F(int *In, int *Out) {
  __hpvm__attributes(1, In, 1, Out);
  long i = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  Out[i] = 3 * In[i];
}
void root(int *In, int *Out, long n) {
  void *f = __hpvm__createNodeND(1, F, n);
  __hpvm__bindIn(f, 0, 0, 0);
  __hpvm__bindIn(f, 1, 1, 0);
}
int main(void) {
  int a[16], b[16] = {0};
  for (int i = 0; i < 16; i++) a[i] = i;
  __hpvm__init();
  llvm_hpvm_track_mem(a, sizeof a);
  llvm_hpvm_track_mem(b, sizeof b);  // @track
  RootIn args = {a + 4, b, 8};
  __hpvm__wait(__hpvm__launch(0, root, &args));
  llvm_hpvm_request_mem(b, sizeof b);
  for (int i = 0; i < 16; i++) printf("%d ", b[i]);
  __hpvm__cleanup();
  return 0;
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_pointers_without_sizes(write_c, target, capfd):
    program = c.compile(write_c(NO_SIZE))
    assert _signatures(program) == {
        "F": "In: u8[*], Out: u8[*] -> ",
        "root": "In: u8[*], Out: u8[*], n: i64 -> ",
    }
    assert program.run(target=target) == 0
    assert [int(v) for v in capfd.readouterr().out.split()] == [3 * (i + 4) for i in range(8)] + [0] * 8


def test_a_pointer_into_no_tracked_memory(write_c):
    source = NO_SIZE.replace("llvm_hpvm_track_mem(b, sizeof b);  // @track", "")
    path = write_c(source)
    with fails(
        CMemoryTrackingError,
        f"{path}: while main ran: __hpvm__launch: field 1 of root's argument struct (root parameter Out",
        "points into no tracked memory",
        "llvm_hpvm_track_mem(ptr, bytes)",
    ):
        c.compile(path).run()


# A leaf returns a pointer into its input and that pointer's size; the root returns the
# pointer alone (its size is not bound): a pointer-only output, written back as an address.
POINTER_OUT = r"""#include <stdio.h>
#include "hpvm.h"
struct out_t { int *p; };
typedef struct __attribute__((__packed__)) { int *a; size_t bytes_a; long k; struct out_t out; } RootIn;
void pick(int *a, size_t bytes_a, long k) {
  __hpvm__attributes(1, a, 0);
  __hpvm__return(2, a + k, bytes_a - k * sizeof(int));
}
void root(int *a, size_t bytes_a, long k) {
  void *p = __hpvm__createNodeND(0, pick);
  for (int i = 0; i < 3; i++) __hpvm__bindIn(p, i, i, 0);
  __hpvm__bindOut(p, 0, 0, 0);
}
int main(void) {
  int a[10];
  RootIn args = {a, sizeof a, 6};
  __hpvm__init();
  llvm_hpvm_track_mem(a, sizeof a);
  __hpvm__wait(__hpvm__launch(0, root, &args));
  __hpvm__cleanup();
  printf("offset %ld\n", (long)(args.out.p - a));
  return args.out.p != a + 6;
}
"""


@pytest.mark.parametrize("target", TARGETS)
def test_a_pointer_returned_alone(write_c, target, capfd):
    program = c.compile(write_c(POINTER_OUT))
    assert _signatures(program)["pick"] == "a: u8[:], k: i64 -> u8[*], i64"
    assert _signatures(program)["root"] == "a: u8[:], k: i64 -> u8[*]"
    assert program.run(target=target) == 0
    assert capfd.readouterr().out == "offset 6\n"


def test_a_tensor_whose_pointer_travels_without_its_size(write_c):
    source = """#include "hpvm.h"
void t_leaf(void *t, size_t n) {  // @leaf
  __hpvm__hint(TENSOR_TARGET);
  __hpvm__attributes(1, t, 0);
  void *r = __hpvm__tensor_relu(t);
  __hpvm__return(2, r, (size_t)0);
}
void root(void *t, size_t n, size_t other) {
  void *x = __hpvm__createNodeND(0, t_leaf);
  __hpvm__bindIn(x, 0, 0, 0);
  __hpvm__bindIn(x, 2, 1, 0);
  __hpvm__bindOut(x, 0, 0, 0); __hpvm__bindOut(x, 1, 1, 0);
}
"""
    path = write_c(source)
    with fails(
        c.HPVMCError,
        f"{path}:{line_of(source, 'leaf')}",
        "t_leaf's parameter t is a tensor whose pointer a bind or edge connects apart from its size",
    ):
        c.compile(path)


def test_the_edge_of_a_size_into_a_pointer(write_c):
    source = STREAM.replace(
        "__hpvm__edge(SNode, CNode, 1, 0, 1, 1);  // Get bytesMid  // @edge",
        "__hpvm__edge(SNode, CNode, 1, 0, 0, 1);  // @edge",
    ).replace("__hpvm__bindIn(CNode, 2, 0, 1);          // Bind Mid", "__hpvm__bindIn(CNode, 3, 1, 1);")
    path = write_c(source)
    with fails(c.HPVMCError, f"{path}:{line_of(source, 'edge')}", "connects a i64 to a u8[*]"):
        c.compile(path)
