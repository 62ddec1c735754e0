// An integer matrix product over a fixed 4 x 4 grid of tiles, as HPVM's C benchmarks write a
// blocked kernel: the grid's shape is a #define, each tile leaf computes its block of C in
// i-k-j order with bounds clipped to the matrix, and the host launches the graph once per
// product of a short sequence (C = A B, then A C, ...), checking every product against
// the plain triple loop in a std::vector.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "hpvm.h"

#define TILES 4

typedef struct __attribute__((__packed__)) {
  int *a;
  size_t bytesa;
  int *b;
  size_t bytesb;
  int *c;
  size_t bytesc;
  long n;
} RootIn;

void tile(int *a, size_t bytesa, int *b, size_t bytesb, int *c, size_t bytesc, long n) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, a, b, 1, c);
  void *thisNode = __hpvm__getNode();
  long tx = __hpvm__getNodeInstanceID_x(thisNode);
  long ty = __hpvm__getNodeInstanceID_y(thisNode);
  long rows = (n + TILES - 1) / TILES;
  long i_end = (tx + 1) * rows < n ? (tx + 1) * rows : n;
  long j_end = (ty + 1) * rows < n ? (ty + 1) * rows : n;
  for (long i = tx * rows; i < i_end; i++) {
    for (long j = ty * rows; j < j_end; j++) c[i * n + j] = 0;
    for (long k = 0; k < n; k++) {
      int aik = a[i * n + k];
      for (long j = ty * rows; j < j_end; j++) c[i * n + j] += aik * b[k * n + j];
    }
  }
}

void root(int *a, size_t bytesa, int *b, size_t bytesb, int *c, size_t bytesc, long n) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, a, b, 1, c);
  void *t = __hpvm__createNodeND(2, tile, TILES, TILES);
  for (int p = 0; p < 7; p++) __hpvm__bindIn(t, p, p, 0);
}

static std::vector<int> product(const std::vector<int> &a, const std::vector<int> &b, long n) {
  std::vector<int> c(n * n, 0);
  for (long i = 0; i < n; i++)
    for (long k = 0; k < n; k++)
      for (long j = 0; j < n; j++) c[i * n + j] += a[i * n + k] * b[k * n + j];
  return c;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 30;
  int steps = argc > 2 ? atoi(argv[2]) : 3;
  std::vector<int> a(n * n), b(n * n), c(n * n);
  for (long k = 0; k < n * n; k++) {
    a[k] = (int)((k * 7 + 3) % 5) - 2;
    b[k] = (int)((k * 11 + 1) % 7) - 3;
  }
  size_t bytes = n * n * sizeof(int);
  __hpvm__init();
  llvm_hpvm_track_mem(a.data(), bytes);
  llvm_hpvm_track_mem(b.data(), bytes);
  llvm_hpvm_track_mem(c.data(), bytes);
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  int bad = 0;
  std::vector<int> want = b;
  for (int s = 0; s < steps; s++) {
    want = product(a, want, n);
    *args = RootIn{a.data(), bytes, b.data(), bytes, c.data(), bytes, n};
    void *graph = __hpvm__launch(0, root, (void *)args);
    __hpvm__wait(graph);
    llvm_hpvm_request_mem(c.data(), bytes);
    for (long k = 0; k < n * n; k++) bad += c[k] != want[k];
    b = c;  // the next product multiplies this one
    llvm_hpvm_untrack_mem(b.data());
    llvm_hpvm_track_mem(b.data(), bytes);
  }
  llvm_hpvm_untrack_mem(a.data());
  llvm_hpvm_untrack_mem(b.data());
  llvm_hpvm_untrack_mem(c.data());
  __hpvm__cleanup();
  free(args);
  std::printf("tile matmul n=%ld, %d products: %d wrong\n", n, steps, bad);
  return bad != 0;
}
