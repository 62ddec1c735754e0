/* Blelloch's work-efficient exclusive scan of blocks (GPU Gems 3, chapter 39, "scan_best"),
   as HPVM's benchmarks write a shared-memory kernel: the root replicates a wrapper over the
   blocks (rounded up), each wrapper instance an allocation node (__hpvm__malloc of the
   block's 2 * BLOCK ints) and the block's leaf replicated BLOCK times. The leaf loads two
   elements (0 past the end), sweeps up the tree and down it with __hpvm__barrier between
   levels (loops the same for every instance, `if (tid < d)` inside), keeps the block's total
   and writes the exclusive prefix sums back under the bounds guard. -D DECLARE_SUMS=0 leaves
   the totals out of the leaf's outputs (the tests' mistake). */
#include "hpvm.h"
#include "scan.h"

#ifndef DECLARE_SUMS
#define DECLARE_SUMS 1
#endif

void tmp_alloc(size_t bytes_tmp) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void *tmp = __hpvm__malloc(bytes_tmp);
  __hpvm__return(2, tmp, bytes_tmp);
}

void scan_block(int *in, size_t bytes_in, int *out, size_t bytes_out, int *sums, size_t bytes_sums, long n,
                int *tmp, size_t bytes_tmp) {
  __hpvm__hint(hpvm::DEVICE);
#if DECLARE_SUMS
  __hpvm__attributes(2, in, tmp, 3, out, sums, tmp);
#else  // (the tests' mistake: the block totals written, not declared an output)
  __hpvm__attributes(2, in, tmp, 2, out, tmp);
#endif
  void *self = __hpvm__getNode();
  void *block = __hpvm__getParentNode(self);
  long tid = __hpvm__getNodeInstanceID_x(self), b = __hpvm__getNodeInstanceID_x(block);
  long base = b * ELEMS;
  tmp[2 * tid] = base + 2 * tid < n ? in[base + 2 * tid] : 0;
  tmp[2 * tid + 1] = base + 2 * tid + 1 < n ? in[base + 2 * tid + 1] : 0;
  int offset = 1;
  for (int d = ELEMS >> 1; d > 0; d >>= 1) {  // up-sweep: partial sums in place
    __hpvm__barrier();
    if (tid < d) {
      int ai = offset * (2 * tid + 1) - 1, bi = offset * (2 * tid + 2) - 1;
      tmp[bi] += tmp[ai];
    }
    offset *= 2;
  }
  if (tid == 0) {  // the block's total, then the root of the down-sweep
    sums[b] = tmp[ELEMS - 1];  // @total
    tmp[ELEMS - 1] = 0;
  }
  for (int d = 1; d < ELEMS; d *= 2) {  // down-sweep
    offset >>= 1;
    __hpvm__barrier();
    if (tid < d) {
      int ai = offset * (2 * tid + 1) - 1, bi = offset * (2 * tid + 2) - 1;
      int t = tmp[ai];
      tmp[ai] = tmp[bi];
      tmp[bi] += t;
    }
  }
  __hpvm__barrier();
  if (base + 2 * tid < n) out[base + 2 * tid] = tmp[2 * tid];
  if (base + 2 * tid + 1 < n) out[base + 2 * tid + 1] = tmp[2 * tid + 1];
}

void scan_group(int *in, size_t bytes_in, int *out, size_t bytes_out, int *sums, size_t bytes_sums, long n,
                size_t bytes_tmp) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 2, out, sums);
  void *alloc = __hpvm__createNodeND(0, tmp_alloc);
  void *scan = __hpvm__createNodeND(1, scan_block, (long)BLOCK);
  __hpvm__bindIn(alloc, 7, 0, 0);
  for (int p = 0; p < 7; p++) __hpvm__bindIn(scan, p, p, 0);
  __hpvm__edge(alloc, scan, 1, 0, 7, 0);
  __hpvm__edge(alloc, scan, 1, 1, 8, 0);
}

void scan_root(int *in, size_t bytes_in, int *out, size_t bytes_out, int *sums, size_t bytes_sums, long n,
               size_t bytes_tmp) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 2, out, sums);
  void *grid = __hpvm__createNodeND(1, scan_group, (n + ELEMS - 1) / ELEMS);
  for (int p = 0; p < 8; p++) __hpvm__bindIn(grid, p, p, 0);
}
