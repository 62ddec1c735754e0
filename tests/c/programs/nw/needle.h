// Needleman-Wunsch global alignment in the shape of Rodinia's nw, written for HPVM: the
// declarations shared by the graph (needle_kernel.cpp) and the host (main.cpp).
//
// The score matrix has (rows + 1) x (cols + 1) ints, row-major (its width, Rodinia's
// max_cols, is cols + 1); row 0 and column 0 hold the gap penalties of a prefix aligned
// against nothing. The reference matrix, of the same shape, holds each cell's substitution
// score (Rodinia's `referrence`). Cell (i, j) depends on (i-1, j-1), (i-1, j) and (i, j-1),
// so the cells of one anti-diagonal, i + j = diag, are independent: the host launches the
// graph once per anti-diagonal, each launch over that diagonal's cells.
#ifndef NEEDLE_H
#define NEEDLE_H

#include <cstddef>

#define BLOCK_SIZE 16  // leaf instances per block; a diagonal's last block is cut by the guard

struct RetTy {
  size_t bytesScore;  // the leaf's __hpvm__return, bound up to the root
};

typedef struct __attribute__((__packed__)) {
  int *score;         // 0
  size_t bytesScore;  // 1
  int *ref;           // 2
  size_t bytesRef;    // 3
  int penalty;        // 4
  long width;         // 5: cols + 1
  long diag;          // 6: i + j of this launch's cells
  long firstRow;      // 7: the row of the diagonal's first cell
  long cells;         // 8: the diagonal's length
  long blockSize;     // 9
  long blocks;        // 10: cells rounded up to whole blocks
  RetTy out;
} RootIn;

void needleRoot(int *score, size_t bytesScore, int *ref, size_t bytesRef, int penalty, long width, long diag,
                long firstRow, long cells, long blockSize, long blocks);

#endif
