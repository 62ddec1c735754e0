/* A block reduction written as HPVM's C benchmarks write barrier code: the root replicates a
   wrapper over the blocks (1-D), each wrapper instance creates an allocation node
   (__hpvm__malloc of the block's scratch, as HPVM's local memory) and the reduction leaf
   replicated over the block, which loads its element, then halves the active instances
   round after round with __hpvm__barrier between rounds (a loop whose trip count is the
   block size's log2: the same for every instance), and instance 0 writes the block's sum.
   main checks every block sum and the total against a plain loop. */
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"

#define BLOCK 64

typedef struct __attribute__((__packed__)) {
  float *in;
  size_t bytes_in;
  float *sums;
  size_t bytes_sums;
  long n;
  size_t bytes_scratch;
} RootIn;

void allocate_scratch(size_t bytes_scratch) {
  __hpvm__hint(CPU_TARGET);
  void *scratch = __hpvm__malloc(bytes_scratch);
  __hpvm__return(2, scratch, bytes_scratch);
}

void reduce_block(float *in, size_t bytes_in, float *sums, size_t bytes_sums, long n, float *scratch,
                  size_t bytes_scratch) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, in, scratch, 2, sums, scratch);
  void *self = __hpvm__getNode();
  void *block = __hpvm__getParentNode(self);
  long lid = __hpvm__getNodeInstanceID_x(self);
  long size = __hpvm__getNumNodeInstances_x(self);
  long gid = __hpvm__getNodeInstanceID_x(block) * size + lid;
  scratch[lid] = gid < n ? in[gid] : 0.0f;
  __hpvm__barrier();
  for (long stride = size / 2; stride > 0; stride /= 2) {
    if (lid < stride)
      scratch[lid] += scratch[lid + stride];
    __hpvm__barrier();
  }
  if (lid == 0)
    sums[__hpvm__getNodeInstanceID_x(block)] = scratch[0];
}

void reduce_group(float *in, size_t bytes_in, float *sums, size_t bytes_sums, long n, size_t bytes_scratch) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, in, 1, sums);
  void *alloc = __hpvm__createNodeND(0, allocate_scratch);
  void *red = __hpvm__createNodeND(1, reduce_block, (long)BLOCK);
  __hpvm__bindIn(alloc, 5, 0, 0);
  for (int p = 0; p < 5; p++)
    __hpvm__bindIn(red, p, p, 0);
  __hpvm__edge(alloc, red, 1, 0, 5, 0);
  __hpvm__edge(alloc, red, 1, 1, 6, 0);
}

void reduce_root(float *in, size_t bytes_in, float *sums, size_t bytes_sums, long n, size_t bytes_scratch) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, in, 1, sums);
  void *grid = __hpvm__createNodeND(1, reduce_group, (n + BLOCK - 1) / BLOCK);
  for (int p = 0; p < 6; p++)
    __hpvm__bindIn(grid, p, p, 0);
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000;
  long blocks = (n + BLOCK - 1) / BLOCK;
  size_t bytes_in = (size_t)n * sizeof(float), bytes_sums = (size_t)blocks * sizeof(float);
  float *in = malloc(bytes_in), *sums = malloc(bytes_sums);
  for (long i = 0; i < n; i++) in[i] = (float)(i % 7) - 3.0f;
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  *args = (RootIn){in, bytes_in, sums, bytes_sums, n, BLOCK * sizeof(float)};
  llvm_hpvm_track_mem(in, bytes_in);
  llvm_hpvm_track_mem(sums, bytes_sums);
  void *graph = __hpvm__launch(0, reduce_root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(sums, bytes_sums);
  int bad = 0;
  float total = 0.0f, want_total = 0.0f;
  for (long b = 0; b < blocks; b++) {
    float want = 0.0f;
    for (long i = b * BLOCK; i < n && i < (b + 1) * BLOCK; i++) want += in[i];
    if (sums[b] != want) bad++;
    total += sums[b];
    want_total += want;
  }
  llvm_hpvm_untrack_mem(in);
  llvm_hpvm_untrack_mem(sums);
  __hpvm__cleanup();
  printf("block reduce %ld: %ld blocks, total %g (want %g), %d wrong\n", n, blocks, total, want_total, bad);
  return bad != 0;
}
