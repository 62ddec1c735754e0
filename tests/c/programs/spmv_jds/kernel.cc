// Sparse matrix-vector product in the JDS (jagged diagonal) format, as parboil's spmv is
// written for HPVM: a DEVICE leaf in the CUDA convention (one row per instance, x the only
// index, the row's global id from the group's and the instance's ids), replicated BLOCK
// times in a wrapper node, itself replicated over the groups by the root. A warp of 32
// rows walks the same number of diagonals (sh_zcnt_int), padded rows multiply zeros.
#include "hpvm.h"
#include "spmv.h"

void spmv_jds(float *dst_vector, size_t bytes_dst_vector, float *d_data, size_t bytes_d_data, int *d_index,
              size_t bytes_d_index, int *d_perm, size_t bytes_d_perm, float *x_vec, size_t bytes_x_vec, int dim,
              int *jds_ptr_int, size_t bytes_jds_ptr_int, int *sh_zcnt_int, size_t bytes_sh_zcnt_int) {
  __hpvm__hint(DEVICE);
  __hpvm__attributes(7, dst_vector, d_data, d_index, d_perm, x_vec, jds_ptr_int, sh_zcnt_int, 1, dst_vector);
  void *thisNode = __hpvm__getNode();
  void *parentNode = __hpvm__getParentNode(thisNode);
  int lx = __hpvm__getNodeInstanceID_x(thisNode);
  int gx = __hpvm__getNodeInstanceID_x(parentNode);
  int gridx = __hpvm__getNumNodeInstances_x(thisNode);
  int ix = gx * gridx + lx;
  int warp_id = ix >> WARP_BITS;
  if (ix < dim) {
    float sum = 0.0f;
    int bound = sh_zcnt_int[warp_id];
    for (int k = 0; k < bound; k++) {
      int j = jds_ptr_int[k] + ix;
      int in = d_index[j];
      float d = d_data[j];
      float t = x_vec[in];
      sum += d * t;
    }
    dst_vector[d_perm[ix]] = sum;
  }
}

void spmvLvl1(float *dst_vector, size_t bytes_dst_vector, float *d_data, size_t bytes_d_data, int *d_index,
              size_t bytes_d_index, int *d_perm, size_t bytes_d_perm, float *x_vec, size_t bytes_x_vec, int dim,
              int *jds_ptr_int, size_t bytes_jds_ptr_int, int *sh_zcnt_int, size_t bytes_sh_zcnt_int) {
  __hpvm__hint(DEVICE);
  __hpvm__attributes(7, dst_vector, d_data, d_index, d_perm, x_vec, jds_ptr_int, sh_zcnt_int, 1, dst_vector);
  void *spmv_node = __hpvm__createNodeND(1, spmv_jds, (size_t)BLOCK);
  for (int p = 0; p < 15; p++)
    __hpvm__bindIn(spmv_node, p, p, 0);
}

void spmvRoot(float *dst_vector, size_t bytes_dst_vector, float *d_data, size_t bytes_d_data, int *d_index,
              size_t bytes_d_index, int *d_perm, size_t bytes_d_perm, float *x_vec, size_t bytes_x_vec, int dim,
              int *jds_ptr_int, size_t bytes_jds_ptr_int, int *sh_zcnt_int, size_t bytes_sh_zcnt_int,
              size_t dim_X1) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(7, dst_vector, d_data, d_index, d_perm, x_vec, jds_ptr_int, sh_zcnt_int, 1, dst_vector);
  void *spmv_node = __hpvm__createNodeND(1, spmvLvl1, dim_X1);
  __hpvm__bindIn(spmv_node, 0, 0, 0);
  __hpvm__bindIn(spmv_node, 1, 1, 0);
  __hpvm__bindIn(spmv_node, 2, 2, 0);
  __hpvm__bindIn(spmv_node, 3, 3, 0);
  __hpvm__bindIn(spmv_node, 4, 4, 0);
  __hpvm__bindIn(spmv_node, 5, 5, 0);
  __hpvm__bindIn(spmv_node, 6, 6, 0);
  __hpvm__bindIn(spmv_node, 7, 7, 0);
  __hpvm__bindIn(spmv_node, 8, 8, 0);
  __hpvm__bindIn(spmv_node, 9, 9, 0);
  __hpvm__bindIn(spmv_node, 10, 10, 0);
  __hpvm__bindIn(spmv_node, 11, 11, 0);
  __hpvm__bindIn(spmv_node, 12, 12, 0);
  __hpvm__bindIn(spmv_node, 13, 13, 0);
  __hpvm__bindIn(spmv_node, 14, 14, 0);
}
