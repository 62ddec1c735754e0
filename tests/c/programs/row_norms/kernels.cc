// The two graphs of row_norms.h.
#include <hpvm.h>

#include "row_norms.h"

void allocate_scratch(size_t bytes_scratch) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void *scratch = __hpvm__malloc(bytes_scratch);
  __hpvm__return(2, scratch, bytes_scratch);
}

// Each instance sums the squares of its columns (lid, lid + BLOCK, ...) into the scratch;
// the rounds then halve the active instances; instance 0 writes the row's sum of squares.
void row_sum_of_squares(long *in, size_t bytes_in, long *norms, size_t bytes_norms, long cols, long *scratch,
                        size_t bytes_scratch) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, in, scratch, 2, norms, scratch);
  void *self = __hpvm__getNode();
  void *row_node = __hpvm__getParentNode(self);
  long lid = __hpvm__getNodeInstanceID_x(self);
  long size = __hpvm__getNumNodeInstances_x(self);
  long row = __hpvm__getNodeInstanceID_x(row_node);
  long sum = 0;
  for (long c = lid; c < cols; c += size) sum += in[row * cols + c] * in[row * cols + c];
  scratch[lid] = sum;
  __hpvm__barrier();
  for (long stride = size / 2; stride > 0; stride /= 2) {
    if (lid < stride) scratch[lid] += scratch[lid + stride];
    __hpvm__barrier();
  }
  if (lid == 0) norms[row] = scratch[0];
}

void row_group(long *in, size_t bytes_in, long *norms, size_t bytes_norms, long cols, size_t bytes_scratch) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 1, norms);
  void *alloc = __hpvm__createNodeND(0, allocate_scratch);
  void *reduce = __hpvm__createNodeND(1, row_sum_of_squares, (long)BLOCK);
  __hpvm__bindIn(alloc, 5, 0, 0);
  for (int p = 0; p < 5; p++) __hpvm__bindIn(reduce, p, p, 0);
  __hpvm__edge(alloc, reduce, 1, 0, 5, 0);
  __hpvm__edge(alloc, reduce, 1, 1, 6, 0);
}

void norms_root(long *in, size_t bytes_in, long *norms, size_t bytes_norms, long cols, size_t bytes_scratch) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 1, norms);
  long rows = (long)(bytes_norms / sizeof(long));
  void *grid = __hpvm__createNodeND(1, row_group, rows);
  for (int p = 0; p < 6; p++) __hpvm__bindIn(grid, p, p, 0);
}

// out[y][x] = in[y][x] * 100000 / (|row y|^2 + 1): x the column, the fastest index.
void scale(long *in, size_t bytes_in, long *norms, size_t bytes_norms, long *out, size_t bytes_out, long cols,
           long rows) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, in, norms, 1, out);
  void *self = __hpvm__getNode();
  long x = __hpvm__getNodeInstanceID_x(self);
  long y = __hpvm__getNodeInstanceID_y(self);
  if (x < cols && y < rows) out[y * cols + x] = in[y * cols + x] * 100000 / (norms[y] + 1);
}

void scale_root(long *in, size_t bytes_in, long *norms, size_t bytes_norms, long *out, size_t bytes_out,
                long cols, long rows) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, in, norms, 1, out);
  void *grid = __hpvm__createNodeND(2, scale, cols, rows);
  for (int p = 0; p < 8; p++) __hpvm__bindIn(grid, p, p, 0);
}
