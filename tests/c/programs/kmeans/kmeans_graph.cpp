// The k-means graph as HPVM's Rodinia ports write one: a DEVICE leaf in the CUDA convention
// (one point per instance, its place from its group's id and its own), a wrapper replicating
// it over a group of BLOCK_SIZE, and the root replicating the wrapper over the groups. The
// last group runs past the last point, so the leaf tests its place first. Each instance
// loops over every centroid and every feature (bounds from the scalar ports, which the host
// determines: the launch runs on the launching thread and is replayed), keeps the nearest
// centroid by squared Euclidean distance (the first one on a tie, as Rodinia's
// find_nearest_point), and writes only its own membership and change slots.
#include <cfloat>

#include "hpvm.h"
#include "kmeans.h"

void find_nearest(float *points, size_t bytes_points, float *centroids, size_t bytes_centroids, int *membership,
                  size_t bytes_membership, int *changed, size_t bytes_changed, int npoints, int nclusters,
                  int nfeatures) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(3, points, centroids, membership, 2, membership, changed);
  void *thisNode = __hpvm__getNode();
  void *parentNode = __hpvm__getParentNode(thisNode);
  int lx = __hpvm__getNodeInstanceID_x(thisNode);
  int gx = __hpvm__getNodeInstanceID_x(parentNode);
  int gridx = __hpvm__getNumNodeInstances_x(thisNode);
  int ix = gx * gridx + lx;  // the point
#ifdef KMEANS_FORGET_GUARD
  {  // (a test's mistake: the last group's instances past npoints run on)
#else
  if (ix < npoints) {  // @guard
#endif
    int nearest = 0;
    float best = FLT_MAX;
    for (int c = 0; c < nclusters; c++) {
      float dist = 0.0f;
      for (int f = 0; f < nfeatures; f++) {
        float d = points[ix * nfeatures + f] - centroids[c * nfeatures + f];  // @distance
        dist += d * d;
      }
      if (dist < best) {
        best = dist;
        nearest = c;
      }
    }
    changed[ix] = membership[ix] != nearest;  // @slots
    membership[ix] = nearest;
  }
  __hpvm__return(1, bytes_membership);
}

// One group of points: the leaf replicated BLOCK_SIZE times.
void kmeansLvl1(float *points, size_t bytes_points, float *centroids, size_t bytes_centroids, int *membership,
                size_t bytes_membership, int *changed, size_t bytes_changed, int npoints, int nclusters,
                int nfeatures) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(3, points, centroids, membership, 2, membership, changed);
  void *pointNode = __hpvm__createNodeND(1, find_nearest, (size_t)BLOCK_SIZE);
  for (int p = 0; p < 11; p++)
    __hpvm__bindIn(pointNode, p, p, 0);
  __hpvm__bindOut(pointNode, 0, 0, 0);
}

// The root: the groups.
void kmeansRoot(float *points, size_t bytes_points, float *centroids, size_t bytes_centroids, int *membership,
                size_t bytes_membership, int *changed, size_t bytes_changed, int npoints, int nclusters,
                int nfeatures, size_t groups) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(3, points, centroids, membership, 2, membership, changed);
  void *groupNode = __hpvm__createNodeND(1, kmeansLvl1, groups);
  for (int p = 0; p < 11; p++)
    __hpvm__bindIn(groupNode, p, p, 0);
  __hpvm__bindOut(groupNode, 0, 0, 0);
}
