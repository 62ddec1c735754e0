// SRAD's graph as HPVM's GPU-convention ports write one: a CPU root with two 2-D leaves over
// the image (x the column, the fastest index, as srad_cuda_1 and srad_cuda_2's threads), the
// first handing the second the coefficients' size over an all-to-all edge — HPVM's way of
// ordering two kernels: the update starts after every coefficient is written. Neighbours are
// clamped at the image's edges.
#include "hpvm.h"
#include "srad.h"

void sradCoefficients(float *J, size_t bytesJ, float *dN, size_t bytesN, float *dS, size_t bytesS, float *dW,
                      size_t bytesW, float *dE, size_t bytesE, float *C, size_t bytesC, long cols, long rows,
                      float q0sqr) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, J, 5, dN, dS, dW, dE, C);
  void *self = __hpvm__getNode();
  long j = __hpvm__getNodeInstanceID_x(self), i = __hpvm__getNodeInstanceID_y(self);
  long k = i * cols + j;
  long north = i > 0 ? i - 1 : 0, south = SRAD_SOUTH;
  long west = j > 0 ? j - 1 : 0, east = j + 1 < cols ? j + 1 : cols - 1;
  float Jc = J[k];
  float n = J[north * cols + j] - Jc;
  float s = J[south * cols + j] - Jc;  // @south
  float w = J[i * cols + west] - Jc;
  float e = J[i * cols + east] - Jc;
  float g2 = (n * n + s * s + w * w + e * e) / (Jc * Jc);
  float l = (n + s + w + e) / Jc;
  float num = 0.5f * g2 - (1.0f / 16.0f) * (l * l);
  float den = 1.0f + 0.25f * l;
  float qsqr = num / (den * den);
  den = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
  float c = 1.0f / (1.0f + den);
  dN[k] = n;
  dS[k] = s;
  dW[k] = w;
  dE[k] = e;
  C[k] = c < 0.0f ? 0.0f : (c > 1.0f ? 1.0f : c);
  __hpvm__return(1, bytesC);
}

void sradUpdate(float *J, size_t bytesJ, float *dN, size_t bytesN, float *dS, size_t bytesS, float *dW,
                size_t bytesW, float *dE, size_t bytesE, float *C, size_t bytesC, long cols, long rows,
                float lambda) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(6, J, dN, dS, dW, dE, C, 1, J);
  void *self = __hpvm__getNode();
  long j = __hpvm__getNodeInstanceID_x(self), i = __hpvm__getNodeInstanceID_y(self);
  long k = i * cols + j;
  long south = i + 1 < rows ? i + 1 : rows - 1, east = j + 1 < cols ? j + 1 : cols - 1;
  float cN = C[k], cS = C[south * cols + j], cW = C[k], cE = C[i * cols + east];
  float d = cN * dN[k] + cS * dS[k] + cW * dW[k] + cE * dE[k];
  J[k] = J[k] + 0.25f * lambda * d;
}

void sradRoot(float *J, size_t bytesJ, float *dN, size_t bytesN, float *dS, size_t bytesS, float *dW,
              size_t bytesW, float *dE, size_t bytesE, float *C, size_t bytesC, long cols, long rows, float q0sqr,
              float lambda) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(6, J, dN, dS, dW, dE, C, 6, J, dN, dS, dW, dE, C);
  void *first = __hpvm__createNodeND(2, sradCoefficients, cols, rows);
  void *second = __hpvm__createNodeND(2, sradUpdate, cols, rows);
  for (int p = 0; p < 15; p++) __hpvm__bindIn(first, p, p, 0);  // the arrays, the shape, q0sqr
  for (int p = 0; p < 11; p++) __hpvm__bindIn(second, p, p, 0);  // the arrays, and C's pointer
  __hpvm__edge(first, second, 1, 0, 11, 0);                        // C's size: after every coefficient
  __hpvm__bindIn(second, 12, 12, 0);
  __hpvm__bindIn(second, 13, 13, 0);
  __hpvm__bindIn(second, 15, 14, 0);  // lambda
}
