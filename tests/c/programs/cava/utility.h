#ifndef CAVA_UTILITY_H
#define CAVA_UTILITY_H

#include <stddef.h>

/* size bytes aligned to a cache line, or NULL (the caller reports it). */
void *malloc_aligned(size_t size);

#endif
