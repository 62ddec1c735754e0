// The SpMV graph as HPVM's Parboil port writes it: a DEVICE leaf in the CUDA convention
// (one row of the sorted matrix per instance, its place from its group's id and its own),
// a wrapper replicating it over a group of BLOCK_SIZE, and the root replicating the
// wrapper over the groups. The last group runs past the last row, so the leaf tests its
// place first. Each instance walks its warp's jagged diagonals, reads x through the
// column indices, and writes its sum to the row it came from (perm).
#include "hpvm.h"
#include "spmv.h"

void spmv_jds(float *dst_vector, size_t bytes_dst_vector, float *data, size_t bytes_data, int *indices,
              size_t bytes_indices, int *perm, size_t bytes_perm, float *x_vec, size_t bytes_x_vec, int dim,
              int *jds_ptr, size_t bytes_jds_ptr, int *sh_zcnt, size_t bytes_sh_zcnt) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(7, dst_vector, data, indices, perm, x_vec, jds_ptr, sh_zcnt, 1, dst_vector);
  void *thisNode = __hpvm__getNode();
  void *parentNode = __hpvm__getParentNode(thisNode);
  int lx = __hpvm__getNodeInstanceID_x(thisNode);
  int gx = __hpvm__getNodeInstanceID_x(parentNode);
  int gridx = __hpvm__getNumNodeInstances_x(thisNode);
  int ix = gx * gridx + lx;  // the row's place in the sorted matrix
#ifdef SPMV_FORGET_GUARD
  {  // (a test's mistake: the last group's instances past dim run on)
#else
  if (ix < dim) {  // @guard
#endif
    int bound = sh_zcnt[ix >> WARP_BITS];
    float sum = 0.0f;
    for (int k = 0; k < bound; k++) {
      int j = jds_ptr[k] + ix;  // the row's slot in diagonal k
      sum += data[j] * x_vec[indices[j]];
    }
    dst_vector[perm[ix]] = sum;  // @store
  }
}

// One group of rows: the leaf replicated BLOCK_SIZE times.
void spmvLvl1(float *dst_vector, size_t bytes_dst_vector, float *data, size_t bytes_data, int *indices,
              size_t bytes_indices, int *perm, size_t bytes_perm, float *x_vec, size_t bytes_x_vec, int dim,
              int *jds_ptr, size_t bytes_jds_ptr, int *sh_zcnt, size_t bytes_sh_zcnt) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(7, dst_vector, data, indices, perm, x_vec, jds_ptr, sh_zcnt, 1, dst_vector);
  void *rowNode = __hpvm__createNodeND(1, spmv_jds, (size_t)BLOCK_SIZE);
  for (int p = 0; p < 15; p++)
    __hpvm__bindIn(rowNode, p, p, 0);
}

// The root: the groups.
void spmvRoot(float *dst_vector, size_t bytes_dst_vector, float *data, size_t bytes_data, int *indices,
              size_t bytes_indices, int *perm, size_t bytes_perm, float *x_vec, size_t bytes_x_vec, int dim,
              int *jds_ptr, size_t bytes_jds_ptr, int *sh_zcnt, size_t bytes_sh_zcnt, size_t groups) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(7, dst_vector, data, indices, perm, x_vec, jds_ptr, sh_zcnt, 1, dst_vector);
  void *groupNode = __hpvm__createNodeND(1, spmvLvl1, groups);
  for (int p = 0; p < 15; p++)
    __hpvm__bindIn(groupNode, p, p, 0);
}
