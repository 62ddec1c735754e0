// The 7-point 3-D Jacobi step as parboil's stencil is written for HPVM: a DEVICE leaf in the
// CUDA convention (one interior point per instance; its global position from the group's
// and the instance's ids in x, y and z, offset by the one-point boundary) replicated over a
// block by a wrapper node, the wrapper replicated over the grid of groups by an internal
// node, and that node created without replication (0 dimensions) by the root. The grid of
// groups is rounded up, so the leaf skips positions past the interior.
#include "hpvm.h"
#include "stencil.h"

void naive_kernel(float c0, float c1, float *A0, size_t bytes_A0, float *Anext, size_t bytes_Anext, int nx, int ny,
                  int nz) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(2, A0, Anext, 1, Anext);
  void *thisNode = __hpvm__getNode();
  void *parentNode = __hpvm__getParentNode(thisNode);
  int lx = __hpvm__getNodeInstanceID_x(thisNode);
  int ly = __hpvm__getNodeInstanceID_y(thisNode);
  int lz = __hpvm__getNodeInstanceID_z(thisNode);
  int gx = __hpvm__getNodeInstanceID_x(parentNode);
  int gy = __hpvm__getNodeInstanceID_y(parentNode);
  int gz = __hpvm__getNodeInstanceID_z(parentNode);
  int bx = __hpvm__getNumNodeInstances_x(thisNode);
  int by = __hpvm__getNumNodeInstances_y(thisNode);
  int bz = __hpvm__getNumNodeInstances_z(thisNode);
  int i = gx * bx + lx + 1;
  int j = gy * by + ly + 1;
  int k = gz * bz + lz + 1;
  if (i < nx - 1 && j < ny - 1 && k < nz - 1) {
    Anext[Index3D(nx, ny, i, j, k)] =
        c1 * (A0[Index3D(nx, ny, i, j, k + 1)] + A0[Index3D(nx, ny, i, j, k - 1)] +
              A0[Index3D(nx, ny, i, j + 1, k)] + A0[Index3D(nx, ny, i, j - 1, k)] +
              A0[Index3D(nx, ny, i + 1, j, k)] + A0[Index3D(nx, ny, i - 1, j, k)]) -
        A0[Index3D(nx, ny, i, j, k)] * c0;
  }
}

// The wrapper: one group, the leaf replicated over a block. Only the leaf's nine ports are
// bound; the block's sizes arrive as this node's own inputs.
void stencilLvl1(float c0, float c1, float *A0, size_t bytes_A0, float *Anext, size_t bytes_Anext, int nx, int ny,
                 int nz, size_t dim_X1, size_t dim_Y1, size_t dim_Z1) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(2, A0, Anext, 1, Anext);
  void *stencil_node = __hpvm__createNodeND(3, naive_kernel, dim_X1, dim_Y1, dim_Z1);
  for (int p = 0; p < 9; p++)
    __hpvm__bindIn(stencil_node, p, p, 0);
}

// The grid of groups.
void stencilLvl2(float c0, float c1, float *A0, size_t bytes_A0, float *Anext, size_t bytes_Anext, int nx, int ny,
                 int nz, size_t dim_X1, size_t dim_Y1, size_t dim_Z1, size_t dim_X2, size_t dim_Y2, size_t dim_Z2) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, A0, Anext, 1, Anext);
  void *stencil_node = __hpvm__createNodeND(3, stencilLvl1, dim_X2, dim_Y2, dim_Z2);
  for (int p = 0; p < 12; p++)
    __hpvm__bindIn(stencil_node, p, p, 0);
}

// The root: the grid node once, not replicated.
void stencilLvl3(float c0, float c1, float *A0, size_t bytes_A0, float *Anext, size_t bytes_Anext, int nx, int ny,
                 int nz, size_t dim_X1, size_t dim_Y1, size_t dim_Z1, size_t dim_X2, size_t dim_Y2, size_t dim_Z2) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, A0, Anext, 1, Anext);
  void *stencil_node = __hpvm__createNodeND(0, stencilLvl2);
  for (int p = 0; p < 15; p++)
    __hpvm__bindIn(stencil_node, p, p, 0);
}
