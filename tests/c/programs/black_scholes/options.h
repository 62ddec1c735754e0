// European options priced with Black-Scholes, written as the CUDA SDK's BlackScholes sample
// and HPVM's ports of such kernels write it: one 1-D leaf instance per option (x the
// instance id), the grid rounded up to whole blocks of 64 and the work under the guard
// `if (opt < count)`, the cumulative normal distribution as an inline helper the leaf
// calls (the Abramowitz-Stegun polynomial, with expf, sqrtf, logf, fabsf); the leaf inside
// an internal node inside the root, as HPVM's benchmarks nest them. A C++ host
// (std::vector, std::array of days) launches the graph once per day with that day's
// volatility and checks every price against the same formula in double precision.
#ifndef OPTIONS_H
#define OPTIONS_H

#include <cstddef>

#define BLOCK 64  // leaf instances per block: the grid is whole blocks

typedef struct __attribute__((__packed__)) {
  float *call;
  size_t bytes_call;
  float *put;
  size_t bytes_put;
  float *price;
  size_t bytes_price;
  float *strike;
  size_t bytes_strike;
  float *years;
  size_t bytes_years;
  float riskfree;
  float volatility;
  long count;
  long grid;
} PricingIn;

void pricing_root(float *call, size_t bytes_call, float *put, size_t bytes_put, float *price, size_t bytes_price,
                  float *strike, size_t bytes_strike, float *years, size_t bytes_years, float riskfree,
                  float volatility, long count, long grid);

// The host's reference: the same formula in double precision (kernels.cc).
double cnd_reference(double d);

#endif
