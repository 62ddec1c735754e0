// Rodinia's k-means as HPVM's ports of Rodinia write it: what the graph (kmeans_graph.cpp)
// and the host (cluster.cpp, main.cpp) share — the root's argument struct, packed, a size_t
// byte count after each pointer, the root's return struct, and the constants.
#ifndef KMEANS_H
#define KMEANS_H

#include <cstddef>
#include <vector>

#define BLOCK_SIZE 64    // leaf instances per group: the last group runs past the last point
#define TRUE_CENTERS 4   // the points are drawn around this many centers (main.cpp)

struct RetTy {
  size_t bytes_membership;  // the leaf's __hpvm__return, bound up to the root
};

typedef struct __attribute__((__packed__)) {
  float *points;             // 0: npoints x nfeatures, point after point
  size_t bytes_points;       // 1
  float *centroids;          // 2: nclusters x nfeatures, written by the host between launches
  size_t bytes_centroids;    // 3
  int *membership;           // 4: each point's nearest centroid (-1 before the first launch)
  size_t bytes_membership;   // 5
  int *changed;              // 6: 1 where a point's membership changed in this launch
  size_t bytes_changed;      // 7
  int npoints;               // 8
  int nclusters;             // 9: the leaf's outer loop bound
  int nfeatures;             // 10: the leaf's inner loop bound
  size_t groups;             // 11: npoints rounded up to whole groups of BLOCK_SIZE
  RetTy out;
} RootIn;

void kmeansRoot(float *points, size_t bytes_points, float *centroids, size_t bytes_centroids, int *membership,
                size_t bytes_membership, int *changed, size_t bytes_changed, int npoints, int nclusters,
                int nfeatures, size_t groups);

// What one clustering did (cluster.cpp).
struct Clustering {
  int iterations = 0;
  std::vector<int> changes;       // the memberships each iteration changed
  std::vector<int> membership;    // the last launch's
  std::vector<float> centroids;   // the last ones the host computed
  int wrong_returns = 0;          // launches whose returned byte count was not membership's
};

// Rodinia's loop: launch, count the changes, recompute the centroids from the memberships;
// stop once an iteration changes at most `threshold` memberships (never, for a negative
// threshold) or after max_iterations. The first nclusters points are the first centroids.
Clustering cluster(const std::vector<float> &points, int npoints, int nfeatures, int nclusters,
                   int max_iterations, int threshold);

#endif
