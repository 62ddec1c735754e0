/* Allocation nodes the cpu back end must not make once per chunk of parent instances
   (backends/cpu/scratch.py): in `kept`, each block's buffer leaves the block (bound out of
   it, and out of the root); in `by_id`, the buffer's size depends on the block's id. Each
   block records its buffer's address and the nonzero bytes it found in it, then dirties it:
   in `kept` every block must get memory of its own; in both, zero-filled. */
#include <stdlib.h>
#include "hpvm.h"

typedef struct __attribute__((__packed__)) {
  long *addr;
  size_t bytes_addr;
  long *dirty;
  size_t bytes_dirty;
  size_t bytes_scratch;
  long blocks;
  struct {
    char *buf;
    size_t bytes_buf;
  } out;
} RootIn;

void allocate(size_t bytes_scratch) {
  __hpvm__hint(CPU_TARGET);
  void *scratch = __hpvm__malloc(bytes_scratch);
  __hpvm__return(2, scratch, bytes_scratch);
}

void allocate_by_id(size_t bytes_scratch) {
  __hpvm__hint(CPU_TARGET);
  long b = __hpvm__getNodeInstanceID_x(__hpvm__getParentNode(__hpvm__getNode()));
  void *scratch = __hpvm__malloc(bytes_scratch + 64 * (b % 3));
  __hpvm__return(2, scratch, bytes_scratch);
}

void use(long *addr, size_t bytes_addr, long *dirty, size_t bytes_dirty, char *scratch, size_t bytes_scratch) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(3, addr, dirty, scratch, 3, addr, dirty, scratch);
  long b = __hpvm__getNodeInstanceID_x(__hpvm__getParentNode(__hpvm__getNode()));
  long d = 0;
  for (size_t i = 0; i < bytes_scratch; i++) d += scratch[i] != 0;
  for (size_t i = 0; i < bytes_scratch; i++) scratch[i] = (char)0xAB;
  addr[b] = (long)scratch;
  dirty[b] = d;
}

void kept_group(long *addr, size_t bytes_addr, long *dirty, size_t bytes_dirty, size_t bytes_scratch) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, addr, dirty, 2, addr, dirty);
  void *alloc = __hpvm__createNodeND(0, allocate);
  void *u = __hpvm__createNodeND(0, use);
  __hpvm__bindIn(alloc, 4, 0, 0);
  for (int p = 0; p < 4; p++)
    __hpvm__bindIn(u, p, p, 0);
  __hpvm__edge(alloc, u, 1, 0, 4, 0);
  __hpvm__edge(alloc, u, 1, 1, 5, 0);
  __hpvm__bindOut(alloc, 0, 0, 0);
  __hpvm__bindOut(alloc, 1, 1, 0);
}

void kept(long *addr, size_t bytes_addr, long *dirty, size_t bytes_dirty, size_t bytes_scratch, long blocks) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, addr, dirty, 2, addr, dirty);
  void *grid = __hpvm__createNodeND(1, kept_group, blocks);
  for (int p = 0; p < 5; p++)
    __hpvm__bindIn(grid, p, p, 0);
  __hpvm__bindOut(grid, 0, 0, 0);
  __hpvm__bindOut(grid, 1, 1, 0);
}

void by_id_group(long *addr, size_t bytes_addr, long *dirty, size_t bytes_dirty, size_t bytes_scratch) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, addr, dirty, 2, addr, dirty);
  void *alloc = __hpvm__createNodeND(0, allocate_by_id);
  void *u = __hpvm__createNodeND(0, use);
  __hpvm__bindIn(alloc, 4, 0, 0);
  for (int p = 0; p < 4; p++)
    __hpvm__bindIn(u, p, p, 0);
  __hpvm__edge(alloc, u, 1, 0, 4, 0);
  __hpvm__edge(alloc, u, 1, 1, 5, 0);
}

void by_id(long *addr, size_t bytes_addr, long *dirty, size_t bytes_dirty, size_t bytes_scratch, long blocks) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, addr, dirty, 2, addr, dirty);
  void *grid = __hpvm__createNodeND(1, by_id_group, blocks);
  for (int p = 0; p < 5; p++)
    __hpvm__bindIn(grid, p, p, 0);
}

int main(void) {
  long blocks = 100;
  size_t bytes = (size_t)blocks * sizeof(long);
  long *addr = malloc(bytes), *dirty = malloc(bytes);
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  *args = (RootIn){addr, bytes, dirty, bytes, 200, blocks, {0, 0}};
  llvm_hpvm_track_mem(addr, bytes);
  llvm_hpvm_track_mem(dirty, bytes);
  long bad = 0;
  __hpvm__wait(__hpvm__launch(0, kept, (void *)args));
  llvm_hpvm_request_mem(dirty, bytes);
  for (long b = 0; b < blocks; b++) bad += dirty[b];
  __hpvm__wait(__hpvm__launch(0, by_id, (void *)args));
  llvm_hpvm_request_mem(dirty, bytes);
  for (long b = 0; b < blocks; b++) bad += dirty[b];
  llvm_hpvm_untrack_mem(addr);
  llvm_hpvm_untrack_mem(dirty);
  __hpvm__cleanup();
  return bad != 0;
}
