/* Replication sizes past the arrays (tests/c/test_c_bounds.py): `shift` reads a[i + 1] and
   writes b[i] in every instance, so n instances need n + 1 elements of a and n of b; the
   bounds pre-check refuses more before the node runs. `clamp` tests its id first: any
   number of instances is legal (it runs after shift: b's size comes over an edge). main: argv[1] = n, argv[2] = the instances of clamp. */
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"
#define LEN 8
typedef struct __attribute__((__packed__)) {
  float *a; size_t bytes_a; float *b; size_t bytes_b; long n; long m;
} RootIn;
void shift(float *a, size_t bytes_a, float *b, size_t bytes_b) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, a, b, 1, b);
  void *self = __hpvm__getNode();
  int i = __hpvm__getNodeInstanceID_x(self);
  b[i] = a[i + 1] * 2;  // @shift
  __hpvm__return(1, bytes_b);
}
void clamp(float *b, size_t bytes_b) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, b, 1, b);
  long i = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  if (i < (long)(bytes_b / sizeof(float)) && b[i] > 10) b[i] = 10;
  __hpvm__return(0);
}
void root(float *a, size_t bytes_a, float *b, size_t bytes_b, long n, long m) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, a, b, 1, b);
  void *step = __hpvm__createNodeND(1, shift, n);  // @node
  __hpvm__bindIn(step, 0, 0, 0);
  __hpvm__bindIn(step, 1, 1, 0);
  __hpvm__bindIn(step, 2, 2, 0);
  __hpvm__bindIn(step, 3, 3, 0);
  void *cut = __hpvm__createNodeND(1, clamp, m);
  __hpvm__bindIn(cut, 2, 0, 0);
  __hpvm__edge(step, cut, 1, 0, 1, 0);  /* b's size, from the last shift: clamp runs after */
}
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : LEN, m = argc > 2 ? atol(argv[2]) : LEN;
  float *a = malloc((LEN + 1) * sizeof(float)), *b = malloc(LEN * sizeof(float));
  for (int i = 0; i <= LEN; i++) a[i] = i;
  for (int i = 0; i < LEN; i++) b[i] = -1;
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  args->a = a; args->bytes_a = (LEN + 1) * sizeof(float);
  args->b = b; args->bytes_b = LEN * sizeof(float);
  args->n = n; args->m = m;
  llvm_hpvm_track_mem(a, (LEN + 1) * sizeof(float));
  llvm_hpvm_track_mem(b, LEN * sizeof(float));
  void *g = __hpvm__launch(0, root, args);
  __hpvm__wait(g);
  llvm_hpvm_request_mem(b, LEN * sizeof(float));
  for (int i = 0; i < LEN; i++) printf("%g ", b[i]);
  printf("\n");
  __hpvm__cleanup();
  return 0;
}
