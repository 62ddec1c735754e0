// Gaussian elimination's graph as HPVM's ports of Rodinia's CUDA kernels write one: a CPU root
// with a node per kernel, each a grid node whose instances are the CUDA blocks replicating a
// leaf whose instances are the block's threads. A thread finds its global index from its
// parent's id and its own, as blockIdx.x * blockDim.x + threadIdx.x, and returns early past
// the rows (and columns) it covers. In Fan2, x is the row and y the column — Rodinia's choice,
// not the fastest index. Fan1's grid hands Fan2's its multipliers' size over an all-to-all
// edge: Fan2 starts after every multiplier is written.
#include "hpvm.h"
#include "gaussian.h"

void fan1(float *m, size_t bytesM, float *a, size_t bytesA, long size, long t) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(2, m, a, 1, m);
  void *thread = __hpvm__getNode(), *block = __hpvm__getParentNode(thread);
  long bx = __hpvm__getNodeInstanceID_x(block), tx = __hpvm__getNodeInstanceID_x(thread);
  long row = bx * __hpvm__getNumNodeInstances_x(thread) + tx;
  if (row < size - 1 - t) m[size * (row + t + 1) + t] = a[size * (row + t + 1) + t] / a[size * t + t];
  __hpvm__return(1, bytesM);
}

void fan1Grid(float *m, size_t bytesM, float *a, size_t bytesA, long size, long t) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(2, m, a, 1, m);
  void *threads = __hpvm__createNodeND(1, fan1, (long)BLOCK_SIZE_0);
  for (int p = 0; p < 6; p++) __hpvm__bindIn(threads, p, p, 0);
  __hpvm__bindOut(threads, 0, 0, 0);
}

void fan2(float *m, size_t bytesM, float *a, size_t bytesA, float *b, size_t bytesB, long size, long t) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(3, m, a, b, 2, a, b);
  void *thread = __hpvm__getNode(), *block = __hpvm__getParentNode(thread);
  long xidx = __hpvm__getNodeInstanceID_x(block) * __hpvm__getNumNodeInstances_x(thread) +
              __hpvm__getNodeInstanceID_x(thread);
  long yidx = __hpvm__getNodeInstanceID_y(block) * __hpvm__getNumNodeInstances_y(thread) +
              __hpvm__getNodeInstanceID_y(thread);
  if (xidx >= FAN2_ROWS) return;
  if (yidx >= size - t) return;
  a[size * (xidx + 1 + t) + (yidx + t)] -= m[size * (xidx + 1 + t) + t] * a[size * t + (yidx + t)];  // @fan2
  if (yidx == 0) b[xidx + 1 + t] -= m[size * (xidx + 1 + t) + (yidx + t)] * b[t];
}

void fan2Grid(float *m, size_t bytesM, float *a, size_t bytesA, float *b, size_t bytesB, long size, long t) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(3, m, a, b, 2, a, b);
  void *threads = __hpvm__createNodeND(2, fan2, (long)BLOCK_SIZE_XY, (long)BLOCK_SIZE_XY);
  for (int p = 0; p < 8; p++) __hpvm__bindIn(threads, p, p, 0);
}

void gaussianRoot(float *m, size_t bytesM, float *a, size_t bytesA, float *b, size_t bytesB, long size, long t,
                  long blocks, long gridXY) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, m, a, b, 3, m, a, b);
  void *first = __hpvm__createNodeND(1, fan1Grid, blocks);
  void *second = __hpvm__createNodeND(2, fan2Grid, gridXY, gridXY);
  __hpvm__bindIn(first, 0, 0, 0);  // m
  __hpvm__bindIn(first, 1, 1, 0);  // bytesM
  __hpvm__bindIn(first, 2, 2, 0);  // a
  __hpvm__bindIn(first, 3, 3, 0);  // bytesA
  __hpvm__bindIn(first, 6, 4, 0);  // size
  __hpvm__bindIn(first, 7, 5, 0);  // t
  __hpvm__bindIn(second, 0, 0, 0);  // m (its size over the edge below)
  for (int p = 2; p < 8; p++) __hpvm__bindIn(second, p, p, 0);
  __hpvm__edge(first, second, 1, 0, 1, 0);  // bytesM: after every multiplier
}
