/* Barrier leaves whose scratch buffer (an allocation node's, made once per chunk of blocks on
   cpu: backends/cpu/scratch.py) must be zero-filled for every block, because the leaf does not
   overwrite its own element on every path before its first barrier (ir/scratch.py's LLVM
   rule refuses them), and one whose buffer needs no zero-fill (`covered`).
   Each root is block_reduce.c's block reduction (64 floats a block, a tree of barrier rounds)
   with another first step (`covered`: a store on each arm of a branch); every one computes the exact block sums, given a zero-filled
   buffer. A buffer left as the previous block left it gives wrong sums in `half` and
   `accumulate`. */
#include <stdlib.h>
#include "hpvm.h"

#define BLOCK 64
#define ALONG(i) ((i) < n ? in[(i)] : 0.0f)

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

/* The tree of rounds after the first barrier, and instance 0's block sum. */
#define TREE(lid, size, block)                                       \
  __hpvm__barrier();                                                 \
  for (long stride = (size) / 2; stride > 0; stride /= 2) {          \
    if ((lid) < stride)                                              \
      scratch[(lid)] += scratch[(lid) + stride];                     \
    __hpvm__barrier();                                               \
  }                                                                  \
  if ((lid) == 0)                                                    \
    sums[__hpvm__getNodeInstanceID_x(block)] = scratch[0];

#define HEAD                                                         \
  __hpvm__hint(CPU_TARGET);                                          \
  __hpvm__attributes(2, in, scratch, 2, sums, scratch);              \
  void *self = __hpvm__getNode();                                    \
  void *block = __hpvm__getParentNode(self);                         \
  long lid = __hpvm__getNodeInstanceID_x(self);                      \
  long size = __hpvm__getNumNodeInstances_x(self);                   \
  long gid = __hpvm__getNodeInstanceID_x(block) * size + lid;

#define LEAF(name) \
  void name(float *in, size_t bytes_in, float *sums, size_t bytes_sums, long n, float *scratch, size_t bytes_scratch)

/* Covers: every instance stores its element, on both arms of a branch. */
LEAF(covered_leaf) {
  HEAD
  if (gid < n)
    scratch[lid] = in[gid];
  else
    scratch[lid] = 0.0f;
  TREE(lid, size, block)
}

/* Only the upper half stores (two elements each): the lower half, where the rounds add,
   must read as zeros. */
LEAF(half_leaf) {
  HEAD
  if (lid >= size / 2)
    scratch[lid] = ALONG(gid) + ALONG(gid - size / 2);
  TREE(lid, size, block)
}

/* Every element is stored, but not each instance's own: the rule does not follow it. */
LEAF(shifted_leaf) {
  HEAD
  scratch[(lid + 1) % size] = ALONG(gid - lid + (lid + 1) % size);
  TREE(lid, size, block)
}

/* Reads its element before the store: it must find zero. */
LEAF(accumulate_leaf) {
  HEAD
  scratch[lid] += ALONG(gid);
  TREE(lid, size, block)
}

/* A return before the barrier (never taken: n is not negative). */
LEAF(returns_leaf) {
  HEAD
  if (n < 0)
    return;
  scratch[lid] = ALONG(gid);
  TREE(lid, size, block)
}

/* 8 x 8 instances a block; only the y = 0 row stores (the sum of its column). */
LEAF(twod_leaf) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, in, scratch, 2, sums, scratch);
  void *self = __hpvm__getNode();
  void *block = __hpvm__getParentNode(self);
  long x = __hpvm__getNodeInstanceID_x(self), y = __hpvm__getNodeInstanceID_y(self);
  long lid = y * 8 + x, base = __hpvm__getNodeInstanceID_x(block) * BLOCK;
  if (y == 0) {
    float s = 0.0f;
    for (long k = 0; k < 8; k++) s += ALONG(base + k * 8 + x);
    scratch[x] = s;
  }
  TREE(lid, BLOCK, block)
}

#define GROUP(name, ...)                                                                          \
  void name##_group(float *in, size_t bytes_in, float *sums, size_t bytes_sums, long n,            \
                    size_t bytes_scratch) {                                                        \
    __hpvm__hint(CPU_TARGET);                                                                      \
    __hpvm__attributes(1, in, 1, sums);                                                            \
    void *alloc = __hpvm__createNodeND(0, allocate_scratch);                                       \
    void *red = __hpvm__createNodeND(__VA_ARGS__);                                                 \
    __hpvm__bindIn(alloc, 5, 0, 0);                                                                \
    for (int p = 0; p < 5; p++)                                                                    \
      __hpvm__bindIn(red, p, p, 0);                                                                \
    __hpvm__edge(alloc, red, 1, 0, 5, 0);                                                          \
    __hpvm__edge(alloc, red, 1, 1, 6, 0);                                                          \
  }                                                                                                \
  void name(float *in, size_t bytes_in, float *sums, size_t bytes_sums, long n, size_t bytes_scratch) { \
    __hpvm__hint(CPU_TARGET);                                                                      \
    __hpvm__attributes(1, in, 1, sums);                                                            \
    void *grid = __hpvm__createNodeND(1, name##_group, (n + BLOCK - 1) / BLOCK);                  \
    for (int p = 0; p < 6; p++)                                                                    \
      __hpvm__bindIn(grid, p, p, 0);                                                               \
  }

GROUP(covered, 1, covered_leaf, (long)BLOCK)
GROUP(half, 1, half_leaf, (long)BLOCK)
GROUP(shifted, 1, shifted_leaf, (long)BLOCK)
GROUP(accumulate, 1, accumulate_leaf, (long)BLOCK)
GROUP(returns, 1, returns_leaf, (long)BLOCK)
GROUP(twod, 2, twod_leaf, 8L, 8L)

/* Launches `root` and counts the wrong block sums (a macro: __hpvm__launch names its root). */
#define check(root, args, in, sums, n, blocks)                                   \
  ({                                                                             \
    __hpvm__wait(__hpvm__launch(0, root, (void *)(args)));                       \
    llvm_hpvm_request_mem((sums), (blocks) * sizeof(float));                     \
    int wrong = 0;                                                               \
    for (long b = 0; b < (blocks); b++) {                                        \
      float want = 0.0f;                                                         \
      for (long i = b * BLOCK; i < (n) && i < (b + 1) * BLOCK; i++) want += (in)[i]; \
      wrong += (sums)[b] != want;                                                \
    }                                                                            \
    wrong;                                                                       \
  })

int main(void) {
  long n = 1000, blocks = (n + BLOCK - 1) / BLOCK;
  size_t bytes_in = (size_t)n * sizeof(float), bytes_sums = (size_t)blocks * sizeof(float);
  float *in = malloc(bytes_in), *sums = malloc(bytes_sums);
  for (long i = 0; i < n; i++) in[i] = (float)(i % 7) - 3.0f;
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  *args = (RootIn){in, bytes_in, sums, bytes_sums, n, BLOCK * sizeof(float)};
  llvm_hpvm_track_mem(in, bytes_in);
  llvm_hpvm_track_mem(sums, bytes_sums);
  int bad = 0;
  bad += check(covered, args, in, sums, n, blocks);
  bad += check(half, args, in, sums, n, blocks);
  bad += check(shifted, args, in, sums, n, blocks);
  bad += check(accumulate, args, in, sums, n, blocks);
  bad += check(returns, args, in, sums, n, blocks);
  bad += check(twod, args, in, sums, n, blocks);
  llvm_hpvm_untrack_mem(in);
  llvm_hpvm_untrack_mem(sums);
  __hpvm__cleanup();
  return bad != 0;
}
