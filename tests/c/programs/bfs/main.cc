// Parboil's bfs, as a host written for HPVM: `bfs -i graph.txt -o costs.txt` reads the graph,
// launches the one-level graph once per level, swapping the two cost arrays between levels,
// until a level reaches no new node, and writes each node's level. The host uses the C++
// standard library (std::vector, std::string, std::swap); the graph is in kernel.cc, the
// files' formats in graph_file.cc.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "bfs.h"
#include "hpvm.h"

int main(int argc, char **argv) {
  std::string input, output;
  for (int k = 1; k + 1 < argc; k += 2) {
    std::string flag = argv[k];
    if (flag == "-i") input = argv[k + 1];
    if (flag == "-o") output = argv[k + 1];
  }
  if (input.empty() || output.empty()) {
    std::fprintf(stderr, "usage: bfs -i graph.txt -o costs.txt\n");
    return 1;
  }
  Graph graph;
  std::string error;
  if (!read_graph(input, graph, error)) {
    std::fprintf(stderr, "bfs: %s\n", error.c_str());
    return 1;
  }
  size_t nodes = graph.nodes();
  std::vector<int> cost_a(nodes, UNREACHED), cost_b(nodes, UNREACHED), frontier(1, 0);
  cost_a[graph.source] = 0;
  graph.edges.push_back(0);  // (a graph without edges still has an array to pass)
  int *cost_in = cost_a.data(), *cost_out = cost_b.data();

  __hpvm__init();
  llvm_hpvm_track_mem(graph.starts.data(), graph.starts.size() * sizeof(int));
  llvm_hpvm_track_mem(graph.edges.data(), graph.edges.size() * sizeof(int));
  llvm_hpvm_track_mem(cost_a.data(), nodes * sizeof(int));
  llvm_hpvm_track_mem(cost_b.data(), nodes * sizeof(int));
  llvm_hpvm_track_mem(frontier.data(), sizeof(int));
  RootIn *args = (RootIn *)std::malloc(sizeof(RootIn));
  int level = 0;
  for (;; level++) {
    *args = RootIn{graph.starts.data(), graph.starts.size() * sizeof(int), graph.edges.data(),
                   graph.edges.size() * sizeof(int), cost_in, nodes * sizeof(int), cost_out, nodes * sizeof(int),
                   frontier.data(), sizeof(int), level, nodes};
    void *dfg = __hpvm__launch(0, bfs_root, (void *)args);
    __hpvm__wait(dfg);
    llvm_hpvm_request_mem(frontier.data(), sizeof(int));
    if (frontier[0] == 0) break;  // cost_out holds every node's level
    std::swap(cost_in, cost_out);
  }
  llvm_hpvm_request_mem(cost_out, nodes * sizeof(int));
  std::vector<int> cost(cost_out, cost_out + nodes);
  llvm_hpvm_untrack_mem(graph.starts.data());
  llvm_hpvm_untrack_mem(graph.edges.data());
  llvm_hpvm_untrack_mem(cost_a.data());
  llvm_hpvm_untrack_mem(cost_b.data());
  llvm_hpvm_untrack_mem(frontier.data());
  __hpvm__cleanup();
  std::free(args);

  if (!write_costs(output, cost)) {
    std::fprintf(stderr, "bfs: cannot write %s\n", output.c_str());
    return 1;
  }
  std::printf("bfs %zu nodes, %zu edges from node %d: %d levels\n", nodes, graph.edges.size() - 1, graph.source,
              level + 1);
  return 0;
}
