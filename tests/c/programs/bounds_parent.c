/* A leaf that finds its element from its own instance id and its parent's
   (tests/c/test_c_bounds_parent.py): `rows` replicates `flip` over a row's columns, the root
   replicates `rows` over the rows. Each instance reads a[r*COLS + x] and writes it, plus
   one, to the mirrored row of b, b[(ROWS - 1 - r)*COLS + x]: n rows of m columns stay in
   the ROWS x COLS arrays only while n <= ROWS and m <= COLS — with a fifth column the last
   row's writes pass b's end, with a fifth row the first row's writes fall before its
   start. The bounds pre-check refuses both before the leaf runs.
   Built with -D KEEP_ROWS, `rows` hands its leaf's last output on, so that the cpu back
   end runs it as a graph function of its own instead of flattening it into the root's
   loop. main: argv[1] = n, argv[2] = m. */
#include <stdio.h>
#include <stdlib.h>
#include "hpvm.h"
#define ROWS 4
#define COLS 4
typedef struct __attribute__((__packed__)) {
  float *a; size_t bytes_a; float *b; size_t bytes_b; long n; long m;
} RootIn;
void flip(float *a, size_t bytes_a, float *b, size_t bytes_b) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, a, b, 1, b);
  void *self = __hpvm__getNode();
  void *row = __hpvm__getParentNode(self);
  int x = __hpvm__getNodeInstanceID_x(self);
  int r = __hpvm__getNodeInstanceID_x(row);
  b[(ROWS - 1 - r) * COLS + x] = a[r * COLS + x] + 1;  // @flip
  __hpvm__return(1, bytes_b);
}
void rows(float *a, size_t bytes_a, float *b, size_t bytes_b, long m) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, a, b, 1, b);
  void *cols = __hpvm__createNodeND(1, flip, m);  // @cols
  __hpvm__bindIn(cols, 0, 0, 0);
  __hpvm__bindIn(cols, 1, 1, 0);
  __hpvm__bindIn(cols, 2, 2, 0);
  __hpvm__bindIn(cols, 3, 3, 0);
#ifdef KEEP_ROWS
  __hpvm__bindOut(cols, 0, 0, 0);
#endif
}
void root(float *a, size_t bytes_a, float *b, size_t bytes_b, long n, long m) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(2, a, b, 1, b);
  void *each = __hpvm__createNodeND(1, rows, n);
  __hpvm__bindIn(each, 0, 0, 0);
  __hpvm__bindIn(each, 1, 1, 0);
  __hpvm__bindIn(each, 2, 2, 0);
  __hpvm__bindIn(each, 3, 3, 0);
  __hpvm__bindIn(each, 5, 4, 0);
}
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : ROWS, m = argc > 2 ? atol(argv[2]) : COLS;
  size_t bytes = ROWS * COLS * sizeof(float);
  float *a = malloc(bytes), *b = malloc(bytes);
  for (int i = 0; i < ROWS * COLS; i++) a[i] = i, b[i] = -1;
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  args->a = a; args->bytes_a = bytes;
  args->b = b; args->bytes_b = bytes;
  args->n = n; args->m = m;
  llvm_hpvm_track_mem(a, bytes);
  llvm_hpvm_track_mem(b, bytes);
  void *g = __hpvm__launch(0, root, args);
  __hpvm__wait(g);
  llvm_hpvm_request_mem(b, bytes);
  for (int i = 0; i < ROWS * COLS; i++) printf("%g ", b[i]);
  printf("\n");
  __hpvm__cleanup();
  return 0;
}
