// The host's model of the sky: points as parboil's tpacf reads them (right ascension and
// declination in degrees) turned into unit vectors, and the angular bins' boundaries as
// cosines (parboil's binb: the dot product of two unit vectors is the cosine of their angle).
#include <cmath>
#include <random>

#include "tpacf.h"

static const double kPi = 3.14159265358979323846;

Points random_points(int n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> ra(0.0, 360.0), sin_dec(-1.0, 1.0);
  Points p;
  for (int i = 0; i < n; i++) {
    double r = ra(gen) * kPi / 180.0;
    double d = std::asin(sin_dec(gen));  // uniform on the sphere
    p.x.push_back((float)(std::cos(d) * std::cos(r)));
    p.y.push_back((float)(std::cos(d) * std::sin(r)));
    p.z.push_back((float)std::sin(d));
  }
  return p;
}

std::vector<float> bin_boundaries(int nbins, double min_arcmin, int bins_per_decade) {
  std::vector<float> binb;
  double log_min = std::log10(min_arcmin);
  for (int k = 0; k <= nbins; k++) {
    double arcmin = std::pow(10.0, log_min + k / (double)bins_per_decade);
    binb.push_back((float)std::cos(arcmin / 60.0 * kPi / 180.0));
  }
  return binb;
}
