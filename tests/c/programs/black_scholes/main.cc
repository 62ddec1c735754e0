// The host: `black_scholes OPTIONS DAYS`; every day's call and put prices checked against
// the formula in double precision; exit status 0 when all are within 1e-3 (relative to
// the price, 1e-3 absolute below 1).
#include <hpvm.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "options.h"

static const float RISKFREE = 0.02f;

static bool close_enough(float got, double want) {
  return std::fabs(got - want) <= 1e-3 * std::fmax(1.0, std::fabs(want));
}

int main(int argc, char **argv) {
  long count = argc > 1 ? std::atol(argv[1]) : 1000;
  int days = argc > 2 ? std::atoi(argv[2]) : 3;
  long grid = (count + BLOCK - 1) / BLOCK * BLOCK;
  std::vector<float> price(count), strike(count), years(count), call(count, -1.0f), put(count, -1.0f);
  for (long i = 0; i < count; i++) {  // the SDK's ranges: S in [5, 30], X in [1, 100], T in [0.25, 10]
    price[i] = 5.0f + 25.0f * (float)((i * 37 + 11) % 1000) / 999.0f;
    strike[i] = 1.0f + 99.0f * (float)((i * 91 + 7) % 1000) / 999.0f;
    years[i] = 0.25f + 9.75f * (float)((i * 53 + 3) % 1000) / 999.0f;
  }
  size_t bytes = count * sizeof(float);
  __hpvm__init();
  for (std::vector<float> *v : {&price, &strike, &years, &call, &put}) llvm_hpvm_track_mem(v->data(), bytes);
  std::array<double, 2> sums{0.0, 0.0};
  int wrong = 0;
  for (int day = 0; day < days; day++) {
    float volatility = 0.30f + 0.05f * day;
    PricingIn *args = (PricingIn *)std::malloc(sizeof(PricingIn));
    *args = PricingIn{call.data(),  bytes,    put.data(),  bytes, price.data(), bytes, strike.data(),
                      bytes,        years.data(), bytes, RISKFREE, volatility,   count, grid};
    void *graph = __hpvm__launch(0, pricing_root, (void *)args);
    __hpvm__wait(graph);
    llvm_hpvm_request_mem(call.data(), bytes);
    llvm_hpvm_request_mem(put.data(), bytes);
    for (long i = 0; i < count; i++) {
      double S = price[i], X = strike[i], T = years[i], v = volatility, r = RISKFREE;
      double d1 = (std::log(S / X) + (r + 0.5 * v * v) * T) / (v * std::sqrt(T)), d2 = d1 - v * std::sqrt(T);
      double expRT = std::exp(-r * T);
      double wantCall = S * cnd_reference(d1) - X * expRT * cnd_reference(d2);
      double wantPut = X * expRT * (1.0 - cnd_reference(d2)) - S * (1.0 - cnd_reference(d1));
      wrong += !close_enough(call[i], wantCall) + !close_enough(put[i], wantPut);
      sums[0] += call[i];
      sums[1] += put[i];
    }
    std::free(args);
  }
  for (std::vector<float> *v : {&price, &strike, &years, &call, &put}) llvm_hpvm_untrack_mem(v->data());
  __hpvm__cleanup();
  std::printf("black_scholes %ld options, %d days: calls %.3f puts %.3f, %d wrong\n", count, days, sums[0], sums[1],
              wrong);
  return wrong != 0;
}
