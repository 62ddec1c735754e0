// Parboil's MRI-Q (ComputeQ) written as HPVM's benchmarks write their kernels: one leaf
// instance per voxel on a 1-D grid rounded up to whole blocks of 8, the whole body under
// `if (t < numX)`, and a loop over every k-space sample that each instance runs alike
// (the sample's coordinates and phi magnitude read from arrays of their own, the
// structure-of-arrays form the GPU version uses), accumulating cos and sin terms. A C++
// host with std::vector makes the samples, computes Q itself and counts the voxels off by
// more than Parboil's tolerance (its own check compares against a reference output file).
// (mriq.c is the two-leaf C version, launching exactly numX instances: here the guard
// fails in the last block, as it does for a CUDA launch of whole blocks.)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "hpvm.h"

#define PIx2 6.2831853071795864769252867665590058f

typedef struct __attribute__((__packed__)) {
  float *kx;
  size_t bytes_kx;
  float *ky;
  size_t bytes_ky;
  float *kz;
  size_t bytes_kz;
  float *phiMag;
  size_t bytes_phiMag;
  float *x;
  size_t bytes_x;
  float *y;
  size_t bytes_y;
  float *z;
  size_t bytes_z;
  float *Qr;
  size_t bytes_Qr;
  float *Qi;
  size_t bytes_Qi;
  int numK;
  int numX;
  long grid;
} RootIn;

void ComputeQ_kernel(float *kx, size_t bytes_kx, float *ky, size_t bytes_ky, float *kz, size_t bytes_kz,
                     float *phiMag, size_t bytes_phiMag, float *x, size_t bytes_x, float *y, size_t bytes_y,
                     float *z, size_t bytes_z, float *Qr, size_t bytes_Qr, float *Qi, size_t bytes_Qi,
                     int numK, int numX) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(7, kx, ky, kz, phiMag, x, y, z, 2, Qr, Qi);
  void *thisNode = __hpvm__getNode();
  long t = __hpvm__getNodeInstanceID_x(thisNode);
  if (t < numX) {
    float sX = x[t], sY = y[t], sZ = z[t];
    float sQr = 0.0f, sQi = 0.0f;
    for (int k = 0; k < numK; k++) {
      float expArg = PIx2 * (kx[k] * sX + ky[k] * sY + kz[k] * sZ);
      sQr += phiMag[k] * cosf(expArg);
      sQi += phiMag[k] * sinf(expArg);
    }
    Qr[t] = sQr;
    Qi[t] = sQi;
  }
}

void ComputeQ_root(float *kx, size_t bytes_kx, float *ky, size_t bytes_ky, float *kz, size_t bytes_kz,
                   float *phiMag, size_t bytes_phiMag, float *x, size_t bytes_x, float *y, size_t bytes_y,
                   float *z, size_t bytes_z, float *Qr, size_t bytes_Qr, float *Qi, size_t bytes_Qi, int numK,
                   int numX, long grid) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(7, kx, ky, kz, phiMag, x, y, z, 2, Qr, Qi);
  void *node = __hpvm__createNodeND(1, ComputeQ_kernel, grid);
  for (int p = 0; p < 20; p++) __hpvm__bindIn(node, p, p, 0);
}

int main(int argc, char **argv) {
  int numX = argc > 2 ? atoi(argv[1]) : 61, numK = argc > 2 ? atoi(argv[2]) : 37;
  long grid = (numX + 7) / 8 * 8;  // whole blocks of 8
  std::vector<float> kx(numK), ky(numK), kz(numK), phiMag(numK), x(numX), y(numX), z(numX);
  std::vector<float> Qr(numX, -1.0f), Qi(numX, -1.0f);
  for (int k = 0; k < numK; k++) {
    kx[k] = (float)((k * 13) % 29) / 29.0f - 0.5f;
    ky[k] = (float)((k * 7) % 31) / 31.0f - 0.5f;
    kz[k] = (float)((k * 5) % 23) / 23.0f - 0.5f;
    phiMag[k] = (float)((k * 11) % 17) / 17.0f;
  }
  for (int i = 0; i < numX; i++) {
    x[i] = (float)((i * 3) % 41) / 8.0f;
    y[i] = (float)((i * 19) % 43) / 8.0f;
    z[i] = (float)((i * 23) % 47) / 8.0f;
  }
  size_t kb = numK * sizeof(float), xb = numX * sizeof(float);
  __hpvm__init();
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  *args = RootIn{kx.data(), kb, ky.data(), kb, kz.data(), kb, phiMag.data(), kb, x.data(), xb, y.data(), xb,
                 z.data(), xb, Qr.data(), xb, Qi.data(), xb, numK, numX, grid};
  for (std::vector<float> *v : {&kx, &ky, &kz, &phiMag}) llvm_hpvm_track_mem(v->data(), kb);
  for (std::vector<float> *v : {&x, &y, &z, &Qr, &Qi}) llvm_hpvm_track_mem(v->data(), xb);
  void *graph = __hpvm__launch(0, ComputeQ_root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(Qr.data(), xb);
  llvm_hpvm_request_mem(Qi.data(), xb);
  int bad = 0;
  for (int t = 0; t < numX; t++) {
    double wr = 0, wi = 0;
    for (int k = 0; k < numK; k++) {
      double arg = 2.0 * M_PI * ((double)kx[k] * x[t] + (double)ky[k] * y[t] + (double)kz[k] * z[t]);
      wr += phiMag[k] * std::cos(arg);
      wi += phiMag[k] * std::sin(arg);
    }
    if (std::fabs(Qr[t] - wr) > 1e-3 * (1 + std::fabs(wr)) || std::fabs(Qi[t] - wi) > 1e-3 * (1 + std::fabs(wi)))
      bad++;
  }
  for (std::vector<float> *v : {&kx, &ky, &kz, &phiMag, &x, &y, &z, &Qr, &Qi}) llvm_hpvm_untrack_mem(v->data());
  __hpvm__cleanup();
  free(args);
  std::printf("mri-q %d voxels, %d samples: %d wrong\n", numX, numK, bad);
  return bad != 0;
}
