// Gaussian smoothing written as HPVM's pipeline benchmark writes its first stage: one 2-D
// leaf instance per pixel in the CUDA convention (x the fastest index), the whole body under
// the bounds guard `if ((gx < n) && (gy < m))` because the grid is rounded up to whole
// 8x8 blocks, and a loop over the filter window (its size a parameter, m_Gf x n_Gf, as the
// benchmark passes it) that every instance runs alike, reading the image with clamped
// borders and the filter from a second array. A C++ host with std::vector builds a
// normalized filter (5x5 unless told), smooths the image itself in the same order of
// operations, and counts the pixels that differ.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "hpvm.h"

typedef struct __attribute__((__packed__)) {
  float *I;
  size_t bytesI;
  float *Gs;
  size_t bytesGs;
  float *Gf;
  size_t bytesGf;
  long m;
  long n;
  long m_Gf;
  long n_Gf;
  long gridx;
  long gridy;
} RootIn;

void gaussianSmoothing(float *I, size_t bytesI, float *Gs, size_t bytesGs, float *Gf, size_t bytesGf,
                       long m, long n, long m_Gf, long n_Gf) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, I, Gf, 1, Gs);
  void *thisNode = __hpvm__getNode();
  long gx = __hpvm__getNodeInstanceID_x(thisNode);
  long gy = __hpvm__getNodeInstanceID_y(thisNode);
  if ((gx < n) && (gy < m)) {
    float smoothedVal = 0;
    for (long i = -m_Gf / 2; i <= m_Gf / 2; i++) {
      for (long j = -n_Gf / 2; j <= n_Gf / 2; j++) {
        long y = gy + i < 0 ? 0 : (gy + i > m - 1 ? m - 1 : gy + i);
        long x = gx + j < 0 ? 0 : (gx + j > n - 1 ? n - 1 : gx + j);
        smoothedVal += I[y * n + x] * Gf[(i + m_Gf / 2) * n_Gf + j + n_Gf / 2];
      }
    }
    Gs[gy * n + gx] = smoothedVal;
  }
}

void smoothRoot(float *I, size_t bytesI, float *Gs, size_t bytesGs, float *Gf, size_t bytesGf, long m,
                long n, long m_Gf, long n_Gf, long gridx, long gridy) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, I, Gf, 1, Gs);
  void *node = __hpvm__createNodeND(2, gaussianSmoothing, gridx, gridy);
  for (int p = 0; p < 10; p++) __hpvm__bindIn(node, p, p, 0);
}

static std::vector<float> filter(long size) {
  std::vector<float> g(size * size);
  float sum = 0;
  for (long i = 0; i < size; i++)
    for (long j = 0; j < size; j++) {
      float d = (float)((i - size / 2) * (i - size / 2) + (j - size / 2) * (j - size / 2));
      g[i * size + j] = std::exp(-d / 2.0f);
      sum += g[i * size + j];
    }
  for (float &v : g) v /= sum;
  return g;
}

int main(int argc, char **argv) {
  long n = argc > 2 ? atol(argv[1]) : 45, m = argc > 2 ? atol(argv[2]) : 21;
  long size = argc > 3 ? atol(argv[3]) : 5;
  long gridx = (n + 7) / 8 * 8, gridy = (m + 7) / 8 * 8;  // whole 8x8 blocks
  std::vector<float> I(n * m), Gs(n * m, -1.0f), Gf = filter(size);
  for (long k = 0; k < n * m; k++) I[k] = (float)((k * 29 + 7) % 251) / 251.0f;
  size_t bytes = n * m * sizeof(float), bytesGf = Gf.size() * sizeof(float);
  __hpvm__init();
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  *args = RootIn{I.data(), bytes, Gs.data(), bytes, Gf.data(), bytesGf, m, n, size, size, gridx, gridy};
  llvm_hpvm_track_mem(I.data(), bytes);
  llvm_hpvm_track_mem(Gs.data(), bytes);
  llvm_hpvm_track_mem(Gf.data(), bytesGf);
  void *graph = __hpvm__launch(0, smoothRoot, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(Gs.data(), bytes);
  int bad = 0;
  for (long gy = 0; gy < m; gy++)
    for (long gx = 0; gx < n; gx++) {
      float want = 0;
      for (long i = -size / 2; i <= size / 2; i++)
        for (long j = -size / 2; j <= size / 2; j++) {
          long y = gy + i < 0 ? 0 : (gy + i > m - 1 ? m - 1 : gy + i);
          long x = gx + j < 0 ? 0 : (gx + j > n - 1 ? n - 1 : gx + j);
          want += I[y * n + x] * Gf[(i + size / 2) * size + j + size / 2];
        }
      if (Gs[gy * n + gx] != want) bad++;
    }
  llvm_hpvm_untrack_mem(I.data());
  llvm_hpvm_untrack_mem(Gs.data());
  llvm_hpvm_untrack_mem(Gf.data());
  __hpvm__cleanup();
  free(args);
  std::printf("gaussian smoothing %ldx%ld, %ldx%ld filter: %d wrong\n", n, m, size, size, bad);
  return bad != 0;
}
