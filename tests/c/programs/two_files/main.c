/* A program of two files (tests/c/test_c_files.py): the root and main here, the leaf in
   kernels.c, their declarations in include/kernels.h; -D SCALE=3 changes the leaf. */
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"
#include "kernels.h"
void root(int *a, size_t bytes_a, int k) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, a, 1, a);
  void *n = __hpvm__createNodeND(1, scale_add, bytes_a / sizeof(int));
  __hpvm__bindIn(n, 0, 0, 0);
  __hpvm__bindIn(n, 1, 1, 0);
  __hpvm__bindIn(n, 2, 2, 0);
}
int main(int argc, char **argv) {
  int k = argc > 1 ? atoi(argv[1]) : 0;
  int a[32];
  for (int i = 0; i < 32; i++) a[i] = i;
  __hpvm__init();
  llvm_hpvm_track_mem(a, sizeof a);
  RootIn in = {a, sizeof a, k};
  __hpvm__wait(__hpvm__launch(0, root, &in));
  llvm_hpvm_request_mem(a, sizeof a);
  llvm_hpvm_untrack_mem(a);
  __hpvm__cleanup();
  int bad = 0;
  for (int i = 0; i < 32; i++) bad += a[i] != expected(i, k);
  printf("scale %d, k %d: %d wrong\n", SCALE, k, bad);
  return bad != 0;
}
