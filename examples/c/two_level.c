/* A two-level graph: the root creates a wrapper (an internal node), which creates the
   replicated leaf. Computes y = a * x + y (saxpy); main checks it with a C loop. */
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"

struct out_t {
  size_t bytes_y;
};

typedef struct __attribute__((__packed__)) {
  float a;
  float *x;
  size_t bytes_x;
  float *y;
  size_t bytes_y;
  struct out_t out;
} RootIn;

void saxpy(float a, float *x, size_t bytes_x, float *y, size_t bytes_y) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, x, y, 1, y);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  y[i] = a * x[i] + y[i];
  __hpvm__return(1, bytes_y);
}

void wrapper(float a, float *x, size_t bytes_x, float *y, size_t bytes_y) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, x, y, 1, y);
  void *leaf = __hpvm__createNodeND(1, saxpy, bytes_y / sizeof(float));
  for (int k = 0; k < 5; k++)
    __hpvm__bindIn(leaf, k, k, 0);
  __hpvm__bindOut(leaf, 0, 0, 0);
}

void root(float a, float *x, size_t bytes_x, float *y, size_t bytes_y) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, x, y, 1, y);
  void *inner = __hpvm__createNodeND(0, wrapper);
  for (int k = 0; k < 5; k++)
    __hpvm__bindIn(inner, k, k, 0);
  __hpvm__bindOut(inner, 0, 0, 0);
}

int main(void) {
  const size_t n = 4096, bytes = n * sizeof(float);
  float *x = malloc(bytes), *y = malloc(bytes), *want = malloc(bytes);
  for (size_t i = 0; i < n; i++) {
    x[i] = (float)(i % 17);
    y[i] = 1.0f + (float)(i % 5);
    want[i] = 3.0f * x[i] + y[i];
  }
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  args->a = 3.0f;
  args->x = x; args->bytes_x = bytes;
  args->y = y; args->bytes_y = bytes;
  llvm_hpvm_track_mem(x, bytes);
  llvm_hpvm_track_mem(y, bytes);
  void *graph = __hpvm__launch(0, root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(y, bytes);
  int bad = 0;
  for (size_t i = 0; i < n; i++)
    if (y[i] != want[i]) bad++;
  llvm_hpvm_untrack_mem(x);
  llvm_hpvm_untrack_mem(y);
  __hpvm__cleanup();
  printf("two_level: %d wrong, out.bytes_y=%zu\n", bad, args->out.bytes_y);
  return bad != 0 || args->out.bytes_y != bytes;
}
