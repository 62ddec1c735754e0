// The LBM program's host-side lattice code: allocation, the starting state, the obstacle
// file, the lid-driven cavity's walls and lid, the statistics printed before and after the
// run, and the result file. None of it runs in the graph; main.cpp's leaf is the only code
// that steps the lattice.
//
// Why the garbage a wall gathers is harmless: a cell on the box's face gathers from outside
// the box (the padding, or a cell of another row or plane that the flattened index reaches).
// Every such cell is a wall, and a wall only hands a fluid neighbour back what that
// neighbour sent it (bounce-back), so no fluid cell ever reads what a wall gathered from
// outside. The result file therefore writes walls as zeros.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "lbm.h"

LBM_Grid LBM_allocateGrid(std::vector<float> &memory) {
  memory.assign((size_t)TOTAL_PADDED_CELLS * N_CELL_ENTRIES, 0.0f);
  std::printf("LBM_allocateGrid: %zu floats (%.1f KiB) for %d cells\n", memory.size(),
              memory.size() * sizeof(float) / 1024.0, TOTAL_CELLS);
  return memory.data() + MARGIN;
}

void LBM_initializeGrid(LBM_Grid grid) {
  static const float weight[N_DISTRIBUTIONS] = {
      WEIGHT_REST, WEIGHT_AXIS, WEIGHT_AXIS, WEIGHT_AXIS, WEIGHT_AXIS, WEIGHT_AXIS, WEIGHT_AXIS,
      WEIGHT_DIAG, WEIGHT_DIAG, WEIGHT_DIAG, WEIGHT_DIAG, WEIGHT_DIAG, WEIGHT_DIAG, WEIGHT_DIAG,
      WEIGHT_DIAG, WEIGHT_DIAG, WEIGHT_DIAG, WEIGHT_DIAG, WEIGHT_DIAG};
  for (int z = 0; z < SIZE_Z; z++)
    for (int y = 0; y < SIZE_Y; y++)
      for (int x = 0; x < SIZE_X; x++) {
        for (int e = 0; e < N_DISTRIBUTIONS; e++) GRID_ENTRY(grid, x, y, z, e) = weight[e];
        FLAG_BITS(grid, x, y, z) = 0;
      }
}

// The file holds SIZE_Z planes, each SIZE_Y lines of SIZE_X characters and an empty line
// after the plane, so its size alone says whether it is made for this box.
bool LBM_loadObstacleFile(LBM_Grid grid, const char *filename, std::string &error) {
  std::ifstream file(filename, std::ios::binary);
  if (!file) {
    error = std::string("cannot open the obstacle file '") + filename + "'";
    return false;
  }
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const size_t want = (size_t)TOTAL_CELLS + (size_t)(SIZE_Y + 1) * SIZE_Z;
  if (text.size() != want) {
    char line[256];
    std::snprintf(line, sizeof line, "obstacle file '%s' has %zu bytes; a %dx%dx%d box needs %zu", filename,
                  text.size(), SIZE_X, SIZE_Y, SIZE_Z, want);
    error = line;
    return false;
  }
  size_t at = 0;
  for (int z = 0; z < SIZE_Z; z++) {
    for (int y = 0; y <= SIZE_Y; y++) {
      int cells = y < SIZE_Y ? SIZE_X : 0;  // the plane's rows, then its empty line
      for (int x = 0; x <= cells; x++, at++) {
        bool newline = text[at] == '\n';
        if (newline != (x == cells)) {
          char line[256];
          int number = z * (SIZE_Y + 1) + y + 1;
          if (cells)
            std::snprintf(line, sizeof line, "obstacle file '%s', line %d: not a row of %d cells", filename, number,
                          SIZE_X);
          else
            std::snprintf(line, sizeof line, "obstacle file '%s', line %d: not the empty line after a plane",
                          filename, number);
          error = line;
          return false;
        }
        if (x < cells && text[at] != '.') SET_FLAG(grid, x, y, z, OBSTACLE);
      }
    }
  }
  return true;
}

