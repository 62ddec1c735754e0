// Parboil's cutcp files and the host's half of its method: the atoms of a PQR file (each
// ATOM or HETATM record ends with x y z charge radius), the lattice over their extent with
// the atoms binned into cubes of BIN_POINTS spacings (BIN_DEPTH slots each, the rest in an
// overflow list) and the neighbour list, and the output lattice file — with the standard
// library.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cutcp.h"

static bool is_number(const std::string &word, float &value) {
  char *end = nullptr;
  value = std::strtof(word.c_str(), &end);
  return !word.empty() && *end == '\0' && std::isfinite(value);
}

bool read_atoms(const std::string &path, std::vector<Atom> &atoms, std::string &error) {
  std::ifstream in(path);
  if (!in) {
    error = "cannot open " + path;
    return false;
  }
  std::string line;
  for (size_t number = 1; std::getline(in, line); number++) {
    std::istringstream fields(line);
    std::vector<std::string> words;
    for (std::string word; fields >> word;) words.push_back(word);
    if (words.empty() || (words[0] != "ATOM" && words[0] != "HETATM")) continue;  // REMARK, TER, END...
    std::string where = path + ":" + std::to_string(number) + ": ";
    if (words.size() < 6) {
      error = where + words[0] + " record without its x y z charge radius";
      return false;
    }
    float value[5];
    for (int f = 0; f < 5; f++)
      if (!is_number(words[words.size() - 5 + f], value[f])) {
        error = where + "'" + words[words.size() - 5 + f] +
                "' is not a number (an ATOM or HETATM record ends with x y z charge radius)";
        return false;
      }
    atoms.push_back(Atom{value[0], value[1], value[2], value[3]});
  }
  if (atoms.empty()) {
    error = path + ": no ATOM or HETATM record";
    return false;
  }
  return true;
}

void build_grid(const std::vector<Atom> &atoms, float h, float cutoff, Grid &grid) {
  float lo[3] = {atoms[0].x, atoms[0].y, atoms[0].z}, hi[3] = {lo[0], lo[1], lo[2]};
  for (const Atom &a : atoms) {
    float p[3] = {a.x, a.y, a.z};
    for (int d = 0; d < 3; d++) {
      lo[d] = std::min(lo[d], p[d]);
      hi[d] = std::max(hi[d], p[d]);
    }
  }
  grid.h = h;
  long n[3];
  for (int d = 0; d < 3; d++) {
    grid.lo[d] = lo[d];
    n[d] = (long)std::floor((hi[d] - lo[d]) / h) + 1;  // (parboil's lattice over the extent)
  }
  grid.nx = n[0];
  grid.ny = n[1];
  grid.nz = n[2];
  double side = (double)BIN_POINTS * h;
  grid.pad = (long)std::ceil(cutoff / side);
  long core[3];
  for (int d = 0; d < 3; d++) {
    core[d] = (n[d] + BIN_POINTS - 1) / BIN_POINTS;
    grid.bins[d] = core[d] + 2 * grid.pad;
  }
  size_t bins = (size_t)(grid.bins[0] * grid.bins[1] * grid.bins[2]);
  grid.slots.assign(bins * BIN_DEPTH * ATOM_FLOATS, 0.0f);
  grid.counts.assign(bins, 0);
  for (const Atom &a : atoms) {
    float p[3] = {a.x, a.y, a.z};
    long c[3];
    for (int d = 0; d < 3; d++)
      c[d] = std::min(std::max((long)std::floor((p[d] - lo[d]) / side), 0L), core[d] - 1) + grid.pad;
    size_t b = (size_t)((c[2] * grid.bins[1] + c[1]) * grid.bins[0] + c[0]);
    float *to;
    if (grid.counts[b] < BIN_DEPTH) {
      to = &grid.slots[(b * BIN_DEPTH + grid.counts[b]++) * ATOM_FLOATS];
    } else {
      grid.overflow.resize(grid.overflow.size() + ATOM_FLOATS);
      to = &grid.overflow[grid.overflow.size() - ATOM_FLOATS];
    }
    to[0] = a.x;
    to[1] = a.y;
    to[2] = a.z;
    to[3] = a.q;
  }
  // the neighbour list: a bin offset whose nearest point (|d| - 1 bins away on each axis)
  // is closer than the cutoff
  long p = grid.pad;
  for (long dz = -p; dz <= p; dz++)
    for (long dy = -p; dy <= p; dy++)
      for (long dx = -p; dx <= p; dx++) {
        double gap2 = 0;
        for (long d : {dx, dy, dz}) gap2 += std::pow(std::max(std::labs(d) - 1, 0L) * side, 2);
        if (gap2 < (double)cutoff * cutoff) grid.offsets.insert(grid.offsets.end(), {(int)dx, (int)dy, (int)dz});
      }
}

bool write_lattice(const std::string &path, const Grid &grid, const std::vector<float> &lattice,
                   const std::vector<int> &near) {
  std::ofstream out(path, std::ios::binary);
  int32_t dims[3] = {(int32_t)grid.nx, (int32_t)grid.ny, (int32_t)grid.nz};
  out.write(reinterpret_cast<const char *>(dims), sizeof dims);
  out.write(reinterpret_cast<const char *>(lattice.data()), (std::streamsize)(lattice.size() * sizeof(float)));
  out.write(reinterpret_cast<const char *>(near.data()), (std::streamsize)(near.size() * sizeof(int)));
  return (bool)out;
}
