/* A leaf that writes an array its __hpvm__attributes list as an input only: `scale`
   multiplies `a` in place but declares it `__hpvm__attributes(1, a, 1, b)`. A back end that
   copies back only a leaf's outputs would lose the write; checked code and the interpreter
   refuse it, naming the line. -D DECLARED=1 declares it an output too, and the program runs.
   -D VIA=1 writes through memset (an intrinsic's write), -D VIA=2 through an atomic. */
#include <string.h>

#include "hpvm.h"

#ifndef DECLARED
#define DECLARED 0
#endif
#ifndef VIA
#define VIA 0
#endif

void scale(float *a, size_t bytes_a, float *b, size_t bytes_b, int *count, size_t bytes_count) {
  __hpvm__hint(CPU_TARGET);
#if DECLARED
  __hpvm__attributes(2, a, count, 3, a, b, count);
#else
  __hpvm__attributes(2, a, count, 1, b);
#endif
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  b[i] = 2.0f * a[i];
#if VIA == 1
  if (i == 0) memset(a, 0, bytes_a);  // @memset
#elif VIA == 2
  __hpvm__atomic_add(count, 1);  // @atomic
#else
  a[i] = b[i];  // @store
#endif
}

void root(float *a, size_t bytes_a, float *b, size_t bytes_b, int *count, size_t bytes_count, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, a, count, 3, a, b, count);
  void *s = __hpvm__createNodeND(1, scale, n);
  for (int p = 0; p < 6; p++) __hpvm__bindIn(s, p, p, 0);
}

int main(void) { return 0; }
