// The LBM program's constants and access macros. The leaf and the host both read the grid
// through these, so that the leaf's code is a list of loads and stores at offsets from its
// own cell, as HPVM's LBM writes it.
#ifndef LBM_MACROS_H
#define LBM_MACROS_H

#include "layout_config.h"

// The relaxation rate of the BGK collision (1 / tau): above 1 is over-relaxation.
#define OMEGA 1.85f

// The lid's imposed velocity, in cells per step.
#define LID_UX 0.01f
#define LID_UY 0.004f
#define LID_UZ 0.0f

// D3Q19's weights: the rest particle, the six axis directions, the twelve diagonals.
#define WEIGHT_REST (1.0f / 3.0f)
#define WEIGHT_AXIS (1.0f / 18.0f)
#define WEIGHT_DIAG (1.0f / 36.0f)

// A grid is a pointer MARGIN floats into its memory (lbm.cpp allocates it).
typedef float *LBM_Grid;

#define GRID_ENTRY(g, x, y, z, e) ((g)[CALC_INDEX(x, y, z, e)])

// The gather: what arrives at (x, y, z) in direction e comes from the neighbour one step
// back along e, whose velocity is (dx, dy, dz).
#define PULL(g, x, y, z, dx, dy, dz, e) GRID_ENTRY(g, (x) - (dx), (y) - (dy), (z) - (dz), e)

// A cell's flags: its FLAGS entry read (or written) as the bits it holds, not as a float.
#define FLAG_BITS(g, x, y, z) (*(unsigned *)&GRID_ENTRY(g, x, y, z, FLAGS))
#define TEST_FLAG(g, x, y, z, f) (FLAG_BITS(g, x, y, z) & (f))
#define SET_FLAG(g, x, y, z, f) (FLAG_BITS(g, x, y, z) |= (f))

// BGK relaxation of one distribution toward its equilibrium: eu is the direction's
// velocity projected on the cell's, usq is 1.5 |u|^2.
#define RELAX(f, weight, rho, eu, usq)                                                                             \
  ((1.0f - OMEGA) * (f) + OMEGA * (weight) * (rho) * (1.0f + 3.0f * (eu) + 4.5f * (eu) * (eu) - (usq)))

#endif
