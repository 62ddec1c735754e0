// The cutoff Coulombic potential's shared declarations (parboil's cutcp shape, written for
// hpvm's HPVM-C front end): the atoms as the PQR file gives them, the lattice and its bins,
// the root's argument struct and the root node function main.cc launches.
#ifndef CUTCP_H
#define CUTCP_H

#include <cstddef>
#include <string>
#include <vector>

// Lattice points one instance of the lattice leaf computes, along z (parboil's threads keep
// several points in registers; here they are a local array). BIN_POINTS is a multiple of it,
// so an instance's points all lie in one bin and share its neighbours.
#define POINTS_Z 4
// A bin is a cube BIN_POINTS lattice spacings on a side (parboil: 4 A bins, 0.5 A spacing);
// the point's bin is then integer arithmetic of its index, with no rounding at bin faces.
#define BIN_POINTS 8
// Atoms a bin holds (parboil's BIN_DEPTH); the atoms past it go to the overflow list, which
// a second leaf adds in (parboil adds them on the CPU).
#define BIN_DEPTH 8
// Floats per atom slot in a bin and in the overflow list: x, y, z, charge.
#define ATOM_FLOATS 4

// One atom of a PQR file: its position (in A) and its charge.
struct Atom {
  float x, y, z, q;
};

// The lattice and the binned atoms, as the host builds them for the graph.
struct Grid {
  long nx = 0, ny = 0, nz = 0;  // lattice points along x (the fastest index), y, z
  float h = 0.5f;               // spacing
  float lo[3] = {0, 0, 0};      // the position of point (0, 0, 0): the atoms' lowest corner
  long pad = 0;                 // empty bins on each side: every neighbour offset stays inside
  long bins[3] = {0, 0, 0};     // bins along x, y, z, the padding included
  std::vector<float> slots;     // BIN_DEPTH atom slots of ATOM_FLOATS per bin, x fastest
  std::vector<int> counts;      // the atoms in each bin (at most BIN_DEPTH)
  std::vector<float> overflow;  // the atoms no slot took, ATOM_FLOATS each
  std::vector<int> offsets;     // the neighbour list: 3 ints (dx, dy, dz) per bin offset
};

// The atoms of the PQR file at `path` (its ATOM and HETATM records; others are skipped);
// false with `error` set if it cannot be read, a record is malformed, or it has no atom.
bool read_atoms(const std::string &path, std::vector<Atom> &atoms, std::string &error);
// The lattice over the atoms' extent at spacing `h`, the atoms binned, the neighbour list
// for `cutoff` (every bin offset whose nearest point lies closer than the cutoff).
void build_grid(const std::vector<Atom> &atoms, float h, float cutoff, Grid &grid);
// The output: nx, ny, nz (32-bit), the potentials (float32, x fastest), then the atoms
// within the cutoff of each point (int32, the same order).
bool write_lattice(const std::string &path, const Grid &grid, const std::vector<float> &lattice,
                   const std::vector<int> &near);

typedef struct __attribute__((__packed__)) {
  float *slots;
  size_t bytes_slots;
  int *counts;
  size_t bytes_counts;
  int *offsets;
  size_t bytes_offsets;
  float *overflow;
  size_t bytes_overflow;
  float *lattice;
  size_t bytes_lattice;
  int *near;
  size_t bytes_near;
  long noffsets;
  long noverflow;
  long nx, ny, nz;
  long bx, by, pad;
  float h, lo_x, lo_y, lo_z, cutoff2;
} RootIn;

void cutcp_root(float *slots, size_t bytes_slots, int *counts, size_t bytes_counts, int *offsets,
                size_t bytes_offsets, float *overflow, size_t bytes_overflow, float *lattice, size_t bytes_lattice,
                int *near, size_t bytes_near, long noffsets, long noverflow, long nx, long ny, long nz, long bx,
                long by, long pad, float h, float lo_x, float lo_y, float lo_z, float cutoff2);

#endif
