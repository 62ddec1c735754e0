/* Shared by main.c and kernels.c, found through -I. */
#ifndef KERNELS_H
#define KERNELS_H
#include <stddef.h>
#ifndef SCALE
#define SCALE 2
#endif
typedef struct __attribute__((__packed__)) { int *a; size_t bytes_a; int k; } RootIn;
void scale_add(int *a, size_t bytes_a, int k);
int expected(int i, int k);
#endif
