/* sgemm as HPVM's Parboil port writes it: C = alpha * A * B + beta * C, the root
   replicating a wrapper over the grid of tiles (2-D), each wrapper instance creating an
   allocation node (__hpvm__malloc of the tile of A) and the compute leaf replicated over
   the tile, which loads the tile, meets at __hpvm__barrier, then multiplies.
   Row-major: A is m x k, B is k x n, C is m x n; m, n multiples of TILE. */
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"

#define TILE 8

typedef struct __attribute__((__packed__)) {
  float *a;
  size_t bytes_a;
  float *b;
  size_t bytes_b;
  float *c;
  size_t bytes_c;
  int m;
  int n;
  int k;
  float alpha;
  float beta;
  size_t bytes_tile;
} RootIn;

void allocate_tile(size_t bytes_tile) {
  __hpvm__hint(CPU_TARGET);
  void *tile = __hpvm__malloc(bytes_tile);
  __hpvm__return(2, tile, bytes_tile);
}

void sgemm_tile(float *a, size_t bytes_a, float *b, size_t bytes_b, float *c, size_t bytes_c, int m, int n,
                int k, float alpha, float beta, float *tile, size_t bytes_tile) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(3, a, b, tile, 2, c, tile);
  void *self = __hpvm__getNode();
  void *group = __hpvm__getParentNode(self);
  long tx = __hpvm__getNodeInstanceID_x(self), ty = __hpvm__getNodeInstanceID_y(self);
  long gx = __hpvm__getNodeInstanceID_x(group), gy = __hpvm__getNodeInstanceID_y(group);
  long row = gy * TILE + ty, col = gx * TILE + tx;
  float sum = 0.0f;
  for (int k0 = 0; k0 < k; k0 += TILE) {
    tile[ty * TILE + tx] = (k0 + tx < k) ? a[row * k + k0 + tx] : 0.0f;
    __hpvm__barrier();
    for (int kk = 0; kk < TILE && k0 + kk < k; kk++)
      sum += tile[ty * TILE + kk] * b[(long)(k0 + kk) * n + col];
    __hpvm__barrier();
  }
  c[row * n + col] = alpha * sum + beta * c[row * n + col];
}

void sgemm_group(float *a, size_t bytes_a, float *b, size_t bytes_b, float *c, size_t bytes_c, int m, int n,
                 int k, float alpha, float beta, size_t bytes_tile) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, a, b, 1, c);
  void *alloc = __hpvm__createNodeND(0, allocate_tile);
  void *mul = __hpvm__createNodeND(2, sgemm_tile, (long)TILE, (long)TILE);
  __hpvm__bindIn(alloc, 11, 0, 0);
  for (int p = 0; p < 11; p++)
    __hpvm__bindIn(mul, p, p, 0);
  __hpvm__edge(alloc, mul, 1, 0, 11, 0);
  __hpvm__edge(alloc, mul, 1, 1, 12, 0);
}

void sgemm_root(float *a, size_t bytes_a, float *b, size_t bytes_b, float *c, size_t bytes_c, int m, int n,
                int k, float alpha, float beta, size_t bytes_tile) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, a, b, 1, c);
  void *grid = __hpvm__createNodeND(2, sgemm_group, (long)(n / TILE), (long)(m / TILE));
  for (int p = 0; p < 12; p++)
    __hpvm__bindIn(grid, p, p, 0);
}

int main(int argc, char **argv) {
  int m = 32, n = 24, k = 20;
  if (argc > 3) {
    m = atoi(argv[1]);
    n = atoi(argv[2]);
    k = atoi(argv[3]);
  }
  size_t bytes_a = (size_t)m * k * sizeof(float), bytes_b = (size_t)k * n * sizeof(float);
  size_t bytes_c = (size_t)m * n * sizeof(float);
  float *a = malloc(bytes_a), *b = malloc(bytes_b), *c = malloc(bytes_c), *want = malloc(bytes_c);
  for (int i = 0; i < m * k; i++) a[i] = (float)((i * 7) % 11) - 5.0f;
  for (int i = 0; i < k * n; i++) b[i] = (float)((i * 3) % 13) - 6.0f;
  for (int i = 0; i < m * n; i++) c[i] = want[i] = (float)(i % 3);
  float alpha = 2.0f, beta = 0.5f;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float sum = 0.0f;
      for (int p = 0; p < k; p++) sum += a[i * k + p] * b[p * n + j];
      want[i * n + j] = alpha * sum + beta * want[i * n + j];
    }
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  *args = (RootIn){a, bytes_a, b, bytes_b, c, bytes_c, m, n, k, alpha, beta, TILE * TILE * sizeof(float)};
  llvm_hpvm_track_mem(a, bytes_a);
  llvm_hpvm_track_mem(b, bytes_b);
  llvm_hpvm_track_mem(c, bytes_c);
  void *graph = __hpvm__launch(0, sgemm_root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(c, bytes_c);
  int bad = 0;
  for (int i = 0; i < m * n; i++) {
    float d = c[i] - want[i];
    if (d > 1e-3f || d < -1e-3f) bad++;
  }
  llvm_hpvm_untrack_mem(a);
  llvm_hpvm_untrack_mem(b);
  llvm_hpvm_untrack_mem(c);
  __hpvm__cleanup();
  printf("sgemm %dx%dx%d: %d wrong\n", m, n, k, bad);
  return bad != 0;
}
