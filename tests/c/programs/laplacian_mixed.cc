// A 2-D Laplacian and its sum, written as HPVM's C++ benchmarks write graphs: a CPU wrapper
// node (seed 001's DFG2LLVM_CPU runs it on the host) holding a GPU-hinted leaf replicated
// over the image in the CUDA convention (x the fastest index, a flattened y * w + x) and a
// CPU-hinted leaf that reduces its output; the array travels over an edge with its size,
// the sum is the wrapper's and the root's output, read from the packed argument struct.
// The host is C++ (std::vector, a lambda, std::accumulate) and checks both results.
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>
#include "hpvm.h"

struct RetTy {
  long sum;
};

struct RootIn {
  int *img;
  size_t bytes_img;
  int *lap;
  size_t bytes_lap;
  long w;
  long h;
  RetTy r;
} __attribute__((__packed__));

struct LapOut {
  int *lap;
  size_t bytes_lap;
} __attribute__((__packed__));

void laplacian(int *img, size_t bytes_img, int *lap, size_t bytes_lap, long w, long h) {
  __hpvm__hint(hpvm::GPU_TARGET);
  __hpvm__attributes(1, img, 1, lap);
  void *self = __hpvm__getNode();
  long x = __hpvm__getNodeInstanceID_x(self);
  long y = __hpvm__getNodeInstanceID_y(self);
  long at = y * w + x;
  int v = 0;
  if (x > 0 && x < w - 1 && y > 0 && y < h - 1)
    v = 4 * img[at] - img[at - 1] - img[at + 1] - img[at - w] - img[at + w];
  lap[at] = v;
  __hpvm__return(2, lap, bytes_lap);
}

void sum_cpu(int *lap, size_t bytes_lap) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, lap, 0);
  long s = 0;
  for (size_t i = 0; i < bytes_lap / sizeof(int); i++) s += lap[i];
  __hpvm__return(1, s);
}

void wrapper(int *img, size_t bytes_img, int *lap, size_t bytes_lap, long w, long h) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, img, lap, 1, lap);
  void *stencil = __hpvm__createNodeND(2, laplacian, w, h);
  void *total = __hpvm__createNodeND(0, sum_cpu);
  for (int p = 0; p < 6; p++) __hpvm__bindIn(stencil, p, p, 0);
  __hpvm__edge(stencil, total, 1, 0, 0, 0);
  __hpvm__edge(stencil, total, 1, 1, 1, 0);
  __hpvm__bindOut(total, 0, 0, 0);
}

void root(int *img, size_t bytes_img, int *lap, size_t bytes_lap, long w, long h) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, img, lap, 1, lap);
  void *inner = __hpvm__createNodeND(0, wrapper);
  for (int p = 0; p < 6; p++) __hpvm__bindIn(inner, p, p, 0);
  __hpvm__bindOut(inner, 0, 0, 0);
}

int main(int argc, char **argv) {
  const long w = argc > 1 ? std::atol(argv[1]) : 37, h = argc > 2 ? std::atol(argv[2]) : 23;
  const size_t bytes = size_t(w * h) * sizeof(int);
  std::vector<int> img(w * h), lap(w * h, -1), want(w * h, 0);
  for (long k = 0; k < w * h; k++) img[k] = int((k * 7919) % 61) - 30;
  auto at = [&](long x, long y) { return img[y * w + x]; };
  for (long y = 1; y < h - 1; y++)
    for (long x = 1; x < w - 1; x++)
      want[y * w + x] = 4 * at(x, y) - at(x - 1, y) - at(x + 1, y) - at(x, y - 1) - at(x, y + 1);
  __hpvm__init();
  RootIn *args = static_cast<RootIn *>(std::malloc(sizeof(RootIn)));
  args->img = img.data();
  args->bytes_img = bytes;
  args->lap = lap.data();
  args->bytes_lap = bytes;
  args->w = w;
  args->h = h;
  llvm_hpvm_track_mem(img.data(), bytes);
  llvm_hpvm_track_mem(lap.data(), bytes);
  void *graph = __hpvm__launch(0, root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(lap.data(), bytes);
  int bad = 0;
  for (long k = 0; k < w * h; k++) bad += lap[k] != want[k];
  long expected = std::accumulate(want.begin(), want.end(), 0L);
  llvm_hpvm_untrack_mem(img.data());
  llvm_hpvm_untrack_mem(lap.data());
  __hpvm__cleanup();
  std::printf("laplacian %ldx%ld: %d wrong, sum %ld (expected %ld)\n", w, h, bad, args->r.sum, expected);
  int status = bad != 0 || args->r.sum != expected;
  std::free(args);
  return status;
}
