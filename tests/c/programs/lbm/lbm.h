// The LBM program's grid routines (lbm.cpp): what the host does to the lattice before and
// after the graph runs, as parboil's LBM splits it from main.cpp.
#ifndef LBM_H
#define LBM_H

#include <string>
#include <vector>

#include "lbm_macros.h"

// memory is (re)filled with zeros, sized for the padded grid; the grid is MARGIN into it.
LBM_Grid LBM_allocateGrid(std::vector<float> &memory);
// Every cell of the box at rest with density 1, no flags.
void LBM_initializeGrid(LBM_Grid grid);
// Walls where the obstacle file has anything but '.'; false, with error set, if the file
// cannot be read or is not one SIZE_X x SIZE_Y x SIZE_Z box.
bool LBM_loadObstacleFile(LBM_Grid grid, const char *filename, std::string &error);
// The lid-driven cavity: walls on the box's six faces, the lid in the plane under the top.
void LBM_initializeSpecialCellsForLDC(LBM_Grid grid);
void LBM_swapGrids(LBM_Grid *grid1, LBM_Grid *grid2);
void LBM_showGridStatistics(LBM_Grid grid);
// Four little-endian floats per cell, x fastest: density and velocity (zeros in a wall).
bool LBM_storeVelocityField(LBM_Grid grid, const char *filename);

#endif
