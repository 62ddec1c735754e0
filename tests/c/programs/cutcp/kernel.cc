// The cutoff potential's graph: an internal root and two leaves in a row, each replicated
// 3-D over the lattice in the GPU convention (x, the fastest index of the lattice, is the
// instance id x; z counts blocks of POINTS_Z points). `cutcp_lattice` sums, for its points,
// q / r * (1 - r^2 / c^2)^2 over the atoms of the neighbouring bins (the neighbour list is a
// port, as parboil passes it in constant memory) within the cutoff c, and counts them;
// `cutcp_overflow` adds the atoms no bin slot took. A one-to-one edge carries the lattice's
// and the counts' sizes from the first leaf to the second: each instance of the second starts
// after its own instance of the first has written its points.
#include "cutcp.h"
#include "hpvm.h"

// The contribution of an atom of charge q at squared distance r2 (below the cutoff's square,
// whose inverse is inv_c2): parboil's smooth cutoff, (1 - r^2 / c^2)^2 q / r.
static inline float smoothed(float q, float r2, float inv_c2) {
  float s = 1.0f - r2 * inv_c2;
  return q * __hpvm__rsqrt(r2) * s * s;
}

void cutcp_lattice(float *slots, size_t bytes_slots, int *counts, size_t bytes_counts, int *offsets,
                   size_t bytes_offsets, float *lattice, size_t bytes_lattice, int *near, size_t bytes_near,
                   long noffsets, long nx, long ny, long nz, long bx, long by, long pad, float h, float lo_x,
                   float lo_y, float lo_z, float cutoff2) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(3, slots, counts, offsets, 2, lattice, near);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  long j = __hpvm__getNodeInstanceID_y(self);
  long k0 = __hpvm__getNodeInstanceID_z(self) * POINTS_Z;
  float energy[POINTS_Z];
  int within[POINTS_Z];
  for (int t = 0; t < POINTS_Z; t++) {
    energy[t] = 0.0f;
    within[t] = 0;
  }
  float px = lo_x + h * (float)i, py = lo_y + h * (float)j;
  float inv_c2 = 1.0f / cutoff2;
  // the bin of the instance's points (padding included), and a local copy of one
  // neighbouring bin at a time (parboil's kernel caches bins in shared memory)
  long cx = i / BIN_POINTS + pad, cy = j / BIN_POINTS + pad, cz = k0 / BIN_POINTS + pad;
  float bin[BIN_DEPTH * ATOM_FLOATS];
  for (long n = 0; n < noffsets; n++) {
    long b = ((cz + offsets[3 * n + 2]) * by + (cy + offsets[3 * n + 1])) * bx + (cx + offsets[3 * n]);
    int count = counts[b];
    for (int s = 0; s < count * ATOM_FLOATS; s++) bin[s] = slots[b * (BIN_DEPTH * ATOM_FLOATS) + s];
    for (int a = 0; a < count; a++) {
      float dx = bin[ATOM_FLOATS * a] - px, dy = bin[ATOM_FLOATS * a + 1] - py;
      float dxy2 = dx * dx + dy * dy;
      if (dxy2 >= cutoff2) continue;
      for (int t = 0; t < POINTS_Z; t++) {
        float dz = bin[ATOM_FLOATS * a + 2] - (lo_z + h * (float)(k0 + t));
        float r2 = dxy2 + dz * dz;
        if (r2 < cutoff2) {
          energy[t] += smoothed(bin[ATOM_FLOATS * a + 3], r2, inv_c2);
          within[t] += 1;
        }
      }
    }
  }
  for (int t = 0; t < POINTS_Z; t++) {
    long k = k0 + t;
    if (k < nz) {  // (the last block of z may reach past the lattice)
      lattice[(k * ny + j) * nx + i] = energy[t];
      near[(k * ny + j) * nx + i] = within[t];
    }
  }
  __hpvm__return(2, bytes_lattice, bytes_near);
}

