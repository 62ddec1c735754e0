/* The leaf of the two-file program (main.c has the root), and the expected values. */
#include "hpvm.h"
#include "kernels.h"
void scale_add(int *a, size_t bytes_a, int k) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, a, 1, a);
  long i = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  a[i] = a[i] * SCALE + k;
}
int expected(int i, int k) { return i * SCALE + k; }