void LBM_initializeSpecialCellsForLDC(LBM_Grid grid) {
  for (int z = 0; z < SIZE_Z; z++)
    for (int y = 0; y < SIZE_Y; y++)
      for (int x = 0; x < SIZE_X; x++) {
        bool face = x == 0 || y == 0 || z == 0 || x == SIZE_X - 1 || y == SIZE_Y - 1 || z == SIZE_Z - 1;
        if (face)
          SET_FLAG(grid, x, y, z, OBSTACLE);
        else if (z == SIZE_Z - 2 && !TEST_FLAG(grid, x, y, z, OBSTACLE))
          SET_FLAG(grid, x, y, z, ACCEL);
      }
}

void LBM_swapGrids(LBM_Grid *grid1, LBM_Grid *grid2) {
  LBM_Grid other = *grid1;
  *grid1 = *grid2;
  *grid2 = other;
}

// A cell's density and velocity from its own distributions (not gathered: after a step,
// each cell holds what arrived and collided there).
static void moments(LBM_Grid g, int x, int y, int z, float *rho, float *ux, float *uy, float *uz) {
  float f[N_DISTRIBUTIONS];
  for (int e = 0; e < N_DISTRIBUTIONS; e++) f[e] = GRID_ENTRY(g, x, y, z, e);
  float sum = f[C];
  for (int e = 1; e < N_DISTRIBUTIONS; e++) sum += f[e];
  *rho = sum;
  *ux = (f[E] - f[W] + f[NE] - f[NW] + f[SE] - f[SW] + f[ET] + f[EB] - f[WT] - f[WB]) / sum;
  *uy = (f[N] - f[S] + f[NE] + f[NW] - f[SE] - f[SW] + f[NT] + f[NB] - f[ST] - f[SB]) / sum;
  *uz = (f[T] - f[B] + f[NT] - f[NB] + f[ST] - f[SB] + f[ET] - f[EB] + f[WT] - f[WB]) / sum;
}

void LBM_showGridStatistics(LBM_Grid grid) {
  int walls = 0, lid = 0, fluid = 0;
  float minRho = 1e30f, maxRho = -1e30f, minU = 1e30f, maxU = -1e30f;
  double mass = 0.0;
  for (int z = 0; z < SIZE_Z; z++)
    for (int y = 0; y < SIZE_Y; y++)
      for (int x = 0; x < SIZE_X; x++) {
        if (TEST_FLAG(grid, x, y, z, OBSTACLE)) {
          walls++;
          continue;
        }
        if (TEST_FLAG(grid, x, y, z, ACCEL))
          lid++;
        else
          fluid++;
        float rho, ux, uy, uz;
        moments(grid, x, y, z, &rho, &ux, &uy, &uz);
        float u = std::sqrt(ux * ux + uy * uy + uz * uz);
        minRho = std::fmin(minRho, rho);
        maxRho = std::fmax(maxRho, rho);
        minU = std::fmin(minU, u);
        maxU = std::fmax(maxU, u);
        mass += rho;
      }
  std::printf("LBM_showGridStatistics: %d wall, %d lid, %d fluid cells; density %.6f to %.6f, mass %.6f; "
              "speed %.6e to %.6e\n",
              walls, lid, fluid, minRho, maxRho, mass, minU, maxU);
}

bool LBM_storeVelocityField(LBM_Grid grid, const char *filename) {
  std::vector<float> out;
  out.reserve((size_t)TOTAL_CELLS * 4);
  for (int z = 0; z < SIZE_Z; z++)
    for (int y = 0; y < SIZE_Y; y++)
      for (int x = 0; x < SIZE_X; x++) {
        float rho = 0.0f, ux = 0.0f, uy = 0.0f, uz = 0.0f;
        if (!TEST_FLAG(grid, x, y, z, OBSTACLE)) moments(grid, x, y, z, &rho, &ux, &uy, &uz);
        out.insert(out.end(), {rho, ux, uy, uz});
      }
  // In the machine's byte order: little-endian wherever hpvm's tests run (x86-64, AArch64).
  std::ofstream file(filename, std::ios::binary);
  file.write(reinterpret_cast<const char *>(out.data()), (std::streamsize)(out.size() * sizeof(float)));
  return (bool)file;
}
