// Parboil's SpMV (y = A * x, A in JDS form) as HPVM's ports of Parboil write it: what the
// graph (spmv_graph.cpp) and the host (main.cpp) share — the root's argument struct, packed,
// a size_t byte count after each pointer, and the constants of the layout.
#ifndef SPMV_H
#define SPMV_H

#include <cstddef>

#define WARP_BITS 5              // rows are counted in warps of 32 (sh_zcnt: one count a warp)
#define WARP_SIZE (1 << WARP_BITS)
#define BLOCK_SIZE 64            // leaf instances per group: rows past dim in the last group

typedef struct __attribute__((__packed__)) {
  float *dst_vector;         // 0: y, written in the matrix's own row order (through perm)
  size_t bytes_dst_vector;   // 1
  float *data;               // 2: the nonzeros, one jagged diagonal after the other
  size_t bytes_data;         // 3
  int *indices;              // 4: each nonzero's column
  size_t bytes_indices;      // 5
  int *perm;                 // 6: the row of each sorted position
  size_t bytes_perm;         // 7
  float *x_vec;              // 8: x, read through indices
  size_t bytes_x_vec;        // 9
  int dim;                   // 10: the rows
  int *jds_ptr;              // 11: where each jagged diagonal starts in data
  size_t bytes_jds_ptr;      // 12
  int *sh_zcnt;              // 13: the diagonals each warp walks (its longest row's length)
  size_t bytes_sh_zcnt;      // 14
  size_t groups;             // 15: dim rounded up to whole groups of BLOCK_SIZE
} RootIn;

void spmvRoot(float *dst_vector, size_t bytes_dst_vector, float *data, size_t bytes_data, int *indices,
              size_t bytes_indices, int *perm, size_t bytes_perm, float *x_vec, size_t bytes_x_vec, int dim,
              int *jds_ptr, size_t bytes_jds_ptr, int *sh_zcnt, size_t bytes_sh_zcnt, size_t groups);

#endif
