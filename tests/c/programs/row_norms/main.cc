// The host: `row_norms ROWS COLS FRAMES`; every frame's norms and scaled rows checked against
// the plain loops; exit status 0 when all are right.
#include <hpvm.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "row_norms.h"

int main(int argc, char **argv) {
  long rows = argc > 1 ? std::atol(argv[1]) : 5;
  long cols = argc > 2 ? std::atol(argv[2]) : 70;
  int frames = argc > 3 ? std::atoi(argv[3]) : 3;
  std::vector<long> in(rows * cols), norms(rows), out(rows * cols);
  size_t bytes_in = in.size() * sizeof(long), bytes_norms = norms.size() * sizeof(long);
  __hpvm__init();
  llvm_hpvm_track_mem(in.data(), bytes_in);
  llvm_hpvm_track_mem(norms.data(), bytes_norms);
  llvm_hpvm_track_mem(out.data(), bytes_in);
  int wrong = 0;
  long checksum = 0;
  for (int f = 0; f < frames; f++) {
    for (long i = 0; i < rows * cols; i++) in[i] = (i * 7 + f * 13) % 23 - 11;
    NormsIn *n = (NormsIn *)std::malloc(sizeof(NormsIn));
    *n = NormsIn{in.data(), bytes_in, norms.data(), bytes_norms, cols, BLOCK * sizeof(long)};
    void *graph = __hpvm__launch(0, norms_root, (void *)n);
    __hpvm__wait(graph);
    ScaleIn *s = (ScaleIn *)std::malloc(sizeof(ScaleIn));
    *s = ScaleIn{in.data(), bytes_in, norms.data(), bytes_norms, out.data(), bytes_in, cols, rows};
    graph = __hpvm__launch(0, scale_root, (void *)s);
    __hpvm__wait(graph);
    llvm_hpvm_request_mem(norms.data(), bytes_norms);
    llvm_hpvm_request_mem(out.data(), bytes_in);
    for (long y = 0; y < rows; y++) {
      long want = 0;
      for (long x = 0; x < cols; x++) want += in[y * cols + x] * in[y * cols + x];
      wrong += norms[y] != want;
      for (long x = 0; x < cols; x++) {
        wrong += out[y * cols + x] != in[y * cols + x] * 100000 / (want + 1);
        checksum += out[y * cols + x];
      }
    }
    std::free(n);
    std::free(s);
  }
  llvm_hpvm_untrack_mem(in.data());
  llvm_hpvm_untrack_mem(norms.data());
  llvm_hpvm_untrack_mem(out.data());
  __hpvm__cleanup();
  std::printf("row_norms %ldx%ld, %d frames: checksum %ld, %d wrong\n", rows, cols, frames, checksum, wrong);
  return wrong != 0;
}
