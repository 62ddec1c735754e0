// Gaussian elimination's shared declarations (Rodinia's gaussian), as HPVM's ports of
// Rodinia's CUDA benchmarks split them: the packed argument struct the host fills for each
// __hpvm__launch and the graph's root. One launch eliminates column t below the diagonal: Fan1
// finds each lower row's multiplier, Fan2 subtracts the multiple of row t from the row and from
// the right-hand side. The grids are Rodinia's: whole blocks covering the matrix whatever t is,
// each instance testing its own row and column against t (so t is no work).
#ifndef GAUSSIAN_H
#define GAUSSIAN_H

#include <cstddef>

#define BLOCK_SIZE_0 512  // Fan1's threads per block
#define BLOCK_SIZE_XY 4   // Fan2's block is 4 x 4

#ifndef FAN2_ROWS
#define FAN2_ROWS (size - 1 - t)  // the rows below t that Fan2 updates (tests: size - t)
#endif

typedef struct __attribute__((__packed__)) {
  float *m;       // 0: the multipliers, size x size (column t written by each launch)
  size_t bytesM;  // 1
  float *a;       // 2: the matrix, eliminated in place
  size_t bytesA;  // 3
  float *b;       // 4: the right-hand side
  size_t bytesB;  // 5
  long size;      // 6
  long t;         // 7: the column this launch eliminates
  long blocks;    // 8: Fan1's grid: ceil(size / BLOCK_SIZE_0)
  long gridXY;    // 9: Fan2's grid, both ways: ceil(size / BLOCK_SIZE_XY)
} RootIn;

void gaussianRoot(float *m, size_t bytesM, float *a, size_t bytesA, float *b, size_t bytesB, long size, long t,
                  long blocks, long gridXY);

#endif
