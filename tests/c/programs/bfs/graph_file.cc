// Parboil's bfs files, read and written with the standard library. The input: the node
// count, then "start degree" per node, then the source node, then the edge count, then
// "destination weight" per edge (the weight is read and not used: bfs counts levels).
#include <fstream>

#include "bfs.h"

bool read_graph(const std::string &path, Graph &graph, std::string &error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot open " + path;
    return false;
  }
  size_t nodes = 0, edge_count = 0;
  if (!(in >> nodes)) {
    error = path + ": no node count";
    return false;
  }
  graph.starts.assign(nodes + 1, 0);
  for (size_t i = 0; i < nodes; i++) {
    int start = 0, degree = 0;
    if (!(in >> start >> degree)) {
      error = path + ": fewer nodes than its count, " + std::to_string(nodes);
      return false;
    }
    graph.starts[i] = start;
    graph.starts[i + 1] = start + degree;
  }
  if (!(in >> graph.source >> edge_count)) {
    error = path + ": no source node or edge count";
    return false;
  }
  if (graph.source < 0 || (size_t)graph.source >= nodes) {
    error = path + ": source " + std::to_string(graph.source) + " is not one of the " + std::to_string(nodes) +
            " nodes";
    return false;
  }
  graph.edges.resize(edge_count);
  for (size_t e = 0; e < edge_count; e++) {
    int weight = 0;
    if (!(in >> graph.edges[e] >> weight)) {
      error = path + ": fewer edges than its count, " + std::to_string(edge_count);
      return false;
    }
    if (graph.edges[e] < 0 || (size_t)graph.edges[e] >= nodes) {
      error = path + ": edge " + std::to_string(e) + " goes to node " + std::to_string(graph.edges[e]) +
              ", past the last of " + std::to_string(nodes);
      return false;
    }
  }
  for (size_t i = 0; i < nodes; i++)
    if (graph.starts[i] < 0 || (size_t)graph.starts[i + 1] > edge_count) {
      error = path + ": node " + std::to_string(i) + "'s edges are not among the " + std::to_string(edge_count);
      return false;
    }
  return true;
}

bool write_costs(const std::string &path, const std::vector<int> &cost) {
  std::ofstream out(path);
  out << cost.size() << "\n";
  for (size_t i = 0; i < cost.size(); i++) out << i << " " << (cost[i] == UNREACHED ? -1 : cost[i]) << "\n";
  return (bool)out;
}
