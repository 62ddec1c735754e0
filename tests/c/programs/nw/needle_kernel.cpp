// The graph of one anti-diagonal step, as HPVM's ports of CUDA kernels write one: a DEVICE
// leaf in the CUDA convention (its place along the diagonal from its block's id and its own),
// a wrapper replicating it over a block, a wrapper replicating that over the diagonal's
// blocks, and the root creating the grid node once. The last block runs past the diagonal's
// end, so the leaf tests its place first, as Rodinia's kernels test theirs.
#include "hpvm.h"
#include "needle.h"

static int maximum(int a, int b, int c) {
  int k = a > b ? a : b;
  return k > c ? k : c;
}

void needle_cell(int *score, size_t bytesScore, int *ref, size_t bytesRef, int penalty, long width, long diag,
                 long firstRow, long cells) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(2, score, ref, 1, score);
  void *thisNode = __hpvm__getNode();
  void *parentNode = __hpvm__getParentNode(thisNode);
  long tx = __hpvm__getNodeInstanceID_x(thisNode);
  long bx = __hpvm__getNodeInstanceID_x(parentNode);
  long bdim = __hpvm__getNumNodeInstances_x(thisNode);
  long k = bx * bdim + tx;  // the cell's place along the diagonal
  if (k < cells) {  // @guard
    long i = firstRow + k;  // its row; its column is diag - i
    long here = i * width + (diag - i);
    score[here] = maximum(score[here - width - 1] + ref[here],  // @cell
                          score[here - width] - penalty,        // (from above: a gap)
                          score[here - 1] - penalty);           // (from the left: a gap)
  }
  __hpvm__return(1, bytesScore);
}

// One block: the leaf replicated over blockSize instances.
void needleLvl1(int *score, size_t bytesScore, int *ref, size_t bytesRef, int penalty, long width, long diag,
                long firstRow, long cells, long blockSize) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(2, score, ref, 1, score);
  void *cellNode = __hpvm__createNodeND(1, needle_cell, blockSize);
  for (int p = 0; p < 9; p++)
    __hpvm__bindIn(cellNode, p, p, 0);
  __hpvm__bindOut(cellNode, 0, 0, 0);
}

// The diagonal's blocks.
void needleLvl2(int *score, size_t bytesScore, int *ref, size_t bytesRef, int penalty, long width, long diag,
                long firstRow, long cells, long blockSize, long blocks) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, score, ref, 1, score);
  void *blockNode = __hpvm__createNodeND(1, needleLvl1, blocks);
  for (int p = 0; p < 10; p++)
    __hpvm__bindIn(blockNode, p, p, 0);
  __hpvm__bindOut(blockNode, 0, 0, 0);
}

// The root: the grid node once, not replicated.
void needleRoot(int *score, size_t bytesScore, int *ref, size_t bytesRef, int penalty, long width, long diag,
                long firstRow, long cells, long blockSize, long blocks) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, score, ref, 1, score);
  void *gridNode = __hpvm__createNodeND(0, needleLvl2);
  for (int p = 0; p < 11; p++)
    __hpvm__bindIn(gridNode, p, p, 0);
  __hpvm__bindOut(gridNode, 0, 0, 0);
}
