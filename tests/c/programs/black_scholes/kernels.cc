// The pricing graph: root -> pricing_wrapper -> price_options (grid instances).
#include <hpvm.h>

#include <cmath>

#include "options.h"

// Abramowitz and Stegun 26.2.17, as the CUDA SDK's BlackScholes computes N(d).
static inline float cnd(float d) {
  const float A1 = 0.31938153f, A2 = -0.356563782f, A3 = 1.781477937f, A4 = -1.821255978f,
              A5 = 1.330274429f;
  const float RSQRT2PI = 0.39894228040143267794f;
  float K = 1.0f / (1.0f + 0.2316419f * fabsf(d));
  float c = RSQRT2PI * expf(-0.5f * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
  return d > 0 ? 1.0f - c : c;
}

double cnd_reference(double d) {
  const double A1 = 0.31938153, A2 = -0.356563782, A3 = 1.781477937, A4 = -1.821255978, A5 = 1.330274429;
  const double RSQRT2PI = 0.39894228040143267794;
  double K = 1.0 / (1.0 + 0.2316419 * std::fabs(d));
  double c = RSQRT2PI * std::exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
  return d > 0 ? 1.0 - c : c;
}

void price_options(float *call, size_t bytes_call, float *put, size_t bytes_put, float *price,
                   size_t bytes_price, float *strike, size_t bytes_strike, float *years, size_t bytes_years,
                   float riskfree, float volatility, long count) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, price, strike, years, 2, call, put);
  void *self = __hpvm__getNode();
  long opt = __hpvm__getNodeInstanceID_x(self);
  if (opt < count) {
    float S = price[opt], X = strike[opt], T = years[opt];
    float sqrtT = sqrtf(T);
    float d1 = (logf(S / X) + (riskfree + 0.5f * volatility * volatility) * T) / (volatility * sqrtT);
    float d2 = d1 - volatility * sqrtT;
    float cndD1 = cnd(d1), cndD2 = cnd(d2);
    float expRT = expf(-riskfree * T);
    call[opt] = S * cndD1 - X * expRT * cndD2;
    put[opt] = X * expRT * (1.0f - cndD2) - S * (1.0f - cndD1);
  }
}

void pricing_wrapper(float *call, size_t bytes_call, float *put, size_t bytes_put, float *price,
                     size_t bytes_price, float *strike, size_t bytes_strike, float *years, size_t bytes_years,
                     float riskfree, float volatility, long count, long grid) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, price, strike, years, 2, call, put);
  void *leaf = __hpvm__createNodeND(1, price_options, grid);
  for (int p = 0; p < 13; p++) __hpvm__bindIn(leaf, p, p, 0);
}

void pricing_root(float *call, size_t bytes_call, float *put, size_t bytes_put, float *price, size_t bytes_price,
                  float *strike, size_t bytes_strike, float *years, size_t bytes_years, float riskfree,
                  float volatility, long count, long grid) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, price, strike, years, 2, call, put);
  void *wrapper = __hpvm__createNodeND(0, pricing_wrapper);
  for (int p = 0; p < 14; p++) __hpvm__bindIn(wrapper, p, p, 0);
}
