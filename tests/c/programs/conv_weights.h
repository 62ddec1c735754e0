/* The 3x3 filter of conv_tiled.cc (a sharpen kernel over a blur, integers so the sums are
   exact in float), and the tile's shape: the leaf's group is BLOCK_X x BLOCK_Y instances,
   its shared tile the block plus a one-pixel halo on every side. */
#pragma once

#ifndef BLOCK_X
#define BLOCK_X 16
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 4
#endif
#define RADIUS 1
#define TILE_W (BLOCK_X + 2 * RADIUS)
#define TILE_H (BLOCK_Y + 2 * RADIUS)
#ifndef ALLOC_CELLS
#define ALLOC_CELLS (TILE_W * TILE_H)
#endif

static const float kWeights[3][3] = {{0.0f, -1.0f, 0.0f}, {-1.0f, 6.0f, -1.0f}, {0.0f, -1.0f, 0.0f}};
