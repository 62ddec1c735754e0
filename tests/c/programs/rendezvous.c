/* Two runs of this program at once (tests/c/test_c_files.py): main tracks its array,
   makes the file argv[1] names, waits for the files argv[3...] name, launches, cleans up,
   then makes argv[2]'s file. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "hpvm.h"
#ifndef SCALE
#define SCALE 2
#endif
typedef struct __attribute__((__packed__)) { int *a; size_t bytes_a; } RootIn;
void times(int *a, size_t bytes_a) {
  __hpvm__attributes(1, a, 1, a);
  long i = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  a[i] *= SCALE;
}
void root(int *a, size_t bytes_a) {
  void *n = __hpvm__createNodeND(1, times, bytes_a / sizeof(int));
  __hpvm__bindIn(n, 0, 0, 0);
  __hpvm__bindIn(n, 1, 1, 0);
}
static void touch(const char *path) { FILE *f = fopen(path, "w"); if (f) fclose(f); }
static int await(const char *path) {
  for (int i = 0; i < 4000; i++) { FILE *f = fopen(path, "r"); if (f) { fclose(f); return 1; } usleep(2000); }
  return 0;
}
static int calls;  /* a global: each run starts with it 0 */
/* argv: [file made once a is tracked, file made after cleanup, files awaited before launching...] */
int main(int argc, char **argv) {
  int a[64];
  for (int i = 0; i < 64; i++) a[i] = i;
  calls++;
  __hpvm__init();
  llvm_hpvm_track_mem(a, sizeof a);
  touch(argv[1]);
  for (int k = 3; k < argc; k++)
    if (!await(argv[k])) { printf("waited for %s in vain\n", argv[k]); return 3; }
  RootIn in = {a, sizeof a};
  __hpvm__wait(__hpvm__launch(0, root, &in));
  llvm_hpvm_request_mem(a, sizeof a);
  llvm_hpvm_untrack_mem(a);
  __hpvm__cleanup();
  touch(argv[2]);
  int bad = 0;
  for (int i = 0; i < 64; i++) bad += a[i] != i * SCALE;
  printf("times %d (run %d): %d wrong\n", SCALE, calls, bad);
  return bad != 0;
}
