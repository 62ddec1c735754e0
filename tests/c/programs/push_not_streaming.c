/* __hpvm__push on a launch that is not streaming: the runtime's error in C's terms. */
#include "hpvm.h"
#include <stdlib.h>
typedef struct __attribute__((__packed__)) { long n; } RootIn;
void leaf(long n) { __hpvm__attributes(0, 0); __hpvm__return(1, n); }
void root(long n) { void *l = __hpvm__createNodeND(0, leaf); __hpvm__bindIn(l, 0, 0, 0); __hpvm__bindOut(l, 0, 0, 0); }
int main(void) {
  RootIn *args = malloc(sizeof(RootIn) + 8); args->n = 3;
  __hpvm__init();
  void *g = __hpvm__launch(0, root, args);
  __hpvm__push(g, args);
  return 0;
}
