// The SpMV program's shared declarations (parboil's spmv, HPVM version): the root's
// argument struct, the JDS layout's constants and the root node function main.cc launches.
#ifndef SPMV_H
#define SPMV_H

#include <cstddef>

#define WARP_BITS 5  // a "warp" of 32 rows shares one nonzero count (sh_zcnt_int)
#define BLOCK 64     // leaf instances per group

typedef struct __attribute__((__packed__)) {
  float *dst_vector;
  size_t bytes_dst_vector;
  float *d_data;
  size_t bytes_d_data;
  int *d_index;
  size_t bytes_d_index;
  int *d_perm;
  size_t bytes_d_perm;
  float *x_vec;
  size_t bytes_x_vec;
  int dim;
  int *jds_ptr_int;
  size_t bytes_jds_ptr_int;
  int *sh_zcnt_int;
  size_t bytes_sh_zcnt_int;
  size_t dim_X1;  // groups
} RootIn;

void spmvRoot(float *dst_vector, size_t bytes_dst_vector, float *d_data, size_t bytes_d_data, int *d_index,
              size_t bytes_d_index, int *d_perm, size_t bytes_d_perm, float *x_vec, size_t bytes_x_vec, int dim,
              int *jds_ptr_int, size_t bytes_jds_ptr_int, int *sh_zcnt_int, size_t bytes_sh_zcnt_int,
              size_t dim_X1);

#endif
