/* A replicated node launched with zero instances feeding an all-to-all edge: an error at its C line. */
#include "hpvm.h"
#include <stdlib.h>
typedef struct __attribute__((__packed__)) { float *a; size_t bytes_a; long n; struct { long r; } out; } RootIn;
void produce(float *a, size_t bytes_a) {
  __hpvm__attributes(1, a, 0);
  long i = __hpvm__getNodeInstanceID_x(__hpvm__getNode());
  __hpvm__return(1, (long)a[i]);
}
void consume(long v) {
  __hpvm__attributes(0, 0);
  __hpvm__return(1, v + 1);
}
void root(float *a, size_t bytes_a, long n) {
  __hpvm__attributes(1, a, 0);
  void *p = __hpvm__createNodeND(1, produce, n);
  void *c = __hpvm__createNodeND(0, consume);
  __hpvm__bindIn(p, 0, 0, 0);
  __hpvm__bindIn(p, 1, 1, 0);
  __hpvm__edge(p, c, 1, 0, 0, 0);
  __hpvm__bindOut(c, 0, 0, 0);
}
int main(void) {
  float a[4] = {1, 2, 3, 4};
  __hpvm__init();
  RootIn *args = malloc(sizeof(RootIn)); args->a = a; args->bytes_a = sizeof a; args->n = 0;
  llvm_hpvm_track_mem(a, sizeof a);
  __hpvm__wait(__hpvm__launch(0, root, args));
  __hpvm__cleanup();
  return (int)args->out.r;
}
