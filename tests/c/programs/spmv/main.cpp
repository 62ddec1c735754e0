// The host of the SpMV program, as Parboil's driver runs its kernel: the matrix built once
// (a random sparse matrix, converted to JDS), every array tracked once, then the graph
// launched once per iteration over the same tracked memory and the same argument struct.
// Parboil repeats y = A * x; here each iteration's x is the last y scaled to a largest
// element of 1 (the power method: lambda tends to A's largest eigenvalue), written into
// x's tracked memory after requesting it back, so that every launch computes something new.
// The host checks each launch's y against its own CSR product.
// Usage: spmv rows [max_row_length [iterations]]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "hpvm.h"
#include "jds.h"
#include "spmv.h"

static int usage() {
  std::fprintf(stderr, "Usage: spmv rows [max_row_length [iterations]]\n"
                       "rows: the matrix's rows and columns (at least 1)\n"
                       "max_row_length: a row's most nonzeros (8)\n"
                       "iterations: the launches, one y = A * x each (50)\n");
  return 1;
}

template <typename T> static void print_all(const char *name, const std::vector<T> &v, const char *format) {
  std::printf("%s:", name);
  for (const T &e : v) std::printf(format, e);
  std::printf("\n");
}

template <typename T> static size_t bytes(const std::vector<T> &v) { return v.size() * sizeof(T); }

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) return usage();
  int rows = std::atoi(argv[1]);
  int max_row_length = argc > 2 ? std::atoi(argv[2]) : 8;
  int iterations = argc > 3 ? std::atoi(argv[3]) : 50;
  if (rows < 1 || max_row_length < 0 || iterations < 1) return usage();

  CsrMatrix csr = random_csr(rows, max_row_length, 1517u);
  JdsMatrix jds = to_jds(csr);
  std::printf("spmv %d rows, %d nonzeros, %zu diagonals\n", jds.dim, jds.nonzeros,
              jds.nonzeros > 0 ? jds.jds_ptr.size() : (size_t)0);
  print_all("sh_zcnt", jds.sh_zcnt, " %d");
  print_all("jds_ptr", jds.jds_ptr, " %d");
  print_all("perm", jds.perm, " %d");

  std::vector<float> x(rows, 1.0f), y(rows, NAN), want(rows);
  size_t groups = (size_t)((rows + BLOCK_SIZE - 1) / BLOCK_SIZE);

  __hpvm__init();
  llvm_hpvm_track_mem(y.data(), bytes(y));
  llvm_hpvm_track_mem(jds.data.data(), bytes(jds.data));
  llvm_hpvm_track_mem(jds.indices.data(), bytes(jds.indices));
  llvm_hpvm_track_mem(jds.perm.data(), bytes(jds.perm));
  llvm_hpvm_track_mem(x.data(), bytes(x));
  llvm_hpvm_track_mem(jds.jds_ptr.data(), bytes(jds.jds_ptr));
  llvm_hpvm_track_mem(jds.sh_zcnt.data(), bytes(jds.sh_zcnt));
  RootIn *args = (RootIn *)std::malloc(sizeof(RootIn));
  *args = RootIn{y.data(), bytes(y), jds.data.data(), bytes(jds.data), jds.indices.data(), bytes(jds.indices),
                 jds.perm.data(), bytes(jds.perm), x.data(), bytes(x), jds.dim, jds.jds_ptr.data(),
                 bytes(jds.jds_ptr), jds.sh_zcnt.data(), bytes(jds.sh_zcnt), groups};

  int wrong = 0;
  double seconds = 0.0;
  for (int it = 0; it < iterations; it++) {
    auto start = std::chrono::steady_clock::now();
    void *spmvDFG = __hpvm__launch(0, spmvRoot, (void *)args);
    __hpvm__wait(spmvDFG);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    llvm_hpvm_request_mem(y.data(), bytes(y));
    llvm_hpvm_request_mem(x.data(), bytes(x));
    csr_spmv(csr, x, want);
    int bad = 0;
    float lambda = 0.0f;
    for (int r = 0; r < rows; r++) {
      if (!(std::fabs(y[r] - want[r]) <= 1e-5f * (1.0f + std::fabs(want[r])))) bad++;
      if (y[r] > lambda) lambda = y[r];
    }
    wrong += bad;
    std::printf("iteration %d: lambda %.9g, %d wrong\n", it, lambda, bad);
    float scale = lambda > 0.0f ? lambda : 1.0f;  // (no nonzeros: x stays as it is)
    for (int r = 0; r < rows; r++) x[r] = y[r] / scale;
  }
  print_all("y", y, " %.9g");

  for (void *p : {(void *)y.data(), (void *)jds.data.data(), (void *)jds.indices.data(), (void *)jds.perm.data(),
                  (void *)x.data(), (void *)jds.jds_ptr.data(), (void *)jds.sh_zcnt.data()})
    llvm_hpvm_untrack_mem(p);
  std::free(args);
  __hpvm__cleanup();
  std::printf("%d launches: %d wrong\n", iterations, wrong);
  std::printf("time: %.3f ms\n", seconds * 1e3);
  return wrong != 0;
}
