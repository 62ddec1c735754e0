/* A 3x3 convolution with a shared tile and halo cells (Kirk and Hwu's tiled convolution, as
   CUDA's image-processing samples write it), in HPVM's style: the root replicates a wrapper
   over the grid of blocks, rounded up to whole blocks; each wrapper instance creates an
   allocation node (__hpvm__malloc of the (BLOCK_Y + 2) x (BLOCK_X + 2) tile) and the
   block's leaf, replicated BLOCK_X x BLOCK_Y (not square: x and y must not be mixed up).
   The leaf's instances load the tile together, each a strided loop over the tile's cells
   (its trip count depends on the instance: more cells than instances), clamping reads to
   the image's edge; meet at __hpvm__barrier; then each computes its pixel under the
   bounds guard. The host (std::vector) computes the same sums and counts the pixels that
   differ. The tests also build it with the halo forgotten in the tile's allocation
   (-D ALLOC_CELLS=BLOCK_X*BLOCK_Y) to see the overrun named. */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "conv_weights.h"
#include "hpvm.h"

struct __attribute__((__packed__)) RootIn {
  float *in;
  size_t bytes_in;
  float *out;
  size_t bytes_out;
  long width;
  long height;
  size_t bytes_tile;
};

void tile_alloc(size_t bytes_tile) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void *tile = __hpvm__malloc(bytes_tile);
  __hpvm__return(2, tile, bytes_tile);
}

static long clamp(long v, long hi) { return std::min(std::max(v, 0L), hi - 1); }

void conv_block(float *in, size_t bytes_in, float *out, size_t bytes_out, long width, long height,
                float *tile, size_t bytes_tile) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(2, in, tile, 2, out, tile);
  void *self = __hpvm__getNode();
  void *block = __hpvm__getParentNode(self);
  long lx = __hpvm__getNodeInstanceID_x(self), ly = __hpvm__getNodeInstanceID_y(self);
  long bx = __hpvm__getNodeInstanceID_x(block), by = __hpvm__getNodeInstanceID_y(block);
  long x0 = bx * BLOCK_X - RADIUS, y0 = by * BLOCK_Y - RADIUS;  // the tile's corner
  for (long i = ly * BLOCK_X + lx; i < TILE_W * TILE_H; i += BLOCK_X * BLOCK_Y) {
    long tx = i % TILE_W, ty = i / TILE_W;
    tile[i] = in[clamp(y0 + ty, height) * width + clamp(x0 + tx, width)];  // @store
  }
  __hpvm__barrier();
  long x = bx * BLOCK_X + lx, y = by * BLOCK_Y + ly;
  if (x < width && y < height) {
    float sum = 0.0f;
    for (int dy = 0; dy < 3; dy++)
      for (int dx = 0; dx < 3; dx++) sum += kWeights[dy][dx] * tile[(ly + dy) * TILE_W + lx + dx];
    out[y * width + x] = sum;
  }
}

void conv_group(float *in, size_t bytes_in, float *out, size_t bytes_out, long width, long height,
                size_t bytes_tile) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 1, out);
  void *alloc = __hpvm__createNodeND(0, tile_alloc);
  void *conv = __hpvm__createNodeND(2, conv_block, (long)BLOCK_X, (long)BLOCK_Y);
  __hpvm__bindIn(alloc, 6, 0, 0);
  for (int p = 0; p < 6; p++) __hpvm__bindIn(conv, p, p, 0);
  __hpvm__edge(alloc, conv, 1, 0, 6, 0);
  __hpvm__edge(alloc, conv, 1, 1, 7, 0);
}

void conv_root(float *in, size_t bytes_in, float *out, size_t bytes_out, long width, long height,
               size_t bytes_tile) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 1, out);
  void *grid = __hpvm__createNodeND(2, conv_group, (width + BLOCK_X - 1) / BLOCK_X,
                                    (height + BLOCK_Y - 1) / BLOCK_Y);
  for (int p = 0; p < 7; p++) __hpvm__bindIn(grid, p, p, 0);
}

int main(int argc, char **argv) {
  long width = argc > 1 ? atol(argv[1]) : 45, height = argc > 2 ? atol(argv[2]) : 19;
  std::vector<float> in(width * height), out(width * height, -1.0f), want(width * height);
  for (long i = 0; i < width * height; i++) in[i] = (float)((i * 13) % 29) - 14.0f;
  for (long y = 0; y < height; y++)
    for (long x = 0; x < width; x++) {
      float sum = 0.0f;
      for (int dy = 0; dy < 3; dy++)
        for (int dx = 0; dx < 3; dx++)
          sum += kWeights[dy][dx] * in[clamp(y + dy - 1, height) * width + clamp(x + dx - 1, width)];
      want[y * width + x] = sum;
    }
  __hpvm__init();
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  *args = RootIn{in.data(), in.size() * sizeof(float), out.data(), out.size() * sizeof(float),
                 width,     height,                    ALLOC_CELLS * sizeof(float)};
  llvm_hpvm_track_mem(in.data(), args->bytes_in);
  llvm_hpvm_track_mem(out.data(), args->bytes_out);
  void *graph = __hpvm__launch(0, conv_root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(out.data(), args->bytes_out);
  long wrong = 0;
  for (long i = 0; i < width * height; i++)
    if (out[i] != want[i]) wrong++;
  llvm_hpvm_untrack_mem(in.data());
  llvm_hpvm_untrack_mem(out.data());
  __hpvm__cleanup();
  free(args);
  printf("conv %ldx%ld: %ld wrong\n", width, height, wrong);
  return wrong != 0;
}
