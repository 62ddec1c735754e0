// How the LBM program lays its lattice out in memory, in the shape parboil's LBM has for
// HPVM: the box's sizes, the padding around it, the one flattening macro every access goes
// through, and the names of the nineteen distributions (plus the cell's flags) a cell holds.
#ifndef LBM_LAYOUT_CONFIG_H
#define LBM_LAYOUT_CONFIG_H

// The simulated box, in cells. Small by default so a test runs it in an instant; a test
// picks another box with -D SIZE_X=... (every size at least 3: a wall on each side of one
// fluid cell).
#ifndef SIZE_X
#define SIZE_X 16
#endif
#ifndef SIZE_Y
#define SIZE_Y 12
#endif
#ifndef SIZE_Z
#define SIZE_Z 10
#endif

// Unused cells after each row and plane, and planes after the box. A gather at the box's
// edge reaches one cell past it in every direction; the padding gives those reads memory
// of the grid's own (zeros, or other edge cells: only walls read them, see lbm.cpp).
#define PADDING_X 3
#define PADDING_Y 2
#define PADDING_Z 4

#define PADDED_X (SIZE_X + PADDING_X)
#define PADDED_Y (SIZE_Y + PADDING_Y)
#define PADDED_Z (SIZE_Z + PADDING_Z)
#define TOTAL_CELLS (SIZE_X * SIZE_Y * SIZE_Z)
#define TOTAL_PADDED_CELLS (PADDED_X * PADDED_Y * PADDED_Z)

// Struct of arrays: all cells' entry e, then all cells' entry e + 1. x is fastest.
#define CALC_INDEX(x, y, z, e) ((e) * TOTAL_PADDED_CELLS + (((z) * PADDED_Y + (y)) * PADDED_X + (x)))

// The grid the program works with sits MARGIN floats (two planes) into its allocation, so
// that a row or a plane before the box has memory under it whatever the entry. The tracked
// memory, and so the graph's ports, begin at the allocation: the leaf adds MARGIN back.
#define MARGIN (2 * PADDED_X * PADDED_Y)

// One cell's entries. A direction is named by where its particles go: N is +y, S -y,
// E +x, W -x, T +z, B -z; NE is +x+y, and so on. FLAGS is not a distribution: the cell's
// CELL_FLAGS, stored as the bits of a float so that the grid is one float array.
enum CELL_ENTRIES { C, N, S, E, W, T, B, NE, NW, SE, SW, NT, NB, ST, SB, ET, EB, WT, WB, FLAGS, N_CELL_ENTRIES };

#define N_DISTRIBUTIONS FLAGS

enum CELL_FLAGS {
  OBSTACLE = 1 << 0,  // a wall: bounces back what streams in
  ACCEL = 1 << 1,     // the lid: its velocity is imposed
};

#endif
