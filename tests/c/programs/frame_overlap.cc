// A camera loop written as HPVM's host programs overlap work with a launch: for each frame,
// __hpvm__launch of a smoothing-and-threshold graph, then the host's own work while it runs
// (the same filter on the host, into a buffer of its own), then __hpvm__wait and a check of
// every pixel. The frames come in bursts: after every third one the host waits for the
// "camera" (usleep), longer than an idle hpvm worker lives, so the next launch finds no
// worker and the runtime starts another. The graph is a wrapper node over 16x16 blocks of
// a 2-D leaf in the GPU convention (x the column, the fastest index), the body under the
// bounds guard `if ((x < w) && (y < h))`; the frame's border copies the input.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>
#include "hpvm.h"

typedef struct __attribute__((__packed__)) {
  float *in;       // 0
  size_t bytesIn;  // 1
  float *out;      // 2
  size_t bytesOut; // 3
  float level;     // 4
  long h;          // 5
  long w;          // 6
  long gridx;      // 7
  long gridy;      // 8
} FrameIn;

void smoothThreshold(float *in, size_t bytesIn, float *out, size_t bytesOut, float level, long h, long w) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 1, out);
  void *self = __hpvm__getNode();
  long x = __hpvm__getNodeInstanceID_x(self);
  long y = __hpvm__getNodeInstanceID_y(self);
  if ((x < w) && (y < h)) {
    long i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
      out[i] = in[i];
    } else {
      float sum = 0.0f;
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) sum += in[i + dy * w + dx];
      float mean = sum / 9.0f;
      out[i] = mean > level ? mean : 0.0f;
    }
  }
}

void frameWrapper(float *in, size_t bytesIn, float *out, size_t bytesOut, float level, long h, long w, long gridx,
                  long gridy) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 1, out);
  void *node = __hpvm__createNodeND(2, smoothThreshold, gridx, gridy);
  for (int p = 0; p < 7; p++) __hpvm__bindIn(node, p, p, 0);
}

void frameRoot(float *in, size_t bytesIn, float *out, size_t bytesOut, float level, long h, long w, long gridx,
               long gridy) {
  __hpvm__hint(hpvm::CPU_TARGET);
  __hpvm__attributes(1, in, 1, out);
  void *node = __hpvm__createNodeND(0, frameWrapper);
  for (int p = 0; p < 9; p++) __hpvm__bindIn(node, p, p, 0);
}

static void hostFilter(const std::vector<float> &in, std::vector<float> &out, float level, long h, long w) {
  for (long y = 0; y < h; y++)
    for (long x = 0; x < w; x++) {
      long i = y * w + x;
      if (x == 0 || y == 0 || x == w - 1 || y == h - 1) {
        out[i] = in[i];
        continue;
      }
      float sum = 0.0f;
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) sum += in[i + dy * w + dx];
      float mean = sum / 9.0f;
      out[i] = mean > level ? mean : 0.0f;
    }
}

static void capture(std::vector<float> &frame, long h, long w, int k) {
  for (long y = 0; y < h; y++)
    for (long x = 0; x < w; x++) frame[y * w + x] = (float)(((x * 7 + y * 13 + k * 29) % 64)) / 64.0f;
}

int main(int argc, char **argv) {
  long w = argc > 4 ? atol(argv[1]) : 53, h = argc > 4 ? atol(argv[2]) : 37;
  int frames = argc > 4 ? atoi(argv[3]) : 9;
  int pauseMs = argc > 4 ? atoi(argv[4]) : 30;
  long gridx = (w + 15) / 16 * 16, gridy = (h + 15) / 16 * 16;
  size_t bytes = w * h * sizeof(float);
  const float level = 0.45f;
  std::vector<float> in(w * h), out(w * h), want(w * h);

  __hpvm__init();
  llvm_hpvm_track_mem(in.data(), bytes);
  llvm_hpvm_track_mem(out.data(), bytes);
  FrameIn *args = (FrameIn *)malloc(sizeof(FrameIn));
  int bad = 0;
  for (int k = 0; k < frames; k++) {
    capture(in, h, w, k);
    *args = FrameIn{in.data(), bytes, out.data(), bytes, level, h, w, gridx, gridy};
    void *launch = __hpvm__launch(0, frameRoot, (void *)args);
    hostFilter(in, want, level, h, w);  // the host's own work while the graph runs
    __hpvm__wait(launch);
    llvm_hpvm_request_mem(out.data(), bytes);
    for (long i = 0; i < w * h; i++)
      if (std::fabs(out[i] - want[i]) > 1e-6f) bad++;
    if (k % 3 == 2) usleep(pauseMs * 1000);  // the camera: longer than an idle worker lives
  }
  llvm_hpvm_untrack_mem(in.data());
  llvm_hpvm_untrack_mem(out.data());
  free(args);
  __hpvm__cleanup();
  std::printf("frames %ldx%ld, %d frames: %d wrong pixels\n", w, h, frames, bad);
  return bad != 0;
}
