/* A CAVA-style leaf for the cpu back end's checked mode (tests/c/test_c_checked.py): each
   instance scales one row of a chans x rows x cols image, indexing
   (chan * rows + row) * cols + col with parameter strides inside its loops -- what the
   bounds pre-check cannot follow. main: argv[1] = the instances (rows of the launch). */
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"
#define CHANS 3
#define ROWS 4
#define COLS 5
typedef struct __attribute__((__packed__)) {
  float *in; size_t bytes_in; float *out; size_t bytes_out; long rows; long cols; long n;
} RootIn;
void scale(float *in, size_t bytes_in, float *out, size_t bytes_out, long rows, long cols) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, in, out, 1, out);
  long row = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  for (long chan = 0; chan < CHANS; chan++)
    for (long col = 0; col < cols; col++)
      out[(chan * rows + row) * cols + col] = in[(chan * rows + row) * cols + col] * 0.5f;  // @scale
  __hpvm__return(0);
}
void root(float *in, size_t bytes_in, float *out, size_t bytes_out, long rows, long cols, long n) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, in, out, 1, out);
  void *node = __hpvm__createNodeND(1, scale, n);  // @node
  for (int k = 0; k < 6; k++) __hpvm__bindIn(node, k, k, 0);
}
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : ROWS;
  size_t bytes = CHANS * ROWS * COLS * sizeof(float);
  float *in = malloc(bytes), *out = malloc(bytes);
  for (int i = 0; i < CHANS * ROWS * COLS; i++) { in[i] = i; out[i] = -1; }
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  args->in = in; args->bytes_in = bytes; args->out = out; args->bytes_out = bytes;
  args->rows = ROWS; args->cols = COLS; args->n = n;
  llvm_hpvm_track_mem(in, bytes);
  llvm_hpvm_track_mem(out, bytes);
  void *dfg = __hpvm__launch(0, root, (void *)args);
  __hpvm__wait(dfg);
  llvm_hpvm_request_mem(out, bytes);
  for (int i = 0; i < CHANS * ROWS * COLS; i++) printf("%g ", out[i]);
  printf("\n");
  llvm_hpvm_untrack_mem(in);
  llvm_hpvm_untrack_mem(out);
  __hpvm__cleanup();
  return 0;
}
