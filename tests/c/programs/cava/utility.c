/* Allocation for the pipeline's buffers: cache-line aligned, as the accelerator's DMA wants
   them; hpvm tracks them by address and size like any other memory. */
#include <stdlib.h>

#include "defs.h"
#include "utility.h"

void *malloc_aligned(size_t size) {
  void *ptr = NULL;
  size_t rounded = (size + CACHELINE_SIZE - 1) / CACHELINE_SIZE * CACHELINE_SIZE;
  if (posix_memalign(&ptr, CACHELINE_SIZE, rounded == 0 ? CACHELINE_SIZE : rounded) != 0)
    return NULL;
  return ptr;
}
