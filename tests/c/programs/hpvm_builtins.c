/* HPVM's builtins beyond seed 000's list (hpvm/include/hpvm.h): float math, the atomics
 * cmpxchg, umin and umax, and __hpvm__node_id (a tuner's annotation). main checks the
 * results against libm and plain C; it returns the number of wrong values. */
#include "hpvm.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 16

typedef struct __attribute__((__packed__)) {
  float *x; size_t bytes_x;
  float *y; size_t bytes_y;
  int *counts; size_t bytes_counts;
} RootIn;

void builtins(float *x, size_t bytes_x, float *y, size_t bytes_y, int *counts, size_t bytes_counts) {
  __hpvm__node_id(1);
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, x, counts, 2, y, counts);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  float v = x[i];
  y[5 * i + 0] = __hpvm__sqrt(v);
  y[5 * i + 1] = __hpvm__rsqrt(v);
  y[5 * i + 2] = __hpvm__floor(v);
  y[5 * i + 3] = __hpvm__sin(v);
  y[5 * i + 4] = __hpvm__cos(v);
  __hpvm__atomic_umax(&counts[0], (int)i - 8); /* as unsigned: -1 is the largest */
  __hpvm__atomic_umin(&counts[1], (int)i + 3);
  __hpvm__atomic_cmpxchg(&counts[2], 0, 7); /* only the first succeeds; the rest see 7 */
  __hpvm__return(0);
}

void root(float *x, size_t bytes_x, float *y, size_t bytes_y, int *counts, size_t bytes_counts) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, x, counts, 2, y, counts);
  void *n = __hpvm__createNodeND(1, builtins, bytes_x / sizeof(float));
  for (int k = 0; k < 6; k++)
    __hpvm__bindIn(n, k, k, 0);
}

int main(void) {
  float x[N], y[5 * N];
  int counts[3] = {0, 1000, 0};
  for (int i = 0; i < N; i++) x[i] = 0.25f + 1.5f * i;
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  args->x = x; args->bytes_x = sizeof x;
  args->y = y; args->bytes_y = sizeof y;
  args->counts = counts; args->bytes_counts = sizeof counts;
  llvm_hpvm_track_mem(x, sizeof x);
  llvm_hpvm_track_mem(y, sizeof y);
  llvm_hpvm_track_mem(counts, sizeof counts);
  __hpvm__wait(__hpvm__launch(0, root, args));
  llvm_hpvm_request_mem(y, sizeof y);
  llvm_hpvm_request_mem(counts, sizeof counts);
  int wrong = 0;
  for (int i = 0; i < N; i++) {
    float want[5] = {sqrtf(x[i]), 1.0f / sqrtf(x[i]), floorf(x[i]), sinf(x[i]), cosf(x[i])};
    for (int k = 0; k < 5; k++)
      wrong += fabsf(y[5 * i + k] - want[k]) > 1e-5f * (1.0f + fabsf(want[k]));
  }
  wrong += counts[0] != -1; /* unsigned max of i - 8 over 0..15: (unsigned)-1 */
  wrong += counts[1] != 3;
  wrong += counts[2] != 7;
  printf("builtins: %d wrong\n", wrong);
  __hpvm__cleanup();
  free(args);
  return wrong;
}
