/* The host of the block scan: n random ints, the graph's per-block exclusive scans and
   block totals, then the blocks' offsets added on the host (the second pass of a scan of
   any length), checked against std::exclusive_scan. Prints how many elements differ. */
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "hpvm.h"
#include "scan.h"

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000;
  long blocks = (n + ELEMS - 1) / ELEMS;
  std::vector<int> in(n), out(n, -1), sums(blocks, -1), want(n);
  srand(7);
  for (long i = 0; i < n; i++) in[i] = rand() % 21 - 10;
  std::exclusive_scan(in.begin(), in.end(), want.begin(), 0);
  __hpvm__init();
  ScanArgs *args = (ScanArgs *)malloc(sizeof(ScanArgs));
  *args = ScanArgs{in.data(),   in.size() * sizeof(int), out.data(), out.size() * sizeof(int),
                   sums.data(), sums.size() * sizeof(int), n,        ELEMS * sizeof(int)};
  llvm_hpvm_track_mem(in.data(), args->bytes_in);
  llvm_hpvm_track_mem(out.data(), args->bytes_out);
  llvm_hpvm_track_mem(sums.data(), args->bytes_sums);
  void *graph = __hpvm__launch(0, scan_root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(out.data(), args->bytes_out);
  llvm_hpvm_request_mem(sums.data(), args->bytes_sums);
  long wrong = 0;
  int offset = 0;
  for (long b = 0; b < blocks; b++) {
    for (long i = b * ELEMS; i < n && i < (b + 1) * ELEMS; i++)
      if (out[i] + offset != want[i]) wrong++;
    offset += sums[b];
  }
  llvm_hpvm_untrack_mem(in.data());
  llvm_hpvm_untrack_mem(out.data());
  llvm_hpvm_untrack_mem(sums.data());
  __hpvm__cleanup();
  free(args);
  printf("scan %ld: %ld blocks, %ld wrong\n", n, blocks, wrong);
  return wrong != 0;
}
