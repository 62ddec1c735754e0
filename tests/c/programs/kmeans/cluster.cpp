// The host's k-means loop (kmeans.h), as Rodinia's kmeans_clustering runs it with the
// nearest-centroid search on the device: the points, centroids, memberships and change
// flags tracked once, then one __hpvm__launch + __hpvm__wait per iteration with the same
// argument struct over the same tracked memory. After each launch the host requests the
// memberships and change flags back, counts the changes, and recomputes each centroid as
// the mean of its points (a centroid without points stays where it was), written into the
// tracked centroid buffer after requesting it back, for the next launch to read.
#include <algorithm>
#include <cstdlib>

#include "hpvm.h"
#include "kmeans.h"

template <typename T> static size_t bytes(const std::vector<T> &v) { return v.size() * sizeof(T); }

Clustering cluster(const std::vector<float> &points, int npoints, int nfeatures, int nclusters,
                   int max_iterations, int threshold) {
  Clustering result;
  std::vector<float> features(points);  // (the graph's copy: tracked while it runs)
  std::vector<float> centroids(features.begin(), features.begin() + (size_t)nclusters * nfeatures);
  std::vector<int> membership(npoints, -1), changed(npoints, 0);
  std::vector<float> sums(centroids.size());
  std::vector<int> counts(nclusters);
  size_t groups = (size_t)((npoints + BLOCK_SIZE - 1) / BLOCK_SIZE);

  llvm_hpvm_track_mem(features.data(), bytes(features));
  llvm_hpvm_track_mem(centroids.data(), bytes(centroids));
  llvm_hpvm_track_mem(membership.data(), bytes(membership));
  llvm_hpvm_track_mem(changed.data(), bytes(changed));
  RootIn *args = (RootIn *)std::malloc(sizeof(RootIn));
  *args = RootIn{features.data(),   bytes(features), centroids.data(), bytes(centroids),
                 membership.data(), bytes(membership), changed.data(),  bytes(changed),
                 npoints,           nclusters,         nfeatures,       groups,
                 RetTy{0}};

  int delta;
  do {
    void *kmeansDFG = __hpvm__launch(0, kmeansRoot, (void *)args);
    __hpvm__wait(kmeansDFG);
    if (args->out.bytes_membership != bytes(membership)) result.wrong_returns++;
    result.iterations++;
    llvm_hpvm_request_mem(membership.data(), bytes(membership));
    llvm_hpvm_request_mem(changed.data(), bytes(changed));
    delta = 0;
    for (int p = 0; p < npoints; p++) delta += changed[p];
    result.changes.push_back(delta);

    // the new centroids: each cluster's mean, summed point after point in float
    std::fill(sums.begin(), sums.end(), 0.0f);
    std::fill(counts.begin(), counts.end(), 0);
    for (int p = 0; p < npoints; p++) {
      int c = membership[p];
      counts[c]++;
      for (int f = 0; f < nfeatures; f++) sums[(size_t)c * nfeatures + f] += features[(size_t)p * nfeatures + f];
    }
    llvm_hpvm_request_mem(centroids.data(), bytes(centroids));
    for (int c = 0; c < nclusters; c++)
      if (counts[c] > 0)
        for (int f = 0; f < nfeatures; f++)
          centroids[(size_t)c * nfeatures + f] = sums[(size_t)c * nfeatures + f] / (float)counts[c];
  } while (delta > threshold && result.iterations < max_iterations);

  result.membership = membership;
  result.centroids = centroids;
  llvm_hpvm_untrack_mem(features.data());
  llvm_hpvm_untrack_mem(centroids.data());
  llvm_hpvm_untrack_mem(membership.data());
  llvm_hpvm_untrack_mem(changed.data());
  std::free(args);
  return result;
}
