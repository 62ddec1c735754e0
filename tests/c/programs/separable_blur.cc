// A separable 1-2-1 blur written as HPVM's C++ benchmarks write a pipeline of kernels: the
// root creates one 2-D leaf per pass over the image (x the fastest index, as a CUDA kernel's
// thread grid), and the row pass hands the column pass the intermediate's size over an
// all-to-all edge (HPVM's way of ordering two kernels: the column pass starts after every
// instance of the row pass). A third leaf over the same grid, joined to neither, keeps a
// copy of the input: siblings the runtime may run in any order. Borders are clamped.
// A C++ host with std::vector computes the same passes and counts the differences.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "hpvm.h"

typedef struct __attribute__((__packed__)) {
  float *in;
  size_t bytes_in;
  float *tmp;
  size_t bytes_tmp;
  float *out;
  size_t bytes_out;
  float *keep;
  size_t bytes_keep;
  long w;
  long h;
} RootIn;

static inline long clamp(long v, long hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

void blur_rows(float *in, size_t bytes_in, float *tmp, size_t bytes_tmp, long w, long h) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 1, tmp);
  void *self = __hpvm__getNode();
  long x = __hpvm__getNodeInstanceID_x(self), y = __hpvm__getNodeInstanceID_y(self);
  const float *row = in + y * w;
  tmp[y * w + x] = (row[clamp(x - 1, w - 1)] + 2.0f * row[x] + row[clamp(x + 1, w - 1)]) * 0.25f;
  __hpvm__return(1, bytes_tmp);
}

void blur_cols(float *tmp, size_t bytes_tmp, float *out, size_t bytes_out, long w, long h) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, tmp, 1, out);
  void *self = __hpvm__getNode();
  long x = __hpvm__getNodeInstanceID_x(self), y = __hpvm__getNodeInstanceID_y(self);
  out[y * w + x] = (tmp[clamp(y - 1, h - 1) * w + x] + 2.0f * tmp[y * w + x] + tmp[clamp(y + 1, h - 1) * w + x]) * 0.25f;
}

void keep_input(float *in, size_t bytes_in, float *keep, size_t bytes_keep, long w, long h) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 1, keep);
  void *self = __hpvm__getNode();
  long x = __hpvm__getNodeInstanceID_x(self), y = __hpvm__getNodeInstanceID_y(self);
  keep[y * w + x] = in[y * w + x];
}

void blur_root(float *in, size_t bytes_in, float *tmp, size_t bytes_tmp, float *out, size_t bytes_out,
               float *keep, size_t bytes_keep, long w, long h) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 3, tmp, out, keep);
  void *rows = __hpvm__createNodeND(2, blur_rows, w, h);
  void *cols = __hpvm__createNodeND(2, blur_cols, w, h);
  void *copy = __hpvm__createNodeND(2, keep_input, w, h);
  __hpvm__bindIn(rows, 0, 0, 0);  // in, bytes_in
  __hpvm__bindIn(rows, 1, 1, 0);
  __hpvm__bindIn(rows, 2, 2, 0);  // tmp, bytes_tmp
  __hpvm__bindIn(rows, 3, 3, 0);
  __hpvm__bindIn(rows, 8, 4, 0);  // w, h
  __hpvm__bindIn(rows, 9, 5, 0);
  __hpvm__bindIn(cols, 2, 0, 0);  // tmp; its size comes over the edge
  __hpvm__edge(rows, cols, 1, 0, 1, 0);
  __hpvm__bindIn(cols, 4, 2, 0);  // out, bytes_out
  __hpvm__bindIn(cols, 5, 3, 0);
  __hpvm__bindIn(cols, 8, 4, 0);
  __hpvm__bindIn(cols, 9, 5, 0);
  __hpvm__bindIn(copy, 0, 0, 0);  // in, bytes_in
  __hpvm__bindIn(copy, 1, 1, 0);
  __hpvm__bindIn(copy, 6, 2, 0);  // keep, bytes_keep
  __hpvm__bindIn(copy, 7, 3, 0);
  __hpvm__bindIn(copy, 8, 4, 0);
  __hpvm__bindIn(copy, 9, 5, 0);
}

int main(int argc, char **argv) {
  long w = argc > 2 ? atol(argv[1]) : 29, h = argc > 2 ? atol(argv[2]) : 17;
  size_t bytes = w * h * sizeof(float);
  std::vector<float> in(w * h), tmp(w * h), out(w * h, -1.0f), keep(w * h, -1.0f);
  for (long i = 0; i < w * h; i++) in[i] = (float)((i * 37 + 11) % 256);
  __hpvm__init();
  RootIn *args = (RootIn *)malloc(sizeof(RootIn));
  *args = RootIn{in.data(), bytes, tmp.data(), bytes, out.data(), bytes, keep.data(), bytes, w, h};
  llvm_hpvm_track_mem(in.data(), bytes);
  llvm_hpvm_track_mem(tmp.data(), bytes);
  llvm_hpvm_track_mem(out.data(), bytes);
  llvm_hpvm_track_mem(keep.data(), bytes);
  void *graph = __hpvm__launch(0, blur_root, (void *)args);
  __hpvm__wait(graph);
  llvm_hpvm_request_mem(out.data(), bytes);
  llvm_hpvm_request_mem(keep.data(), bytes);
  std::vector<float> rows(w * h);
  for (long y = 0; y < h; y++)
    for (long x = 0; x < w; x++)
      rows[y * w + x] = (in[y * w + clamp(x - 1, w - 1)] + 2.0f * in[y * w + x] + in[y * w + clamp(x + 1, w - 1)]) * 0.25f;
  int bad = 0;
  for (long y = 0; y < h; y++)
    for (long x = 0; x < w; x++) {
      float want = (rows[clamp(y - 1, h - 1) * w + x] + 2.0f * rows[y * w + x] + rows[clamp(y + 1, h - 1) * w + x]) * 0.25f;
      if (out[y * w + x] != want || keep[y * w + x] != in[y * w + x]) bad++;
    }
  llvm_hpvm_untrack_mem(in.data());
  llvm_hpvm_untrack_mem(tmp.data());
  llvm_hpvm_untrack_mem(out.data());
  llvm_hpvm_untrack_mem(keep.data());
  __hpvm__cleanup();
  free(args);
  std::printf("separable blur %ldx%ld: %d wrong\n", w, h, bad);
  return bad != 0;
}
