// The TPACF program's shared declarations (parboil's tpacf, written for HPVM): points on the
// unit sphere as three coordinate arrays, the angular bins, the root's argument struct and
// the root node function main.cc launches, and the host's model (model.cc).
#ifndef TPACF_H
#define TPACF_H

#include <cstddef>
#include <vector>

#define BLOCK 64  // leaf instances per group

// One data set: the cartesian coordinates of unit vectors (parboil's struct cartesian).
struct Points {
  std::vector<float> x, y, z;
  int size() const { return (int)x.size(); }
};

typedef struct __attribute__((__packed__)) {
  float *x1;
  size_t bytes_x1;
  float *y1;
  size_t bytes_y1;
  float *z1;
  size_t bytes_z1;
  int n1;
  float *x2;
  size_t bytes_x2;
  float *y2;
  size_t bytes_y2;
  float *z2;
  size_t bytes_z2;
  int n2;
  float *binb;  // nbins + 1 boundaries, cosines of growing angles: descending
  size_t bytes_binb;
  int nbins;
  int *histo;  // nbins + 2 counts: closer than the first boundary, the bins, farther than the last
  size_t bytes_histo;
  int self;  // 1: the two sets are one (DD, RR): each pair once, i < j
  size_t dim_X1;  // groups
} RootIn;

void tpacfRoot(float *x1, size_t bytes_x1, float *y1, size_t bytes_y1, float *z1, size_t bytes_z1, int n1,
               float *x2, size_t bytes_x2, float *y2, size_t bytes_y2, float *z2, size_t bytes_z2, int n2,
               float *binb, size_t bytes_binb, int nbins, int *histo, size_t bytes_histo, int self,
               size_t dim_X1);

// model.cc: random points (right ascension and declination in degrees, as parboil's inputs
// are), and the bin boundaries: 5 bins per decade of arc minutes from min_arcmin on.
Points random_points(int n, unsigned seed);
std::vector<float> bin_boundaries(int nbins, double min_arcmin, int bins_per_decade);

#endif
