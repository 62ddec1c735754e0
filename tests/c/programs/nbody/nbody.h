// The n-body program's shared declarations, as HPVM's ports of CUDA benchmarks split them: the
// packed argument struct the host fills for __hpvm__launch, the graph's root, and the
// constants both sides use. Bodies are float4s laid out as x, y, z, mass.
#ifndef NBODY_H
#define NBODY_H

#include <cstddef>

#define NBODY_BLOCK 64  // instances per block: the leaf's grid is n rounded up to whole blocks

typedef struct __attribute__((__packed__)) {
  float *posIn;        // 0: x, y, z, mass of every body, this step
  size_t bytesPosIn;   // 1
  float *vel;          // 2: vx, vy, vz, 0 (updated in place)
  size_t bytesVel;     // 3
  float *posOut;       // 4: the bodies after the step
  size_t bytesPosOut;  // 5
  float dt;            // 6
  float soft2;         // 7: softening, squared
  long n;              // 8
  long grid;           // 9: n rounded up to whole blocks
} RootIn;

void nbodyRoot(float *posIn, size_t bytesPosIn, float *vel, size_t bytesVel, float *posOut, size_t bytesPosOut,
               float dt, float soft2, long n, long grid);

#endif
