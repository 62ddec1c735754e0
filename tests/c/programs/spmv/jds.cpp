// The host's matrices (jds.h): a random CSR matrix, its JDS form, and the CSR product the
// host checks every launch against.
#include "jds.h"

#include <algorithm>
#include <numeric>

#include "spmv.h"  // (WARP_SIZE: the kernel's warps)

static unsigned next(unsigned &seed) {
  seed = seed * 1103515245u + 12345u;
  return seed >> 16;
}

CsrMatrix random_csr(int rows, int max_row_length, unsigned seed) {
  CsrMatrix m;
  m.rows = rows;
  m.row_ptr.push_back(0);
  for (int r = 0; r < rows; r++) {
    int length = (int)(next(seed) % (unsigned)(max_row_length + 1));
    for (int k = 0; k < length; k++) {
      m.cols.push_back((int)(next(seed) % (unsigned)rows));
      m.values.push_back((float)(1 + next(seed) % 64) / 64.0f);
    }
    m.row_ptr.push_back((int)m.cols.size());
  }
  return m;
}

JdsMatrix to_jds(const CsrMatrix &m) {
  JdsMatrix j;
  j.dim = m.rows;
  j.nonzeros = (int)m.values.size();
  auto length = [&](int r) { return m.row_ptr[r + 1] - m.row_ptr[r]; };
  j.perm.resize(m.rows);
  std::iota(j.perm.begin(), j.perm.end(), 0);
  std::stable_sort(j.perm.begin(), j.perm.end(), [&](int a, int b) { return length(a) > length(b); });
  int warps = (m.rows + WARP_SIZE - 1) / WARP_SIZE;
  for (int w = 0; w < warps; w++) j.sh_zcnt.push_back(length(j.perm[w * WARP_SIZE]));
  int diagonals = warps > 0 ? j.sh_zcnt[0] : 0;
  for (int k = 0; k < diagonals; k++) {
    // the warps that walk diagonal k (a prefix: their counts fall), cut at the last row
    int walking = 0;
    while (walking < warps && j.sh_zcnt[walking] > k) walking++;
    int rows = std::min(walking * WARP_SIZE, m.rows);
    j.jds_ptr.push_back((int)j.data.size());
    for (int i = 0; i < rows; i++) {
      int r = j.perm[i];
      bool has = k < length(r);
      j.data.push_back(has ? m.values[m.row_ptr[r] + k] : 0.0f);
      j.indices.push_back(has ? m.cols[m.row_ptr[r] + k] : 0);
    }
  }
  if (j.data.empty()) {  // (no nonzeros: one slot each, so that there is memory to track)
    j.data.push_back(0.0f);
    j.indices.push_back(0);
  }
  if (j.jds_ptr.empty()) j.jds_ptr.push_back(0);
  if (j.sh_zcnt.empty()) j.sh_zcnt.push_back(0);
  return j;
}

void csr_spmv(const CsrMatrix &m, const std::vector<float> &x, std::vector<float> &y) {
  for (int r = 0; r < m.rows; r++) {
    float sum = 0.0f;
    for (int k = m.row_ptr[r]; k < m.row_ptr[r + 1]; k++) sum += m.values[k] * x[m.cols[k]];
    y[r] = sum;
  }
}
