// The n-body host, as a CUDA sample's driver ported to HPVM: bodies on a shell from a fixed
// LCG (std::vector buffers, two for the positions), tracked once; one __hpvm__launch and an
// immediate __hpvm__wait per step, the host swapping the position buffers in the argument
// struct between steps; then the same steps on the host, and the bodies that differ by more
// than a rounding counted.
// Usage: nbody [bodies (1024)] [steps (10)]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "hpvm.h"
#include "nbody.h"

static unsigned lcg(unsigned &state) {
  state = state * 1664525u + 1013904223u;
  return state >> 8;
}

static void stepOnHost(const std::vector<float> &in, std::vector<float> &vel, std::vector<float> &out, float dt,
                       float soft2, long n) {
  for (long i = 0; i < n; i++) {
    float xi = in[4 * i], yi = in[4 * i + 1], zi = in[4 * i + 2];
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (long j = 0; j < n; j++) {
      float dx = in[4 * j] - xi;
      float dy = in[4 * j + 1] - yi;
      float dz = in[4 * j + 2] - zi;
      float r2 = dx * dx + dy * dy + dz * dz + soft2;
      float inv = 1.0f / std::sqrt(r2);
      float s = in[4 * j + 3] * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    float vx = vel[4 * i] + dt * ax, vy = vel[4 * i + 1] + dt * ay, vz = vel[4 * i + 2] + dt * az;
    vel[4 * i] = vx;
    vel[4 * i + 1] = vy;
    vel[4 * i + 2] = vz;
    out[4 * i] = xi + dt * vx;
    out[4 * i + 1] = yi + dt * vy;
    out[4 * i + 2] = zi + dt * vz;
    out[4 * i + 3] = in[4 * i + 3];
  }
}

int main(int argc, char **argv) {
  long n = argc > 1 ? std::stol(argv[1]) : 1024;
  int steps = argc > 2 ? std::stoi(argv[2]) : 10;
  if (n < 1 || steps < 0) {
    std::fprintf(stderr, "Usage: nbody [bodies >= 1] [steps >= 0]\n");
    return 2;
  }
  const float dt = 0.001f, soft2 = 0.01f;
  long grid = (n + NBODY_BLOCK - 1) / NBODY_BLOCK * NBODY_BLOCK;
  size_t bytes = 4 * n * sizeof(float);
  std::vector<float> a(4 * n), b(4 * n, 0.0f), vel(4 * n, 0.0f);
  unsigned state = 12345u;
  for (long i = 0; i < n; i++) {
    float u = (lcg(state) % 10000) / 10000.0f * 6.2831853f, w = (lcg(state) % 10000) / 5000.0f - 1.0f;
    float r = 1.0f + (lcg(state) % 1000) / 1000.0f, s = std::sqrt(1.0f - w * w);
    a[4 * i] = r * s * std::cos(u);
    a[4 * i + 1] = r * s * std::sin(u);
    a[4 * i + 2] = r * w;
    a[4 * i + 3] = 0.5f + (lcg(state) % 100) / 100.0f;
  }
  std::vector<float> wantIn(a), wantOut(b), wantVel(vel);

  __hpvm__init();
  llvm_hpvm_track_mem(a.data(), bytes);
  llvm_hpvm_track_mem(b.data(), bytes);
  llvm_hpvm_track_mem(vel.data(), bytes);
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  float *in = a.data(), *out = b.data();
  for (int s = 0; s < steps; s++) {
    *args = RootIn{in, bytes, vel.data(), bytes, out, bytes, dt, soft2, n, grid};
    void *launch = __hpvm__launch(0, nbodyRoot, (void *)args);
    __hpvm__wait(launch);
    std::swap(in, out);
  }
  llvm_hpvm_request_mem(in, bytes);
  llvm_hpvm_request_mem(vel.data(), bytes);
  for (int s = 0; s < steps; s++) {
    stepOnHost(wantIn, wantVel, wantOut, dt, soft2, n);
    std::swap(wantIn, wantOut);
  }
  int bad = 0;
  for (long k = 0; k < 4 * n; k++) {
    float tol = 1e-4f * (1.0f + std::fabs(wantIn[k]));
    if (std::fabs(in[k] - wantIn[k]) > tol || std::fabs(vel[k] - wantVel[k]) > 1e-4f * (1.0f + std::fabs(wantVel[k])))
      bad++;
  }
  llvm_hpvm_untrack_mem(a.data());
  llvm_hpvm_untrack_mem(b.data());
  llvm_hpvm_untrack_mem(vel.data());
  free(args);
  __hpvm__cleanup();
  std::printf("nbody: %ld bodies, %d steps: %d wrong\n", n, steps, bad);
  return bad != 0;
}
