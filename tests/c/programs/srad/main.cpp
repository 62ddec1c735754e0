// SRAD's host, as Rodinia's srad_v2 driver ported to HPVM: a speckled image from a fixed LCG in
// a std::vector, J = exp(image); per iteration the host reads J, measures the speckle over
// the region of interest (the top-left quarter) as q0sqr, and launches one step with it,
// waiting at once. Then the same steps on the host with its own arrays, every pixel compared,
// and the image's sum printed for the caller to check.
// Usage: srad [rows (128)] [cols (128)] [iterations (10)]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hpvm.h"
#include "srad.h"

static float lcg(unsigned &state) {
  state = state * 1103515245u + 12345u;
  return (float)((state >> 16) & 0x7fff) / 32768.0f;
}

// The speckle over rows [0, r2] and columns [0, c2] of J, as srad_v2's host loop measures it.
static float speckle(const float *J, long cols, long r2, long c2) {
  float sum = 0.0f, sum2 = 0.0f;
  for (long i = 0; i <= r2; i++)
    for (long j = 0; j <= c2; j++) {
      float t = J[i * cols + j];
      sum += t;
      sum2 += t * t;
    }
  float size = (float)((r2 + 1) * (c2 + 1));
  float mean = sum / size, var = (sum2 / size) - mean * mean;
  return var / (mean * mean);
}

// One step on the host: the leaves' arithmetic, in the same order.
static void step(std::vector<float> &J, std::vector<float> &C, std::vector<float> &d, long rows, long cols,
                 float q0sqr, float lambda) {
  long size = rows * cols;
  for (long i = 0; i < rows; i++)
    for (long j = 0; j < cols; j++) {
      long k = i * cols + j;
      long north = i > 0 ? i - 1 : 0, south = i + 1 < rows ? i + 1 : rows - 1;
      long west = j > 0 ? j - 1 : 0, east = j + 1 < cols ? j + 1 : cols - 1;
      float Jc = J[k];
      float n = J[north * cols + j] - Jc, s = J[south * cols + j] - Jc;
      float w = J[i * cols + west] - Jc, e = J[i * cols + east] - Jc;
      float g2 = (n * n + s * s + w * w + e * e) / (Jc * Jc);
      float l = (n + s + w + e) / Jc;
      float num = 0.5f * g2 - (1.0f / 16.0f) * (l * l);
      float den = 1.0f + 0.25f * l;
      float qsqr = num / (den * den);
      den = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
      float c = 1.0f / (1.0f + den);
      d[k] = n, d[size + k] = s, d[2 * size + k] = w, d[3 * size + k] = e;
      C[k] = c < 0.0f ? 0.0f : (c > 1.0f ? 1.0f : c);
    }
  for (long i = 0; i < rows; i++)
    for (long j = 0; j < cols; j++) {
      long k = i * cols + j;
      long south = i + 1 < rows ? i + 1 : rows - 1, east = j + 1 < cols ? j + 1 : cols - 1;
      float cN = C[k], cS = C[south * cols + j], cW = C[k], cE = C[i * cols + east];
      float dd = cN * d[k] + cS * d[size + k] + cW * d[2 * size + k] + cE * d[3 * size + k];
      J[k] = J[k] + 0.25f * lambda * dd;
    }
}

int main(int argc, char **argv) {
  long rows = argc > 1 ? std::stol(argv[1]) : 128;
  long cols = argc > 2 ? std::stol(argv[2]) : 128;
  long iterations = argc > 3 ? std::stol(argv[3]) : 10;
  if (rows < 2 || cols < 2 || iterations < 0) {
    std::fprintf(stderr, "Usage: srad [rows >= 2] [cols >= 2] [iterations >= 0]\n");
    return 2;
  }
  const float lambda = 0.5f;
  long size = rows * cols, r2 = rows / 2 - 1, c2 = cols / 2 - 1;
  std::vector<float> J(size), dN(size), dS(size), dW(size), dE(size), C(size);
  unsigned state = 2026u;
  for (float &pixel : J) pixel = std::exp(lcg(state));
  std::vector<float> want(J), wantC(size), wantD(4 * size);
  size_t bytes = size * sizeof(float);

  __hpvm__init();
  for (float *array : {J.data(), dN.data(), dS.data(), dW.data(), dE.data(), C.data()})
    llvm_hpvm_track_mem(array, bytes);
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  float q0sqr = 0.0f;
  for (long iteration = 0; iteration < iterations; iteration++) {
    llvm_hpvm_request_mem(J.data(), bytes);  // the host reads the image: the region's speckle
    q0sqr = speckle(J.data(), cols, r2, c2);
    *args = RootIn{J.data(), bytes, dN.data(), bytes, dS.data(), bytes, dW.data(), bytes,
                   dE.data(), bytes, C.data(), bytes, cols, rows, q0sqr, lambda};
    void *launch = __hpvm__launch(0, sradRoot, (void *)args);
    __hpvm__wait(launch);
  }
  llvm_hpvm_request_mem(J.data(), bytes);

  for (long iteration = 0; iteration < iterations; iteration++)
    step(want, wantC, wantD, rows, cols, speckle(want.data(), cols, r2, c2), lambda);
  long wrong = 0;
  double sum = 0.0;
  for (long k = 0; k < size; k++) {
    wrong += J[k] != want[k];
    sum += J[k];
  }
  for (float *array : {J.data(), dN.data(), dS.data(), dW.data(), dE.data(), C.data()})
    llvm_hpvm_untrack_mem(array);
  free(args);
  __hpvm__cleanup();
  std::printf("srad %ldx%ld, %ld iterations: q0sqr %.6e, sum %.9e, %ld wrong\n", rows, cols, iterations, q0sqr,
              sum, wrong);
  return wrong != 0;
}
