/* A 3-D 7-point stencil (Parboil's stencil, one time step): the leaf is replicated over
   the interior of an nx x ny x nz grid (3-D), each instance writing one point of anext.
   main checks every point against a C loop. */
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"

#define IDX(x, y, z) ((x) + nx * ((y) + ny * (z)))

typedef struct __attribute__((__packed__)) {
  float c0;
  float c1;
  float *a0;
  size_t bytes_a0;
  float *anext;
  size_t bytes_anext;
  int nx;
  int ny;
  int nz;
} RootIn;

void stencil_point(float c0, float c1, float *a0, size_t bytes_a0, float *anext, size_t bytes_anext, int nx,
                   int ny, int nz) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, a0, 1, anext);
  void *self = __hpvm__getNode();
  int x = (int)__hpvm__getNodeInstanceID_x(self) + 1;
  int y = (int)__hpvm__getNodeInstanceID_y(self) + 1;
  int z = (int)__hpvm__getNodeInstanceID_z(self) + 1;
  anext[IDX(x, y, z)] = c1 * (a0[IDX(x, y, z + 1)] + a0[IDX(x, y, z - 1)] + a0[IDX(x, y + 1, z)] +
                              a0[IDX(x, y - 1, z)] + a0[IDX(x + 1, y, z)] + a0[IDX(x - 1, y, z)]) -
                        a0[IDX(x, y, z)] * c0;
}

void stencil_root(float c0, float c1, float *a0, size_t bytes_a0, float *anext, size_t bytes_anext, int nx,
                  int ny, int nz) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, a0, 1, anext);
  void *point = __hpvm__createNodeND(3, stencil_point, (long)(nx - 2), (long)(ny - 2), (long)(nz - 2));
  for (int p = 0; p < 9; p++)
    __hpvm__bindIn(point, p, p, 0);
}

int main(void) {
  int nx = 12, ny = 10, nz = 8;
  size_t count = (size_t)nx * ny * nz, bytes = count * sizeof(float);
  float *a0 = malloc(bytes), *anext = malloc(bytes), *want = malloc(bytes);
  for (size_t i = 0; i < count; i++) {
    a0[i] = (float)((i * 37) % 101) / 10.0f;
    anext[i] = want[i] = 0.0f;
  }
  float c0 = 1.0f / 6.0f, c1 = 1.0f / 6.0f / 6.0f;
  for (int z = 1; z < nz - 1; z++)
    for (int y = 1; y < ny - 1; y++)
      for (int x = 1; x < nx - 1; x++)
        want[IDX(x, y, z)] = c1 * (a0[IDX(x, y, z + 1)] + a0[IDX(x, y, z - 1)] + a0[IDX(x, y + 1, z)] +
                                   a0[IDX(x, y - 1, z)] + a0[IDX(x + 1, y, z)] + a0[IDX(x - 1, y, z)]) -
                             a0[IDX(x, y, z)] * c0;
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  *args = (RootIn){c0, c1, a0, bytes, anext, bytes, nx, ny, nz};
  llvm_hpvm_track_mem(a0, bytes);
  llvm_hpvm_track_mem(anext, bytes);
  void *graph = __hpvm__launch(0, stencil_root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(anext, bytes);
  int bad = 0;
  for (size_t i = 0; i < count; i++) {
    float d = anext[i] - want[i];
    if (d > 1e-5f || d < -1e-5f) bad++;
  }
  llvm_hpvm_untrack_mem(a0);
  llvm_hpvm_untrack_mem(anext);
  __hpvm__cleanup();
  printf("stencil %dx%dx%d: %d wrong\n", nx, ny, nz, bad);
  return bad != 0;
}
