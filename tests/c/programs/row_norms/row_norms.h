// Rows scaled by their norms, written as HPVM's C++ benchmarks write a kernel with local
// memory: a per-row block reduction (an allocation node for the block's scratch, the
// reduction leaf replicated over BLOCK instances with __hpvm__barrier between its rounds)
// in one graph, a 2-D scaling leaf in the GPU convention (x the column, the fastest index)
// in another, and a C++ host (std::vector) launching both for every frame and checking
// each against the plain loops. Integers throughout: every result is exact.
#ifndef ROW_NORMS_H
#define ROW_NORMS_H

#include <cstddef>

#define BLOCK 32  // instances of the reduction leaf per row

typedef struct __attribute__((__packed__)) {
  long *in;
  size_t bytes_in;
  long *norms;
  size_t bytes_norms;
  long cols;
  size_t bytes_scratch;
} NormsIn;

typedef struct __attribute__((__packed__)) {
  long *in;
  size_t bytes_in;
  long *norms;
  size_t bytes_norms;
  long *out;
  size_t bytes_out;
  long cols;
  long rows;
} ScaleIn;

void norms_root(long *in, size_t bytes_in, long *norms, size_t bytes_norms, long cols, size_t bytes_scratch);
void scale_root(long *in, size_t bytes_in, long *norms, size_t bytes_norms, long *out, size_t bytes_out,
                long cols, long rows);

#endif
