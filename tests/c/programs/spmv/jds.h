// The host's sparse matrices: a random one in CSR form, and its JDS (jagged diagonal)
// form as Parboil's converter lays it out for the kernel (jds.cpp).
#ifndef JDS_H
#define JDS_H

#include <vector>

struct CsrMatrix {
  int rows = 0;
  std::vector<int> row_ptr, cols;
  std::vector<float> values;
};

struct JdsMatrix {
  int dim = 0, nonzeros = 0;
  std::vector<float> data;
  std::vector<int> indices, perm, jds_ptr, sh_zcnt;
};

// rows x rows, each row 0..max_row_length nonzeros (k / 64, k = 1..64) at random columns,
// drawn from a fixed LCG so that every platform (and the tests) gets the same matrix.
CsrMatrix random_csr(int rows, int max_row_length, unsigned seed);

// The rows sorted by length, longest first (ties in row order); diagonal k holds the k-th
// nonzero of every row of the warps that walk it (zeros for a row shorter than its warp's
// longest), sorted position by position.
JdsMatrix to_jds(const CsrMatrix &m);

// y = A * x row by row in CSR form: the host's own check of the graph's product.
void csr_spmv(const CsrMatrix &m, const std::vector<float> &x, std::vector<float> &y);

#endif
