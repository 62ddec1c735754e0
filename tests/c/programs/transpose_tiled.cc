// A tiled matrix transpose written as HPVM's C++ benchmarks (and the CUDA SDK's transpose)
// write barrier code: the root replicates a wrapper over the grid of tiles (2-D, x the
// fastest index), each wrapper instance creates an allocation node (__hpvm__malloc of a
// (TILE+1)-wide padded tile, as HPVM's local memory) and the copy leaf replicated TILE x TILE,
// which reads its element of the input tile row by row, meets its group at __hpvm__barrier,
// and writes the transposed tile row by row (both global accesses x-contiguous, as a GPU
// kernel coalesces them). Edges of a matrix that is not a multiple of TILE are guarded.
// A C++ host with std::vector checks every element.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "hpvm.h"

#define TILE 8

typedef struct __attribute__((__packed__)) {
  float *in;
  size_t bytes_in;
  float *out;
  size_t bytes_out;
  long w;
  long h;
  size_t bytes_tile;
} RootIn;

void tile_alloc(size_t bytes_tile) {
  __hpvm__hint(hpvm::CPU_TARGET);
  void *tile = __hpvm__malloc(bytes_tile);
  __hpvm__return(2, tile, bytes_tile);
}

void transpose_tile(float *in, size_t bytes_in, float *out, size_t bytes_out, long w, long h, float *tile,
                    size_t bytes_tile) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, in, tile, 2, out, tile);
  void *self = __hpvm__getNode();
  void *group = __hpvm__getParentNode(self);
  long tx = __hpvm__getNodeInstanceID_x(self), ty = __hpvm__getNodeInstanceID_y(self);
  long bx = __hpvm__getNodeInstanceID_x(group), by = __hpvm__getNodeInstanceID_y(group);
  long x = bx * TILE + tx, y = by * TILE + ty;
  if (x < w && y < h)
    tile[ty * (TILE + 1) + tx] = in[y * w + x];
  __hpvm__barrier();
  long ox = by * TILE + tx, oy = bx * TILE + ty;  // the output tile: rows and columns swapped
  if (ox < h && oy < w)
    out[oy * h + ox] = tile[tx * (TILE + 1) + ty];
}

void transpose_group(float *in, size_t bytes_in, float *out, size_t bytes_out, long w, long h,
                     size_t bytes_tile) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 1, out);
  void *alloc = __hpvm__createNodeND(0, tile_alloc);
  void *copy = __hpvm__createNodeND(2, transpose_tile, (long)TILE, (long)TILE);
  __hpvm__bindIn(alloc, 6, 0, 0);
  for (int p = 0; p < 6; p++)
    __hpvm__bindIn(copy, p, p, 0);
  __hpvm__edge(alloc, copy, 1, 0, 6, 0);
  __hpvm__edge(alloc, copy, 1, 1, 7, 0);
}

void transpose_root(float *in, size_t bytes_in, float *out, size_t bytes_out, long w, long h,
                    size_t bytes_tile) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 1, out);
  void *grid = __hpvm__createNodeND(2, transpose_group, (w + TILE - 1) / TILE, (h + TILE - 1) / TILE);
  for (int p = 0; p < 7; p++)
    __hpvm__bindIn(grid, p, p, 0);
}

int main(int argc, char **argv) {
  long w = argc > 2 ? atol(argv[1]) : 37, h = argc > 2 ? atol(argv[2]) : 21;
  std::vector<float> in(w * h), out(w * h, -1.0f);
  for (long i = 0; i < w * h; i++) in[i] = (float)(i * 3 % 101) - 50.0f;
  __hpvm__init();
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  size_t bytes = w * h * sizeof(float);
  *args = RootIn{in.data(), bytes, out.data(), bytes, w, h, TILE * (TILE + 1) * sizeof(float)};
  llvm_hpvm_track_mem(in.data(), bytes);
  llvm_hpvm_track_mem(out.data(), bytes);
  void *graph = __hpvm__launch(0, transpose_root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(out.data(), bytes);
  int bad = 0;
  for (long y = 0; y < h; y++)
    for (long x = 0; x < w; x++)
      if (out[x * h + y] != in[y * w + x]) bad++;
  llvm_hpvm_untrack_mem(in.data());
  llvm_hpvm_untrack_mem(out.data());
  __hpvm__cleanup();
  free(args);
  std::printf("transpose %ldx%ld: %d wrong\n", w, h, bad);
  return bad != 0;
}
