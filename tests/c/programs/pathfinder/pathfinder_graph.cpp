// The path finder's graph in the shape of HPVM's GPU-convention ports: a CPU root holding a
// block-level node replicated over the blocks, each replicating the leaf over a block's
// columns; the leaf finds its column from its block's id (__hpvm__getParentNode) and its own,
// and does its work under `if (c < cols)`: the cheapest of the three costs above it, clamped at
// the wall's edges, plus its own step.
#include <algorithm>

#include "hpvm.h"
#include "pathfinder.h"

void pathStep(int *wall, size_t bytesWall, int *src, size_t bytesSrc, int *dst, size_t bytesDst, long cols,
              long row) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, wall, src, 1, dst);
  void *self = __hpvm__getNode();
  void *block = __hpvm__getParentNode(self);
  long c = __hpvm__getNodeInstanceID_x(block) * PATHFINDER_BLOCK + __hpvm__getNodeInstanceID_x(self);
#if PATHFINDER_GUARD
  if (c < cols)
#endif
  {
    int best = src[c];  // @above
    if (c > 0) best = std::min(best, src[c - 1]);
    if (c < PATHFINDER_LAST) best = std::min(best, src[c + 1]);  // @right
    dst[c] = wall[row * cols + c] + best;
  }
}

void pathBlock(int *wall, size_t bytesWall, int *src, size_t bytesSrc, int *dst, size_t bytesDst, long cols,
               long row) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, wall, src, 1, dst);
  void *node = __hpvm__createNodeND(1, pathStep, (long)PATHFINDER_BLOCK);
  for (int p = 0; p < 8; p++) __hpvm__bindIn(node, p, p, 0);
}

void pathRoot(int *wall, size_t bytesWall, int *src, size_t bytesSrc, int *dst, size_t bytesDst, long cols,
              long row, long blocks) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, wall, src, 1, dst);
  void *node = __hpvm__createNodeND(1, pathBlock, blocks);
  for (int p = 0; p < 8; p++) __hpvm__bindIn(node, p, p, 0);
}