void cutcp_overflow(float *overflow, size_t bytes_overflow, float *lattice, size_t bytes_lattice, int *near,
                    size_t bytes_near, long noverflow, long nx, long ny, long nz, float h, float lo_x, float lo_y,
                    float lo_z, float cutoff2) {
  __hpvm__hint(hpvm::DEVICE);
  __hpvm__attributes(3, overflow, lattice, near, 2, lattice, near);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  long j = __hpvm__getNodeInstanceID_y(self);
  long k0 = __hpvm__getNodeInstanceID_z(self) * POINTS_Z;
  float px = lo_x + h * (float)i, py = lo_y + h * (float)j;
  float inv_c2 = 1.0f / cutoff2;
  for (long k = k0; k < k0 + POINTS_Z && k < nz; k++) {
    float pz = lo_z + h * (float)k;
    float energy = lattice[(k * ny + j) * nx + i];
    int within = near[(k * ny + j) * nx + i];
    for (long a = 0; a < noverflow; a++) {
      float dx = overflow[ATOM_FLOATS * a] - px, dy = overflow[ATOM_FLOATS * a + 1] - py;
      float dz = overflow[ATOM_FLOATS * a + 2] - pz;
      float r2 = dx * dx + dy * dy + dz * dz;
      if (r2 < cutoff2) {
        energy += smoothed(overflow[ATOM_FLOATS * a + 3], r2, inv_c2);
        within += 1;
      }
    }
    lattice[(k * ny + j) * nx + i] = energy;
    near[(k * ny + j) * nx + i] = within;
  }
  __hpvm__return(2, bytes_lattice, bytes_near);
}

void cutcp_root(float *slots, size_t bytes_slots, int *counts, size_t bytes_counts, int *offsets,
                size_t bytes_offsets, float *overflow, size_t bytes_overflow, float *lattice, size_t bytes_lattice,
                int *near, size_t bytes_near, long noffsets, long noverflow, long nx, long ny, long nz, long bx,
                long by, long pad, float h, float lo_x, float lo_y, float lo_z, float cutoff2) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(6, slots, counts, offsets, overflow, lattice, near, 2, lattice, near);
  void *binned = __hpvm__createNodeND(3, cutcp_lattice, nx, ny, (nz + POINTS_Z - 1) / POINTS_Z);
  void *extra = __hpvm__createNodeND(3, cutcp_overflow, nx, ny, (nz + POINTS_Z - 1) / POINTS_Z);
  for (int p = 0; p < 6; p++) __hpvm__bindIn(binned, p, p, 0);  // slots, counts, offsets
  __hpvm__bindIn(binned, 8, 6, 0);                              // lattice
  __hpvm__bindIn(binned, 9, 7, 0);
  __hpvm__bindIn(binned, 10, 8, 0);  // near
  __hpvm__bindIn(binned, 11, 9, 0);
  __hpvm__bindIn(binned, 12, 10, 0);                                 // noffsets
  for (int p = 14; p < 25; p++) __hpvm__bindIn(binned, p, p - 3, 0);  // nx .. cutoff2
  __hpvm__bindIn(extra, 6, 0, 0);  // overflow
  __hpvm__bindIn(extra, 7, 1, 0);
  __hpvm__bindIn(extra, 8, 2, 0);          // lattice, its size from the first leaf:
  __hpvm__edge(binned, extra, 0, 0, 3, 0);  // each instance after its own
  __hpvm__bindIn(extra, 10, 4, 0);          // near, the same way
  __hpvm__edge(binned, extra, 0, 1, 5, 0);
  __hpvm__bindIn(extra, 13, 6, 0);                                    // noverflow
  for (int p = 14; p < 17; p++) __hpvm__bindIn(extra, p, p - 7, 0);   // nx, ny, nz
  for (int p = 20; p < 25; p++) __hpvm__bindIn(extra, p, p - 10, 0);  // h .. cutoff2
}
