/* STREAM's triad in HPVM-C: a = b + s c, one leaf instance per element, a root that binds
   every input. benchmarks/memory_bound.py launches its root beside the same loop in C with
   OpenMP (whose best rate is the row's measured bandwidth); main checks the result. */
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"

typedef struct __attribute__((__packed__)) {
  float *a;
  size_t bytes_a;
  float *b;
  size_t bytes_b;
  float *c;
  size_t bytes_c;
  float s;
} RootIn;

void triad(float *a, size_t bytes_a, float *b, size_t bytes_b, float *c, size_t bytes_c, float s) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, b, c, 1, a);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  a[i] = b[i] + s * c[i];
}

void triad_root(float *a, size_t bytes_a, float *b, size_t bytes_b, float *c, size_t bytes_c, float s) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, b, c, 1, a);
  void *node = __hpvm__createNodeND(1, triad, bytes_a / sizeof(float));
  for (int p = 0; p < 7; p++)
    __hpvm__bindIn(node, p, p, 0);
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? (size_t)atoi(argv[1]) : 1000, bytes = n * sizeof(float);
  float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
  for (size_t i = 0; i < n; i++) {
    a[i] = 0.0f;
    b[i] = (float)(i % 13);
    c[i] = (float)(i % 7);
  }
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  *args = (RootIn){a, bytes, b, bytes, c, bytes, 3.0f};
  llvm_hpvm_track_mem(a, bytes);
  llvm_hpvm_track_mem(b, bytes);
  llvm_hpvm_track_mem(c, bytes);
  void *graph = __hpvm__launch(0, triad_root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(a, bytes);
  int bad = 0;
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i] + 3.0f * c[i]) bad++;
  llvm_hpvm_untrack_mem(a);
  llvm_hpvm_untrack_mem(b);
  llvm_hpvm_untrack_mem(c);
  __hpvm__cleanup();
  printf("triad: %zu elements, %d wrong\n", n, bad);
  return bad != 0;
}
