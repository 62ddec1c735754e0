// The stencil program's shared declarations (parboil's stencil, written for HPVM): the grid's
// index, the root's argument struct, the root node function main.cc launches and the host's
// grid and reference loop (grid.cc).
#ifndef STENCIL_H
#define STENCIL_H

#include <cstddef>
#include <vector>

// x fastest in memory, z slowest, as parboil lays out its grid.
#define Index3D(_nx, _ny, _i, _j, _k) ((_i) + (_nx) * ((_j) + (_ny) * (_k)))

typedef struct __attribute__((__packed__)) {
  float c0, c1;  // Anext = c1 * (the six neighbours) - c0 * the centre
  float *A0;
  size_t bytes_A0;
  float *Anext;
  size_t bytes_Anext;
  int nx, ny, nz;
  size_t dim_X1, dim_Y1, dim_Z1;  // a block: leaf instances per group
  size_t dim_X2, dim_Y2, dim_Z2;  // the grid of groups
} RootIn;

void stencilLvl3(float c0, float c1, float *A0, size_t bytes_A0, float *Anext, size_t bytes_Anext, int nx, int ny,
                 int nz, size_t dim_X1, size_t dim_Y1, size_t dim_Z1, size_t dim_X2, size_t dim_Y2, size_t dim_Z2);

// grid.cc: the starting grid (a fixed seed) and the plain loop the graph must match.
std::vector<float> starting_grid(int nx, int ny, int nz, unsigned seed);
void reference_step(float c0, float c1, const std::vector<float> &in, std::vector<float> &out, int nx, int ny,
                    int nz);

#endif
