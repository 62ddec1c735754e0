// The stencil program's host model: a random starting grid, and one Jacobi step as a plain
// triple loop over the interior (the boundary is copied, never computed), in the order and
// with the float operations of the graph's leaf, so that the two agree to rounding.
#include <random>

#include "stencil.h"

std::vector<float> starting_grid(int nx, int ny, int nz, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> value(0.0f, 10.0f);
  std::vector<float> grid((size_t)nx * ny * nz);
  for (float &v : grid) v = value(gen);
  return grid;
}

void reference_step(float c0, float c1, const std::vector<float> &in, std::vector<float> &out, int nx, int ny,
                    int nz) {
  out = in;
  for (int k = 1; k < nz - 1; k++)
    for (int j = 1; j < ny - 1; j++)
      for (int i = 1; i < nx - 1; i++)
        out[Index3D(nx, ny, i, j, k)] =
            c1 * (in[Index3D(nx, ny, i, j, k + 1)] + in[Index3D(nx, ny, i, j, k - 1)] +
                  in[Index3D(nx, ny, i, j + 1, k)] + in[Index3D(nx, ny, i, j - 1, k)] +
                  in[Index3D(nx, ny, i + 1, j, k)] + in[Index3D(nx, ny, i - 1, j, k)]) -
            in[Index3D(nx, ny, i, j, k)] * c0;
}
