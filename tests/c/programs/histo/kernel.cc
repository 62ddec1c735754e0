// The histogram's graph: three stages joined by all-to-all edges, each a leaf replicated
// over its own range. `histo_clear` zeroes one 32-bit count per instance; `histo_count` adds
// CHUNK pixels per instance into the counts with __hpvm__atomic_add (instances share bins);
// `histo_saturate` writes one 8-bit bin per instance, its count saturated at UINT8_MAX as
// parboil's histo keeps its bins. The edges carry the counts' size from stage to stage: what
// orders the stages (a node starts when every instance of the one before has returned).
#include <climits>

#include "histo.h"
#include "hpvm.h"

void histo_clear(int *counts, size_t bytes_counts) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, counts, 1, counts);
  size_t bin = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  counts[bin] = 0;
  __hpvm__return(1, bytes_counts);
}

void histo_count(unsigned *img, size_t bytes_img, int *counts, size_t bytes_counts, size_t chunk) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, img, counts, 1, counts);
  size_t block = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  size_t pixels = bytes_img / sizeof(unsigned);
  size_t start = block * chunk;
  size_t end = start + chunk < pixels ? start + chunk : pixels;
  for (size_t i = start; i < end; i++) __hpvm__atomic_add(&counts[img[i]], 1);
  __hpvm__return(1, bytes_counts);
}

void histo_saturate(int *counts, size_t bytes_counts, unsigned char *histo, size_t bytes_histo) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, counts, 1, histo);
  size_t bin = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  int count = counts[bin];
  histo[bin] = (unsigned char)(count < UCHAR_MAX ? count : UCHAR_MAX);
  __hpvm__return(1, bytes_histo);
}

void histo_root(unsigned *img, size_t bytes_img, int *counts, size_t bytes_counts, unsigned char *histo,
                size_t bytes_histo, size_t chunk, size_t blocks, size_t bins) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, img, counts, histo, 2, counts, histo);
  void *clear = __hpvm__createNodeND(1, histo_clear, bins);
  void *count = __hpvm__createNodeND(1, histo_count, blocks);
  void *saturate = __hpvm__createNodeND(1, histo_saturate, bins);
  __hpvm__bindIn(clear, 2, 0, 0);  // counts
  __hpvm__bindIn(clear, 3, 1, 0);
  __hpvm__bindIn(count, 0, 0, 0);  // img
  __hpvm__bindIn(count, 1, 1, 0);
  __hpvm__bindIn(count, 2, 2, 0);  // counts, its size from clear: after the clearing
  __hpvm__edge(clear, count, 1, 0, 3, 0);
  __hpvm__bindIn(count, 6, 4, 0);  // chunk
  __hpvm__bindIn(saturate, 2, 0, 0);  // counts, its size from count: after the counting
  __hpvm__edge(count, saturate, 1, 0, 1, 0);
  __hpvm__bindIn(saturate, 4, 2, 0);  // histo
  __hpvm__bindIn(saturate, 5, 3, 0);
}
