// Two vector kernels under one wrapper node, as HPVM's C benchmarks write a device kernel
// pair: the root launches a single-instance hpvm::DEVICE wrapper, whose two 1-D leaves run
// side by side over the same n instances (no edge between them: they write different
// arrays), each guarded by `if (i < n)` on a grid rounded up to whole blocks of 64. saxpy
// writes y = alpha * x + y, squares writes z = x * x. A C++ host with std::vector computes
// the same in float and counts the elements that differ.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "hpvm.h"

typedef struct __attribute__((__packed__)) {
  float *x;
  size_t bytesx;
  float *y;
  size_t bytesy;
  float *z;
  size_t bytesz;
  float alpha;
  long n;
  long grid;
} RootIn;

void saxpy(float *x, size_t bytesx, float *y, size_t bytesy, float alpha, long n) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(2, x, y, 1, y);
  void *thisNode = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(thisNode);
  if (i < n) y[i] = alpha * x[i] + y[i];
}

void squares(float *x, size_t bytesx, float *z, size_t bytesz, long n) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(1, x, 1, z);
  void *thisNode = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(thisNode);
  if (i < n) z[i] = x[i] * x[i];
}

void kernels(float *x, size_t bytesx, float *y, size_t bytesy, float *z, size_t bytesz, float alpha, long n,
             long grid) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(3, x, y, z, 2, y, z);
  void *s = __hpvm__createNodeND(1, saxpy, grid);
  __hpvm__bindIn(s, 0, 0, 0);
  __hpvm__bindIn(s, 1, 1, 0);
  __hpvm__bindIn(s, 2, 2, 0);
  __hpvm__bindIn(s, 3, 3, 0);
  __hpvm__bindIn(s, 6, 4, 0);
  __hpvm__bindIn(s, 7, 5, 0);
  void *q = __hpvm__createNodeND(1, squares, grid);
  __hpvm__bindIn(q, 0, 0, 0);
  __hpvm__bindIn(q, 1, 1, 0);
  __hpvm__bindIn(q, 4, 2, 0);
  __hpvm__bindIn(q, 5, 3, 0);
  __hpvm__bindIn(q, 7, 4, 0);
}

void root(float *x, size_t bytesx, float *y, size_t bytesy, float *z, size_t bytesz, float alpha, long n,
          long grid) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, x, y, z, 2, y, z);
  void *wrapper = __hpvm__createNodeND(0, kernels);
  for (int p = 0; p < 9; p++) __hpvm__bindIn(wrapper, p, p, 0);
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000;
  long grid = (n + 63) / 64 * 64;  // whole blocks of 64
  float alpha = 1.5f;
  std::vector<float> x(n), y(n), z(n, -1.0f), y0(n);
  for (long k = 0; k < n; k++) {
    x[k] = (float)((k * 29 + 3) % 101) / 7.0f;
    y[k] = y0[k] = (float)((k * 13 + 5) % 97) / 3.0f;
  }
  size_t bytes = n * sizeof(float);
  __hpvm__init();
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  *args = RootIn{x.data(), bytes, y.data(), bytes, z.data(), bytes, alpha, n, grid};
  llvm_hpvm_track_mem(x.data(), bytes);
  llvm_hpvm_track_mem(y.data(), bytes);
  llvm_hpvm_track_mem(z.data(), bytes);
  void *graph = __hpvm__launch(0, root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(y.data(), bytes);
  llvm_hpvm_request_mem(z.data(), bytes);
  int bad = 0;
  for (long k = 0; k < n; k++) {
    float want = alpha * x[k] + y0[k];
    if (y[k] != want || z[k] != x[k] * x[k]) bad++;
  }
  llvm_hpvm_untrack_mem(x.data());
  llvm_hpvm_untrack_mem(y.data());
  llvm_hpvm_untrack_mem(z.data());
  __hpvm__cleanup();
  free(args);
  std::printf("saxpy and squares, n=%ld: %d wrong\n", n, bad);
  return bad != 0;
}
