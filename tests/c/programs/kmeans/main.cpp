// The host of the k-means program, in the shape of Rodinia's kmeans driver ported to HPVM:
// the command line read into std::strings, the points drawn around TRUE_CENTERS centers from
// a fixed LCG (Rodinia reads them from a file; the LCG gives every platform, and the tests,
// the same ones), the clustering (cluster.cpp: one launch of the graph per iteration), and
// the result printed one line per item, for a test to read back.
// Usage: kmeans [-n points] [-f features] [-k clusters] [-m max_iterations] [-t threshold]
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "hpvm.h"
#include "kmeans.h"

static int usage() {
  std::fprintf(stderr, "Usage: kmeans [-n points] [-f features] [-k clusters] [-m max_iterations] [-t threshold]\n"
                       "points: how many to cluster (1000), at least as many as clusters\n"
                       "features: each point's coordinates (4)\n"
                       "clusters: the centroids (5)\n"
                       "max_iterations: the most launches (500, as Rodinia)\n"
                       "threshold: stop once an iteration changes at most this many memberships\n"
                       "           (0: when none changes; negative: run max_iterations)\n");
  return 1;
}

// A whole decimal int, or false.
static bool to_int(const std::string &word, int &value) {
  try {
    size_t used = 0;
    value = std::stoi(word, &used);
    return used == word.size();
  } catch (const std::exception &) {
    return false;
  }
}

static unsigned next(unsigned &seed) {
  seed = seed * 1103515245u + 12345u;
  return seed >> 16;
}

// TRUE_CENTERS centers in [0, 10) in each feature, then each point near one of them (the
// LCG picks which), within 4 of it in each feature (the clusters overlap): in steps of 1/100.
static std::vector<float> random_points(int npoints, int nfeatures, unsigned seed) {
  std::vector<float> centers((size_t)TRUE_CENTERS * nfeatures), points((size_t)npoints * nfeatures);
  for (float &x : centers) x = (float)(next(seed) % 1000) / 100.0f;
  for (int p = 0; p < npoints; p++) {
    int t = (int)(next(seed) % TRUE_CENTERS);
    for (int f = 0; f < nfeatures; f++)
      points[(size_t)p * nfeatures + f] =
          centers[(size_t)t * nfeatures + f] + (float)((int)(next(seed) % 801) - 400) / 100.0f;
  }
  return points;
}

template <typename T> static void print_all(const char *name, const T *v, size_t n, const char *format) {
  std::printf("%s:", name);
  for (size_t k = 0; k < n; k++) std::printf(format, v[k]);
  std::printf("\n");
}

int main(int argc, char **argv) {
  std::map<std::string, int> options{{"-n", 1000}, {"-f", 4}, {"-k", 5}, {"-m", 500}, {"-t", 0}};
  std::vector<std::string> words(argv + 1, argv + argc);
  for (size_t w = 0; w < words.size(); w += 2) {
    auto option = options.find(words[w]);
    if (option == options.end() || w + 1 == words.size() || !to_int(words[w + 1], option->second))
      return usage();
  }
  int npoints = options["-n"], nfeatures = options["-f"], nclusters = options["-k"];
  int max_iterations = options["-m"], threshold = options["-t"];
  if (nclusters < 1 || npoints < nclusters || nfeatures < 1 || max_iterations < 1) return usage();

  std::vector<float> points = random_points(npoints, nfeatures, 1701u);
  __hpvm__init();
  auto start = std::chrono::steady_clock::now();
  Clustering result = cluster(points, npoints, nfeatures, nclusters, max_iterations, threshold);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  __hpvm__cleanup();

  std::printf("kmeans %d points, %d features, %d clusters\n", npoints, nfeatures, nclusters);
  std::printf("iterations: %d\n", result.iterations);
  print_all("changes", result.changes.data(), result.changes.size(), " %d");
  print_all("membership", result.membership.data(), result.membership.size(), " %d");
  for (int c = 0; c < nclusters; c++) {
    std::string name = "centroid " + std::to_string(c);
    print_all(name.c_str(), result.centroids.data() + (size_t)c * nfeatures, (size_t)nfeatures, " %.9g");
  }
  std::printf("wrong returns: %d\n", result.wrong_returns);
  std::printf("time: %.3f ms\n", seconds * 1e3);
  return result.wrong_returns != 0;
}
