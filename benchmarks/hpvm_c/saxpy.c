/* saxpy in HPVM-C, as HPVM's benchmarks write a streaming kernel: y = alpha x + y, one leaf
   instance per element (x = the instance id), a root that binds every input.
   benchmarks/memory_bound.py launches its root beside the same loop in C with OpenMP;
   main checks the result against a plain C loop and returns 1 on a mismatch. */
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"

typedef struct __attribute__((__packed__)) {
  float alpha;
  float *x;
  size_t bytes_x;
  float *y;
  size_t bytes_y;
} RootIn;

void saxpy(float alpha, float *x, size_t bytes_x, float *y, size_t bytes_y) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, x, y, 1, y);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  y[i] = alpha * x[i] + y[i];
}

void saxpy_root(float alpha, float *x, size_t bytes_x, float *y, size_t bytes_y) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, x, y, 1, y);
  void *node = __hpvm__createNodeND(1, saxpy, bytes_y / sizeof(float));
  for (int p = 0; p < 5; p++)
    __hpvm__bindIn(node, p, p, 0);
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? (size_t)atoi(argv[1]) : 1000, bytes = n * sizeof(float);
  float *x = malloc(bytes), *y = malloc(bytes), *want = malloc(bytes);
  for (size_t i = 0; i < n; i++) {
    x[i] = (float)(i % 17);
    y[i] = (float)(i % 5) - 2.0f;
    want[i] = 3.0f * x[i] + y[i];
  }
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  *args = (RootIn){3.0f, x, bytes, y, bytes};
  llvm_hpvm_track_mem(x, bytes);
  llvm_hpvm_track_mem(y, bytes);
  void *graph = __hpvm__launch(0, saxpy_root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(y, bytes);
  int bad = 0;
  for (size_t i = 0; i < n; i++)
    if (y[i] != want[i]) bad++;
  llvm_hpvm_untrack_mem(x);
  llvm_hpvm_untrack_mem(y);
  __hpvm__cleanup();
  printf("saxpy: %zu elements, %d wrong\n", n, bad);
  return bad != 0;
}
