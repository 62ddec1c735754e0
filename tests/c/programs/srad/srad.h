// SRAD's shared declarations (speckle reducing anisotropic diffusion, Rodinia's srad_v2), as
// HPVM's ports of Rodinia's CUDA benchmarks split them: the packed argument struct the host
// fills for __hpvm__launch and the graph's root. Each launch is one diffusion step over a
// rows x cols image: the first kernel finds each pixel's four differences and its diffusion
// coefficient from q0sqr, the speckle the host measures over a region of the image before the
// step; the second moves the image along the differences, weighted by the coefficients.
#ifndef SRAD_H
#define SRAD_H

#include <cstddef>

#ifndef SRAD_SOUTH
#define SRAD_SOUTH (i + 1 < rows ? i + 1 : rows - 1)  // the row below, clamped (tests: i + 1)
#endif

typedef struct __attribute__((__packed__)) {
  float *J;       // 0: the image, diffused in place
  size_t bytesJ;  // 1
  float *dN;      // 2: each pixel's difference to its north neighbour
  size_t bytesN;  // 3
  float *dS;      // 4
  size_t bytesS;  // 5
  float *dW;      // 6
  size_t bytesW;  // 7
  float *dE;      // 8
  size_t bytesE;  // 9
  float *C;       // 10: each pixel's diffusion coefficient, 0 to 1
  size_t bytesC;  // 11
  long cols;      // 12
  long rows;      // 13
  float q0sqr;    // 14: the speckle over the region this step, measured by the host
  float lambda;   // 15: the step's size
} RootIn;

void sradRoot(float *J, size_t bytesJ, float *dN, size_t bytesN, float *dS, size_t bytesS, float *dW,
              size_t bytesW, float *dE, size_t bytesE, float *C, size_t bytesC, long cols, long rows, float q0sqr,
              float lambda);

#endif
