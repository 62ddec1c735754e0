/* A leaf that is a static function (internal linkage): its clone keeps it (it crashed LLVM). */
#include "hpvm.h"
#include <stdlib.h>
#include <stdio.h>
typedef struct __attribute__((__packed__)) { float *a; size_t bytes_a; } RootIn;
static void leaf(float *a, size_t bytes_a) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, a, 1, a);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  a[i] = a[i] * 2;
  __hpvm__return(0);
}
void root(float *a, size_t bytes_a) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, a, 1, a);
  void *n = __hpvm__createNodeND(1, leaf, bytes_a / sizeof(float));
  __hpvm__bindIn(n, 0, 0, 0);
  __hpvm__bindIn(n, 1, 1, 0);
}
int main(void) {
  float a[8]; for (int i = 0; i < 8; i++) a[i] = i;
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn)); args->a = a; args->bytes_a = sizeof a;
  llvm_hpvm_track_mem(a, sizeof a);
  void *g = __hpvm__launch(0, root, args); __hpvm__wait(g);
  llvm_hpvm_request_mem(a, sizeof a);
  printf("%g %g\n", a[1], a[7]);
  __hpvm__cleanup();
  return a[7] != 14;
}
