/* A gather one level down, as HPVM's tiled kernels index: each leaf instance reads its
   parent's block id (__hpvm__getParentNode) and its own lane, through an index array the
   bounds pre-check cannot follow. tests/c/test_c_checked_nested.py plants one bad index. */
#include "hpvm.h"
void gather(float *in, size_t bytes_in, long *idx, size_t bytes_idx, float *out, size_t bytes_out, long bs) {
  __hpvm__attributes(2, in, idx, 1, out);
  void *self = __hpvm__getNode();
  long lid = __hpvm__getNodeInstanceID_x(self);
  long bid = __hpvm__getNodeInstanceID_x(__hpvm__getParentNode(self));
  out[bid * bs + lid] = in[idx[bid * bs + lid]];  // @gather
}
void block(float *in, size_t bytes_in, long *idx, size_t bytes_idx, float *out, size_t bytes_out, long bs) {
  __hpvm__attributes(2, in, idx, 1, out);
  void *g = __hpvm__createNodeND(1, gather, bs);
  for (int p = 0; p < 7; p++) __hpvm__bindIn(g, p, p, 0);
}
void root(float *in, size_t bytes_in, long *idx, size_t bytes_idx, float *out, size_t bytes_out, long bs, long blocks) {
  __hpvm__attributes(2, in, idx, 1, out);
  void *b = __hpvm__createNodeND(1, block, blocks);
  for (int p = 0; p < 7; p++) __hpvm__bindIn(b, p, p, 0);
}
