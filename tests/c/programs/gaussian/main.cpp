// Gaussian elimination's host, as Rodinia's gaussian driver ported to HPVM: the -s matrix
// (each entry 10 * exp(-0.01 * |i - j|), a right-hand side of ones) in std::vectors; one
// launch per column t, waiting at once — Rodinia's ForwardSub —; then the back substitution
// on the host. Then the same elimination on the host's own copies, every entry of the matrix
// and the right-hand side compared, and the solution's residual against the matrix as made.
// Usage: gaussian [size (64)]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gaussian.h"
#include "hpvm.h"

static void createMatrix(std::vector<float> &a, long size) {
  const float lamda = -0.01f;
  std::vector<float> coe(2 * size - 1);
  for (long i = 0; i < size; i++) {
    float coe_i = 10.0f * std::exp(lamda * (float)i);
    coe[size - 1 + i] = coe_i;
    coe[size - 1 - i] = coe_i;
  }
  for (long i = 0; i < size; i++)
    for (long j = 0; j < size; j++) a[i * size + j] = coe[size - 1 - i + j];
}

// Fan1 and Fan2 for one column, serially: the leaves' arithmetic in the same order.
static void eliminate(std::vector<float> &m, std::vector<float> &a, std::vector<float> &b, long size, long t) {
  for (long row = 0; row < size - 1 - t; row++)
    m[size * (row + t + 1) + t] = a[size * (row + t + 1) + t] / a[size * t + t];
  for (long x = 0; x < size - 1 - t; x++) {
    for (long y = 0; y < size - t; y++)
      a[size * (x + 1 + t) + (y + t)] -= m[size * (x + 1 + t) + t] * a[size * t + (y + t)];
    b[x + 1 + t] -= m[size * (x + 1 + t) + t] * b[t];
  }
}

static std::vector<float> backSub(const std::vector<float> &a, const std::vector<float> &b, long size) {
  std::vector<float> x(size);
  for (long i = 0; i < size; i++) {
    long row = size - 1 - i;
    x[row] = b[row];
    for (long j = 0; j < i; j++) x[row] -= a[size * row + (size - j - 1)] * x[size - j - 1];
    x[row] = x[row] / a[size * row + row];
  }
  return x;
}

int main(int argc, char **argv) {
  long size = argc > 1 ? std::stol(argv[1]) : 64;
  if (size < 1) {
    std::fprintf(stderr, "Usage: gaussian [size >= 1]\n");
    return 2;
  }
  std::vector<float> a(size * size), b(size, 1.0f), m(size * size, 0.0f);
  createMatrix(a, size);
  const std::vector<float> original(a);
  std::vector<float> wantA(a), wantB(b), wantM(m);
  size_t bytesA = a.size() * sizeof(float), bytesB = b.size() * sizeof(float);

  __hpvm__init();
  llvm_hpvm_track_mem(m.data(), bytesA);
  llvm_hpvm_track_mem(a.data(), bytesA);
  llvm_hpvm_track_mem(b.data(), bytesB);
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  long blocks = (size + BLOCK_SIZE_0 - 1) / BLOCK_SIZE_0, gridXY = (size + BLOCK_SIZE_XY - 1) / BLOCK_SIZE_XY;
  for (long t = 0; t < size - 1; t++) {
    *args = RootIn{m.data(), bytesA, a.data(), bytesA, b.data(), bytesB, size, t, blocks, gridXY};
    void *launch = __hpvm__launch(0, gaussianRoot, (void *)args);
    __hpvm__wait(launch);
  }
  llvm_hpvm_request_mem(a.data(), bytesA);
  llvm_hpvm_request_mem(b.data(), bytesB);
  llvm_hpvm_request_mem(m.data(), bytesA);
  std::vector<float> x = backSub(a, b, size);

  for (long t = 0; t < size - 1; t++) eliminate(wantM, wantA, wantB, size, t);
  long wrong = 0;
  for (long k = 0; k < size * size; k++) wrong += (a[k] != wantA[k]) + (m[k] != wantM[k]);
  for (long k = 0; k < size; k++) wrong += b[k] != wantB[k];
  double residual = 0.0, total = 0.0;
  for (long i = 0; i < size; i++) {
    double r = -1.0;
    for (long j = 0; j < size; j++) r += (double)original[i * size + j] * x[j];
    residual = std::fmax(residual, std::fabs(r));
    total += x[i];
  }
  llvm_hpvm_untrack_mem(m.data());
  llvm_hpvm_untrack_mem(a.data());
  llvm_hpvm_untrack_mem(b.data());
  free(args);
  __hpvm__cleanup();
  std::printf("gaussian %ld: sum of x %.9e, residual %.3e, %ld wrong\n", size, total, residual, wrong);
  return wrong != 0;
}
