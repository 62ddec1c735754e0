/* parboil's histo kept per work group, written for HPVM-C as HPVM's ports keep GPU shared
   memory: an allocation node per group (__hpvm__malloc of the group's bins), the counting
   leaf replicated over the group with int ids, barriers between clearing, counting and
   merging. */
#ifndef HISTO_LOCAL_H
#define HISTO_LOCAL_H

#include <stddef.h>

#define GROUP 128 /* work items per group */
#define BINS 256  /* one byte's values */

typedef struct __attribute__((__packed__)) {
  unsigned char *img;
  size_t bytes_img;
  int *histo;
  size_t bytes_histo;
  int n;
  size_t bytes_local;
} RootIn;

void histo_root(unsigned char *img, size_t bytes_img, int *histo, size_t bytes_histo, int n, size_t bytes_local);

#endif
