/* The cpu back end's checked mode on the accesses its first version left unchecked
   (tests/c/test_c_checked_gaps.py): each leaf is one instance per row of a rows x cols
   image, indexing with a parameter stride (what the bounds pre-check cannot follow), and
   reaches its array through something other than a getelementptr of the port:
   a pointer phi, llvm.memcpy / llvm.memset, a callee LLVM did not inline, a pointer kept
   in (volatile) memory; `recurse` through a recursive callee checked mode cannot follow.
   main: argv[1] = the leaf (0..5), argv[2] = the instances (rows of the launch). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hpvm.h"
#define ROWS 4
#define COLS 6
typedef struct __attribute__((__packed__)) {
  float *in; size_t bytes_in; float *out; size_t bytes_out; long cols; long n;
} Args;
/* one launch per function: LLVM would merge the launches of a switch into one */
#define RUN(leaf)                                                                            \
  void root_##leaf(float *, size_t, float *, size_t, long, long);                           \
  __attribute__((noinline)) static void run_##leaf(Args *args) {                             \
    __hpvm__wait(__hpvm__launch(0, root_##leaf, (void *)args));                              \
  }

void walk(float *in, size_t bytes_in, float *out, size_t bytes_out, long cols) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, in, out, 1, out);
  long row = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  float *end = out + (row + 1) * cols;
  const float *from = in + row * cols;
  for (float *p = out + row * cols; p != end; p++, from++) *p = *from * 2.0f;  // @walk
  __hpvm__return(0);
}

void copy(float *in, size_t bytes_in, float *out, size_t bytes_out, long cols) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, in, out, 1, out);
  long row = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  memcpy(out + row * cols, in + row * cols, cols * sizeof(float));  // @copy
  __hpvm__return(0);
}

void clear(float *in, size_t bytes_in, float *out, size_t bytes_out, long cols) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, in, out, 1, out);
  long row = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  memset(out + row * cols, 0, cols * sizeof(float));  // @clear
  __hpvm__return(0);
}

__attribute__((noinline)) static void put_row(float *o, const float *i, long at, long cols) {
  for (long c = 0; c < cols; c++) o[at + c] = i[at + c] + 1.0f;  // @put_row
}

void helper(float *in, size_t bytes_in, float *out, size_t bytes_out, long cols) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, in, out, 1, out);
  long row = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  put_row(out, in, row * cols, cols);  // @put_row_call
  __hpvm__return(0);
}

void stash(float *in, size_t bytes_in, float *out, size_t bytes_out, long cols) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, in, out, 1, out);
  long row = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  {  /* (a block: the slot's lifetime ends before __hpvm__return) */
    float *volatile kept = out + row * cols + cols - 1;
    *kept = (float)row;  // @stash
  }
  __hpvm__return(0);
}

static void fill(float *o, long k) {
  if (k < 0) return;
  fill(o, k - 1);
  o[k] = 3.0f;  // @recurse
}

void recurse(float *in, size_t bytes_in, float *out, size_t bytes_out, long cols) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, in, out, 1, out);
  long row = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  if (row == 0) fill(out, cols * ROWS - 1);  // @recurse_call
  __hpvm__return(0);
}

#define ROOT(leaf) RUN(leaf) ROOT_(leaf)
#define ROOT_(leaf)                                                                           \
  void root_##leaf(float *in, size_t bytes_in, float *out, size_t bytes_out, long cols,     \
                   long n) {                                                                 \
    __hpvm__hint(CPU_TARGET);                                                                \
    __hpvm__attributes(2, in, out, 1, out);                                                  \
    void *node = __hpvm__createNodeND(1, leaf, n);                                           \
    for (int k = 0; k < 5; k++) __hpvm__bindIn(node, k, k, 0);                               \
  }
ROOT(walk)
ROOT(copy)
ROOT(clear)
ROOT(helper)
ROOT(stash)
ROOT(recurse)


int main(int argc, char **argv) {
  int which = argc > 1 ? atoi(argv[1]) : 0;
  long n = argc > 2 ? atol(argv[2]) : ROWS;
  size_t bytes = ROWS * COLS * sizeof(float);
  float *in = malloc(bytes), *out = malloc(bytes);
  for (int i = 0; i < ROWS * COLS; i++) { in[i] = i; out[i] = -1; }
  __hpvm__init();
  Args *args = malloc(sizeof(Args));
  args->in = in; args->bytes_in = bytes; args->out = out; args->bytes_out = bytes;
  args->cols = COLS; args->n = n;
  llvm_hpvm_track_mem(in, bytes);
  llvm_hpvm_track_mem(out, bytes);
  if (which == 0) run_walk(args);
  else if (which == 1) run_copy(args);
  else if (which == 2) run_clear(args);
  else if (which == 3) run_helper(args);
  else if (which == 4) run_stash(args);
  else run_recurse(args);
  llvm_hpvm_request_mem(out, bytes);
  for (int i = 0; i < ROWS * COLS; i++) printf("%g ", out[i]);
  printf("\n");
  llvm_hpvm_untrack_mem(in);
  llvm_hpvm_untrack_mem(out);
  __hpvm__cleanup();
  return 0;
}
