// The breadth-first search's shared declarations (parboil's bfs shape, written for hpvm's
// HPVM-C front end): the graph as parboil's input file holds it, the root's argument struct
// and the root node function main.cc launches once per level.
#ifndef BFS_H
#define BFS_H

#include <climits>
#include <cstddef>
#include <string>
#include <vector>

// A node no level has reached yet (atomic_min brings it down to its level).
#define UNREACHED INT_MAX

// A directed graph in compressed rows: node i's edges are edges[starts[i] .. starts[i + 1]).
struct Graph {
  std::vector<int> starts;  // nodes + 1 entries
  std::vector<int> edges;   // the destination of each edge
  int source = 0;
  size_t nodes() const { return starts.empty() ? 0 : starts.size() - 1; }
};

// The graph in parboil's bfs file at `path`; false with `error` set if it cannot be read or
// is not one (an edge to a node past the last, a source out of range, a short file).
bool read_graph(const std::string &path, Graph &graph, std::string &error);
// Parboil's output: the node count, then "node cost" per line (-1: not reached).
bool write_costs(const std::string &path, const std::vector<int> &cost);

typedef struct __attribute__((__packed__)) {
  int *starts;
  size_t bytes_starts;
  int *edges;
  size_t bytes_edges;
  int *cost_in;  // every node's level so far
  size_t bytes_cost_in;
  int *cost_out;  // the same, and the nodes this level reaches
  size_t bytes_cost_out;
  int *frontier;  // how many nodes this level reached first
  size_t bytes_frontier;
  int level;
  size_t nodes;
} RootIn;

void bfs_root(int *starts, size_t bytes_starts, int *edges, size_t bytes_edges, int *cost_in, size_t bytes_cost_in,
              int *cost_out, size_t bytes_cost_out, int *frontier, size_t bytes_frontier, int level, size_t nodes);

#endif
