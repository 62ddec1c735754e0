/* Parent instances whose allocation node mallocs a scratch buffer that nothing carries out:
   on cpu each buffer dies with its parent instance, and the next one on that thread gets
   the same memory (llvm_native/host.py). The leaf counts the nonzero bytes it finds in its
   fresh buffer (0: zero-filled, as malloc promises), records the buffer's address, and
   dirties it for whoever gets it next. */
#include <stdlib.h>
#include "hpvm.h"

typedef struct __attribute__((__packed__)) {
  long *addr;
  size_t bytes_addr;
  long *dirty;
  size_t bytes_dirty;
  size_t bytes_scratch;
  long blocks;
} RootIn;

void allocate(size_t bytes_scratch) {
  __hpvm__hint(CPU_TARGET);
  void *scratch = __hpvm__malloc(bytes_scratch);
  __hpvm__return(2, scratch, bytes_scratch);
}

void use(long *addr, size_t bytes_addr, long *dirty, size_t bytes_dirty, char *scratch, size_t bytes_scratch) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(3, addr, dirty, scratch, 3, addr, dirty, scratch);
  void *self = __hpvm__getNode();
  long b = __hpvm__getNodeInstanceID_x(__hpvm__getParentNode(self));
  long d = 0;
  for (size_t i = 0; i < bytes_scratch; i++) d += scratch[i] != 0;
  for (size_t i = 0; i < bytes_scratch; i++) scratch[i] = (char)0xAB;
  addr[b] = (long)scratch;
  dirty[b] = d;
}

void group(long *addr, size_t bytes_addr, long *dirty, size_t bytes_dirty, size_t bytes_scratch) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, addr, dirty, 2, addr, dirty);
  void *alloc = __hpvm__createNodeND(0, allocate);
  void *u = __hpvm__createNodeND(0, use);
  __hpvm__bindIn(alloc, 4, 0, 0);
  for (int p = 0; p < 4; p++)
    __hpvm__bindIn(u, p, p, 0);
  __hpvm__edge(alloc, u, 1, 0, 4, 0);
  __hpvm__edge(alloc, u, 1, 1, 5, 0);
}

void root(long *addr, size_t bytes_addr, long *dirty, size_t bytes_dirty, size_t bytes_scratch, long blocks) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, addr, dirty, 2, addr, dirty);
  void *grid = __hpvm__createNodeND(1, group, blocks);
  for (int p = 0; p < 5; p++)
    __hpvm__bindIn(grid, p, p, 0);
}

int main(void) {
  long blocks = 100;
  size_t bytes = (size_t)blocks * sizeof(long);
  long *addr = malloc(bytes), *dirty = malloc(bytes);
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  *args = (RootIn){addr, bytes, dirty, bytes, 200, blocks};
  llvm_hpvm_track_mem(addr, bytes);
  llvm_hpvm_track_mem(dirty, bytes);
  void *graph = __hpvm__launch(0, root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(dirty, bytes);
  long bad = 0;
  for (long b = 0; b < blocks; b++) bad += dirty[b];
  llvm_hpvm_untrack_mem(addr);
  llvm_hpvm_untrack_mem(dirty);
  __hpvm__cleanup();
  return bad != 0;
}
