// Heat diffusion over a plate, written as HPVM's Parboil ports write an iterative kernel (the
// stencil's main loop): two std::vector buffers tracked once, and for each sweep one
// __hpvm__launch + __hpvm__wait of the same graph, the host swapping the buffers' pointers
// in the argument struct between sweeps. The graph is a wrapper node that replicates a leaf
// 2-D over a grid rounded up to whole 8x8 blocks, the leaf's body under the bounds guard
// `if ((gx < n) && (gy < m))` (x the column, the fastest index); the plate's edge is held at
// its first values. The host then runs the same sweeps itself and counts the points that
// differ by more than a rounding.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>
#include "hpvm.h"

typedef struct __attribute__((__packed__)) {
  float *src;       // 0
  size_t bytesSrc;  // 1
  float *dst;       // 2
  size_t bytesDst;  // 3
  float alpha;      // 4
  long m;           // 5
  long n;           // 6
  long gridx;       // 7
  long gridy;       // 8
} RootIn;

void heatStep(float *src, size_t bytesSrc, float *dst, size_t bytesDst, float alpha, long m, long n) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, src, 1, dst);
  void *thisNode = __hpvm__getNode();
  long gx = __hpvm__getNodeInstanceID_x(thisNode);
  long gy = __hpvm__getNodeInstanceID_y(thisNode);
  if ((gx < n) && (gy < m)) {
    long i = gy * n + gx;
    if (gx == 0 || gy == 0 || gx == n - 1 || gy == m - 1) {
      dst[i] = src[i];  // the edge: held
    } else {
      float lap = src[i - 1] + src[i + 1] + src[i - n] + src[i + n] - 4.0f * src[i];
      dst[i] = src[i] + alpha * lap;
    }
  }
}

void WrapperHeat(float *src, size_t bytesSrc, float *dst, size_t bytesDst, float alpha, long m, long n,
                 long gridx, long gridy) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, src, 1, dst);
  void *node = __hpvm__createNodeND(2, heatStep, gridx, gridy);
  for (int p = 0; p < 7; p++) __hpvm__bindIn(node, p, p, 0);
}

void heatRoot(float *src, size_t bytesSrc, float *dst, size_t bytesDst, float alpha, long m, long n, long gridx,
              long gridy) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, src, 1, dst);
  void *node = __hpvm__createNodeND(0, WrapperHeat);
  for (int p = 0; p < 9; p++) __hpvm__bindIn(node, p, p, 0);
}

static void reference(std::vector<float> &a, std::vector<float> &b, float alpha, long m, long n, int sweeps) {
  for (int s = 0; s < sweeps; s++) {
    for (long y = 0; y < m; y++)
      for (long x = 0; x < n; x++) {
        long i = y * n + x;
        if (x == 0 || y == 0 || x == n - 1 || y == m - 1) {
          b[i] = a[i];
        } else {
          float lap = a[i - 1] + a[i + 1] + a[i - n] + a[i + n] - 4.0f * a[i];
          b[i] = a[i] + alpha * lap;
        }
      }
    std::swap(a, b);
  }
}

int main(int argc, char **argv) {
  long n = argc > 3 ? atol(argv[1]) : 37, m = argc > 3 ? atol(argv[2]) : 19;
  int sweeps = argc > 3 ? atoi(argv[3]) : 12;
  long gridx = (n + 7) / 8 * 8, gridy = (m + 7) / 8 * 8;  // whole 8x8 blocks
  size_t bytes = n * m * sizeof(float);
  const float alpha = 0.2f;
  std::vector<float> a(n * m), b(n * m, 0.0f);
  for (long k = 0; k < n * m; k++) a[k] = (float)((k * 53 + 7) % 97) / 97.0f;
  std::vector<float> wantA(a), wantB(b);

  __hpvm__init();
  llvm_hpvm_track_mem(a.data(), bytes);
  llvm_hpvm_track_mem(b.data(), bytes);
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  float *src = a.data(), *dst = b.data();
  for (int s = 0; s < sweeps; s++) {
    *args = RootIn{src, bytes, dst, bytes, alpha, m, n, gridx, gridy};
    void *launch = __hpvm__launch(0, heatRoot, (void *)args);
    __hpvm__wait(launch);
    std::swap(src, dst);
  }
  llvm_hpvm_request_mem(src, bytes);
  reference(wantA, wantB, alpha, m, n, sweeps);  // (its result in wantA: swapped each sweep)
  int bad = 0;
  for (long k = 0; k < n * m; k++)
    if (std::fabs(src[k] - wantA[k]) > 1e-5f) bad++;
  llvm_hpvm_untrack_mem(a.data());
  llvm_hpvm_untrack_mem(b.data());
  free(args);
  __hpvm__cleanup();
  std::printf("heat %ldx%ld, %d sweeps: %d wrong\n", n, m, sweeps, bad);
  return bad != 0;
}
