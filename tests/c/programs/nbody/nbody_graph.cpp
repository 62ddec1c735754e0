// The n-body step's graph, in the shape of HPVM's GPU-convention ports: a CPU root holding a
// wrapper that replicates the leaf over a grid rounded up to whole blocks, the leaf's body
// under `if (i < n)`. Each instance is one body: it sums the softened pull of every body on
// it (the loop runs to n, a scalar the host gives), then a leapfrog step — the velocity in
// place, the position into the other buffer.
#include <cmath>

#include "hpvm.h"
#include "nbody.h"

void bodyStep(float *posIn, size_t bytesPosIn, float *vel, size_t bytesVel, float *posOut, size_t bytesPosOut,
              float dt, float soft2, long n) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, posIn, vel, 2, vel, posOut);
  void *self = __hpvm__getNode();
  long i = __hpvm__getNodeInstanceID_x(self);
  if (i < n) {
    float xi = posIn[4 * i], yi = posIn[4 * i + 1], zi = posIn[4 * i + 2];
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (long j = 0; j < n; j++) {
      float dx = posIn[4 * j] - xi;
      float dy = posIn[4 * j + 1] - yi;
      float dz = posIn[4 * j + 2] - zi;
      float r2 = dx * dx + dy * dy + dz * dz + soft2;
      float inv = 1.0f / sqrtf(r2);
      float s = posIn[4 * j + 3] * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    float vx = vel[4 * i] + dt * ax, vy = vel[4 * i + 1] + dt * ay, vz = vel[4 * i + 2] + dt * az;
    vel[4 * i] = vx;
    vel[4 * i + 1] = vy;
    vel[4 * i + 2] = vz;
    posOut[4 * i] = xi + dt * vx;
    posOut[4 * i + 1] = yi + dt * vy;
    posOut[4 * i + 2] = zi + dt * vz;
    posOut[4 * i + 3] = posIn[4 * i + 3];
  }
}

void WrapperStep(float *posIn, size_t bytesPosIn, float *vel, size_t bytesVel, float *posOut, size_t bytesPosOut,
                 float dt, float soft2, long n, long grid) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, posIn, vel, 2, vel, posOut);
  void *node = __hpvm__createNodeND(1, bodyStep, grid);
  for (int p = 0; p < 9; p++) __hpvm__bindIn(node, p, p, 0);
}

void nbodyRoot(float *posIn, size_t bytesPosIn, float *vel, size_t bytesVel, float *posOut, size_t bytesPosOut,
               float dt, float soft2, long n, long grid) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(2, posIn, vel, 2, vel, posOut);
  void *node = __hpvm__createNodeND(0, WrapperStep);
  for (int p = 0; p < 10; p++) __hpvm__bindIn(node, p, p, 0);
}
