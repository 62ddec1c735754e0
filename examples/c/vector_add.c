/* Vector add in HPVM-C: one replicated leaf, a root that binds its inputs and output.
   main checks the result against a plain C loop and returns 1 on a mismatch. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"

struct out_t {
  size_t bytes_c;
};

typedef struct __attribute__((__packed__)) {
  float *a;
  size_t bytes_a;
  float *b;
  size_t bytes_b;
  float *c;
  size_t bytes_c;
  struct out_t out;
} RootIn;

void vector_add(float *a, size_t bytes_a, float *b, size_t bytes_b, float *c, size_t bytes_c) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, a, b, 1, c);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  c[i] = a[i] + b[i];
  __hpvm__return(1, bytes_c);
}

void root(float *a, size_t bytes_a, float *b, size_t bytes_b, float *c, size_t bytes_c) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, a, b, 1, c);
  void *add = __hpvm__createNodeND(1, vector_add, bytes_c / sizeof(float));
  __hpvm__bindIn(add, 0, 0, 0);
  __hpvm__bindIn(add, 1, 1, 0);
  __hpvm__bindIn(add, 2, 2, 0);
  __hpvm__bindIn(add, 3, 3, 0);
  __hpvm__bindIn(add, 4, 4, 0);
  __hpvm__bindIn(add, 5, 5, 0);
  __hpvm__bindOut(add, 0, 0, 0);
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? (size_t)atoi(argv[1]) : 1000;
  size_t bytes = n * sizeof(float);
  float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
  for (size_t i = 0; i < n; i++) {
    a[i] = (float)i;
    b[i] = 2.0f * (float)i + 1.0f;
    c[i] = 0.0f;
  }
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  args->a = a; args->bytes_a = bytes;
  args->b = b; args->bytes_b = bytes;
  args->c = c; args->bytes_c = bytes;
  llvm_hpvm_track_mem(a, bytes);
  llvm_hpvm_track_mem(b, bytes);
  llvm_hpvm_track_mem(c, bytes);
  void *graph = __hpvm__launch(0, root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(c, bytes);
  assert(args->out.bytes_c == bytes);
  int bad = 0;
  for (size_t i = 0; i < n; i++)
    if (c[i] != a[i] + b[i]) bad++;
  llvm_hpvm_untrack_mem(a);
  llvm_hpvm_untrack_mem(b);
  llvm_hpvm_untrack_mem(c);
  __hpvm__cleanup();
  printf("vector_add: %zu elements, %d wrong\n", n, bad);
  return bad != 0;
}
