// Parboil's cutcp, as a host written for HPVM: `cutcp -i atoms.pqr -o lattice.bin [-c cutoff]
// [-s spacing]` reads the atoms, builds the lattice over their extent (parboil's 0.5 A
// spacing and 12 A cutoff unless told), bins the atoms and the neighbour list (atoms.cc),
// launches the graph once (kernel.cc) and writes every lattice point's potential and the
// count of atoms within the cutoff of it. The host uses the C++ standard library
// (std::vector, std::string, <fstream>).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cutcp.h"
#include "hpvm.h"

int main(int argc, char **argv) {
  std::string input, output;
  float cutoff = 12.0f, spacing = 0.5f;
  for (int k = 1; k + 1 < argc; k += 2) {
    std::string flag = argv[k];
    if (flag == "-i") input = argv[k + 1];
    else if (flag == "-o") output = argv[k + 1];
    else if (flag == "-c") cutoff = std::strtof(argv[k + 1], nullptr);
    else if (flag == "-s") spacing = std::strtof(argv[k + 1], nullptr);
  }
  if (input.empty() || output.empty() || !(cutoff > 0) || !(spacing > 0)) {
    std::fprintf(stderr, "usage: cutcp -i atoms.pqr -o lattice.bin [-c cutoff > 0] [-s spacing > 0]\n");
    return 1;
  }
  std::vector<Atom> atoms;
  std::string error;
  if (!read_atoms(input, atoms, error)) {
    std::fprintf(stderr, "cutcp: %s\n", error.c_str());
    return 1;
  }
  Grid grid;
  build_grid(atoms, spacing, cutoff, grid);
  size_t points = (size_t)(grid.nx * grid.ny * grid.nz);
  long noverflow = (long)(grid.overflow.size() / ATOM_FLOATS);
  grid.overflow.resize(grid.overflow.size() + ATOM_FLOATS);  // (no overflow still has an array to pass)
  std::vector<float> lattice(points, 0.0f);
  std::vector<int> near(points, -1);

  RootIn *args = (RootIn *)std::malloc(sizeof(RootIn));
  *args = RootIn{grid.slots.data(), grid.slots.size() * sizeof(float), grid.counts.data(),
                 grid.counts.size() * sizeof(int), grid.offsets.data(), grid.offsets.size() * sizeof(int),
                 grid.overflow.data(), grid.overflow.size() * sizeof(float), lattice.data(), points * sizeof(float),
                 near.data(), points * sizeof(int), (long)(grid.offsets.size() / 3), noverflow, grid.nx, grid.ny,
                 grid.nz, grid.bins[0], grid.bins[1], grid.pad, grid.h, grid.lo[0], grid.lo[1], grid.lo[2],
                 cutoff * cutoff};
  __hpvm__init();
  llvm_hpvm_track_mem(grid.slots.data(), grid.slots.size() * sizeof(float));
  llvm_hpvm_track_mem(grid.counts.data(), grid.counts.size() * sizeof(int));
  llvm_hpvm_track_mem(grid.offsets.data(), grid.offsets.size() * sizeof(int));
  llvm_hpvm_track_mem(grid.overflow.data(), grid.overflow.size() * sizeof(float));
  llvm_hpvm_track_mem(lattice.data(), points * sizeof(float));
  llvm_hpvm_track_mem(near.data(), points * sizeof(int));
  void *dfg = __hpvm__launch(0, cutcp_root, (void *)args);
  __hpvm__wait(dfg);
  llvm_hpvm_request_mem(lattice.data(), points * sizeof(float));
  llvm_hpvm_request_mem(near.data(), points * sizeof(int));
  llvm_hpvm_untrack_mem(grid.slots.data());
  llvm_hpvm_untrack_mem(grid.counts.data());
  llvm_hpvm_untrack_mem(grid.offsets.data());
  llvm_hpvm_untrack_mem(grid.overflow.data());
  llvm_hpvm_untrack_mem(lattice.data());
  llvm_hpvm_untrack_mem(near.data());
  __hpvm__cleanup();
  std::free(args);

  if (!write_lattice(output, grid, lattice, near)) {
    std::fprintf(stderr, "cutcp: cannot write %s\n", output.c_str());
    return 1;
  }
  std::printf("cutcp %zu atoms (%ld in no bin slot), %ldx%ldx%ld lattice, cutoff %g: %zu bin offsets\n",
              atoms.size(), noverflow, grid.nx, grid.ny, grid.nz, cutoff, grid.offsets.size() / 3);
  return 0;
}
