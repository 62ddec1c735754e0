// One level of the breadth-first search: two stages joined by all-to-all edges, each
// replicated over the nodes. `bfs_copy` carries every node's cost into the level's output
// (instance 0 also clears the frontier count); `bfs_visit` takes the nodes of this level and
// lowers each neighbour's cost to level + 1 with __hpvm__atomic_min (several nodes may reach
// one neighbour), counting the neighbours it reached first. Costs are read from one array and
// lowered in the other, so no instance reads what another writes (parboil's bfs keeps one
// array and a mask per level; the host here swaps the two arrays between levels). The edges
// carry the output arrays' sizes from stage to stage: what orders the stages.
#include "bfs.h"
#include "hpvm.h"

void bfs_copy(int *cost_in, size_t bytes_cost_in, int *cost_out, size_t bytes_cost_out, int *frontier,
              size_t bytes_frontier) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, cost_in, 2, cost_out, frontier);
  size_t node = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  cost_out[node] = cost_in[node];
  if (node == 0) frontier[0] = 0;
  __hpvm__return(2, bytes_cost_out, bytes_frontier);
}

void bfs_visit(int *starts, size_t bytes_starts, int *edges, size_t bytes_edges, int *cost_in, size_t bytes_cost_in,
               int *cost_out, size_t bytes_cost_out, int *frontier, size_t bytes_frontier, int level) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(5, starts, edges, cost_in, cost_out, frontier, 2, cost_out, frontier);
  size_t node = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  if (cost_in[node] == level) {
    for (int e = starts[node]; e < starts[node + 1]; e++) {
      int before = __hpvm__atomic_min(&cost_out[edges[e]], level + 1);
      if (before > level + 1) __hpvm__atomic_add(frontier, 1);
    }
  }
  __hpvm__return(2, bytes_cost_out, bytes_frontier);
}

void bfs_root(int *starts, size_t bytes_starts, int *edges, size_t bytes_edges, int *cost_in, size_t bytes_cost_in,
              int *cost_out, size_t bytes_cost_out, int *frontier, size_t bytes_frontier, int level, size_t nodes) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(5, starts, edges, cost_in, cost_out, frontier, 2, cost_out, frontier);
  void *copy = __hpvm__createNodeND(1, bfs_copy, nodes);
  void *visit = __hpvm__createNodeND(1, bfs_visit, nodes);
  __hpvm__bindIn(copy, 4, 0, 0);  // cost_in
  __hpvm__bindIn(copy, 5, 1, 0);
  __hpvm__bindIn(copy, 6, 2, 0);  // cost_out
  __hpvm__bindIn(copy, 7, 3, 0);
  __hpvm__bindIn(copy, 8, 4, 0);  // frontier
  __hpvm__bindIn(copy, 9, 5, 0);
  __hpvm__bindIn(visit, 0, 0, 0);  // starts
  __hpvm__bindIn(visit, 1, 1, 0);
  __hpvm__bindIn(visit, 2, 2, 0);  // edges
  __hpvm__bindIn(visit, 3, 3, 0);
  __hpvm__bindIn(visit, 4, 4, 0);  // cost_in
  __hpvm__bindIn(visit, 5, 5, 0);
  __hpvm__bindIn(visit, 6, 6, 0);  // cost_out, its size from copy
  __hpvm__edge(copy, visit, 1, 0, 7, 0);  // cost_out's size: after the copy
  __hpvm__bindIn(visit, 8, 8, 0);         // frontier
  __hpvm__edge(copy, visit, 1, 1, 9, 0);  // its size: after the clearing
  __hpvm__bindIn(visit, 10, 10, 0);       // level
}
