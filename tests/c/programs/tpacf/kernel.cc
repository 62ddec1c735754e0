// Two-point angular correlation, as parboil's tpacf is written for HPVM: a DEVICE leaf in the
// CUDA convention (one point of the first set per instance, its global id from the group's
// and the instance's ids) walks every point of the second set, bins each pair's dot product
// by a binary search over the descending boundaries and counts it with an atomic add; a
// wrapper replicated BLOCK times, itself replicated over the groups by the root. A self
// correlation (DD, RR) counts each pair once: j from i + 1.
#include "hpvm.h"
#include "tpacf.h"

void genHists(float *x1, size_t bytes_x1, float *y1, size_t bytes_y1, float *z1, size_t bytes_z1, int n1,
              float *x2, size_t bytes_x2, float *y2, size_t bytes_y2, float *z2, size_t bytes_z2, int n2,
              float *binb, size_t bytes_binb, int nbins, int *histo, size_t bytes_histo, int self) {
  __hpvm__hint(DEVICE);
  __hpvm__attributes(8, x1, y1, z1, x2, y2, z2, binb, histo, 1, histo);
  void *thisNode = __hpvm__getNode();
  void *parentNode = __hpvm__getParentNode(thisNode);
  int lx = __hpvm__getNodeInstanceID_x(thisNode);
  int gx = __hpvm__getNodeInstanceID_x(parentNode);
  int gridx = __hpvm__getNumNodeInstances_x(thisNode);
  int i = gx * gridx + lx;
  if (i >= n1) return;
  float px = x1[i], py = y1[i], pz = z1[i];
  for (int j = self ? i + 1 : 0; j < n2; j++) {
    float dot = px * x2[j] + py * y2[j] + pz * z2[j];
    int lo = 0, hi = nbins + 1;  // the first boundary not above dot: its index is the bin
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (binb[mid] > dot)
        lo = mid + 1;
      else
        hi = mid;
    }
    __hpvm__atomic_add(&histo[lo], 1);
  }
}

void tpacfLvl1(float *x1, size_t bytes_x1, float *y1, size_t bytes_y1, float *z1, size_t bytes_z1, int n1,
               float *x2, size_t bytes_x2, float *y2, size_t bytes_y2, float *z2, size_t bytes_z2, int n2,
               float *binb, size_t bytes_binb, int nbins, int *histo, size_t bytes_histo, int self) {
  __hpvm__hint(DEVICE);
  __hpvm__attributes(8, x1, y1, z1, x2, y2, z2, binb, histo, 1, histo);
  void *node = __hpvm__createNodeND(1, genHists, (size_t)BLOCK);
  for (int p = 0; p < 20; p++)
    __hpvm__bindIn(node, p, p, 0);
}

void tpacfRoot(float *x1, size_t bytes_x1, float *y1, size_t bytes_y1, float *z1, size_t bytes_z1, int n1,
               float *x2, size_t bytes_x2, float *y2, size_t bytes_y2, float *z2, size_t bytes_z2, int n2,
               float *binb, size_t bytes_binb, int nbins, int *histo, size_t bytes_histo, int self,
               size_t dim_X1) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(8, x1, y1, z1, x2, y2, z2, binb, histo, 1, histo);
  void *node = __hpvm__createNodeND(1, tpacfLvl1, dim_X1);
  for (int p = 0; p < 20; p++)
    __hpvm__bindIn(node, p, p, 0);
}
