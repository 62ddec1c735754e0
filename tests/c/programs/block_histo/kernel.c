#include "hpvm.h"
#include "histo_local.h"

void local_bins(size_t bytes_local) {
  __hpvm__hint(GPU_TARGET);
  void *local = __hpvm__malloc(bytes_local);
  __hpvm__return(2, local, bytes_local);
}

/* One work item: clears its share of the group's bins, counts its pixels (a grid-stride
   loop over the group's slice), then adds its share of the bins to the global histogram. */
void histo_count(unsigned char *img, size_t bytes_img, int *histo, size_t bytes_histo, int n, int *local,
                 size_t bytes_local) {
  __hpvm__hint(GPU_TARGET);
  __hpvm__attributes(2, img, local, 2, histo, local);
  void *self = __hpvm__getNode();
  void *group = __hpvm__getParentNode(self);
  int lid = __hpvm__getNodeInstanceID_x(self);
  int gid = __hpvm__getNodeInstanceID_x(group);
  int groups = __hpvm__getNumNodeInstances_x(group);
  for (int b = lid; b < BINS; b += GROUP)
    local[b] = 0;
  __hpvm__barrier();
  for (int i = gid * GROUP + lid; i < n; i += groups * GROUP)
    __hpvm__atomic_add(&local[img[i]], 1);
  __hpvm__barrier();
  for (int b = lid; b < BINS; b += GROUP)
    if (local[b] != 0)
      __hpvm__atomic_add(&histo[b], local[b]);
}

void histo_group(unsigned char *img, size_t bytes_img, int *histo, size_t bytes_histo, int n, size_t bytes_local) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, img, 1, histo);
  void *alloc = __hpvm__createNodeND(0, local_bins);
  void *count = __hpvm__createNodeND(1, histo_count, (size_t)GROUP);
  __hpvm__bindIn(alloc, 5, 0, 0);
  for (int p = 0; p < 5; p++)
    __hpvm__bindIn(count, p, p, 0);
  __hpvm__edge(alloc, count, 1, 0, 5, 0);
  __hpvm__edge(alloc, count, 1, 1, 6, 0);
}

void histo_root(unsigned char *img, size_t bytes_img, int *histo, size_t bytes_histo, int n, size_t bytes_local) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, img, 1, histo);
  void *grid = __hpvm__createNodeND(1, histo_group, (size_t)((n + 4 * GROUP - 1) / (4 * GROUP)));
  for (int p = 0; p < 6; p++)
    __hpvm__bindIn(grid, p, p, 0);
}
