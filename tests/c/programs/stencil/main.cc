// The host of the stencil program, as parboil's stencil host is written for HPVM: both grids
// tracked, then the starting grid copied into the second (the graph never writes the
// boundary, so it must already hold it), one launch per time step with a fresh argument
// struct, the host's pointers swapped between launches (the result of one step is the
// input of the next, and stays with the runtime), the last result requested once at the
// end. It checks every point against the same steps taken by a plain loop (grid.cc).
// Usage: stencil nx ny nz t [bx [by [bz]]]   (the grid's sizes, the time steps, a block;
// parboil's block is 256 x 1 x 1, the default here)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "hpvm.h"
#include "stencil.h"

static int usage() {
  std::printf("Usage: stencil nx ny nz t [bx [by [bz]]]\n"
              "nx, ny, nz: the grid's sizes (at least 3: one interior point)\n"
              "t: the time steps (at least 1)\n"
              "bx, by, bz: leaf instances per group (256 1 1)\n");
  return -1;
}

int main(int argc, char **argv) {
  if (argc < 5) return usage();
  int nx = std::atoi(argv[1]), ny = std::atoi(argv[2]), nz = std::atoi(argv[3]);
  int iterations = std::atoi(argv[4]);
  size_t block[3] = {256, 1, 1};
  for (int d = 0; d < 3 && 5 + d < argc; d++) block[d] = (size_t)std::max(0, std::atoi(argv[5 + d]));
  if (nx < 3 || ny < 3 || nz < 3 || iterations < 1 || !block[0] || !block[1] || !block[2]) return usage();
  int interior[3] = {nx - 2, ny - 2, nz - 2};
  size_t groups[3];
  for (int d = 0; d < 3; d++) groups[d] = ((size_t)interior[d] + block[d] - 1) / block[d];
  const float c0 = 1.0f / 6.0f, c1 = 1.0f / 6.0f / 6.0f;

  std::vector<float> start = starting_grid(nx, ny, nz, 2026);
  std::vector<float> first(start), second(start.size());
  size_t bytes = start.size() * sizeof(float);
  float *h_A0 = first.data(), *h_Anext = second.data();

  __hpvm__init();
  llvm_hpvm_track_mem(h_A0, bytes);
  llvm_hpvm_track_mem(h_Anext, bytes);
  std::memcpy(h_Anext, h_A0, bytes);
  for (int t = 0; t < iterations; t++) {
    RootIn *root_in = (RootIn *)std::malloc(sizeof(RootIn));
    *root_in = RootIn{c0,       c1,       h_A0,     bytes,     h_Anext,   bytes,     nx,       ny,
                      nz,       block[0], block[1], block[2],  groups[0], groups[1], groups[2]};
    void *stencilDFG = __hpvm__launch(0, stencilLvl3, (void *)root_in);
    __hpvm__wait(stencilDFG);
    std::free(root_in);
    std::swap(h_A0, h_Anext);  // this step's output is the next step's input
  }
  llvm_hpvm_request_mem(h_A0, bytes);
  llvm_hpvm_untrack_mem(h_A0);
  llvm_hpvm_untrack_mem(h_Anext);
  __hpvm__cleanup();

  std::vector<float> want(start), next;
  for (int t = 0; t < iterations; t++) {
    reference_step(c0, c1, want, next, nx, ny, nz);
    want.swap(next);
  }
  int bad = 0;
  double sum = 0.0;
  for (size_t p = 0; p < want.size(); p++) {
    if (!(std::fabs(h_A0[p] - want[p]) <= 1e-5f * (1.0f + std::fabs(want[p])))) bad++;
    sum += h_A0[p];
  }
  std::printf("stencil %dx%dx%d, %d steps, block %zux%zux%zu, %zux%zux%zu groups: %d wrong, sum %.4f\n", nx, ny,
              nz, iterations, block[0], block[1], block[2], groups[0], groups[1], groups[2], bad, sum);
  return bad != 0;
}
