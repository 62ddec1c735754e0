// MRI-Q (parboil's mri-q) written as HPVM's benchmarks write it: two DEVICE leaves in the
// CUDA convention, ComputePhiMag (one k-space sample per instance) and ComputeQ (one voxel
// per instance, a loop over every sample with sinf/cosf), the first's completion reaching
// the second over an all-to-all edge that carries phiMag's size (__hpvm__return), both
// under a root that binds the rest; a packed RootIn struct, a C host with a fixed LCG
// and a double-precision reference. Usage: mriq [numK [numX]]
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"

#define PIx2 6.2831853071795864769f

typedef struct __attribute__((__packed__)) {
  float *phiR; size_t bytes_phiR;
  float *phiI; size_t bytes_phiI;
  float *phiMag; size_t bytes_phiMag;
  int numK;
  float *kx; size_t bytes_kx;
  float *ky; size_t bytes_ky;
  float *kz; size_t bytes_kz;
  float *x; size_t bytes_x;
  float *y; size_t bytes_y;
  float *z; size_t bytes_z;
  float *Qr; size_t bytes_Qr;
  float *Qi; size_t bytes_Qi;
  int numX;
} RootIn;

void ComputePhiMag(float *phiR, size_t bytes_phiR, float *phiI, size_t bytes_phiI, float *phiMag,
                   size_t bytes_phiMag, int numK) {
  __hpvm__hint(DEVICE);
  __hpvm__attributes(2, phiR, phiI, 1, phiMag);
  void *thisNode = __hpvm__getNode();
  int indexK = __hpvm__getNodeInstanceID_x(thisNode);
  if (indexK < numK) {
    float real = phiR[indexK];
    float imag = phiI[indexK];
    phiMag[indexK] = real * real + imag * imag;
  }
  __hpvm__return(1, bytes_phiMag);
}

void ComputeQ(float *phiMag, size_t bytes_phiMag, int numK, float *kx, size_t bytes_kx, float *ky,
              size_t bytes_ky, float *kz, size_t bytes_kz, float *x, size_t bytes_x, float *y, size_t bytes_y,
              float *z, size_t bytes_z, float *Qr, size_t bytes_Qr, float *Qi, size_t bytes_Qi, int numX) {
  __hpvm__hint(DEVICE);
  __hpvm__attributes(7, phiMag, kx, ky, kz, x, y, z, 2, Qr, Qi);
  void *thisNode = __hpvm__getNode();
  int indexX = __hpvm__getNodeInstanceID_x(thisNode);
  if (indexX < numX) {
    float sX = x[indexX], sY = y[indexX], sZ = z[indexX];
    float sQr = 0.0f, sQi = 0.0f;
    for (int indexK = 0; indexK < numK; indexK++) {
      float expArg = PIx2 * (kx[indexK] * sX + ky[indexK] * sY + kz[indexK] * sZ);
      float cosArg = cosf(expArg);
      float sinArg = sinf(expArg);
      float phi = phiMag[indexK];
      sQr += phi * cosArg;
      sQi += phi * sinArg;
    }
    Qr[indexX] = sQr;
    Qi[indexX] = sQi;
  }
}

void MriqRoot(float *phiR, size_t bytes_phiR, float *phiI, size_t bytes_phiI, float *phiMag, size_t bytes_phiMag,
              int numK, float *kx, size_t bytes_kx, float *ky, size_t bytes_ky, float *kz, size_t bytes_kz,
              float *x, size_t bytes_x, float *y, size_t bytes_y, float *z, size_t bytes_z, float *Qr,
              size_t bytes_Qr, float *Qi, size_t bytes_Qi, int numX) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(9, phiR, phiI, phiMag, kx, ky, kz, x, y, z, 3, phiMag, Qr, Qi);
  void *phiNode = __hpvm__createNodeND(1, ComputePhiMag, (size_t)numK);
  void *qNode = __hpvm__createNodeND(1, ComputeQ, (size_t)numX);
  for (int p = 0; p < 7; p++) __hpvm__bindIn(phiNode, p, p, 0);
  __hpvm__bindIn(qNode, 4, 0, 0);                        // phiMag (its size comes over the edge)
  __hpvm__edge(phiNode, qNode, 1, 0, 1, 0);              // all-to-all: every sample's magnitude first
  for (int p = 6; p < 24; p++) __hpvm__bindIn(qNode, p, p - 4, 0);  // numK, k, voxels, Q, numX
}

static unsigned lcg(unsigned *s) { return *s = *s * 1664525u + 1013904223u; }
static float unit(unsigned *s) { return (float)(lcg(s) >> 8) / 16777216.0f - 0.5f; }

int main(int argc, char **argv) {
  int numK = argc > 1 ? atoi(argv[1]) : 256, numX = argc > 2 ? atoi(argv[2]) : 1000;
  unsigned seed = 2026;
  size_t bk = numK * sizeof(float), bx = numX * sizeof(float);
  float *phiR = malloc(bk), *phiI = malloc(bk), *phiMag = malloc(bk), *kx = malloc(bk), *ky = malloc(bk),
        *kz = malloc(bk), *x = malloc(bx), *y = malloc(bx), *z = malloc(bx), *Qr = malloc(bx), *Qi = malloc(bx);
  for (int k = 0; k < numK; k++) {
    phiR[k] = unit(&seed); phiI[k] = unit(&seed);
    kx[k] = unit(&seed); ky[k] = unit(&seed); kz[k] = unit(&seed);
  }
  for (int i = 0; i < numX; i++) { x[i] = unit(&seed); y[i] = unit(&seed); z[i] = unit(&seed); }
  __hpvm__init();
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  *args = (RootIn){phiR, bk, phiI, bk, phiMag, bk, numK, kx, bk, ky, bk, kz, bk, x, bx, y, bx, z, bx, Qr, bx, Qi, bx, numX};
  float *all[] = {phiR, phiI, phiMag, kx, ky, kz, x, y, z, Qr, Qi};
  for (int a = 0; a < 11; a++) llvm_hpvm_track_mem(all[a], a < 6 ? bk : bx);
  void *dfg = __hpvm__launch(0, MriqRoot, (void *)args);
  __hpvm__wait(dfg);
  llvm_hpvm_request_mem(Qr, bx);
  llvm_hpvm_request_mem(Qi, bx);
  for (int a = 0; a < 11; a++) llvm_hpvm_untrack_mem(all[a]);
  __hpvm__cleanup();
  int bad = 0;
  for (int i = 0; i < numX; i++) {
    double r = 0, im = 0;
    for (int k = 0; k < numK; k++) {
      double arg = 2 * M_PI * ((double)kx[k] * x[i] + (double)ky[k] * y[i] + (double)kz[k] * z[i]);
      double mag = (double)phiR[k] * phiR[k] + (double)phiI[k] * phiI[k];
      r += mag * cos(arg);
      im += mag * sin(arg);
    }
    if (fabs(Qr[i] - r) > 1e-3 * (1 + fabs(r)) || fabs(Qi[i] - im) > 1e-3 * (1 + fabs(im))) bad++;
  }
  printf("mri-q %d samples, %d voxels: %d wrong\n", numK, numX, bad);
  for (int a = 0; a < 11; a++) free(all[a]);
  free(args);
  return bad != 0;
}
