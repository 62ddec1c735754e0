// The host of the TPACF program: a data set and random sets of points on the sphere (fixed
// seeds), the angular bins, one launch of the graph per histogram as parboil's driver does
// (DD once, then DR and RR for each random set), each checked against the pairs counted
// here in double precision. A pair whose dot product lies within 1e-5 of a boundary may
// land on either side of it in single precision: such pairs are allowed in either bin,
// every other pair must be in its bin, and every pair must be counted exactly once.
// Usage: tpacf [points [random_sets [bins]]]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "hpvm.h"
#include "tpacf.h"

static int bin_of(const std::vector<float> &binb, double dot) {
  return (int)(std::partition_point(binb.begin(), binb.end(), [&](float b) { return b > dot; }) - binb.begin());
}

// Launch the graph once: the histogram of the pairs of a and b (of a alone when self).
static std::vector<int> histogram(Points &a, Points &b, bool self, std::vector<float> &binb) {
  int nbins = (int)binb.size() - 1;
  std::vector<int> histo(nbins + 2, 0);
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  size_t na = a.x.size() * sizeof(float), nb = b.x.size() * sizeof(float);
  *args = RootIn{a.x.data(), na, a.y.data(), na, a.z.data(), na, a.size(),
                 b.x.data(), nb, b.y.data(), nb, b.z.data(), nb, b.size(),
                 binb.data(), binb.size() * sizeof(float), nbins, histo.data(), histo.size() * sizeof(int),
                 self ? 1 : 0, (size_t)((a.size() + BLOCK - 1) / BLOCK)};
  std::vector<std::pair<void *, size_t>> tracked = {
      {a.x.data(), na}, {a.y.data(), na}, {a.z.data(), na}, {histo.data(), histo.size() * sizeof(int)},
      {binb.data(), binb.size() * sizeof(float)}};
  if (!self) tracked.insert(tracked.end(), {{b.x.data(), nb}, {b.y.data(), nb}, {b.z.data(), nb}});
  for (auto &t : tracked) llvm_hpvm_track_mem(t.first, t.second);
  void *dfg = __hpvm__launch(0, tpacfRoot, (void *)args);
  __hpvm__wait(dfg);
  llvm_hpvm_request_mem(histo.data(), histo.size() * sizeof(int));
  for (auto &t : tracked) llvm_hpvm_untrack_mem(t.first);
  free(args);
  return histo;
}

// How many bins of got disagree with the pairs counted in double precision.
static int check(const std::vector<int> &got, const Points &a, const Points &b, bool self,
                 const std::vector<float> &binb) {
  size_t bins = got.size();
  std::vector<long> sure(bins, 0), maybe(bins, 0);
  long pairs = 0;
  for (int i = 0; i < a.size(); i++)
    for (int j = self ? i + 1 : 0; j < b.size(); j++) {
      double dot = (double)a.x[i] * b.x[j] + (double)a.y[i] * b.y[j] + (double)a.z[i] * b.z[j];
      int near = bin_of(binb, dot + 1e-5), far = bin_of(binb, dot - 1e-5);
      pairs++;
      if (near == far)
        sure[near]++;
      else
        for (int k = near; k <= far; k++) maybe[k]++;
    }
  int bad = std::accumulate(got.begin(), got.end(), 0L) != pairs;
  for (size_t k = 0; k < bins; k++)
    if (got[k] < sure[k] || got[k] > sure[k] + maybe[k]) bad++;
  return bad;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 300;
  int sets = argc > 2 ? atoi(argv[2]) : 2;
  int nbins = argc > 3 ? atoi(argv[3]) : 20;
  Points data = random_points(n, 2026);
  std::vector<float> binb = bin_boundaries(nbins, 1.0, 5);

  __hpvm__init();
  int bad = 0;
  std::vector<int> dd = histogram(data, data, true, binb);
  bad += check(dd, data, data, true, binb);
  long dr_total = 0, rr_total = 0;
  for (int s = 0; s < sets; s++) {
    Points random = random_points(n, 7u + (unsigned)s);
    std::vector<int> dr = histogram(data, random, false, binb);
    std::vector<int> rr = histogram(random, random, true, binb);
    bad += check(dr, data, random, false, binb) + check(rr, random, random, true, binb);
    dr_total += std::accumulate(dr.begin(), dr.end(), 0L);
    rr_total += std::accumulate(rr.begin(), rr.end(), 0L);
  }
  __hpvm__cleanup();
  std::printf("tpacf %d points, %d random sets, %d bins: %d wrong, DD %ld DR %ld RR %ld pairs\n", n, sets, nbins,
              bad, std::accumulate(dd.begin(), dd.end(), 0L), dr_total, rr_total);
  return bad != 0;
}
