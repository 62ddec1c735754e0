// The path finder's host, as Rodinia's driver ported to HPVM: a wall of step costs 0..9 from a
// fixed LCG in a std::vector, the first row as the starting costs; one __hpvm__launch and an
// immediate __hpvm__wait per row, the host swapping the two cost buffers in the argument struct
// between rows; then the same rows on the host, and the columns whose costs differ counted.
// Usage: pathfinder [cols (10000)] [rows (100)]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "hpvm.h"
#include "pathfinder.h"

static unsigned lcg(unsigned &state) {
  state = state * 1103515245u + 12345u;
  return (state >> 16) & 0x7fff;
}

int main(int argc, char **argv) {
  long cols = argc > 1 ? std::stol(argv[1]) : 10000;
  long rows = argc > 2 ? std::stol(argv[2]) : 100;
  if (cols < 1 || rows < 1) {
    std::fprintf(stderr, "Usage: pathfinder [cols >= 1] [rows >= 1]\n");
    return 2;
  }
  std::vector<int> wall(rows * cols);
  unsigned state = 9u;
  for (int &cost : wall) cost = lcg(state) % 10;
  std::vector<int> a(wall.begin(), wall.begin() + cols), b(cols, 0);
  size_t bytesRow = cols * sizeof(int), bytesWall = wall.size() * sizeof(int);
  long blocks = (cols + PATHFINDER_BLOCK - 1) / PATHFINDER_BLOCK;

  __hpvm__init();
  llvm_hpvm_track_mem(wall.data(), bytesWall);
  llvm_hpvm_track_mem(a.data(), bytesRow);
  llvm_hpvm_track_mem(b.data(), bytesRow);
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  int *src = a.data(), *dst = b.data();
  for (long row = 1; row < rows; row++) {
    *args = RootIn{wall.data(), bytesWall, src, bytesRow, dst, bytesRow, cols, row, blocks};
    void *launch = __hpvm__launch(0, pathRoot, (void *)args);
    __hpvm__wait(launch);
    std::swap(src, dst);
  }
  llvm_hpvm_request_mem(src, bytesRow);

  std::vector<int> want(wall.begin(), wall.begin() + cols), next(cols);
  for (long row = 1; row < rows; row++) {
    for (long c = 0; c < cols; c++) {
      int best = want[c];
      if (c > 0) best = std::min(best, want[c - 1]);
      if (c < cols - 1) best = std::min(best, want[c + 1]);
      next[c] = wall[row * cols + c] + best;
    }
    std::swap(want, next);
  }
  long wrong = 0;
  for (long c = 0; c < cols; c++) wrong += src[c] != want[c];
  int cheapest = *std::min_element(src, src + cols);
  llvm_hpvm_untrack_mem(wall.data());
  llvm_hpvm_untrack_mem(a.data());
  llvm_hpvm_untrack_mem(b.data());
  free(args);
  __hpvm__cleanup();
  std::printf("pathfinder %ldx%ld: cheapest %d, %ld wrong\n", rows, cols, cheapest, wrong);
  return wrong != 0;
}
