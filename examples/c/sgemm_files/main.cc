/* Dense matrix multiplication in HPVM-C, in two files as Parboil's sgemm is written:
   main.cc (the graph and the host code), io.cc (reading and writing matrix files with
   C++ streams), a header in include/.

     C = alpha * A * B^T + beta * C, column-major: A is m x k, B^T is n x k, C is m x n.

   The root replicates a wrapper node over a grid of TILE x TILE blocks (2-D); each
   wrapper replicates the leaf over its block (2-D), one instance per element of C.
   main reads A and B^T (argv[1], argv[2]), runs the graph, checks C against the same
   product computed by a loop here, writes C to argv[3] if given, and returns 1 if any
   element differs. m and n must be multiples of TILE (-D TILE=... to change it). */
#include <hpvm.h>

#include <cmath>
#include <iostream>
#include <vector>

#include "matrix_io.h"

#ifndef TILE
#define TILE 4
#endif

typedef struct __attribute__((__packed__)) {
  float *A;
  size_t bytes_A;
  int lda;
  float *B;
  size_t bytes_B;
  int ldb;
  float *C;
  size_t bytes_C;
  int ldc;
  int k;
  float alpha;
  float beta;
  size_t dim_X1, dim_Y1, dim_X2, dim_Y2;
} RootIn;

void sgemmNT(float *A, size_t bytes_A, int lda, float *B, size_t bytes_B, int ldb, float *C, size_t bytes_C,
             int ldc, int k, float alpha, float beta) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, A, B, C, 1, C);
  void *self = __hpvm__getNode();
  void *block = __hpvm__getParentNode(self);
  long row = __hpvm__getNodeInstanceID_x(block) * __hpvm__getNumNodeInstances_x(self) +
             __hpvm__getNodeInstanceID_x(self);
  long col = __hpvm__getNodeInstanceID_y(block) * __hpvm__getNumNodeInstances_y(self) +
             __hpvm__getNodeInstanceID_y(self);
  float sum = 0.0f;
  for (int i = 0; i < k; ++i) sum += A[row + i * lda] * B[col + i * ldb];
  C[row + col * ldc] = C[row + col * ldc] * beta + alpha * sum;
}

void sgemmBlock(float *A, size_t bytes_A, int lda, float *B, size_t bytes_B, int ldb, float *C, size_t bytes_C,
                int ldc, int k, float alpha, float beta, size_t dim_X1, size_t dim_Y1) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, A, B, C, 1, C);
  void *leaf = __hpvm__createNodeND(2, sgemmNT, dim_X1, dim_Y1);
  for (int p = 0; p < 12; ++p) __hpvm__bindIn(leaf, p, p, 0);
}

void sgemmRoot(float *A, size_t bytes_A, int lda, float *B, size_t bytes_B, int ldb, float *C, size_t bytes_C,
               int ldc, int k, float alpha, float beta, size_t dim_X1, size_t dim_Y1, size_t dim_X2,
               size_t dim_Y2) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, A, B, C, 1, C);
  void *blocks = __hpvm__createNodeND(2, sgemmBlock, dim_X2, dim_Y2);
  for (int p = 0; p < 14; ++p) __hpvm__bindIn(blocks, p, p, 0);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " A.txt Bt.txt [C.txt]" << std::endl;
    return 2;
  }
  int m, k, n, kb;
  std::vector<float> a, bt;
  if (!readColMajorMatrixFile(argv[1], m, k, a) || !readColMajorMatrixFile(argv[2], n, kb, bt)) return 2;
  if (kb != k || m % TILE != 0 || n % TILE != 0) {
    std::cerr << "A is " << m << "x" << k << ", B^T " << n << "x" << kb << ": the inner sizes must match and m, n "
              << "be multiples of " << TILE << std::endl;
    return 2;
  }
  const float alpha = 1.5f, beta = 0.5f;
  std::vector<float> c(static_cast<size_t>(m) * n), want(c.size());
  for (size_t i = 0; i < c.size(); ++i) c[i] = want[i] = static_cast<float>(i % 7);

  __hpvm__init();
  RootIn *args = new RootIn;
  args->A = a.data();
  args->bytes_A = a.size() * sizeof(float);
  args->lda = m;
  args->B = bt.data();
  args->bytes_B = bt.size() * sizeof(float);
  args->ldb = n;
  args->C = c.data();
  args->bytes_C = c.size() * sizeof(float);
  args->ldc = m;
  args->k = k;
  args->alpha = alpha;
  args->beta = beta;
  args->dim_X1 = TILE;
  args->dim_Y1 = TILE;
  args->dim_X2 = m / TILE;
  args->dim_Y2 = n / TILE;
  llvm_hpvm_track_mem(args->A, args->bytes_A);
  llvm_hpvm_track_mem(args->B, args->bytes_B);
  llvm_hpvm_track_mem(args->C, args->bytes_C);
  void *graph = __hpvm__launch(0, sgemmRoot, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(args->C, args->bytes_C);
  llvm_hpvm_untrack_mem(args->A);
  llvm_hpvm_untrack_mem(args->B);
  llvm_hpvm_untrack_mem(args->C);
  __hpvm__cleanup();
  delete args;

  int bad = 0;
  for (int col = 0; col < n; ++col)
    for (int row = 0; row < m; ++row) {
      float sum = 0.0f;
      for (int i = 0; i < k; ++i) sum += a[row + i * m] * bt[col + i * n];
      float expect = want[row + col * m] * beta + alpha * sum;
      if (std::fabs(c[row + col * m] - expect) > 1e-4f * (1.0f + std::fabs(expect))) ++bad;
    }
  if (argc > 3 && !writeColMajorMatrixFile(argv[3], m, n, c)) {
    std::cerr << "cannot write " << argv[3] << std::endl;
    return 2;
  }
  std::cout << "sgemm_files " << m << "x" << n << "x" << k << ": " << bad << " wrong" << std::endl;
  return bad != 0;
}
