/* A program that crashes where its first argument says: "host" in a static host function,
 * "leaf" in a leaf (an out-of-bounds store far past its array, under a test of a value read
 * from memory, which the bounds pre-check does not follow: whether an instance makes it is
 * not known before it runs). Run by test_c_crash.py in a
 * child process, which dies of the signal after hpvm names the function. */
#include "hpvm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct __attribute__((__packed__)) {
  int *a; size_t bytes_a; long far;
} RootIn;

void scribble(int *a, size_t bytes_a, long far) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, a, 1, a);
  long i = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  if (a[3] == 0) a[i * far] = 1; /* far past the array for i > 0 */
  __hpvm__return(0);
}

void root(int *a, size_t bytes_a, long far) {
  __hpvm__hint(CPU_TARGET);
  __hpvm__attributes(1, a, 1, a);
  void *n = __hpvm__createNodeND(1, scribble, 2);
  __hpvm__bindIn(n, 0, 0, 0);
  __hpvm__bindIn(n, 1, 1, 0);
  __hpvm__bindIn(n, 2, 2, 0);
}

__attribute__((noinline)) static int read_through(volatile int *p) { return *p; } /* NULL: a segfault */

int main(int argc, char **argv) {
  printf("started\n");
  fflush(stdout);
  if (argc > 1 && strcmp(argv[1], "host") == 0)
    return read_through((volatile int *)0);
  int a[4] = {0};
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn));
  args->a = a; args->bytes_a = sizeof a; args->far = 1L << 40;
  llvm_hpvm_track_mem(a, sizeof a);
  __hpvm__wait(__hpvm__launch(0, root, args));
  __hpvm__cleanup();
  return 0;
}
