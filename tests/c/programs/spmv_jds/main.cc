// The host of the JDS SpMV program: a random sparse matrix in CSR form (rows of different
// lengths, a fixed seed), converted to JDS as parboil's converter does (rows sorted by
// length, longest first, padded to a warp's longest row; one "jagged diagonal" per nonzero
// position), launched, and checked against the CSR product row by row.
// Usage: spmv [rows [max_row_length]]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "hpvm.h"
#include "spmv.h"

struct Csr {
  int rows;
  std::vector<int> ptr, col;
  std::vector<float> val;
};

struct Jds {
  std::vector<float> data;
  std::vector<int> index, perm, jds_ptr, sh_zcnt;
};

static Csr random_matrix(int rows, int max_len, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> length(0, max_len), column(0, rows - 1);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  Csr m{rows, {0}, {}, {}};
  for (int r = 0; r < rows; r++) {
    int n = length(gen);
    for (int k = 0; k < n; k++) {
      m.col.push_back(column(gen));
      m.val.push_back(value(gen));
    }
    m.ptr.push_back((int)m.col.size());
  }
  return m;
}

static Jds to_jds(const Csr &m) {
  int padded = (m.rows + 31) / 32 * 32;
  auto len = [&](int r) { return r < m.rows ? m.ptr[r + 1] - m.ptr[r] : 0; };
  Jds j;
  j.perm.resize(padded);
  std::iota(j.perm.begin(), j.perm.end(), 0);
  std::stable_sort(j.perm.begin(), j.perm.end(), [&](int a, int b) { return len(a) > len(b); });
  int warps = padded / 32;
  for (int w = 0; w < warps; w++) j.sh_zcnt.push_back(len(j.perm[w * 32]));  // sorted: the first is the longest
  int diagonals = warps ? j.sh_zcnt[0] : 0;
  for (int k = 0; k < diagonals; k++) {
    j.jds_ptr.push_back((int)j.data.size());
    for (int i = 0; i < padded; i++) {
      int r = j.perm[i];
      bool has = k < len(r);
      j.data.push_back(has ? m.val[m.ptr[r] + k] : 0.0f);
      j.index.push_back(has ? m.col[m.ptr[r] + k] : 0);
    }
  }
  if (j.jds_ptr.empty()) j.jds_ptr.push_back(0);
  if (j.data.empty()) {
    j.data.push_back(0.0f);
    j.index.push_back(0);
  }
  return j;
}

int main(int argc, char **argv) {
  int rows = argc > 1 ? atoi(argv[1]) : 1000;
  int max_len = argc > 2 ? atoi(argv[2]) : 12;
  Csr m = random_matrix(rows, max_len, 2026);
  Jds j = to_jds(m);
  int padded = (int)j.perm.size();
  std::vector<float> x(rows), y(padded, NAN);
  for (int i = 0; i < rows; i++) x[i] = std::sin(0.01f * (float)i);

  __hpvm__init();
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  *args = RootIn{y.data(), y.size() * sizeof(float), j.data.data(), j.data.size() * sizeof(float),
                 j.index.data(), j.index.size() * sizeof(int), j.perm.data(), j.perm.size() * sizeof(int),
                 x.data(), x.size() * sizeof(float), padded, j.jds_ptr.data(), j.jds_ptr.size() * sizeof(int),
                 j.sh_zcnt.data(), j.sh_zcnt.size() * sizeof(int), (size_t)((padded + BLOCK - 1) / BLOCK)};
  llvm_hpvm_track_mem(y.data(), y.size() * sizeof(float));
  llvm_hpvm_track_mem(j.data.data(), j.data.size() * sizeof(float));
  llvm_hpvm_track_mem(j.index.data(), j.index.size() * sizeof(int));
  llvm_hpvm_track_mem(j.perm.data(), j.perm.size() * sizeof(int));
  llvm_hpvm_track_mem(x.data(), x.size() * sizeof(float));
  llvm_hpvm_track_mem(j.jds_ptr.data(), j.jds_ptr.size() * sizeof(int));
  llvm_hpvm_track_mem(j.sh_zcnt.data(), j.sh_zcnt.size() * sizeof(int));
  void *dfg = __hpvm__launch(0, spmvRoot, (void *)args);
  __hpvm__wait(dfg);
  llvm_hpvm_request_mem(y.data(), y.size() * sizeof(float));
  for (void *p : {(void *)y.data(), (void *)j.data.data(), (void *)j.index.data(), (void *)j.perm.data(),
                  (void *)x.data(), (void *)j.jds_ptr.data(), (void *)j.sh_zcnt.data()})
    llvm_hpvm_untrack_mem(p);
  __hpvm__cleanup();
  free(args);

  int bad = 0;
  for (int r = 0; r < rows; r++) {
    float want = 0.0f;
    for (int k = m.ptr[r]; k < m.ptr[r + 1]; k++) want += m.val[k] * x[m.col[k]];
    if (std::fabs(y[r] - want) > 1e-5f * (1.0f + std::fabs(want))) bad++;
  }
  for (int r = rows; r < padded; r++)
    if (y[r] != 0.0f) bad++;  // padding rows multiply nothing
  std::printf("spmv %d rows, %zu nonzeros: %d wrong\n", rows, m.val.size(), bad);
  return bad != 0;
}
