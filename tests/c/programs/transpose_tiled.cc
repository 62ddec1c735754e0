/* NVIDIA's coalesced matrix transpose ("An Efficient Matrix Transpose in CUDA C/C++":
   transposeCoalesced) as HPVM's benchmarks write a tiled kernel: the root replicates a
   wrapper over the grid of tiles, rounded up to whole tiles ((width + TILE - 1) / TILE),
   each wrapper instance creating an allocation node (__hpvm__malloc of the tile, padded to
   TILE + PAD floats a row against shared-memory bank conflicts) and the tile's leaf,
   replicated TILE x TILE, which loads its element under the bounds guard, meets at
   __hpvm__barrier, then stores the transposed one under the guard. A std::vector host
   checks every element. -D PAD=1 is the article's padding; the tests also build it with
   the tile allocated unpadded (-D ALLOC_PAD=0) to see the overrun named. */
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "hpvm.h"

#ifndef TILE
#define TILE 8
#endif
#ifndef PAD
#define PAD 1
#endif
#ifndef ALLOC_PAD
#define ALLOC_PAD PAD
#endif

struct __attribute__((__packed__)) RootIn {
  float *idata;
  size_t bytes_idata;
  float *odata;
  size_t bytes_odata;
  long width;
  long height;
  size_t bytes_tile;
};

void tile_alloc(size_t bytes_tile) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void *tile = __hpvm__malloc(bytes_tile);
  __hpvm__return(2, tile, bytes_tile);
}

void transpose_tile(float *idata, size_t bytes_idata, float *odata, size_t bytes_odata, long width,
                    long height, float *tile, size_t bytes_tile) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(2, idata, tile, 2, odata, tile);
  void *self = __hpvm__getNode();
  void *block = __hpvm__getParentNode(self);
  long tx = __hpvm__getNodeInstanceID_x(self), ty = __hpvm__getNodeInstanceID_y(self);
  long bx = __hpvm__getNodeInstanceID_x(block), by = __hpvm__getNodeInstanceID_y(block);
  long x = bx * TILE + tx, y = by * TILE + ty;
  if (x < width && y < height) tile[ty * (TILE + PAD) + tx] = idata[y * width + x];  // @load
  __hpvm__barrier();
  x = by * TILE + tx;  // the transposed block's offset
  y = bx * TILE + ty;
  if (x < height && y < width) odata[y * height + x] = tile[tx * (TILE + PAD) + ty];
}

void transpose_block(float *idata, size_t bytes_idata, float *odata, size_t bytes_odata, long width,
                     long height, size_t bytes_tile) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, idata, 1, odata);
  void *alloc = __hpvm__createNodeND(0, tile_alloc);
  void *tile = __hpvm__createNodeND(2, transpose_tile, (long)TILE, (long)TILE);
  __hpvm__bindIn(alloc, 6, 0, 0);
  for (int p = 0; p < 6; p++) __hpvm__bindIn(tile, p, p, 0);
  __hpvm__edge(alloc, tile, 1, 0, 6, 0);
  __hpvm__edge(alloc, tile, 1, 1, 7, 0);
}

void transpose_root(float *idata, size_t bytes_idata, float *odata, size_t bytes_odata, long width,
                    long height, size_t bytes_tile) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, idata, 1, odata);
  void *grid = __hpvm__createNodeND(2, transpose_block, (width + TILE - 1) / TILE, (height + TILE - 1) / TILE);
  for (int p = 0; p < 7; p++) __hpvm__bindIn(grid, p, p, 0);
}

int main(int argc, char **argv) {
  long width = argc > 1 ? atol(argv[1]) : 37, height = argc > 2 ? atol(argv[2]) : 21;
  std::vector<float> idata(width * height), odata(width * height, -1.0f);
  for (long i = 0; i < width * height; i++) idata[i] = (float)((i * 7) % 101) - 50.0f;
  __hpvm__init();
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  *args = RootIn{idata.data(), idata.size() * sizeof(float), odata.data(), odata.size() * sizeof(float),
                 width,         height,                         TILE * (TILE + ALLOC_PAD) * sizeof(float)};
  llvm_hpvm_track_mem(idata.data(), args->bytes_idata);
  llvm_hpvm_track_mem(odata.data(), args->bytes_odata);
  void *graph = __hpvm__launch(0, transpose_root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(odata.data(), args->bytes_odata);
  long wrong = 0;
  for (long y = 0; y < height; y++)
    for (long x = 0; x < width; x++)
      if (odata[x * height + y] != idata[y * width + x]) wrong++;
  llvm_hpvm_untrack_mem(idata.data());
  llvm_hpvm_untrack_mem(odata.data());
  __hpvm__cleanup();
  free(args);
  printf("transpose %ldx%ld: %ld wrong\n", width, height, wrong);
  return wrong != 0;
}
