/* A streaming pipeline: the host launches the graph as a stream (__hpvm__launch(1, ...)),
   pushes one argument struct per frame and pops each frame's result. Stage one sums the
   frame, stage two scales the sum; the stages are joined by a streaming edge. */
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"

#define FRAMES 6
#define N 64

struct out_t {
  double value;
};

typedef struct __attribute__((__packed__)) {
  float *frame;
  size_t bytes_frame;
  double scale;
  struct out_t out;
} RootIn;

void sum_frame(float *frame, size_t bytes_frame) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, frame, 0);
  double sum = 0.0;
  for (size_t i = 0; i < bytes_frame / sizeof(float); i++) sum += frame[i];
  __hpvm__return(1, sum);
}

void scale_sum(double sum, double scale) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__return(1, sum * scale);
}

void pipeline(float *frame, size_t bytes_frame, double scale) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, frame, 0);
  void *sum = __hpvm__createNodeND(0, sum_frame);
  void *scaled = __hpvm__createNodeND(0, scale_sum);
  __hpvm__bindIn(sum, 0, 0, 1);
  __hpvm__bindIn(sum, 1, 1, 1);
  __hpvm__edge(sum, scaled, 0, 0, 0, 1);
  __hpvm__bindIn(scaled, 2, 1, 1);
  __hpvm__bindOut(scaled, 0, 0, 1);
}

int main(void) {
  float *frames[FRAMES];
  RootIn args[FRAMES];
  size_t bytes = N * sizeof(float);
  __hpvm__init();
  void *graph = __hpvm__launch(1, pipeline, NULL);
  int bad = 0;
  for (int f = 0; f < FRAMES; f++) {
    frames[f] = malloc(bytes);
    for (int i = 0; i < N; i++) frames[f][i] = (float)(f + i % 4);
    llvm_hpvm_track_mem(frames[f], bytes);
    args[f].frame = frames[f];
    args[f].bytes_frame = bytes;
    args[f].scale = 0.5 * (f + 1);
    __hpvm__push(graph, &args[f]);
    struct out_t *got = (struct out_t *)__hpvm__pop(graph);
    double want = 0.0;
    for (int i = 0; i < N; i++) want += frames[f][i];
    want *= 0.5 * (f + 1);
    if (got->value != want) bad++;
    printf("frame %d: %g (want %g)\n", f, got->value, want);
  }
  __hpvm__wait(graph);
  for (int f = 0; f < FRAMES; f++) llvm_hpvm_untrack_mem(frames[f]);
  __hpvm__cleanup();
  return bad != 0;
}
