/* Atomics: a histogram. One leaf instance per input element adds 1 to its bin with
   __hpvm__atomic_add (and counts the elements with __hpvm__atomic_inc); main checks the
   bins against a C loop. */
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"

#define BINS 16

typedef struct __attribute__((__packed__)) {
  int *data;
  size_t bytes_data;
  int *bins;
  size_t bytes_bins;
  int *count;
  size_t bytes_count;
} RootIn;

void bin_one(int *data, size_t bytes_data, int *bins, size_t bytes_bins, int *count, size_t bytes_count) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(3, data, bins, count, 2, bins, count);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  __hpvm__atomic_add(&bins[data[i] % BINS], 1);
  __hpvm__atomic_inc(count);
}

void histogram(int *data, size_t bytes_data, int *bins, size_t bytes_bins, int *count, size_t bytes_count) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(3, data, bins, count, 2, bins, count);
  void *each = __hpvm__createNodeND(1, bin_one, bytes_data / sizeof(int));
  for (int p = 0; p < 6; p++)
    __hpvm__bindIn(each, p, p, 0);
}

int main(void) {
  const int n = 5000;
  int *data = malloc(n * sizeof(int)), *bins = calloc(BINS, sizeof(int)), *count = calloc(1, sizeof(int));
  int want[BINS] = {0};
  for (int i = 0; i < n; i++) {
    data[i] = (i * 7919) % 1000;
    want[data[i] % BINS]++;
  }
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  *args = (RootIn){data, n * sizeof(int), bins, BINS * sizeof(int), count, sizeof(int)};
  llvm_hpvm_track_mem(data, n * sizeof(int));
  llvm_hpvm_track_mem(bins, BINS * sizeof(int));
  llvm_hpvm_track_mem(count, sizeof(int));
  void *graph = __hpvm__launch(0, histogram, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(bins, BINS * sizeof(int));
  llvm_hpvm_request_mem(count, sizeof(int));
  int bad = *count != n;
  for (int b = 0; b < BINS; b++) bad += bins[b] != want[b];
  llvm_hpvm_untrack_mem(data);
  llvm_hpvm_untrack_mem(bins);
  llvm_hpvm_untrack_mem(count);
  __hpvm__cleanup();
  printf("histogram: %d elements counted, %d wrong\n", *count, bad);
  return bad != 0;
}
