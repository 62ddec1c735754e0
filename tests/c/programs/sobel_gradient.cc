// Sobel gradient magnitude written as HPVM's pipeline benchmark writes its gradient stage,
// CUDA style: one 2-D leaf instance per pixel (x the fastest index), the grid rounded up to
// whole 8x8 blocks and the work under the bounds guard `if ((gx < n) && (gy < m))`, the
// eight neighbours read with their rows and columns clamped at the image's border (the
// clamps written out, as a CUDA port writes them, not as a loop), sqrtf of the two
// derivatives stored per pixel. A C++ host with std::vector computes the same magnitudes
// in the same order of operations and counts the pixels that differ.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "hpvm.h"

typedef struct __attribute__((__packed__)) {
  float *Is;
  size_t bytesIs;
  float *G;
  size_t bytesG;
  long m;
  long n;
  long gridx;
  long gridy;
} RootIn;

void computeGradient(float *Is, size_t bytesIs, float *G, size_t bytesG, long m, long n) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, Is, 1, G);
  void *thisNode = __hpvm__getNode();
  long gx = __hpvm__getNodeInstanceID_x(thisNode);
  long gy = __hpvm__getNodeInstanceID_y(thisNode);
  if ((gx < n) && (gy < m)) {
    long xl = gx > 0 ? gx - 1 : 0, xr = gx < n - 1 ? gx + 1 : n - 1;
    long yt = gy > 0 ? gy - 1 : 0, yb = gy < m - 1 ? gy + 1 : m - 1;
    float tl = Is[yt * n + xl], t = Is[yt * n + gx], tr = Is[yt * n + xr];
    float l = Is[gy * n + xl], r = Is[gy * n + xr];
    float bl = Is[yb * n + xl], b = Is[yb * n + gx], br = Is[yb * n + xr];
    float dx = (tr + 2.0f * r + br) - (tl + 2.0f * l + bl);
    float dy = (bl + 2.0f * b + br) - (tl + 2.0f * t + tr);
    G[gy * n + gx] = sqrtf(dx * dx + dy * dy);
  }
}

void gradientRoot(float *Is, size_t bytesIs, float *G, size_t bytesG, long m, long n, long gridx,
                  long gridy) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, Is, 1, G);
  void *node = __hpvm__createNodeND(2, computeGradient, gridx, gridy);
  for (int p = 0; p < 6; p++) __hpvm__bindIn(node, p, p, 0);
}

static float at(const std::vector<float> &I, long n, long m, long y, long x) {
  y = y < 0 ? 0 : (y > m - 1 ? m - 1 : y);
  x = x < 0 ? 0 : (x > n - 1 ? n - 1 : x);
  return I[y * n + x];
}

int main(int argc, char **argv) {
  long n = argc > 2 ? atol(argv[1]) : 37, m = argc > 2 ? atol(argv[2]) : 19;
  long gridx = (n + 7) / 8 * 8, gridy = (m + 7) / 8 * 8;  // whole 8x8 blocks
  std::vector<float> Is(n * m), G(n * m, -1.0f);
  for (long k = 0; k < n * m; k++) Is[k] = (float)((k * 37 + 11) % 256) / 255.0f;
  size_t bytes = n * m * sizeof(float);
  __hpvm__init();
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  *args = RootIn{Is.data(), bytes, G.data(), bytes, m, n, gridx, gridy};
  llvm_hpvm_track_mem(Is.data(), bytes);
  llvm_hpvm_track_mem(G.data(), bytes);
  void *graph = __hpvm__launch(0, gradientRoot, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(G.data(), bytes);
  int bad = 0;
  for (long y = 0; y < m; y++)
    for (long x = 0; x < n; x++) {
      float dx = (at(Is, n, m, y - 1, x + 1) + 2.0f * at(Is, n, m, y, x + 1) + at(Is, n, m, y + 1, x + 1)) -
                 (at(Is, n, m, y - 1, x - 1) + 2.0f * at(Is, n, m, y, x - 1) + at(Is, n, m, y + 1, x - 1));
      float dy = (at(Is, n, m, y + 1, x - 1) + 2.0f * at(Is, n, m, y + 1, x) + at(Is, n, m, y + 1, x + 1)) -
                 (at(Is, n, m, y - 1, x - 1) + 2.0f * at(Is, n, m, y - 1, x) + at(Is, n, m, y - 1, x + 1));
      if (G[y * n + x] != sqrtf(dx * dx + dy * dy)) bad++;
    }
  llvm_hpvm_untrack_mem(Is.data());
  llvm_hpvm_untrack_mem(G.data());
  __hpvm__cleanup();
  free(args);
  std::printf("sobel gradient %ldx%ld: %d wrong\n", n, m, bad);
  return bad != 0;
}
