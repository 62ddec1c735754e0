// A brightness/contrast pass written as HPVM's C++ benchmarks write graphs: a 2-D leaf in the
// CUDA convention (x the fastest index, a flattened y * w + x), __hpvm__return of the bytes it
// wrote (as HPVM's leaves hand their output sizes on), a wrapper node binding that output up
// into the packed RootIn's return struct, and a C++ host with std::vector that checks itself.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "hpvm.h"

struct RetTy {
  size_t bytes_out;
};

typedef struct __attribute__((__packed__)) {
  float *in;
  size_t bytes_in;
  float *out;
  size_t bytes_out;
  float gain;
  float bias;
  long w;
  long h;
  RetTy r;
} RootIn;

void brighten(float *in, size_t bytes_in, float *out, size_t bytes_out, float gain, float bias, long w,
              long h) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 1, out);
  void *self = __hpvm__getNode();
  long x = __hpvm__getNodeInstanceID_x(self);
  long y = __hpvm__getNodeInstanceID_y(self);
  out[y * w + x] = gain * in[y * w + x] + bias;
  __hpvm__return(1, bytes_out);
}

void brighten_wrapper(float *in, size_t bytes_in, float *out, size_t bytes_out, float gain, float bias,
                      long w, long h) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 1, out);
  void *node = __hpvm__createNodeND(2, brighten, w, h);
  for (int p = 0; p < 8; p++)
    __hpvm__bindIn(node, p, p, 0);
  __hpvm__bindOut(node, 0, 0, 0);
}

void root(float *in, size_t bytes_in, float *out, size_t bytes_out, float gain, float bias, long w, long h) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 1, out);
  void *node = __hpvm__createNodeND(0, brighten_wrapper);
  for (int p = 0; p < 8; p++)
    __hpvm__bindIn(node, p, p, 0);
  __hpvm__bindOut(node, 0, 0, 0);
}

int main() {
  const long w = 67, h = 29;
  const size_t bytes = sizeof(float) * w * h;
  std::vector<float> in(w * h), out(w * h, -1.0f);
  for (long i = 0; i < w * h; i++)
    in[i] = static_cast<float>((i * 37) % 101) / 8.0f;
  __hpvm__init();
  auto *args = static_cast<RootIn *>(std::malloc(sizeof(RootIn)));
  *args = RootIn{in.data(), bytes, out.data(), bytes, 1.5f, -2.0f, w, h, RetTy{0}};
  llvm_hpvm_track_mem(in.data(), bytes);
  llvm_hpvm_track_mem(out.data(), bytes);
  void *graph = __hpvm__launch(0, root, static_cast<void *>(args));
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(out.data(), bytes);
  int bad = args->r.bytes_out != bytes;
  for (long i = 0; i < w * h; i++)
    if (out[i] != 1.5f * in[i] - 2.0f) bad++;
  llvm_hpvm_untrack_mem(in.data());
  llvm_hpvm_untrack_mem(out.data());
  __hpvm__cleanup();
  std::printf("brighten: %ld x %ld pixels, %d wrong\n", w, h, bad);
  return bad != 0;
}
