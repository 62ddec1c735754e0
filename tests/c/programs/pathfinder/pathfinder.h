// The path finder's shared declarations, as HPVM's ports of Rodinia's CUDA benchmarks split
// them: the packed argument struct the host fills for __hpvm__launch, the graph's root, and the
// block size both sides use. The grid is a rows x cols wall of step costs; a path goes down one
// row at a time to the same column or a neighbour, and each launch advances the cheapest costs
// by one row.
#ifndef PATHFINDER_H
#define PATHFINDER_H

#include <cstddef>

#define PATHFINDER_BLOCK 256  // instances per block: the leaf's grid is cols rounded up to whole blocks

#ifndef PATHFINDER_GUARD
#define PATHFINDER_GUARD 1  // 0: the leaf forgets `if (c < cols)` (a case of the tests)
#endif
#ifndef PATHFINDER_LAST
#define PATHFINDER_LAST (cols - 1)  // the right neighbour is read while c < this (tests: cols)
#endif

typedef struct __attribute__((__packed__)) {
  int *wall;          // 0: rows x cols step costs, row-major
  size_t bytesWall;   // 1
  int *src;           // 2: the cheapest cost to reach each column of the row before
  size_t bytesSrc;    // 3
  int *dst;           // 4: the same for this row
  size_t bytesDst;    // 5
  long cols;          // 6
  long row;           // 7: the row this launch adds
  long blocks;        // 8: cols rounded up to whole blocks, in blocks
} RootIn;

void pathRoot(int *wall, size_t bytesWall, int *src, size_t bytesSrc, int *dst, size_t bytesDst, long cols,
              long row, long blocks);

#endif
